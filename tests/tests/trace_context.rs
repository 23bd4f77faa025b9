//! W3C trace context through the outbox (feature `otel`), end to end on the real broker
//! and each real database: a "request" span enqueues beside a business row, a relay
//! publishes to the broker, a consumer fetches the record and processes it through the
//! inbox; the exported spans form one trace.
//!
//! One tracing subscriber for the process (the relay's tasks run on other threads, which a
//! thread-local default would not reach), with a tracing-opentelemetry layer over an
//! `SdkTracerProvider` exporting into memory. Its sampler drops the root spans named
//! `unsampled_request` (and, parent-based, everything under them) and samples the rest,
//! so the unsampled test runs beside the others. Each test keeps to its own trace id.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, TraceContextExt, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::trace::{
    InMemorySpanExporter, Sampler, SamplingDecision, SamplingResult, SdkTracerProvider,
    ShouldSample, SpanData,
};
use outbox_core::driver::Relay;
use outbox_core::trace_context::{TRACEPARENT, extract_pairs};
use outbox_core::{OutboxMessage, OutboxSchema, RelayOptions};
use outbox_kafka::KafkaPublisher;
use outbox_seaorm::ddl::{
    create_all_statements, drop_all_statements, inbox_create_statements, inbox_drop_statements,
};
use outbox_seaorm::{Backend, EnqueueError, Inbox, InboxTable, OutboxTables, SeaOrmStore};
use outbox_tests::database::{DatabaseKind, outbox_tables_named};
use outbox_tests::kafka::{client, create_topic, header_text, read_partition};
use outbox_tests::{broker_list, brokers, require_broker, unique_name};
use rskafka::record::RecordAndOffset;
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, DbErr};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

/// The root span name the sampler drops.
const UNSAMPLED_ROOT: &str = "unsampled_request";

/// Samples everything except the roots named [`UNSAMPLED_ROOT`] (wrapped in a
/// parent-based sampler, so their descendants are dropped too).
#[derive(Debug, Clone)]
struct DropUnsampledRoots;

impl ShouldSample for DropUnsampledRoots {
    fn should_sample(
        &self,
        _parent: Option<&Context>,
        _trace_id: TraceId,
        name: &str,
        _kind: &SpanKind,
        _attributes: &[KeyValue],
        _links: &[Link],
    ) -> SamplingResult {
        let decision = if name == UNSAMPLED_ROOT {
            SamplingDecision::Drop
        } else {
            SamplingDecision::RecordAndSample
        };
        SamplingResult {
            decision,
            attributes: Vec::new(),
            trace_state: TraceState::default(),
        }
    }
}

struct Telemetry {
    provider: SdkTracerProvider,
    exporter: InMemorySpanExporter,
}

impl Telemetry {
    /// Every span exported so far of `trace`, after flushing.
    fn spans_of(&self, trace: TraceId) -> Vec<SpanData> {
        self.provider.force_flush().unwrap();
        self.exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .collect()
    }
}

/// The process's subscriber, installed once.
fn telemetry() -> &'static Telemetry {
    static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();
    TELEMETRY.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_sampler(Sampler::ParentBased(Box::new(DropUnsampledRoots)))
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("outbox-tests")));
        tracing::subscriber::set_global_default(subscriber).unwrap();
        Telemetry { provider, exporter }
    })
}

/// A database with a fresh outbox, inbox and business table, dropped at the end.
struct Fixture {
    db: DatabaseConnection,
    backend: Backend,
    tables: OutboxTables,
    inbox: InboxTable,
    orders: String,
}

impl Fixture {
    async fn new(kind: DatabaseKind) -> Fixture {
        let url = kind.url();
        let db = Database::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        let backend = Backend::try_from(db.get_database_backend()).unwrap();
        let base = unique_name("otel");
        let tables = outbox_tables_named(&base);
        let inbox = InboxTable::builder()
            .table(format!("{base}_i"))
            .build()
            .unwrap();
        let orders = format!("{base}_orders");
        let mut ddl = create_all_statements(backend, &tables);
        ddl.extend(inbox_create_statements(backend, &inbox));
        ddl.push(format!(
            "CREATE TABLE {orders} (id BIGINT NOT NULL PRIMARY KEY)"
        ));
        for statement in ddl {
            db.execute_unprepared(&statement).await.unwrap();
        }
        Fixture {
            db,
            backend,
            tables,
            inbox,
            orders,
        }
    }

    async fn drop_tables(&self) {
        let mut ddl = drop_all_statements(self.backend, &self.tables);
        ddl.extend(inbox_drop_statements(self.backend, &self.inbox));
        ddl.push(format!("DROP TABLE {}", self.orders));
        for statement in ddl {
            if let Err(e) = self.db.execute_unprepared(&statement).await {
                eprintln!("cleanup: {statement}: {e}");
            }
        }
    }

    async fn count(&self, table: &str) -> i64 {
        let row = self
            .db
            .query_one_raw(sea_orm::Statement::from_string(
                self.db.get_database_backend(),
                format!("SELECT COUNT(*) AS n FROM {table}"),
            ))
            .await
            .unwrap()
            .unwrap();
        row.try_get::<i64>("", "n").unwrap()
    }
}

/// Runs `body` on a fresh fixture with a 120 s limit, dropping the tables afterwards
/// whatever happened.
async fn run<F, Fut>(kind: DatabaseKind, body: F)
where
    F: FnOnce(Arc<Fixture>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    require_broker();
    telemetry();
    let fixture = Arc::new(Fixture::new(kind).await);
    let outcome = tokio::spawn(tokio::time::timeout(
        Duration::from_secs(120),
        body(Arc::clone(&fixture)),
    ))
    .await;
    fixture.drop_tables().await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(_)) => panic!("the test on {kind:?} did not finish within 120 s"),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("the test task on {kind:?} failed: {e}"),
    }
}

/// Enqueues one order event inside `request` (a business row and the event in one
/// transaction), publishes it through a relay on the real broker, and returns the
/// record read back from the topic.
async fn enqueue_and_publish(fx: &Fixture, topic: &str, request: tracing::Span) -> RecordAndOffset {
    let kafka = client(&brokers()).await;
    create_topic(&kafka, topic, 1).await;

    let schema = OutboxSchema::builder()
        .tables(fx.tables.clone())
        .bucket_count(2)
        .build()
        .unwrap();
    let options = RelayOptions::builder()
        .relay_id(unique_name("relay"))
        .schema(schema.clone())
        .build()
        .unwrap();
    let store = SeaOrmStore::new(fx.db.clone(), schema.clone()).unwrap();
    let publisher = KafkaPublisher::builder(broker_list())
        .schema(&schema)
        .build()
        .unwrap();
    let relay = Relay::builder(store, publisher)
        .options(options)
        .spawn()
        .unwrap();
    relay.ready().await.unwrap();

    let orders = fx.orders.clone();
    let topic_owned = topic.to_owned();
    relay
        .outbox()
        .transaction::<_, (), EnqueueError>(&fx.db, |txn| {
            Box::pin(async move {
                txn.execute_unprepared(&format!("INSERT INTO {orders} (id) VALUES (7)"))
                    .await?;
                txn.enqueue(
                    OutboxMessage::builder(topic_owned)
                        .key("order-7")
                        .value(r#"{"id":7}"#),
                )
                .await?;
                Ok(())
            })
        })
        .instrument(request)
        .await
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    let record = loop {
        let mut records = read_partition(&kafka, topic, 0).await;
        if let Some(record) = records.pop() {
            assert!(records.is_empty(), "one record expected");
            break record;
        }
        assert!(Instant::now() < deadline, "nothing published to {topic}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    relay.stop(Duration::from_secs(10)).await.unwrap();
    assert_eq!(fx.count(&fx.orders).await, 1, "the business row committed");
    record
}

/// Processes `record` through the inbox; returns the OpenTelemetry span context the
/// handler ran in.
async fn consume(fx: &Fixture, topic: &str, record: &RecordAndOffset) -> SpanContext {
    let inbox = Inbox::new(fx.inbox.clone());
    let seen = inbox
        .process_record::<_, _, _, _, _, _, DbErr>(
            &fx.db,
            "billing",
            topic,
            &record.record.headers,
            |_txn| {
                Box::pin(async move {
                    Ok(tracing::Span::current()
                        .context()
                        .span()
                        .span_context()
                        .clone())
                })
            },
        )
        .await
        .unwrap()
        .handled()
        .expect("first delivery");
    assert_eq!(
        fx.count(fx.inbox.table()).await,
        1,
        "the inbox row committed"
    );
    seen
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

/// The span id in a `traceparent` value.
fn parent_span_id(traceparent: &str) -> SpanId {
    let id = traceparent.split('-').nth(2).unwrap();
    SpanId::from_hex(id).unwrap()
}

async fn one_trace_from_request_to_consumer(fx: Arc<Fixture>) {
    let topic = unique_name("otel_orders");
    let request = tracing::info_span!("request");
    let request_cx = request.context().span().span_context().clone();
    assert!(request_cx.is_sampled());
    let trace = request_cx.trace_id();

    let record = enqueue_and_publish(&fx, &topic, request.clone()).await;
    drop(request);

    // The record carries the enqueue-time context next to the message id.
    let traceparent = header_text(&record, TRACEPARENT).expect("a traceparent on the record");
    assert!(
        traceparent.starts_with(&format!("00-{trace}-")) && traceparent.ends_with("-01"),
        "{traceparent}"
    );
    assert!(header_text(&record, "x-outbox-message-id").is_some());
    let enqueue_span = parent_span_id(&traceparent);

    let handler_cx = consume(&fx, &topic, &record).await;
    assert_eq!(
        handler_cx.trace_id(),
        trace,
        "the handler runs in the trace"
    );

    let spans = telemetry().spans_of(trace);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    let find = |id: SpanId| spans.iter().find(|s| s.span_context.span_id() == id);

    // The enqueue-time span is the request span or one of its descendants.
    let mut at =
        find(enqueue_span).unwrap_or_else(|| panic!("enqueue span not exported: {names:?}"));
    while at.span_context.span_id() != request_cx.span_id() {
        at = find(at.parent_span_id)
            .unwrap_or_else(|| panic!("{} is not under the request: {names:?}", at.name));
    }

    // The consumer span: kind consumer, child of the enqueue-time span.
    let consumer = spans
        .iter()
        .find(|s| s.name == format!("process {topic}"))
        .unwrap_or_else(|| panic!("no consumer span: {names:?}"));
    assert_eq!(consumer.span_kind, SpanKind::Consumer);
    assert_eq!(consumer.parent_span_id, enqueue_span);
    assert!(consumer.parent_span_is_remote);
    assert_eq!(
        attribute(consumer, "messaging.destination.name"),
        Some(&Value::from(topic.clone()))
    );
    // The handler ran inside the consumer span (or below it).
    let mut at = find(handler_cx.span_id()).expect("handler span exported");
    while at.span_context.span_id() != consumer.span_context.span_id() {
        at = find(at.parent_span_id).expect("the handler is under the consumer span");
    }

    // The producer span: in the relay's own trace (a child of its publish span), linked
    // to the stored context; the topic is this test's alone.
    let producer = telemetry()
        .exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .find(|s| s.name == format!("send {topic}"))
        .unwrap_or_else(|| panic!("no producer span `send {topic}`"));
    assert_eq!(producer.span_kind, SpanKind::Producer);
    for (key, value) in [
        ("messaging.system", Value::from("kafka")),
        ("messaging.destination.name", Value::from(topic.clone())),
        ("messaging.operation.type", Value::from("send")),
        ("messaging.batch.message_count", Value::I64(1)),
    ] {
        assert_eq!(attribute(&producer, key), Some(&value), "{key}");
    }
    let linked: Vec<(TraceId, SpanId)> = producer
        .links
        .links
        .iter()
        .map(|l| (l.span_context.trace_id(), l.span_context.span_id()))
        .collect();
    assert_eq!(linked, [(trace, enqueue_span)]);
}

async fn unsampled_traces_still_carry_the_header(fx: Arc<Fixture>) {
    let topic = unique_name("otel_unsampled");
    let request = tracing::info_span!(UNSAMPLED_ROOT);
    let request_cx = request.context().span().span_context().clone();
    assert!(request_cx.is_valid() && !request_cx.is_sampled());
    let trace = request_cx.trace_id();

    let record = enqueue_and_publish(&fx, &topic, request).await;
    let traceparent = header_text(&record, TRACEPARENT).expect("a traceparent on the record");
    assert!(
        traceparent.starts_with(&format!("00-{trace}-")) && traceparent.ends_with("-00"),
        "{traceparent}"
    );
    let stored = extract_pairs(&record.record.headers);
    assert!(!stored.span().span_context().is_sampled());

    // The consumer stays in the trace, and unsampled with it.
    let handler_cx = consume(&fx, &topic, &record).await;
    assert_eq!(handler_cx.trace_id(), trace);
    assert!(!handler_cx.is_sampled());
    assert!(telemetry().spans_of(trace).is_empty(), "nothing sampled");
}

macro_rules! on_each_database {
    ($name:ident => $body:path) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::run(super::DatabaseKind::Postgres, $body).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                super::run(super::DatabaseKind::MySql, $body).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::run(super::DatabaseKind::Sqlite, $body).await
            }
        }
    };
}

on_each_database!(one_trace => super::one_trace_from_request_to_consumer);
on_each_database!(unsampled => super::unsampled_traces_still_carry_the_header);
