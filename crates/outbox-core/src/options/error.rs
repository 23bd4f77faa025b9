//! [`OptionsError`]: why [`build`](super::RelayOptionsBuilder::build) rejected the
//! options, one variant per rule.

use std::time::Duration;

use crate::validate::LabelError;

/// A rejected option, naming the option and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// `batch_size` of zero.
    #[error("batch_size must be at least 1")]
    BatchSizeZero,
    /// `max_concurrent_lanes` of zero.
    #[error("max_concurrent_lanes must be at least 1")]
    ConcurrentLanesZero,
    /// A duration option that must be positive is zero.
    #[error("{0} must be greater than zero")]
    ZeroDuration(&'static str),
    /// Renewing no sooner than the lease expires would let every lease lapse.
    #[error(
        "lease_renew_interval ({renew:?}) must be shorter than lease_duration ({lease:?}); the difference is the tolerated clock skew"
    )]
    RenewNotBelowLease {
        /// The renew interval.
        renew: Duration,
        /// The lease duration.
        lease: Duration,
    },
    /// A publish budget that does not fit in a lease cannot be honoured.
    #[error(
        "max_publish_duration ({budget:?}) plus lease_renew_interval ({renew:?}) must fit within lease_duration ({lease:?})"
    )]
    PublishBudgetTooLong {
        /// The publish budget.
        budget: Duration,
        /// The renew interval.
        renew: Duration,
        /// The lease duration.
        lease: Duration,
    },
    /// `error_backoff` above `max_error_backoff`.
    #[error("error_backoff ({initial:?}) must not exceed max_error_backoff ({max:?})")]
    BackoffOrder {
        /// The first backoff.
        initial: Duration,
        /// The ceiling.
        max: Duration,
    },
    /// A sample that may run longer than the pause between samples makes no sense.
    #[error(
        "metrics_collection_timeout ({timeout:?}) must not exceed metrics_collection_interval ({interval:?})"
    )]
    MetricsTimeoutAboveInterval {
        /// The timeout.
        timeout: Duration,
        /// The interval.
        interval: Duration,
    },
    /// Invalid metrics name.
    #[error("metrics_name {0}")]
    MetricsName(LabelError),
    /// Invalid relay id.
    #[error("relay_id {0}")]
    RelayId(LabelError),
    /// `max_record_size` of zero.
    #[error("max_record_size must be at least 1 byte")]
    MaxRecordSizeZero,
    /// A writer's record limit above the schema's request limit would accept records no
    /// publisher can send.
    #[error(
        "max_record_size ({record} bytes) must not exceed the schema's max_request_size ({request} bytes)"
    )]
    MaxRecordSizeAboveRequestSize {
        /// The writer's limit.
        record: usize,
        /// The schema's request limit.
        request: usize,
    },
}
