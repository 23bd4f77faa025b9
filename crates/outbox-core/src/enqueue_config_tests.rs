use super::*;

#[test]
fn defaults() {
    let c = EnqueueConfig::builder().build().unwrap();
    assert_eq!(c, EnqueueConfig::default());
    assert_eq!(c.bucket_count().get(), 8);
    assert_eq!(c.message_id_header(), "x-outbox-message-id");
    assert_eq!(c.max_record_size(), 1_048_576);
    assert_eq!(c.schema(), &OutboxSchema::default());
}

#[test]
fn rejections() {
    assert_eq!(
        EnqueueConfig::builder().max_record_size(0).build(),
        Err(OptionsError::MaxRecordSizeZero)
    );
    assert!(EnqueueConfig::builder().max_record_size(1).build().is_ok());
    assert_eq!(
        EnqueueConfig::builder().max_record_size(2 << 20).build(),
        Err(OptionsError::MaxRecordSizeAboveRequestSize {
            record: 2 << 20,
            request: 1 << 20
        })
    );
}

#[test]
fn enqueue_config_agrees_with_the_relay() {
    let schema = OutboxSchema::builder()
        .bucket_count(16)
        .message_id_header("mid")
        .build()
        .unwrap();
    let o = RelayOptions::builder()
        .schema(schema.clone())
        .build()
        .unwrap();
    assert_eq!(o.bucket_count().get(), 16);
    assert_eq!(o.message_id_header(), "mid");
    let c = o.enqueue_config();
    assert_eq!(c.schema(), &schema);
    assert_eq!(c.bucket_count().get(), 16);
    assert_eq!(c.message_id_header(), "mid");
}
