//! Where the relay's time goes: decorators for the store and the publisher that record
//! how long each call took, and the CPU time this process used (to tell whether our
//! code's CPU or the round trips bound a figure).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use outbox_core::{
    Acquired, HoldKey, LeaseRequest, OutboxMessage, OutboxStore, ParkOutcome, ParkRequest,
    PendingMetrics, PublishOutcome, Publisher, RenewOutcome, StoreCapabilities, StoreError,
};

/// Call durations by operation (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct Timings(Arc<Mutex<BTreeMap<&'static str, Vec<Duration>>>>);

impl Timings {
    fn add(&self, op: &'static str, took: Duration) {
        self.0.lock().unwrap().entry(op).or_default().push(took);
    }

    /// `op: n calls, mean, p50, p99` per operation.
    pub fn summary(&self) -> Vec<(String, usize, Duration, Duration, Duration)> {
        let map = self.0.lock().unwrap();
        map.iter()
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
        self.time("publish", self.inner.publish(batch)).await
    }
}

impl<S: OutboxStore> OutboxStore for Timed<S> {
    fn capabilities(&self) -> StoreCapabilities {
        self.inner.capabilities()
    }

    async fn acquire_leases(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        self.time("acquire_leases", self.inner.acquire_leases(request))
            .await
    }

    async fn buckets_with_pending(
        &self,
        owned: &[i32],
        bucket_count: u32,
    ) -> Result<Vec<i32>, StoreError> {
        self.time(
            "probe",
            self.inner.buckets_with_pending(owned, bucket_count),
        )
        .await
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
        out
    }

    async fn delete_published(
        &self,
        bucket: i32,
        published: &[OutboxMessage],
    ) -> Result<(), StoreError> {
        self.time("delete", self.inner.delete_published(bucket, published))
            .await
    }

    async fn renew_leases(
        &self,
        request: &LeaseRequest<'_>,
        buckets: &[i32],
    ) -> Result<RenewOutcome, StoreError> {
        self.time("renew_leases", self.inner.renew_leases(request, buckets))
            .await
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
