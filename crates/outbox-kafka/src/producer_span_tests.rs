use super::*;
use opentelemetry::trace::{SpanKind, Status, TracerProvider};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use outbox_core::trace_context::TRACEPARENT;
use outbox_core::{EnqueueConfig, PublishError};
use tracing_subscriber::layer::SubscriberExt;

const STORED: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

fn row(topic: &str, traceparent: Option<&str>) -> OutboxMessage {
    let mut builder = OutboxMessage::builder(topic).key("k");
    if let Some(tp) = traceparent {
        builder = builder.header(TRACEPARENT, tp);
    }
    builder.build(&EnqueueConfig::default()).unwrap()
}

/// Opens and closes the spans of `batch` with `outcome` under an OpenTelemetry layer;
/// returns the exported spans by name.
fn exported(batch: &[OutboxMessage], outcome: &PublishOutcome) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    tracing::subscriber::with_default(subscriber, || {
        ProducerSpans::open(batch).close(outcome);
    });
    provider.force_flush().unwrap();
    let mut spans = exporter.get_finished_spans().unwrap();
    spans.sort_by(|a, b| a.name.cmp(&b.name));
    spans
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

#[test]
fn one_producer_span_per_topic_linked_to_the_stored_contexts() {
    // The unsampled stored context is linked as well: the header is what counts.
    let batch = [
        row("orders", Some(STORED)),
        row("audit", None),
        row("orders", None),
    ];
    let spans = exported(&batch, &PublishOutcome::all(3));
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["send audit", "send orders"]);
    let (audit, orders) = (&spans[0], &spans[1]);
    for span in [audit, orders] {
        assert_eq!(span.span_kind, SpanKind::Producer);
        assert_eq!(span.status, Status::Unset);
        assert_eq!(attribute(span, "messaging.system"), Some("kafka".into()));
        assert_eq!(
            attribute(span, "messaging.operation.type"),
            Some("send".into())
        );
    }
    assert_eq!(
        attribute(orders, "messaging.destination.name"),
        Some("orders".into())
    );
    assert_eq!(
        attribute(orders, "messaging.batch.message_count"),
        Some(Value::I64(2))
    );
    assert_eq!(
        attribute(audit, "messaging.batch.message_count"),
        Some(Value::I64(1))
    );
    assert!(audit.links.links.is_empty());
    let linked: Vec<String> = orders
        .links
        .links
        .iter()
        .map(|l| format!("{}-{}", l.span_context.trace_id(), l.span_context.span_id()))
        .collect();
    assert_eq!(
        linked,
        ["0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"]
    );
}

#[test]
fn a_topic_with_an_unacknowledged_row_is_marked_failed() {
    let batch = [row("audit", None), row("orders", None), row("audit", None)];
    // Row 0 acknowledged, row 1 (orders) failed, row 2 (audit) not sent.
    let outcome = PublishOutcome::partial(1, PublishError::retryable("leader moved"));
    let spans = exported(&batch, &outcome);
    for span in &spans {
        assert!(
            matches!(span.status, Status::Error { .. }),
            "{}: {:?}",
            span.name,
            span.status
        );
        assert_eq!(attribute(span, "error.type"), Some("retryable".into()));
    }
    assert_eq!(spans.len(), 2);

    let spans = exported(
        &batch,
        &PublishOutcome::partial(2, PublishError::retryable("x")),
    );
    let failed: Vec<&str> = spans
        .iter()
        .filter(|s| matches!(s.status, Status::Error { .. }))
        .map(|s| s.name.as_ref())
        .collect();
    assert_eq!(failed, ["send audit"], "orders' only row was acknowledged");
}
