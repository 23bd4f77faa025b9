//! The demo's topic: created when missing, reused when present, without an error line.

use rskafka::client::Client;
use rskafka::client::error::{Error, ProtocolError};

/// The topic the demo's events go to (the orders service and the poison scene write it).
pub(crate) const TOPIC: &str = "orders";
/// Its partition count, made sure of at start.
pub(crate) const PARTITIONS: i32 = 8;

/// Makes sure `topic` exists with at least `partitions` partitions.
///
/// Asks the metadata first and creates the topic only when it is missing: rskafka logs
/// an `ERROR` for every refused request, and "already exists" is the normal case from
/// the second run on. A topic created by someone else between the two requests is
/// accepted (that rare race still logs rskafka's line).
pub async fn ensure_topic(client: &Client, topic: &str, partitions: i32) -> anyhow::Result<()> {
    let existing = client
        .list_topics()
        .await?
        .into_iter()
        .find(|t| t.name == topic);
    if let Some(existing) = existing {
        let have = i32::try_from(existing.partitions.len())?;
        anyhow::ensure!(
            have >= partitions,
            "topic {topic} has {have} partitions; the demo reads {partitions}"
        );
        return Ok(());
    }
    match client
        .controller_client()?
        .create_topic(topic, partitions, 1, 5_000)
        .await
    {
        Ok(())
        | Err(Error::ServerError {
            protocol_error: ProtocolError::TopicAlreadyExists,
            ..
        }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
