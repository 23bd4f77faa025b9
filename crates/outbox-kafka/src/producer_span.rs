//! The producer spans of a publish call (feature `otel`).
//!
//! The relay publishes long after the request that enqueued a row, so a producer span
//! cannot be that request's child; following the OpenTelemetry messaging conventions,
//! each `send {topic}` span instead *links* to the context every row captured at
//! enqueue (its stored `traceparent`). The spans live here, not in the core driver: only
//! the publisher knows topics and Kafka, and the driver stays broker-neutral.
//!
//! The W3C headers themselves need nothing from this module: they are among the row's
//! stored headers, which go out on the record unchanged.

use std::collections::BTreeMap;

use opentelemetry::trace::TraceContextExt;
use outbox_core::trace_context::extract;
use outbox_core::{OutboxMessage, PublishErrorKind, PublishOutcome};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// One producer span per topic of a publish call, with the rows of that topic.
#[derive(Debug)]
pub(crate) struct ProducerSpans {
    /// The span and the batch indices of its topic's rows.
    spans: Vec<(Span, Vec<usize>)>,
}

impl ProducerSpans {
    /// Opens a `send {topic}` span (kind producer; `messaging.system` `kafka`,
    /// `messaging.destination.name`, `messaging.operation.type` `send`,
    /// `messaging.batch.message_count`) for each topic in `batch`, in the current span,
    /// linked to each of its rows' stored trace contexts. Rows without a valid context
    /// (enqueued outside a trace, or with undecodable headers) add no link.
    pub(crate) fn open(batch: &[OutboxMessage]) -> Self {
        let mut by_topic: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (index, m) in batch.iter().enumerate() {
            by_topic.entry(m.topic.as_str()).or_default().push(index);
        }
        let spans = by_topic
            .into_iter()
            .map(|(topic, rows)| {
                // An integer attribute: `usize` would be recorded as text.
                let count = i64::try_from(rows.len()).unwrap_or(i64::MAX);
                let span = tracing::info_span!(
                    "send",
                    otel.name = %format_args!("send {topic}"),
                    otel.kind = "producer",
                    otel.status_code = Empty,
                    messaging.system = "kafka",
                    messaging.destination.name = %topic,
                    messaging.operation.type = "send",
                    messaging.batch.message_count = count,
                    "error.type" = Empty,
                );
                // A span no subscriber records needs no links: skip decoding the headers.
                if !span.is_disabled() {
                    for &row in &rows {
                        if batch[row].headers.is_none() {
                            continue;
                        }
                        if let Ok(headers) = batch[row].decoded_headers() {
                            // `add_link` ignores invalid span contexts.
                            span.add_link(extract(&headers).span().span_context().clone());
                        }
                    }
                }
                (span, rows)
            })
            .collect();
        ProducerSpans { spans }
    }

    /// Marks the spans whose topic has a row beyond the acknowledged prefix as failed
    /// (`error.type` the error's kind), and ends them all.
    pub(crate) fn close(self, outcome: &PublishOutcome) {
        for (span, rows) in self.spans {
            if rows.iter().any(|&row| row >= outcome.acknowledged) {
                let kind = match outcome.error.as_ref().map(|e| e.kind) {
                    Some(PublishErrorKind::Retryable) => "retryable",
                    Some(PublishErrorKind::Permanent) => "permanent",
                    Some(PublishErrorKind::Setup) => "setup",
                    _ => "not_acknowledged",
                };
                span.record("otel.status_code", "ERROR");
                span.record("error.type", kind);
            }
        }
    }
}

#[cfg(test)]
#[path = "producer_span_tests.rs"]
mod tests;
