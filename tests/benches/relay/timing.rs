//! Where the relay's time goes: decorators for the store and the publisher that record
//! how long each call took, and the CPU time this process used (to tell whether our
//! code's CPU or the round trips bound a figure).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use outbox_core::{
    Acquired, HoldKey, LeaseRequest, OutboxMessage, OutboxStore, ParkOutcome, ParkRequest,
    PendingMetrics, PublishOutcome, Publisher, RenewOutcome, StoreCapabilities, StoreError,
};

/// Call durations by operation, and a journal of what each call asked and got (cheap to
/// clone). The journal is what a failed wait prints: which reads, publishes and deletes
/// touched the bucket of a row that was never acknowledged.
#[derive(Debug, Clone, Default)]
pub struct Timings(Arc<Mutex<Recorded>>);

#[derive(Debug, Default)]
struct Recorded {
    calls: BTreeMap<&'static str, Vec<Duration>>,
    journal: VecDeque<Event>,
}

/// One store or publisher call, as the journal keeps it.
#[derive(Debug, Clone)]
pub struct Event {
    /// When the call was answered.
    pub at: Instant,
    /// The bucket it concerned, if one.
    pub bucket: Option<i32>,
    /// What it asked and what came back.
    pub what: String,
}

/// Events kept; older ones are dropped.
const JOURNAL_LEN: usize = 200_000;

impl Timings {
    fn add(&self, op: &'static str, took: Duration) {
        self.0
            .lock()
            .unwrap()
            .calls
            .entry(op)
            .or_default()
            .push(took);
    }

    fn note(&self, bucket: Option<i32>, what: String) {
        let mut r = self.0.lock().unwrap();
        if r.journal.len() == JOURNAL_LEN {
            r.journal.pop_front();
        }
        r.journal.push_back(Event {
            at: Instant::now(),
            bucket,
            what,
        });
    }

    /// The journal's events about `bucket` (or about no bucket in particular), oldest
    /// first.
    pub fn events_of(&self, bucket: i32) -> Vec<Event> {
        let r = self.0.lock().unwrap();
        r.journal
            .iter()
            .filter(|e| e.bucket.is_none_or(|b| b == bucket))
            .cloned()
            .collect()
    }

    /// `op: n calls, mean, p50, p99` per operation.
    pub fn summary(&self) -> Vec<(String, usize, Duration, Duration, Duration)> {
        let r = self.0.lock().unwrap();
        r.calls
            .iter()
            .map(|(op, v)| {
                let mut v = v.clone();
                v.sort();
                let mean = v.iter().sum::<Duration>() / v.len().max(1) as u32;
                let p = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
                ((*op).to_owned(), v.len(), mean, p(0.5), p(0.99))
            })
            .collect()
    }
}

/// `n ids first..=last` of a batch.
fn ids(batch: &[OutboxMessage]) -> String {
    match (batch.first(), batch.last()) {
        (Some(f), Some(l)) => format!("{} ids {}..={}", batch.len(), f.id, l.id),
        _ => "0 ids".to_owned(),
    }
}

pub struct Timed<T> {
    inner: T,
    timings: Timings,
}

impl<T> Timed<T> {
    pub fn new(inner: T, timings: Timings) -> Self {
        Timed { inner, timings }
    }

    async fn time<R>(&self, op: &'static str, f: impl Future<Output = R>) -> R {
        let t = Instant::now();
        let out = f.await;
        self.timings.add(op, t.elapsed());
        out
    }
}

impl<P: Publisher> Publisher for Timed<P> {
    async fn publish(&self, batch: &[OutboxMessage]) -> PublishOutcome {
        let out = self.time("publish", self.inner.publish(batch)).await;
        self.timings.note(
            batch.first().map(|m| m.bucket),
            format!(
                "publish {}: acknowledged {}, error {:?}",
                ids(batch),
                out.acknowledged,
                out.error.as_ref().map(ToString::to_string)
            ),
        );
        out
    }
}

impl<S: OutboxStore> OutboxStore for Timed<S> {
    fn capabilities(&self) -> StoreCapabilities {
        self.inner.capabilities()
    }

    async fn acquire_leases(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        let out = self
            .time("acquire_leases", self.inner.acquire_leases(request))
            .await;
        self.timings.note(None, format!("acquire_leases: {out:?}"));
        out
    }

    async fn buckets_with_pending(
        &self,
        owned: &[i32],
        bucket_count: u32,
    ) -> Result<Vec<i32>, StoreError> {
        let out = self
            .time(
                "probe",
                self.inner.buckets_with_pending(owned, bucket_count),
            )
            .await;
        self.timings
            .note(None, format!("probe of {owned:?}: {out:?}"));
        out
    }

    async fn next_batch(
        &self,
        bucket: i32,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<OutboxMessage>, StoreError> {
        let t = Instant::now();
        let out = self.inner.next_batch(bucket, after, limit).await;
        let took = t.elapsed();
        self.timings.add("fetch", took);
        // Whether the relay read from the bucket's head or after its cursor: a head read
        // walks the index entries of every row deleted since the last vacuum.
        // A read asked to start after `a` that returns an id `<= a` was answered from the
        // head: the store could not prove the cursor safe (PostgreSQL's snapshot cursor).
        let refused = match (after, &out) {
            (Some(a), Ok(rows)) => rows.first().is_some_and(|m| m.id <= a),
            _ => false,
        };
        self.timings.add(
            match (after, refused) {
                (None, _) => "fetch_from_head",
                (Some(_), true) => "fetch_cursor_refused",
                (Some(_), false) => "fetch_after_cursor",
            },
            took,
        );
        self.timings.note(
            Some(bucket),
            format!(
                "next_batch after {after:?} limit {limit}: {}",
                match &out {
                    Ok(rows) => ids(rows),
                    Err(e) => format!("error {e}"),
                }
            ),
        );
        out
    }

    async fn delete_published(
        &self,
        bucket: i32,
        published: &[OutboxMessage],
    ) -> Result<(), StoreError> {
        let out = self
            .time("delete", self.inner.delete_published(bucket, published))
            .await;
        self.timings
            .note(Some(bucket), format!("delete {}: {out:?}", ids(published)));
        out
    }

    async fn renew_leases(
        &self,
        request: &LeaseRequest<'_>,
        buckets: &[i32],
    ) -> Result<RenewOutcome, StoreError> {
        let out = self
            .time("renew_leases", self.inner.renew_leases(request, buckets))
            .await;
        self.timings
            .note(None, format!("renew_leases {buckets:?}: {out:?}"));
        out
    }

    // Every optional method is forwarded: the trait's defaults answer "unsupported", and
    // `capabilities` above promises what the inner store does.
    async fn release_leases(&self, relay_id: &str) -> Result<(), StoreError> {
        self.time("release_leases", self.inner.release_leases(relay_id))
            .await
    }

    async fn park_rows(&self, request: &ParkRequest<'_>) -> Result<ParkOutcome, StoreError> {
        self.time("park_rows", self.inner.park_rows(request)).await
    }

    async fn parked_holds(&self, bucket: i32) -> Result<Vec<(Option<HoldKey>, i64)>, StoreError> {
        self.time("parked_holds", self.inner.parked_holds(bucket))
            .await
    }

    async fn pending_metrics(&self) -> Result<Option<PendingMetrics>, StoreError> {
        self.inner.pending_metrics().await
    }
}

/// CPU time (user + system) this process used so far; `None` off Linux.
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start after ") ".
    let rest = stat.rsplit_once(") ")?.1;
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // Linux reports clock ticks; USER_HZ is 100 on every mainstream configuration.
    Some(Duration::from_millis((utime + stime) * 10))
}
