//! [`RelayOptions`]: the validated settings a relay runs with, and what it answers
//! about them.

use std::num::NonZeroU32;
use std::time::Duration;

use super::identity::RelayIdSource;
use crate::park::ParkPolicy;
use crate::schema::OutboxSchema;

/// Everything a relay needs to know, validated by
/// [`RelayOptionsBuilder::build`](super::RelayOptionsBuilder::build).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayOptions {
    pub(super) relay_id: String,
    pub(super) relay_id_source: RelayIdSource,
    pub(super) schema: OutboxSchema,
    pub(super) batch_size: usize,
    pub(super) max_concurrent_lanes: usize,
    pub(super) poll_interval: Duration,
    pub(super) lease_duration: Duration,
    pub(super) lease_renew_interval: Duration,
    pub(super) max_publish_duration: Option<Duration>,
    pub(super) metrics_name: String,
    pub(super) metrics_collection_interval: Duration,
    pub(super) metrics_collection_timeout: Duration,
    pub(super) collect_metrics_on_bucket_zero_owner_only: bool,
    pub(super) backlog_sampling: bool,
    pub(super) error_backoff: Duration,
    pub(super) max_error_backoff: Duration,
    pub(super) max_publish_attempts: Option<NonZeroU32>,
    pub(super) park_policy: ParkPolicy,
}

impl RelayOptions {
    /// This relay's identity in the lease tables.
    pub fn relay_id(&self) -> &str {
        &self.relay_id
    }
    /// Where [`relay_id`](Self::relay_id) came from.
    pub fn relay_id_source(&self) -> &RelayIdSource {
        &self.relay_id_source
    }
    /// What this relay shares with the writers: tables, bucket count, message-id header.
    pub fn schema(&self) -> &OutboxSchema {
        &self.schema
    }
    /// Number of ordering buckets, the schema's.
    pub fn bucket_count(&self) -> NonZeroU32 {
        self.schema.bucket_count()
    }
    /// Rows per batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// At most this many lanes (owned buckets) have work in flight at once.
    pub fn max_concurrent_lanes(&self) -> usize {
        self.max_concurrent_lanes
    }
    /// Fallback discovery interval.
    pub fn poll_interval(&self) -> Duration {
        self.poll_interval
    }
    /// Lease duration.
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }
    /// Renewal cadence.
    pub fn lease_renew_interval(&self) -> Duration {
        self.lease_renew_interval
    }
    /// Whole-call publish budget, if set.
    pub fn max_publish_duration(&self) -> Option<Duration> {
        self.max_publish_duration
    }
    /// Header stamped with the message id, the schema's.
    pub fn message_id_header(&self) -> &str {
        self.schema.message_id_header()
    }
    /// The `outbox.name` metric label.
    pub fn metrics_name(&self) -> &str {
        &self.metrics_name
    }
    /// Pause after each backlog sample.
    pub fn metrics_collection_interval(&self) -> Duration {
        self.metrics_collection_interval
    }
    /// Deadline of one backlog sample.
    pub fn metrics_collection_timeout(&self) -> Duration {
        self.metrics_collection_timeout
    }
    /// Whether only the bucket-zero owner samples the backlog.
    pub fn collect_metrics_on_bucket_zero_owner_only(&self) -> bool {
        self.collect_metrics_on_bucket_zero_owner_only
    }
    /// Whether the backlog sampler runs.
    pub fn backlog_sampling(&self) -> bool {
        self.backlog_sampling
    }
    /// First backoff after a failure.
    pub fn error_backoff(&self) -> Duration {
        self.error_backoff
    }
    /// Backoff ceiling.
    pub fn max_error_backoff(&self) -> Duration {
        self.max_error_backoff
    }

    /// Permanent failures of one row before the relay parks it; `None` retries forever.
    pub fn max_publish_attempts(&self) -> Option<NonZeroU32> {
        self.max_publish_attempts
    }

    /// What happens to the later rows of a parked row's key.
    pub fn park_policy(&self) -> ParkPolicy {
        self.park_policy
    }
}
