//! Instrument and label names: the strings dashboards and alerts query, in one place so
//! the registry records under exactly the names the module docs list.

/// The one label every instrument carries.
pub const LABEL: &str = "outbox.name";
/// Gauge: owned buckets.
pub const OWNED_BUCKETS: &str = "outbox.owned_buckets";
/// Counter: acknowledged messages.
pub const PUBLISH_ACKNOWLEDGED: &str = "outbox.publish.acknowledged";
/// Counter: failed publish calls.
pub const PUBLISH_FAILURES: &str = "outbox.publish.failures";
/// Counter: invalidated nonempty lease sets.
pub const LEASE_EXPIRATIONS: &str = "outbox.lease.expirations";
/// Counter: lease calls too slow for the lease.
pub const LEASE_SLOW_CALLS: &str = "outbox.lease.slow_calls";
/// Histogram (seconds): publish call duration.
pub const PUBLISH_DURATION: &str = "outbox.publish.duration";
/// Histogram (seconds): cycle duration.
pub const CYCLE_DURATION: &str = "outbox.cycle.duration";
/// Gauge: pending messages in the whole store.
pub const PENDING_MESSAGES: &str = "outbox.pending.messages";
/// Gauge (seconds): age of the oldest pending message.
pub const PENDING_OLDEST_AGE: &str = "outbox.pending.oldest_age";
/// Gauge: 1 when a backlog sample is available.
pub const PENDING_AVAILABLE: &str = "outbox.pending.available";
/// Counter: rows parked.
pub const PARKED: &str = "outbox.parked";
/// Gauge: parked rows in the whole store.
pub const PARKED_MESSAGES: &str = "outbox.parked.messages";
/// Gauge (seconds): time since the oldest parked row was parked.
pub const PARKED_OLDEST_AGE: &str = "outbox.parked.oldest_age";

/// Every instrument name.
pub const ALL: [&str; 13] = [
    OWNED_BUCKETS,
    PUBLISH_ACKNOWLEDGED,
    PUBLISH_FAILURES,
    LEASE_EXPIRATIONS,
    LEASE_SLOW_CALLS,
    PUBLISH_DURATION,
    CYCLE_DURATION,
    PENDING_MESSAGES,
    PENDING_OLDEST_AGE,
    PENDING_AVAILABLE,
    PARKED,
    PARKED_MESSAGES,
    PARKED_OLDEST_AGE,
];
