use super::*;
use crate::bucket::bucket_for;

fn config() -> EnqueueConfig {
    EnqueueConfig::default()
}

#[test]
fn builds_a_complete_row() {
    let id = Uuid::now_v7();
    let m = OutboxMessage::builder("orders")
        .key("order-7")
        .value(b"{}")
        .header("trace", "t1")
        .null_header("empty")
        .message_id(id)
        .created_at(Timestamp::from_millis(42))
        .build(&config())
        .unwrap();
    assert_eq!(m.id, 0);
    assert_eq!(m.message_id, id);
    assert_eq!(m.topic, "orders");
    assert_eq!(m.key.as_deref(), Some(&b"order-7"[..]));
    assert_eq!(m.value.as_deref(), Some(&b"{}"[..]));
    assert_eq!(m.created_at, Timestamp::from_millis(42));
    assert_eq!(
        m.bucket,
        bucket_for(Some(b"order-7"), None, &id, config().bucket_count())
    );
    let headers = m.decoded_headers().unwrap();
    let names: Vec<_> = headers.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["trace", "empty"]);
    assert_eq!(headers.iter().nth(1).unwrap().value, None);
}

#[test]
fn no_headers_store_null_and_generated_ids_are_v7() {
    let m = OutboxMessage::builder("t").build(&config()).unwrap();
    assert_eq!(m.headers, None);
    assert_eq!(m.key, None, "keyless");
    assert_eq!(m.value, None, "tombstone");
    assert_eq!(m.message_id.get_version_num(), 7);
}

#[test]
fn partition_decides_the_bucket() {
    let schema = crate::OutboxSchema::builder()
        .bucket_count(4)
        .build()
        .unwrap();
    let c = EnqueueConfig::from(schema);
    let m = OutboxMessage::builder("t")
        .key("k")
        .partition(6)
        .build(&c)
        .unwrap();
    assert_eq!(m.bucket, 2);
    assert_eq!(m.partition, Some(6));
}

#[test]
fn each_violation_is_named() {
    let c = config();
    let err = OutboxMessage::builder("bad topic").build(&c).unwrap_err();
    assert_eq!(
        err,
        MessageError::InvalidTopic {
            topic: "bad topic".into(),
            reason: TopicNameError::InvalidChar(' ')
        }
    );
    assert!(err.to_string().contains("bad topic"));
    assert_eq!(
        OutboxMessage::builder("t")
            .partition(-1)
            .build(&c)
            .unwrap_err(),
        MessageError::NegativePartition(-1)
    );
    assert_eq!(
        OutboxMessage::builder("t")
            .header("x-outbox-message-id", "forged")
            .build(&c)
            .unwrap_err(),
        MessageError::ReservedHeader("x-outbox-message-id".into())
    );
    assert_eq!(
        OutboxMessage::builder("t")
            .header("ok", "v")
            .header_from_bytes(vec![0xff, 0xfe], None)
            .build(&c)
            .unwrap_err(),
        MessageError::HeaderNameNotUtf8 { index: 1 }
    );
}

#[test]
fn record_size_limit() {
    let c = EnqueueConfig::builder()
        .max_record_size(1_000)
        .build()
        .unwrap();
    // The request carrying the record alone: 64 (request) + 255 (longest client id)
    // + 1 (topic) + 61 (batch header) = 381; the record: 36 (framing) + 1 (key) +
    // 10 + 19 + 36 (the message-id header) = 102, plus the value.
    let fits = OutboxMessage::builder("t").key("k").value(vec![0; 517]);
    assert_eq!(fits.record_size(&c), 1_000);
    assert!(fits.build(&c).is_ok());
    let err = OutboxMessage::builder("t")
        .key("k")
        .value(vec![0; 518])
        .build(&c)
        .unwrap_err();
    assert_eq!(
        err,
        MessageError::RecordTooLarge {
            size: 1_001,
            max: 1_000
        }
    );
}

#[test]
fn a_record_no_publisher_could_send_fails_at_enqueue_by_default() {
    let err = OutboxMessage::builder("t")
        .value(vec![0; 5 << 20])
        .build(&EnqueueConfig::default())
        .unwrap_err();
    assert!(
        matches!(err, MessageError::RecordTooLarge { max, .. } if max == 1 << 20),
        "{err:?}"
    );
}

/// Runs `f` under a subscriber with a `tracing-opentelemetry` layer, inside a span
/// that has a valid OpenTelemetry context (asserted, so the tests below cannot pass
/// for want of a context).
fn in_otel_span<T>(f: impl FnOnce() -> T) -> T {
    use opentelemetry::trace::{TraceContextExt, TracerProvider};
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    use tracing_subscriber::layer::SubscriberExt;

    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("request");
        assert!(span.context().span().span_context().is_valid());
        span.in_scope(f)
    })
}

/// Run without the feature `otel` by `cargo xtask test` (`-E 'test(feature_off)'`, on
/// a build of this crate alone): inside a span with an active OpenTelemetry context
/// the row stores exactly the headers given, nothing of the trace. That such a build
/// holds no OpenTelemetry crate at all is checked on the dependency graph
/// (`tests/tests/facade_features.rs`).
#[cfg(not(feature = "otel"))]
#[test]
fn feature_off_stores_exactly_the_headers_given() {
    let (m, bare) = in_otel_span(|| {
        let m = OutboxMessage::builder("t")
            .header("a", "1")
            .build(&config());
        (m, OutboxMessage::builder("t").build(&config()))
    });
    let mut given = Headers::new();
    given.push("a", Some(b"1".to_vec()));
    assert_eq!(m.unwrap().headers, Some(given.encode()));
    assert_eq!(bare.unwrap().headers, None);
}

/// The twin of the test above with the feature on: the same build captures the
/// context, and the size check counts it.
#[cfg(feature = "otel")]
#[test]
fn feature_on_captures_the_context_and_counts_it() {
    use crate::trace_context::{TRACEPARENT, extract};
    use opentelemetry::trace::TraceContextExt;

    let builder = OutboxMessage::builder("t").key("k").value(vec![0; 517]);
    // Exactly at a 1,000-byte limit without the trace headers (see record_size_limit).
    let c = EnqueueConfig::builder()
        .max_record_size(1_000)
        .build()
        .unwrap();
    assert_eq!(builder.record_size(&c), 1_000);
    let too_large = in_otel_span(|| builder.clone().build(&c)).unwrap_err();
    // traceparent: 10 + 11 + 55 bytes.
    assert_eq!(
        too_large,
        MessageError::RecordTooLarge {
            size: 1_076,
            max: 1_000
        }
    );
    let m = in_otel_span(|| builder.build(&config())).unwrap();
    let headers = m.decoded_headers().unwrap();
    // No baggage, and the empty trace state is not written.
    assert_eq!(headers.len(), 1, "{headers:?}");
    let traceparent = headers.get(TRACEPARENT).unwrap().value.clone().unwrap();
    assert_eq!(traceparent.len(), 55);
    assert!(extract(&headers).span().span_context().is_sampled());
}

#[cfg(feature = "json")]
#[test]
fn json_helpers() {
    #[derive(serde::Serialize)]
    struct Order {
        id: u32,
    }
    let m = OutboxMessage::builder("t")
        .json_key(&7)
        .json_value(&Order { id: 7 })
        .build(&config())
        .unwrap();
    assert_eq!(m.key.as_deref(), Some(&b"7"[..]));
    assert_eq!(m.value.as_deref(), Some(&br#"{"id":7}"#[..]));

    struct Broken;
    impl serde::Serialize for Broken {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("nope"))
        }
    }
    let err = OutboxMessage::builder("t")
        .json_value(&Broken)
        .build(&config())
        .unwrap_err();
    assert!(
        matches!(err, MessageError::Serialization { field: "value", .. }),
        "{err:?}"
    );
}
