//! W3C trace context through the outbox (feature `otel`).
//!
//! A relay publishes a row later, in another task or process, where the request that
//! wrote it is long gone; so the context is taken when the message is *enqueued*, the way
//! the OpenTelemetry messaging conventions ask for, and travels in the row's headers:
//!
//! 1. [`MessageBuilder::build`](crate::MessageBuilder::build) calls [`inject_current`]:
//!    the OpenTelemetry context of the current `tracing` span (through
//!    `tracing-opentelemetry`'s layer) is written as the W3C headers [`TRACEPARENT`],
//!    [`TRACESTATE`] and [`BAGGAGE`] (each only when it has a value). It happens before
//!    the size check, so the record-size limit counts them.
//! 2. The stored headers go out on the Kafka record unchanged; the Kafka publisher links
//!    its producer span to each row's context ([`extract`]).
//! 3. A consumer continues the trace: [`consumer_span`] returns a span whose parent is
//!    the enqueuing span's context, [`set_parent`] re-parents a span of its own.
//!
//! Without an OpenTelemetry context (no `tracing-opentelemetry` layer installed, or no
//! current span) nothing is written. A header the caller already set wins: a message
//! built with its own `traceparent` keeps it and gets no `tracestate` from the current
//! span (the state belongs to the trace it came with), and one with its own `baggage`
//! keeps that. Names are compared ASCII-case-insensitively, as W3C (HTTP) header names
//! are.
//!
//! # Why the W3C propagators, and not the global one
//!
//! The headers are a wire format shared with consumers in other services and other
//! languages, so this module uses OpenTelemetry's W3C `TraceContextPropagator` and
//! `BaggagePropagator` explicitly instead of `opentelemetry::global`'s propagator. The
//! global one is a no-op until a service installs one (the outbox would silently carry
//! nothing), and a service that installs B3 or Jaeger for its HTTP edge would otherwise
//! change what every consumer of its topics must parse.
//!
//! Unsampled traces are carried too: a `traceparent` with the flags `00` still names the
//! trace, so a consumer stays in it (and, under a parent-based sampler, unsampled).

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::headers::Headers;

/// The W3C Trace Context header naming the trace, the parent span and the sampling flag.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C Trace Context header with vendor-specific trace state.
pub const TRACESTATE: &str = "tracestate";
/// The W3C Baggage header: key-value pairs that travel with the trace.
pub const BAGGAGE: &str = "baggage";

/// Adds the W3C headers of the current `tracing` span's OpenTelemetry context to
/// `headers` (see the module docs for which are skipped). Nothing is added without an
/// active context.
pub fn inject_current(headers: &mut Headers) {
    inject(&Span::current().context(), headers);
}

/// Adds the W3C headers of `cx` to `headers`: [`TRACEPARENT`] and [`TRACESTATE`] unless
/// `headers` already holds a `traceparent`, [`BAGGAGE`] unless it already holds a
/// `baggage`; an empty trace state or baggage is not written. A context without a valid span context and without baggage adds nothing.
pub fn inject(cx: &Context, headers: &mut Headers) {
    let mut fields = Fields::default();
    if !has(headers, TRACEPARENT) {
        TraceContextPropagator::new().inject_context(cx, &mut fields);
    }
    if !has(headers, BAGGAGE) {
        BaggagePropagator::new().inject_context(cx, &mut fields);
    }
    // The trace-context propagator writes `tracestate` even when it is empty, which
    // W3C treats as absent: only headers with a value are stored.
    for (name, value) in fields.0.into_iter().filter(|(_, v)| !v.is_empty()) {
        headers.push(name, Some(value.into_bytes()));
    }
}

/// The OpenTelemetry context carried by stored `headers` (a row's, see
/// [`OutboxMessage::decoded_headers`](crate::OutboxMessage::decoded_headers)): its span
/// context as a remote parent, and its baggage. Without valid W3C headers the context
/// has no valid span context.
pub fn extract(headers: &Headers) -> Context {
    extract_pairs(
        headers
            .iter()
            .filter_map(|h| h.value.as_deref().map(|v| (h.name.as_str(), v))),
    )
}

/// Like [`extract`] for a consumed record's headers given as `(name, value)` pairs in any
/// form: rskafka's `&BTreeMap<String, Vec<u8>>`, a slice of tuples... Values that are not
/// UTF-8 are ignored.
pub fn extract_pairs<I, N, V>(headers: I) -> Context
where
    I: IntoIterator<Item = (N, V)>,
    N: AsRef<str>,
    V: AsRef<[u8]>,
{
    let fields = Fields(
        headers
            .into_iter()
            .filter_map(|(name, value)| {
                let value = std::str::from_utf8(value.as_ref()).ok()?.to_owned();
                Some((name.as_ref().to_ascii_lowercase(), value))
            })
            .collect(),
    );
    let cx = TraceContextPropagator::new().extract(&fields);
    BaggagePropagator::new().extract_with_context(&cx, &fields)
}

/// Makes `span` a child of the context in a consumed record's headers (see
/// [`extract_pairs`]), for consumers that build their own span. Returns whether the
/// headers held a valid trace context and the parent was set; the span must not have
/// been entered yet, and a `tracing-opentelemetry` layer must be installed.
pub fn set_parent<I, N, V>(span: &Span, headers: I) -> bool
where
    I: IntoIterator<Item = (N, V)>,
    N: AsRef<str>,
    V: AsRef<[u8]>,
{
    let cx = extract_pairs(headers);
    cx.span().span_context().is_valid() && span.set_parent(cx).is_ok()
}

/// A consumer span for processing one record of `topic`, following the OpenTelemetry
/// messaging conventions (`process {topic}`, kind consumer, `messaging.system` `kafka`,
/// `messaging.destination.name`, `messaging.operation.type` `process`), whose parent is
/// the enqueuing span's context found in the record's `headers`. Run the handler in it
/// (`.instrument(span)` or `span.in_scope(..)`). Without a trace context in the headers
/// it is a span of the current trace, as any other.
pub fn consumer_span<I, N, V>(topic: &str, headers: I) -> Span
where
    I: IntoIterator<Item = (N, V)>,
    N: AsRef<str>,
    V: AsRef<[u8]>,
{
    let span = tracing::info_span!(
        "process",
        otel.name = %format_args!("process {topic}"),
        otel.kind = "consumer",
        messaging.system = "kafka",
        messaging.destination.name = %topic,
        messaging.operation.type = "process",
    );
    set_parent(&span, headers);
    span
}

/// Whether `headers` hold a header called `name`, in any ASCII case.
fn has(headers: &Headers, name: &str) -> bool {
    headers.iter().any(|h| h.name.eq_ignore_ascii_case(name))
}

/// The propagators' carrier: lowercase names and text values, in insertion order.
#[derive(Default)]
struct Fields(Vec<(String, String)>);

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

impl Extractor for Fields {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(name, _)| name.as_str()).collect()
    }
}

#[cfg(test)]
#[path = "trace_context_tests.rs"]
mod tests;
