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
//!
//! # Files
//!
//! `relay_options.rs` holds [`RelayOptions`] and what it answers, `defaults.rs` the
//! documented defaults, `identity.rs` where the relay id comes from, `builder.rs` the
//! setters and `build.rs` the rules [`build`](RelayOptionsBuilder::build) checks, each
//! failing with its own [`OptionsError`] (`error.rs`). `backoff.rs` turns the two backoff
//! settings into the shared [`Backoff`](crate::backoff::Backoff) rule.
//!
//! [`OutboxSchema::default`]: crate::schema::OutboxSchema::default
//! [`default_relay_id`]: crate::relay_id::default_relay_id

mod backoff;
mod build;
mod builder;
mod defaults;
mod error;
mod identity;
mod relay_options;

pub use builder::RelayOptionsBuilder;
pub use defaults::{
    DEFAULT_MAX_CONCURRENT_LANES, DEFAULT_MAX_PUBLISH_ATTEMPTS, DEFAULT_METRICS_NAME,
};
pub use error::OptionsError;
pub use identity::RelayIdSource;
pub use relay_options::RelayOptions;

pub use crate::relay_id::HostName;
// The shared limits live in `validate` and `schema`; re-exported here, where they were
// first published.
pub use crate::schema::{DEFAULT_BUCKET_COUNT, DEFAULT_MESSAGE_ID_HEADER};
pub use crate::validate::{MAX_BUCKET_COUNT, MAX_METRICS_NAME_LEN, MAX_RELAY_ID_LEN};

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
