//! Every series named in `docs/metrics.md` exists in the exporter output of a running
//! relay, so the documented queries and alerts cannot silently refer to nothing.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use outbox_core::driver::Relay;
use outbox_core::testing::contract::row;
use outbox_core::testing::{MemoryPublisher, MemoryStore, Scripted};
use outbox_core::{RelayOptions, StoreError};

fn documented_series() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/metrics.md"
    ))
    .unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documented_series_exist_in_the_exporter_output() {
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
    for _ in 0..200 {
        if store.pending_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Cut the store off long enough for the leases to run out: an expiration.
    store.set_fault_hook(Box::new(|_| Some(StoreError::unavailable("down"))));
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    store.clear_fault_hook();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let rendered = handle.render();
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
    relay.stop(Duration::from_secs(5)).await.unwrap();
}
