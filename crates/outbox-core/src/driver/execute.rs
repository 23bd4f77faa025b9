//! Command execution: each command becomes a store or publisher call in its own span.

use std::sync::Arc;

use tracing::{Instrument, debug_span, info_span};

use super::run_loop::{Driver, OpFuture};
use crate::park::ParkRequest;
use crate::publisher::Publisher;
use crate::relay::{Command, Outcome};
use crate::store::{LeaseRequest, OutboxStore};
use crate::time::Timestamp;

/// The parts of a lease call that stay the same for the relay's whole life, owned so a
/// command's future can carry them.
struct LeaseIdentity {
    relay_id: String,
    bucket_count: u32,
    lease_duration: std::time::Duration,
}

impl LeaseIdentity {
    fn request<'a>(&'a self, now: Timestamp, busy: &'a [i32]) -> LeaseRequest<'a> {
        LeaseRequest {
            relay_id: &self.relay_id,
            bucket_count: self.bucket_count,
            lease_duration: self.lease_duration,
            now,
            busy,
        }
    }
}

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
        let bucket_count = options.bucket_count().get();
        let lease = LeaseIdentity {
            relay_id: options.relay_id().to_owned(),
            bucket_count,
            lease_duration: options.lease_duration(),
        };
        match command {
            Command::AcquireLeases { now, busy } => {
                let span = debug_span!(parent: &cycle, "store.acquire_leases", bucket_count);
                Box::pin(
                    async move {
                        Outcome::Acquired(store.acquire_leases(&lease.request(now, &busy)).await)
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
            Command::FetchBatch {
                bucket,
                after,
                limit,
            } => {
                let span = debug_span!(parent: &cycle, "store.next_batch", bucket, after, batch_size = limit);
                Box::pin(
                    async move {
                        Outcome::Fetched {
                            bucket,
                            result: store.next_batch(bucket, after, limit).await,
                        }
                    }
                    .instrument(span),
                )
            }
            Command::Publish { bucket, batch } => {
                let publisher = Arc::clone(&self.publisher);
                let span = info_span!(parent: &cycle, "publish", bucket, batch_size = batch.len());
                Box::pin(
                    async move {
                        Outcome::Published {
                            bucket,
                            outcome: publisher.publish(&batch).await,
                        }
                    }
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
                        Outcome::Deleted {
                            bucket,
                            result: store
                                .delete_published(bucket, batch.get(..count).unwrap_or(&batch))
                                .await,
                        }
                    }
                    .instrument(span),
                )
            }
            Command::RenewLeases { now, buckets } => {
                let span = debug_span!(parent: &cycle, "store.renew_leases", owned = buckets.len());
                Box::pin(
                    async move {
                        Outcome::Renewed(
                            store.renew_leases(&lease.request(now, &[]), &buckets).await,
                        )
                    }
                    .instrument(span),
                )
            }
            Command::LoadHolds { bucket } => {
                let span = debug_span!(parent: &cycle, "store.parked_holds", bucket);
                Box::pin(
                    async move {
                        Outcome::HoldsLoaded {
                            bucket,
                            result: store.parked_holds(bucket).await,
                        }
                    }
                    .instrument(span),
                )
            }
            Command::ParkRows { bucket, now, rows } => {
                let span = info_span!(parent: &cycle, "store.park_rows", bucket, rows = rows.len());
                Box::pin(
                    async move {
                        let request = ParkRequest {
                            relay_id: &lease.relay_id,
                            now,
                            bucket,
                            rows: &rows,
                        };
                        Outcome::Parked {
                            bucket,
                            result: store.park_rows(&request).await,
                        }
                    }
                    .instrument(span),
                )
            }
            Command::ReleaseLeases => {
                let span = debug_span!(parent: &cycle, "store.release_leases");
                Box::pin(
                    async move { Outcome::Released(store.release_leases(&lease.relay_id).await) }
                        .instrument(span),
                )
            }
        }
    }
}
