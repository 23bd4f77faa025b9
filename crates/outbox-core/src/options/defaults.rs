//! The documented defaults of every option (the table in the [module docs](super)).

use std::num::NonZeroU32;
use std::time::Duration;

use super::identity::derive_relay_id;
use super::relay_options::RelayOptions;
use crate::park::ParkPolicy;
use crate::relay_id::HostName;
use crate::schema::OutboxSchema;

/// Default
/// [`RelayOptionsBuilder::max_concurrent_lanes`](super::RelayOptionsBuilder::max_concurrent_lanes):
/// eight lanes keep a store call and a publish in flight for each of eight buckets,
/// which saturated both PostgreSQL and the broker in `cargo xtask bench`, while staying
/// inside a default connection pool.
pub const DEFAULT_MAX_CONCURRENT_LANES: usize = 8;

/// Default
/// [`RelayOptionsBuilder::max_publish_attempts`](super::RelayOptionsBuilder::max_publish_attempts):
/// a permanent failure that repeats three times is not a blip, and three attempts take
/// a few seconds of backoff.
pub const DEFAULT_MAX_PUBLISH_ATTEMPTS: NonZeroU32 = match NonZeroU32::new(3) {
    Some(n) => n,
    None => NonZeroU32::MIN,
};

/// Default metrics name.
pub const DEFAULT_METRICS_NAME: &str = "outbox";

impl Default for RelayOptions {
    /// The documented defaults; the relay id is `<host>-outbox` with the host read from
    /// the environment (see the [module docs](super)), or generated.
    fn default() -> Self {
        RelayOptions::defaults_for(HostName::from_environment().as_ref())
    }
}

impl RelayOptions {
    /// The documented defaults, with the default relay id for `host`.
    pub(super) fn defaults_for(host: Option<&HostName>) -> Self {
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
