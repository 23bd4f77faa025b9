//! The backlog sampler hookup: a task beside the relay that samples the pending backlog
//! for the metrics, following the relay's ownership of bucket zero.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tracing::warn;

use super::clock::Clock;
use crate::metrics::{BacklogSampler, RelayMetrics};
use crate::options::RelayOptions;
use crate::store::OutboxStore;

/// The backlog sampler: its own task, at most one query in flight, each with a deadline,
/// the next one an interval after the previous completed. The age gauge is refreshed every
/// second so that it grows between samples.
pub(super) async fn sample_backlog<S: OutboxStore>(
    store: Arc<S>,
    metrics: Arc<RelayMetrics>,
    owns_bucket_zero: Arc<AtomicBool>,
    options: RelayOptions,
    clock: Clock,
) {
    let mut sampler = BacklogSampler::new(
        clock.now().mono,
        options.metrics_collection_interval(),
        options.metrics_collection_timeout(),
        options.collect_metrics_on_bucket_zero_owner_only(),
        store.capabilities().backlog_metrics,
    );
    loop {
        // Sample deadlines are local (monotonic); the age gauge compares stored wall stamps.
        let now = clock.now();
        match sampler.poll_sample(now.mono, owns_bucket_zero.load(Ordering::Acquire)) {
            Ok(Some(deadline)) => {
                let budget = deadline.saturating_duration_since(now.mono);
                let sample = match tokio::time::timeout(budget, store.pending_metrics()).await {
                    Ok(Ok(sample)) => sample,
                    Ok(Err(error)) => {
                        warn!(%error, "backlog sample failed");
                        None
                    }
                    Err(_) => {
                        warn!(
                            timeout_ms = budget.as_millis() as u64,
                            "backlog sample timed out"
                        );
                        None
                    }
                };
                let done = clock.now();
                let snapshot = sampler.handle_sample(
                    done.mono,
                    sample,
                    owns_bucket_zero.load(Ordering::Acquire),
                );
                metrics.set_backlog(snapshot, done.wall);
                continue;
            }
            Ok(None) => metrics.refresh_age(now.wall),
            Err(snapshot) => metrics.set_backlog(snapshot, now.wall),
        }
        let next = sampler.poll_timeout().map_or(Duration::from_secs(1), |at| {
            at.saturating_duration_since(now.mono)
        });
        tokio::time::sleep(next.min(Duration::from_secs(1))).await;
    }
}
