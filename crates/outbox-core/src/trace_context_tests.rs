use super::*;
use opentelemetry::KeyValue;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn remote(flags: TraceFlags) -> Context {
    let sc = SpanContext::new(
        TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap(),
        SpanId::from_hex("b7ad6b7169203331").unwrap(),
        flags,
        true,
        TraceState::from_key_value([("vendor", "v1")]).unwrap(),
    );
    Context::new().with_remote_span_context(sc)
}

fn value<'h>(headers: &'h Headers, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|h| std::str::from_utf8(h.value.as_deref()?).ok())
}

#[test]
fn injects_the_w3c_headers_and_extracts_them_back() {
    let cx = remote(TraceFlags::SAMPLED).with_baggage([KeyValue::new("tenant", "t-1")]);
    let mut headers = Headers::new();
    inject(&cx, &mut headers);
    assert_eq!(value(&headers, TRACEPARENT), Some(PARENT));
    assert_eq!(value(&headers, TRACESTATE), Some("vendor=v1"));
    assert_eq!(value(&headers, BAGGAGE), Some("tenant=t-1"));

    let back = extract(&headers);
    assert_eq!(
        back.span().span_context().trace_id(),
        cx.span().span_context().trace_id()
    );
    assert_eq!(
        back.span().span_context().span_id(),
        cx.span().span_context().span_id()
    );
    assert!(back.span().span_context().is_remote());
    assert_eq!(
        back.baggage().get("tenant").map(ToString::to_string),
        Some("t-1".to_owned())
    );
}

#[test]
fn unsampled_contexts_are_carried_with_flags_00() {
    let mut headers = Headers::new();
    inject(&remote(TraceFlags::default()), &mut headers);
    assert_eq!(
        value(&headers, TRACEPARENT),
        Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
    );
    assert!(!extract(&headers).span().span_context().is_sampled());
}

#[test]
fn no_context_adds_nothing() {
    let mut headers = Headers::new();
    inject(&Context::new(), &mut headers);
    assert!(headers.is_empty(), "{headers:?}");
    // No tracing-opentelemetry layer in this test binary: no current context.
    let span = tracing::info_span!("request");
    span.in_scope(|| inject_current(&mut headers));
    assert!(headers.is_empty(), "{headers:?}");
    assert!(!extract(&headers).span().span_context().is_valid());
}

#[test]
fn headers_the_caller_set_win() {
    let cx = remote(TraceFlags::SAMPLED).with_baggage([KeyValue::new("k", "v")]);
    let mut headers = Headers::new();
    headers.push("TraceParent", Some(b"caller's".to_vec()));
    inject(&cx, &mut headers);
    let names: Vec<&str> = headers.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        names,
        ["TraceParent", BAGGAGE],
        "no tracestate of another trace"
    );

    let mut headers = Headers::new();
    headers.push(BAGGAGE, Some(b"mine=1".to_vec()));
    inject(&cx, &mut headers);
    assert_eq!(value(&headers, BAGGAGE), Some("mine=1"));
    assert_eq!(value(&headers, TRACEPARENT), Some(PARENT));
    assert_eq!(headers.len(), 3);
}

#[test]
fn pairs_from_a_consumed_record() {
    let record = std::collections::BTreeMap::from([
        ("Traceparent".to_owned(), PARENT.as_bytes().to_vec()),
        ("binary".to_owned(), vec![0xff, 0xfe]),
    ]);
    let cx = extract_pairs(&record);
    assert!(cx.span().span_context().is_valid());
    assert!(cx.span().span_context().is_sampled());
    // No layer: the span exists but cannot be re-parented.
    assert!(!set_parent(&tracing::info_span!("x"), &record));
    assert!(
        !extract_pairs([("traceparent", b"garbage")])
            .span()
            .span_context()
            .is_valid()
    );
}
