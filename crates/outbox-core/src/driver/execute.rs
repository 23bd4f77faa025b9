//! Command execution: each command becomes a store or publisher call in its own span.

use std::sync::Arc;

use tracing::{Instrument, debug_span, info_span};

use super::run_loop::{Driver, OpFuture};
use crate::publisher::Publisher;
use crate::relay::{Command, Outcome};
use crate::store::{LeaseRequest, OutboxStore};
use crate::time::Timestamp;

impl<S: OutboxStore, P: Publisher> Driver<S, P> {
    /// Turns a command into a future; every store call and publish runs in its own span
    /// carrying the bucket and batch size where they apply.
    pub(super) fn execute(&mut self, command: Command) -> OpFuture {
        // Every call belongs to the cycle (acquisition, probe, sweeps) that issued it.
        let cycle = self
            .cycle_span
            .get_or_insert_with(|| debug_span!("outbox_cycle"))
            .clone();
        let store = Arc::clone(&self.store);
        let options = self.machine.options();
        let relay_id = options.relay_id().to_owned();
        let bucket_count = options.bucket_count().get();
        let lease_duration = options.lease_duration();
        let lease = move |now| (relay_id, bucket_count, lease_duration, now);
        match command {
            Command::AcquireLeases { now } => {
                let (relay_id, bucket_count, lease_duration, now) = lease(now);
                let span = debug_span!(parent: &cycle, "store.acquire_leases", bucket_count);
                Box::pin(
                    async move {
                        let request = LeaseRequest {
                            relay_id: &relay_id,
                            bucket_count,
                            lease_duration,
                            now,
                        };
                        Outcome::Acquired(store.acquire_leases(&request).await)
                    }
                    .instrument(span),
                )
            }
            Command::ProbePending { buckets } => {
                let span = debug_span!(parent: &cycle, "store.buckets_with_pending", owned = buckets.len());
                Box::pin(
                    async move {
                        Outcome::Probed(store.buckets_with_pending(&buckets, bucket_count).await)
                    }
                    .instrument(span),
                )
            }
            Command::FetchBatch { bucket, limit } => {
                let span =
                    debug_span!(parent: &cycle, "store.next_batch", bucket, batch_size = limit);
                Box::pin(
                    async move { Outcome::Fetched(store.next_batch(bucket, limit).await) }
                        .instrument(span),
                )
            }
            Command::Publish { bucket, batch } => {
                let publisher = Arc::clone(&self.publisher);
                let span = info_span!(parent: &cycle, "publish", bucket, batch_size = batch.len());
                Box::pin(
                    async move { Outcome::Published(publisher.publish(&batch).await) }
                        .instrument(span),
                )
            }
            Command::DeletePublished {
                bucket,
                batch,
                count,
            } => {
                let span = debug_span!(parent: &cycle, "store.delete_published", bucket, batch_size = count);
                Box::pin(
                    async move {
                        Outcome::Marked(
                            store
                                .delete_published(bucket, batch.get(..count).unwrap_or(&batch))
                                .await,
                        )
                    }
                    .instrument(span),
                )
            }
            Command::RenewLeases { now, buckets } => {
                let (relay_id, bucket_count, lease_duration, now) = lease(now);
                let span = debug_span!(parent: &cycle, "store.renew_leases", owned = buckets.len());
                Box::pin(
                    async move {
                        let request = LeaseRequest {
                            relay_id: &relay_id,
                            bucket_count,
                            lease_duration,
                            now,
                        };
                        Outcome::Renewed(store.renew_leases(&request, &buckets).await)
                    }
                    .instrument(span),
                )
            }
            Command::ReleaseLeases => {
                let (relay_id, ..) = lease(Timestamp::EPOCH);
                let span = debug_span!(parent: &cycle, "store.release_leases");
                Box::pin(
                    async move { Outcome::Released(store.release_leases(&relay_id).await) }
                        .instrument(span),
                )
            }
        }
    }
}
