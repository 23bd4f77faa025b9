//! The exported series that our documentation relies on exist: every series named in
//! `docs/metrics.md`, and every series queried by the Grafana dashboard
//! `docs/grafana/outbox-relays.json`, is in the exporter output of a running relay, so the
//! documented queries, alerts and panels cannot silently refer to nothing.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::time::Duration;

use outbox_core::driver::Relay;
use outbox_core::metrics::names;
use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore, Scripted};
use outbox_core::{RelayOptions, StoreError};
use serde_json::Value;

fn read_doc(path: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn documented_series() -> BTreeSet<String> {
    let doc = read_doc("docs/metrics.md");
    let mut names = BTreeSet::new();
    let bytes = doc.as_bytes();
    let mut i = 0;
    while let Some(pos) = doc[i..].find("outbox_") {
        let start = i + pos;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_lowercase() || bytes[end] == b'_') {
            end += 1;
        }
        let name = doc[start..end].trim_end_matches('_').to_owned();
        // `outbox_name` is the label and `outbox_core` the crate, not series.
        if name != "outbox_name" && name != "outbox_core" {
            names.insert(name);
        }
        i = end;
    }
    names
}

/// The exporter output of a relay that published, failed a publish call, lost its leases
/// and sampled its backlog: every instrument has recorded something. Computed once per
/// process (the recorder is global).
fn exporter_output() -> &'static str {
    static OUTPUT: OnceLock<String> = OnceLock::new();
    OUTPUT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(run_a_relay())
    })
}

async fn run_a_relay() -> String {
    let recorder = outbox_core::metrics::prometheus::builder()
        .unwrap()
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).unwrap();

    let store = MemoryStore::new();
    let publisher = MemoryPublisher::new();
    publisher.script([Scripted::AckPrefix {
        acknowledged: 0,
        permanent: false,
    }]);
    store.enqueue_all([row(1, 0), row(1, 1)]);
    let options = RelayOptions::builder()
        .metrics_name("docs")
        .backlog_sampling(true)
        .metrics_collection_interval(Duration::from_millis(100))
        .metrics_collection_timeout(Duration::from_millis(100))
        .lease_duration(Duration::from_millis(1_500))
        .lease_renew_interval(Duration::from_millis(500))
        .poll_interval(Duration::from_millis(50))
        .error_backoff(Duration::from_millis(20))
        .build()
        .unwrap();
    let relay = Relay::spawn(store.clone(), publisher, options).unwrap();
    // Paused clock: each sleep advances tokio's time as soon as every task waits.
    for _ in 0..200 {
        if store.pending_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(store.pending_count(), 0, "the relay published both rows");
    // Cut the store off long enough for the leases to run out: an expiration.
    store.set_fault_hook(Box::new(|_| Some(StoreError::unavailable("down"))));
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    store.clear_fault_hook();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rendered = handle.render();
    relay.stop(Duration::from_secs(5)).await.unwrap();
    rendered
}

/// The metric names of the exporter's sample lines (`name{labels} value`).
fn exported_series() -> BTreeSet<String> {
    exporter_output()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            l.split(['{', ' '])
                .next()
                .expect("a sample line starts with its name")
                .to_owned()
        })
        .collect()
}

#[test]
fn documented_series_exist_in_the_exporter_output() {
    let rendered = exporter_output();
    let documented = documented_series();
    assert!(
        documented.len() >= 9,
        "the doc names every instrument: {documented:?}"
    );
    for series in &documented {
        assert!(
            rendered
                .lines()
                .any(|l| !l.starts_with('#') && l.starts_with(series.as_str())),
            "{series} is documented but missing from the exporter output:\n{rendered}"
        );
    }
    assert!(
        rendered.contains("outbox_name=\"docs\""),
        "the label is there"
    );
}

/// PromQL words a dashboard query may use besides series names: functions, aggregation
/// keywords and label names. Anything else must be a series the exporter emits, so a
/// misspelt series cannot hide behind an allow-list.
const PROMQL_WORDS: [&str; 11] = [
    "sum",
    "max",
    "min",
    "by",
    "rate",
    "increase",
    "histogram_quantile",
    "label_values",
    "le",
    "instance",
    "outbox_name",
];

/// The identifiers of a query, without string literals, numbers and `$variables`.
fn identifiers(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = query.chars().peekable();
    let mut current = String::new();
    let mut in_string = false;
    let mut in_variable = false;
    while let Some(c) = chars.next() {
        if in_string {
            if c == '\\' {
                chars.next();
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        let word = c.is_ascii_alphanumeric() || c == '_' || c == ':';
        if word {
            current.push(c);
            continue;
        }
        if !current.is_empty() && !in_variable && !current.starts_with(|d: char| d.is_ascii_digit())
        {
            out.push(std::mem::take(&mut current));
        }
        current.clear();
        in_variable = c == '$';
        in_string = c == '"';
    }
    if !current.is_empty() && !in_variable && !current.starts_with(|d: char| d.is_ascii_digit()) {
        out.push(current);
    }
    out
}

fn dashboard() -> Value {
    serde_json::from_str(&read_doc("docs/grafana/outbox-relays.json"))
        .expect("the dashboard is valid JSON")
}

/// Every PromQL query of the dashboard: panel targets and the variable's query.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push(target["expr"].as_str().expect("a target's expr").to_owned());
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
    {
        if variable["type"] == "query" {
            let query = variable["query"]["query"]
                .as_str()
                .expect("a variable query");
            queries.push(query.to_owned());
        }
    }
    queries
}

#[test]
fn every_dashboard_query_names_series_the_exporter_emits() {
    let exported = exported_series();
    let dashboard = dashboard();
    let queries = dashboard_queries(&dashboard);
    assert!(
        queries.len() >= 15,
        "the dashboard has its panels: {queries:?}"
    );
    let mut queried = BTreeSet::new();
    for query in &queries {
        let series: Vec<String> = identifiers(query)
            .into_iter()
            .filter(|w| !PROMQL_WORDS.contains(&w.as_str()))
            .collect();
        assert!(!series.is_empty(), "{query:?} queries no series");
        for name in series {
            assert!(
                exported.contains(&name),
                "{query:?} names {name:?}, which the exporter does not emit; it emits {exported:?}"
            );
            queried.insert(name);
        }
    }
    // And the other way round: every instrument has a panel (throughput, failures, lag,
    // oldest age, owned buckets, lease expirations, parked rows).
    for instrument in names::ALL {
        let base = instrument.replace('.', "_");
        assert!(
            queried.iter().any(|q| q.starts_with(&base)),
            "no dashboard panel shows {instrument} ({base}*); queried: {queried:?}"
        );
    }
}

#[test]
fn dashboard_panels_are_well_formed() {
    let dashboard = dashboard();
    assert_eq!(dashboard["uid"], "outbox-relays");
    let mut ids = BTreeSet::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let id = panel["id"].as_u64().expect("a numeric panel id");
        assert!(ids.insert(id), "panel id {id} is used twice");
        for key in ["x", "y", "w", "h"] {
            assert!(
                panel["gridPos"][key].is_u64(),
                "panel {id} lacks gridPos.{key}"
            );
        }
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(
            panel["datasource"]["uid"], "${datasource}",
            "panel {id} uses the dashboard's data source variable"
        );
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {id} has a query");
        for target in targets {
            let expr = target["expr"].as_str().expect("expr");
            assert!(
                expr.contains("outbox_name=~\"$outbox_name\""),
                "panel {id} filters on the outbox variable: {expr}"
            );
            assert_eq!(
                expr.matches('(').count(),
                expr.matches(')').count(),
                "panel {id}: unbalanced parentheses in {expr}"
            );
        }
    }
}

#[test]
fn identifiers_skip_strings_numbers_and_variables() {
    assert_eq!(
        identifiers(
            r#"histogram_quantile(0.99, sum by (le) (rate(a_b{outbox_name=~"$x y"}[$__rate_interval])))"#
        ),
        [
            "histogram_quantile",
            "sum",
            "by",
            "le",
            "rate",
            "a_b",
            "outbox_name"
        ]
    );
}
