//! [`RelayOptionsBuilder`]: starts from the defaults and takes each setting; nothing is
//! checked before [`build`](RelayOptionsBuilder::build) (see `build.rs`).

use std::num::NonZeroU32;
use std::time::Duration;

use super::relay_options::RelayOptions;
use crate::park::ParkPolicy;
use crate::relay_id::HostName;
use crate::schema::OutboxSchema;

impl RelayOptions {
    /// Starts from the defaults, reading the host name for the default relay id from the
    /// environment once, here (see the [module docs](super)).
    pub fn builder() -> RelayOptionsBuilder {
        let host = HostName::from_environment();
        RelayOptionsBuilder {
            options: RelayOptions::defaults_for(host.as_ref()),
            explicit_id: None,
            host,
        }
    }
}

/// Builder for [`RelayOptions`]; nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
pub struct RelayOptionsBuilder {
    pub(super) options: RelayOptions,
    pub(super) explicit_id: Option<String>,
    pub(super) host: Option<HostName>,
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $ty:ty) => {
        $(#[$doc])*
        pub fn $name(mut self, value: $ty) -> Self {
            self.options.$name = value;
            self
        }
    };
}

impl RelayOptionsBuilder {
    /// This relay's identity (1–128 characters). Default `<host>-<metrics_name>`, or
    /// `relay-<uuid v7>` without a host name (see the [module docs](super)). Every relay
    /// process of an outbox needs its own.
    pub fn relay_id(mut self, id: impl Into<String>) -> Self {
        self.explicit_id = Some(id.into());
        self
    }

    /// The host part of the default relay id, instead of the one read from the
    /// environment. Ignored when [`relay_id`](Self::relay_id) is given.
    pub fn host_name(mut self, name: impl Into<String>) -> Self {
        self.host = Some(HostName {
            name: name.into(),
            source: "explicit",
        });
        self
    }

    /// The tables, bucket count and message-id header shared with the writers (give
    /// the same value to the store, the publisher and the `Outbox`). Default
    /// [`OutboxSchema::default`].
    pub fn schema(mut self, schema: OutboxSchema) -> Self {
        self.options.schema = schema;
        self
    }

    setter!(
        /// Rows per batch (>= 1). Default 500.
        batch_size: usize
    );
    setter!(
        /// At most this many lanes (one per owned bucket) have a fetch, publish or delete
        /// in flight at once (>= 1). Each lane has at most one store call and one publish
        /// in flight, so a store needs up to this many connections for the lanes plus one
        /// for lease calls. 1 drains one bucket at a time. Default
        /// [`DEFAULT_MAX_CONCURRENT_LANES`](super::DEFAULT_MAX_CONCURRENT_LANES).
        max_concurrent_lanes: usize
    );
    setter!(
        /// Fallback discovery interval (> 0). Default 1 s.
        poll_interval: Duration
    );
    setter!(
        /// Lease duration (> 0). Default 30 s.
        lease_duration: Duration
    );
    setter!(
        /// Renewal cadence (> 0, < lease duration). Default 10 s.
        lease_renew_interval: Duration
    );
    setter!(
        /// Pause after each backlog sample (> 0). Default 30 s.
        metrics_collection_interval: Duration
    );
    setter!(
        /// Deadline of one backlog sample (> 0, <= interval). Default 5 s.
        metrics_collection_timeout: Duration
    );
    setter!(
        /// Sample the backlog only on the bucket-zero owner. Default false.
        collect_metrics_on_bucket_zero_owner_only: bool
    );
    setter!(
        /// Run the backlog sampler: one aggregate query per interval on the store's own
        /// connection, feeding the `outbox.pending.*` gauges. Default false, because the
        /// metrics facade cannot tell whether anyone records them.
        backlog_sampling: bool
    );
    setter!(
        /// First backoff after a failure (> 0). Default 1 s.
        error_backoff: Duration
    );
    setter!(
        /// Backoff ceiling (>= error_backoff). Default 30 s.
        max_error_backoff: Duration
    );

    /// Whole-call publish budget; required for stores that cannot renew leases.
    pub fn max_publish_duration(mut self, budget: Duration) -> Self {
        self.options.max_publish_duration = Some(budget);
        self
    }

    /// Permanent failures of one row (errors that blame it, see
    /// [`PublishError::blamed_message`](crate::PublishError::blamed_message)) before
    /// the relay parks it; `None` keeps retrying it forever, stalling its bucket behind
    /// it. Needs a store that parks
    /// ([`StoreCapabilities::parking`](crate::StoreCapabilities::parking)). Default
    /// [`DEFAULT_MAX_PUBLISH_ATTEMPTS`](super::DEFAULT_MAX_PUBLISH_ATTEMPTS).
    pub fn max_publish_attempts(mut self, attempts: Option<NonZeroU32>) -> Self {
        self.options.max_publish_attempts = attempts;
        self
    }

    /// What happens to the later rows of a parked row's key (see [`ParkPolicy`]).
    /// Default [`ParkPolicy::HoldKey`].
    pub fn park_policy(mut self, policy: ParkPolicy) -> Self {
        self.options.park_policy = policy;
        self
    }

    /// The `outbox.name` metric label (1–64 non-blank characters). Default `outbox`.
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options.metrics_name = name.into();
        self
    }
}
