//! Which failures blame one row for good (the relay parks it after
//! `max_publish_attempts`), against the real broker.

use crate::support::{
    brokers, message, publish, publisher_for, publisher_limited_to, read_all, topic,
};

/// A record over the client's request limit fails for good and names itself; the rows
/// before it are acknowledged and on the topic, nothing after it is sent.
#[tokio::test]
async fn a_record_too_large_blames_itself_after_the_rows_before_it() {
    let brokers = brokers();
    let (client, topic) = topic(&brokers, "too-large", 1).await;
    let publisher = publisher_limited_to(&brokers, 4096).build().unwrap();
    let big = message(&topic, Some(b"k"), &[7u8; 8192]);
    let batch = [
        message(&topic, Some(b"k"), b"before"),
        big.clone(),
        message(&topic, Some(b"k"), b"after"),
    ];
    let outcome = publish(&publisher, &batch).await;
    assert_eq!(outcome.acknowledged, 1);
    let error = outcome.error.expect("the big record fails");
    assert_eq!(error.blamed_message(), Some(big.message_id), "{error}");
    let on_topic = read_all(&client, &topic, 1).await;
    assert_eq!(
        on_topic[0].len(),
        1,
        "nothing after the failing row was sent"
    );
}

/// A row naming a topic Kafka can never accept (written around the enqueue-time check,
/// as an external writer could) fails for good and names itself. (A topic that is merely
/// missing cannot be shown on the test broker: Tansu creates topics on a metadata request.
/// The publisher treats a topic still unknown after a fresh metadata request the same way;
/// a unit test covers that conversion.)
#[tokio::test]
async fn an_invalid_topic_blames_its_row() {
    let brokers = brokers();
    let (_client, existing) = topic(&brokers, "exists", 1).await;
    let publisher = publisher_for(&brokers).build().unwrap();
    let mut orphan = message(&existing, Some(b"k"), b"v");
    orphan.topic = "not a topic!".into();
    let batch = [message(&existing, Some(b"k"), b"ok"), orphan.clone()];
    let outcome = publish(&publisher, &batch).await;
    assert_eq!(outcome.acknowledged, 1, "the row before it is acknowledged");
    let error = outcome.error.expect("the orphan row fails");
    assert_eq!(error.blamed_message(), Some(orphan.message_id), "{error}");
}
