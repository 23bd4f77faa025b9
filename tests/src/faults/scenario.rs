//! The scaffolding every fault scenario repeats: a deadline around the whole scenario, the
//! usual start (tables, topic, relays, a writer, first publications), the fair lease split
//! to wait for, and the usual end (stop the writer, drain the backlog, read the topic
//! back and check it).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::checker::{self, Published, Verdict};
use super::env::FaultEnv;
use super::poll::eventually;
use super::relay::{RelayProcess, RelaySpec};
use super::writer::{Writer, WriterReport};

/// How long the backlog may take to drain once the writer stopped.
const DRAIN_WITHIN: Duration = Duration::from_secs(30);
/// The metric a relay counts acknowledged records in.
const ACKNOWLEDGED: &str = "outbox_publish_acknowledged_total";

/// Runs `scenario`, failing (not hanging) when it takes longer than `limit`.
pub async fn run_within(name: &str, limit: Duration, scenario: impl Future<Output = ()>) {
    if tokio::time::timeout(limit, scenario).await.is_err() {
        panic!("{name} did not finish within {limit:?}");
    }
}

/// One scenario's tables and topic, the relay binary and the bucket count every relay
/// and the writer use.
#[derive(Debug)]
pub struct Scenario {
    /// Tables, topic and queries on them.
    pub env: FaultEnv,
    bin: PathBuf,
    buckets: u32,
}

impl Scenario {
    /// Fresh tables (named after `prefix`) and a topic with `partitions` partitions on
    /// `brokers`.
    pub async fn new(
        bin: &str,
        prefix: &str,
        brokers: &str,
        partitions: i32,
        buckets: u32,
    ) -> Scenario {
        Scenario {
            env: FaultEnv::new(prefix, brokers, partitions).await,
            bin: PathBuf::from(bin),
            buckets,
        }
    }

    /// The settings of a relay process `relay_id` on this scenario (not started).
    pub fn relay(&self, relay_id: &str) -> RelaySpec {
        RelaySpec::new(&self.bin, &self.env, relay_id, self.buckets)
    }

    /// A writer committing `per_txn` records over `keys` keys every 20 ms.
    pub fn writer(&self, keys: usize, per_txn: usize) -> Writer {
        Writer::start(
            &self.env,
            self.buckets,
            keys,
            per_txn,
            Duration::from_millis(20),
        )
    }

    /// The lease split `ids` reach when they share the buckets fairly.
    pub fn fair_split(&self, ids: &[&str]) -> BTreeMap<String, usize> {
        outbox_core::fair_shares(ids.iter().copied(), self.buckets)
            .into_iter()
            .map(|(id, n)| (id.to_owned(), n as usize))
            .collect()
    }

    /// Polls the lease table every 100 ms until the leases are split as `want`: `Ok` with
    /// the time it took, or `Err` with the last split seen once `within` has passed.
    pub async fn wait_for_split(
        &self,
        want: &BTreeMap<String, usize>,
        within: Duration,
    ) -> Result<Duration, BTreeMap<String, usize>> {
        let started = Instant::now();
        loop {
            let now = self.env.leases_by_owner().await;
            if now == *want {
                return Ok(started.elapsed());
            }
            if started.elapsed() >= within {
                return Err(now);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the writer and waits for the backlog to drain; `logs` explains a failure.
    pub async fn drain(&self, writer: Writer, logs: &[&RelayProcess]) -> WriterReport {
        let report = writer.stop().await;
        if !self.env.wait_drained(DRAIN_WITHIN).await {
            panic!(
                "backlog not drained: {} rows pending\n{}",
                self.env.pending().await,
                log_tails(logs, 40)
            );
        }
        report
    }

    /// The whole topic as it is now.
    pub async fn read_topic(&self) -> Vec<Published> {
        checker::read_topic(&self.env.brokers, &self.env.topic).await
    }

    /// Reads the topic back and checks `report` against it: no loss, per-key order,
    /// message ids. Prints the summary under `label`.
    pub async fn check_topic(&self, report: &WriterReport, label: &str) -> Verdict {
        let published = self.read_topic().await;
        let verdict = checker::check(report, &[&published]);
        eprintln!("{label}: {}", verdict.summary());
        verdict.assert_sound(label);
        verdict
    }
}

/// Records the relays have had acknowledged, by their own counters.
pub fn acknowledged(relays: &[&RelayProcess]) -> f64 {
    relays
        .iter()
        .map(|r| r.metric_sum(ACKNOWLEDGED).unwrap_or(0.0))
        .sum()
}

/// Waits up to `within` until `relays` together had more than `more_than` records
/// acknowledged; panics with their logs otherwise.
pub async fn await_acknowledged(relays: &[&RelayProcess], more_than: f64, within: Duration) {
    if !eventually(within, || async { acknowledged(relays) > more_than }).await {
        panic!(
            "the relays had no more than {more_than} records acknowledged within {within:?}\n{}",
            log_tails(relays, 30)
        );
    }
}

/// The last `lines` lines of each relay's log.
pub fn log_tails(relays: &[&RelayProcess], lines: usize) -> String {
    relays
        .iter()
        .map(|r| r.log_tail(lines))
        .collect::<Vec<_>>()
        .join("\n")
}
