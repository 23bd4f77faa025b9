//! Relay tuning, validated at construction.
//!
//! | option | default | meaning |
//! |---|---|---|
//! | `schema` | [`OutboxSchema::default`] | tables, `bucket_count` and `message_id_header`: what every writer and relay of the outbox shares |
//! | `batch_size` | 500 | rows fetched and published per round trip |
//! | `poll_interval` | 1 s | fallback discovery interval; commit notifications cut idle waits short |
//! | `lease_duration` | 30 s | time from the last acquisition or renewal until another relay may take a bucket over |
//! | `lease_renew_interval` | 10 s | renewal cadence, also while a publish is in flight; `lease_duration - lease_renew_interval` is the tolerated clock skew, less the time the slowest lease call takes |
//! | `max_publish_duration` | none | whole-call publish budget; required only for stores that cannot renew leases |
//! | `metrics_name` | `outbox` | value of the `outbox.name` metric label (1–64 non-blank characters) |
//! | `metrics_collection_interval` | 30 s | pause after each backlog sample completes |
//! | `metrics_collection_timeout` | 5 s | deadline of one backlog sample |
//! | `backlog_sampling` | false | run the backlog sampler (pending count and oldest age gauges) |
//! | `collect_metrics_on_bucket_zero_owner_only` | false | sample the backlog only on the relay holding bucket 0 |
//! | `error_backoff` | 1 s | first wait after a failure; doubles per consecutive failure |
//! | `max_error_backoff` | 30 s | ceiling of that doubling |
//! | `max_publish_attempts` | 3 | permanent failures of one row before it is parked; `None` retries forever |
//! | `park_policy` | `HoldKey` | what happens to a parked row's key: held behind it, or flowing on (`SkipRow`) |
//! | `relay_id` | `<host>-<metrics_name>` | this relay's identity in the lease tables (1–128 characters); see below |
//!
//! # The default relay id
//!
//! A relay restarted under the id it had takes its leases back at once; under a new id
//! it waits a whole `lease_duration` for the old ones to expire (see
//! [`relay_id`](crate::relay_id)). So unless [`RelayOptionsBuilder::relay_id`] is given,
//! the id is `<host>-<metrics_name>` ([`default_relay_id`]): the host part is read once,
//! when [`RelayOptions::builder`] is called (the options' only I/O, kept out of every
//! decision), from `POD_NAME`, then `HOSTNAME`, then the kernel host name
//! ([`HostName::from_environment`]); [`RelayOptionsBuilder::host_name`] overrides it. The
//! id is put together by [`build`](RelayOptionsBuilder::build), so `metrics_name` may be set
//! in any order. When no host name is found the id is generated (`relay-<uuid v7>`) and
//! `build` logs a warning: every restart then waits for the old leases.
//!
//! One process may run one relay per outbox under the default: two relays of one outbox
//! in one process (or two processes on one host, e.g. two containers sharing the host
//! network namespace and name) need explicit, distinct ids, or both stop with
//! [`Misconfiguration::DuplicateRelayId`](crate::Misconfiguration::DuplicateRelayId).
//!
//! On Kubernetes, a StatefulSet's pod names are stable (`relay-0`, `relay-1`), so each
//! replica gets its own id back after a restart; the pod name is also the container's
//! `HOSTNAME`. With a Deployment, pod names carry a random suffix: a container restart in
//! the same pod keeps the name (and the fast takeover), but a rescheduled or replaced pod
//! gets a new id and waits for its predecessor's leases unless that one stopped gracefully
//! (SIGTERM hands the leases back). On a rolling update the new pods have new names and
//! the old pods release their leases as they terminate, so nothing waits. Setting
//! `POD_NAME` from the downward API (`fieldRef: metadata.name`) makes the id explicit when
//! the container's host name is overridden (`hostname:` or `hostNetwork: true`).

use std::num::NonZeroU32;
use std::time::Duration;

use crate::park::ParkPolicy;
pub use crate::relay_id::HostName;
use crate::relay_id::{default_relay_id, generated_relay_id};
use crate::schema::OutboxSchema;
use crate::validate::{LabelError, validate_label};

// The shared limits live in `validate` and `schema`; re-exported here, where they were
// first published.
pub use crate::schema::{DEFAULT_BUCKET_COUNT, DEFAULT_MESSAGE_ID_HEADER};
pub use crate::validate::{MAX_BUCKET_COUNT, MAX_METRICS_NAME_LEN, MAX_RELAY_ID_LEN};

/// Default [`RelayOptionsBuilder::max_concurrent_lanes`]: eight lanes keep a store call
/// and a publish in flight for each of eight buckets, which saturated both PostgreSQL and
/// the broker in `cargo xtask bench`, while staying inside a default connection pool.
pub const DEFAULT_MAX_CONCURRENT_LANES: usize = 8;

/// Default [`RelayOptionsBuilder::max_publish_attempts`]: a permanent failure that
/// repeats three times is not a blip, and three attempts take a few seconds of backoff.
pub const DEFAULT_MAX_PUBLISH_ATTEMPTS: NonZeroU32 = match NonZeroU32::new(3) {
    Some(n) => n,
    None => NonZeroU32::MIN,
};

/// Default metrics name.
pub const DEFAULT_METRICS_NAME: &str = "outbox";

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

/// Everything a relay needs to know, validated by [`RelayOptionsBuilder::build`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayOptions {
    relay_id: String,
    relay_id_source: RelayIdSource,
    schema: OutboxSchema,
    batch_size: usize,
    max_concurrent_lanes: usize,
    poll_interval: Duration,
    lease_duration: Duration,
    lease_renew_interval: Duration,
    max_publish_duration: Option<Duration>,
    metrics_name: String,
    metrics_collection_interval: Duration,
    metrics_collection_timeout: Duration,
    collect_metrics_on_bucket_zero_owner_only: bool,
    backlog_sampling: bool,
    error_backoff: Duration,
    max_error_backoff: Duration,
    max_publish_attempts: Option<NonZeroU32>,
    park_policy: ParkPolicy,
}

/// Where a relay's id came from, for the log line that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayIdSource {
    /// Given to [`RelayOptionsBuilder::relay_id`].
    Explicit,
    /// `<host>-<metrics_name>`, the host read from this source (`POD_NAME`, `HOSTNAME`,
    /// the kernel host name, or `explicit` for [`RelayOptionsBuilder::host_name`]).
    Host(&'static str),
    /// Generated because no host name was found: restarts wait for the old leases.
    Generated,
}

impl Default for RelayOptions {
    /// The documented defaults; the relay id is `<host>-outbox` with the host read from
    /// the environment (see the [module docs](self)), or generated.
    fn default() -> Self {
        RelayOptions::defaults_for(HostName::from_environment().as_ref())
    }
}

impl RelayOptions {
    /// The documented defaults, with the default relay id for `host`.
    fn defaults_for(host: Option<&HostName>) -> Self {
        let (relay_id, relay_id_source) = derive_relay_id(host, DEFAULT_METRICS_NAME);
        RelayOptions {
            relay_id,
            relay_id_source,
            schema: OutboxSchema::default(),
            batch_size: 500,
            max_concurrent_lanes: DEFAULT_MAX_CONCURRENT_LANES,
            poll_interval: Duration::from_secs(1),
            lease_duration: Duration::from_secs(30),
            lease_renew_interval: Duration::from_secs(10),
            max_publish_duration: None,
            metrics_name: DEFAULT_METRICS_NAME.to_owned(),
            metrics_collection_interval: Duration::from_secs(30),
            metrics_collection_timeout: Duration::from_secs(5),
            collect_metrics_on_bucket_zero_owner_only: false,
            backlog_sampling: false,
            error_backoff: Duration::from_secs(1),
            max_error_backoff: Duration::from_secs(30),
            max_publish_attempts: Some(DEFAULT_MAX_PUBLISH_ATTEMPTS),
            park_policy: ParkPolicy::HoldKey,
        }
    }
}

/// The default id for `host` and `metrics_name`, or a generated one.
fn derive_relay_id(host: Option<&HostName>, metrics_name: &str) -> (String, RelayIdSource) {
    host.and_then(|h| default_relay_id(&h.name, metrics_name).map(|id| (id, h.source)))
        .map_or_else(
            || (generated_relay_id(), RelayIdSource::Generated),
            |(id, source)| (id, RelayIdSource::Host(source)),
        )
}

impl RelayOptions {
    /// Starts from the defaults, reading the host name for the default relay id from the
    /// environment once, here (see the [module docs](self)).
    pub fn builder() -> RelayOptionsBuilder {
        let host = HostName::from_environment();
        RelayOptionsBuilder {
            options: RelayOptions::defaults_for(host.as_ref()),
            explicit_id: None,
            host,
        }
    }

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

    /// Backoff after `consecutive_failures` failures in a row (1 = first failure):
    /// `error_backoff` doubled per further failure, capped at `max_error_backoff`.
    pub fn backoff_after(&self, consecutive_failures: u32) -> Duration {
        crate::backoff::exponential(
            self.error_backoff,
            self.max_error_backoff,
            consecutive_failures,
        )
    }
}

/// Builder for [`RelayOptions`]; nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
pub struct RelayOptionsBuilder {
    options: RelayOptions,
    explicit_id: Option<String>,
    host: Option<HostName>,
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
    /// `relay-<uuid v7>` without a host name (see the [module docs](self)). Every relay
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
        /// [`DEFAULT_MAX_CONCURRENT_LANES`].
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
    /// [`PublishError::blamed_message`](crate::PublishError::blamed_message)) before the
    /// relay parks it; `None` keeps retrying it forever, stalling its bucket behind it.
    /// Needs a store that parks ([`StoreCapabilities::parking`](crate::StoreCapabilities::parking)).
    /// Default [`DEFAULT_MAX_PUBLISH_ATTEMPTS`].
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

    /// Validates every rule and returns the options, or the first violation.
    pub fn build(self) -> Result<RelayOptions, OptionsError> {
        let mut o = self.options;
        validate_label(&o.metrics_name, MAX_METRICS_NAME_LEN).map_err(OptionsError::MetricsName)?;
        (o.relay_id, o.relay_id_source) = match self.explicit_id {
            Some(id) => (id, RelayIdSource::Explicit),
            None => derive_relay_id(self.host.as_ref(), &o.metrics_name),
        };
        if o.relay_id_source == RelayIdSource::Generated {
            tracing::warn!(
                relay_id = %o.relay_id,
                "no host name found (POD_NAME, HOSTNAME, {}): the relay id is generated, so a restart after a crash waits a whole lease_duration for the old leases; set a stable relay id",
                crate::relay_id::KERNEL_HOSTNAME_PATH
            );
        }
        validate_label(&o.relay_id, MAX_RELAY_ID_LEN).map_err(OptionsError::RelayId)?;
        if o.batch_size == 0 {
            return Err(OptionsError::BatchSizeZero);
        }
        if o.max_concurrent_lanes == 0 {
            return Err(OptionsError::ConcurrentLanesZero);
        }
        for (name, value) in [
            ("poll_interval", o.poll_interval),
            ("lease_duration", o.lease_duration),
            ("lease_renew_interval", o.lease_renew_interval),
            ("metrics_collection_interval", o.metrics_collection_interval),
            ("metrics_collection_timeout", o.metrics_collection_timeout),
            ("error_backoff", o.error_backoff),
            ("max_error_backoff", o.max_error_backoff),
        ] {
            if value.is_zero() {
                return Err(OptionsError::ZeroDuration(name));
            }
        }
        if o.max_publish_duration
            .is_some_and(|budget| budget.is_zero())
        {
            return Err(OptionsError::ZeroDuration("max_publish_duration"));
        }
        if o.lease_renew_interval >= o.lease_duration {
            return Err(OptionsError::RenewNotBelowLease {
                renew: o.lease_renew_interval,
                lease: o.lease_duration,
            });
        }
        if let Some(budget) = o.max_publish_duration
            && budget.saturating_add(o.lease_renew_interval) > o.lease_duration
        {
            return Err(OptionsError::PublishBudgetTooLong {
                budget,
                renew: o.lease_renew_interval,
                lease: o.lease_duration,
            });
        }
        if o.error_backoff > o.max_error_backoff {
            return Err(OptionsError::BackoffOrder {
                initial: o.error_backoff,
                max: o.max_error_backoff,
            });
        }
        if o.metrics_collection_timeout > o.metrics_collection_interval {
            return Err(OptionsError::MetricsTimeoutAboveInterval {
                timeout: o.metrics_collection_timeout,
                interval: o.metrics_collection_interval,
            });
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn defaults_match_the_documented_table() {
        let o = RelayOptions::builder().build().unwrap();
        assert_eq!(o.bucket_count().get(), 8);
        assert_eq!(o.batch_size(), 500);
        assert_eq!(o.max_concurrent_lanes(), DEFAULT_MAX_CONCURRENT_LANES);
        assert_eq!(o.poll_interval(), secs(1));
        assert_eq!(o.lease_duration(), secs(30));
        assert_eq!(o.lease_renew_interval(), secs(10));
        assert_eq!(o.max_publish_duration(), None);
        assert_eq!(o.message_id_header(), "x-outbox-message-id");
        assert_eq!(o.metrics_name(), "outbox");
        assert_eq!(o.metrics_collection_interval(), secs(30));
        assert_eq!(o.metrics_collection_timeout(), secs(5));
        assert!(!o.collect_metrics_on_bucket_zero_owner_only());
        assert_eq!(o.error_backoff(), secs(1));
        assert_eq!(o.max_error_backoff(), secs(30));
        let expected = HostName::from_environment()
            .and_then(|h| default_relay_id(&h.name, "outbox"))
            .expect("a test machine has a host name");
        assert_eq!(o.relay_id(), expected, "<host>-<metrics_name>");
        assert_eq!(
            o.relay_id(),
            RelayOptions::builder().build().unwrap().relay_id(),
            "stable across restarts"
        );
    }

    #[test]
    fn the_default_relay_id_follows_the_host_and_the_outbox_name() {
        let o = RelayOptions::builder()
            .host_name("orders-relay-0")
            .metrics_name("orders")
            .build()
            .unwrap();
        assert_eq!(o.relay_id(), "orders-relay-0-orders");
        assert_eq!(o.relay_id_source(), &RelayIdSource::Host("explicit"));
        let o = RelayOptions::builder()
            .metrics_name("orders")
            .relay_id("mine")
            .host_name("ignored")
            .build()
            .unwrap();
        assert_eq!(
            (o.relay_id(), o.relay_id_source()),
            ("mine", &RelayIdSource::Explicit),
            "an explicit id wins"
        );
        let o = RelayOptions::builder().host_name("\u{1}").build().unwrap();
        assert!(o.relay_id().starts_with("relay-"), "{}", o.relay_id());
        assert_eq!(o.relay_id_source(), &RelayIdSource::Generated);
    }

    #[test]
    fn each_rule_rejects_with_its_own_error() {
        let b = RelayOptions::builder;
        assert_eq!(b().batch_size(0).build(), Err(OptionsError::BatchSizeZero));
        assert_eq!(
            b().max_concurrent_lanes(0).build(),
            Err(OptionsError::ConcurrentLanesZero)
        );
        assert_eq!(
            b().poll_interval(Duration::ZERO).build(),
            Err(OptionsError::ZeroDuration("poll_interval"))
        );
        assert_eq!(
            b().max_publish_duration(Duration::ZERO).build(),
            Err(OptionsError::ZeroDuration("max_publish_duration"))
        );
        assert_eq!(
            b().lease_renew_interval(secs(30)).build(),
            Err(OptionsError::RenewNotBelowLease {
                renew: secs(30),
                lease: secs(30)
            })
        );
        assert_eq!(
            b().max_publish_duration(secs(21)).build(),
            Err(OptionsError::PublishBudgetTooLong {
                budget: secs(21),
                renew: secs(10),
                lease: secs(30)
            })
        );
        assert!(b().max_publish_duration(secs(20)).build().is_ok());
        assert_eq!(
            b().error_backoff(secs(60)).build(),
            Err(OptionsError::BackoffOrder {
                initial: secs(60),
                max: secs(30)
            })
        );
        assert_eq!(
            b().metrics_collection_timeout(secs(31)).build(),
            Err(OptionsError::MetricsTimeoutAboveInterval {
                timeout: secs(31),
                interval: secs(30)
            })
        );
        assert_eq!(
            b().metrics_name("  ").build(),
            Err(OptionsError::MetricsName(LabelError::Blank))
        );
        assert_eq!(
            b().metrics_name("x".repeat(65)).build(),
            Err(OptionsError::MetricsName(LabelError::TooLong {
                len: 65,
                max: 64
            }))
        );
        assert!(b().metrics_name("x".repeat(64)).build().is_ok());
        assert_eq!(
            b().relay_id("").build(),
            Err(OptionsError::RelayId(LabelError::Blank))
        );
        assert_eq!(
            b().relay_id("r".repeat(129)).build(),
            Err(OptionsError::RelayId(LabelError::TooLong {
                len: 129,
                max: 128
            }))
        );
    }

    #[test]
    fn errors_name_the_option() {
        let e = RelayOptions::builder()
            .lease_renew_interval(secs(40))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("lease_renew_interval"), "{e}");
        let e = RelayOptions::builder().batch_size(0).build().unwrap_err();
        assert!(e.to_string().contains("batch_size"), "{e}");
    }

    #[test]
    fn backoff_doubles_up_to_the_ceiling() {
        let o = RelayOptions::builder().build().unwrap();
        assert_eq!(o.backoff_after(1), secs(1));
        assert_eq!(o.backoff_after(2), secs(2));
        assert_eq!(o.backoff_after(5), secs(16));
        assert_eq!(o.backoff_after(6), secs(30));
        assert_eq!(o.backoff_after(u32::MAX), secs(30));
    }
}
