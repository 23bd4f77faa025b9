//! The relay's metrics, through the `metrics` facade.
//!
//! Every instrument carries exactly one label, `outbox.name` (the validated
//! [`metrics_name`](crate::RelayOptions::metrics_name)); message ids, keys and relay ids
//! never become labels. Counters and histograms are recorded once per publish call or
//! cycle, never per message.
//!
//! | instrument | kind | meaning |
//! |---|---|---|
//! | `outbox.owned_buckets` | gauge | buckets in the local lease set; summed over the relays of one name in a process |
//! | `outbox.publish.acknowledged` | counter | acknowledged prefix lengths, counted before lease checks and deletion (re-acknowledged retries count again) |
//! | `outbox.publish.failures` | counter | failed publish calls (an error or a short acknowledgement); shutdown cancellation excluded |
//! | `outbox.lease.expirations` | counter | a nonempty owned set invalidated (expired by the local clock, or found lost by a renewal) |
//! | `outbox.lease.slow_calls` | counter | lease calls (acquisitions, renewals) that took half the lease or more: too slow to keep a lease |
//! | `outbox.publish.duration` | histogram, seconds | whole publish calls, failed ones included |
//! | `outbox.cycle.duration` | histogram, seconds | acquisition, probe and sweeps up to the next idle wait or backoff |
//! | `outbox.pending.messages` | gauge | whole-store pending rows from the latest backlog sample (max over the relays of one name) |
//! | `outbox.pending.oldest_age` | gauge, seconds | age of the oldest pending row, growing between samples; future timestamps clamp to 0 |
//! | `outbox.pending.available` | gauge | 1 while a backlog sample is available, else 0 |
//! | `outbox.parked` | counter | rows moved into the parked table, for their own failures or held behind one |
//! | `outbox.parked.messages` | gauge | parked rows in the whole store (latest backlog sample) |
//! | `outbox.parked.oldest_age` | gauge, seconds | time since the oldest parked row was parked; 0 when none is |
//!
//! A gauge cannot be withdrawn through the facade, so while no sample is available the
//! count and age gauges read NaN rather than a misleading zero: PromQL comparisons on NaN
//! are false and dashboards show a gap. A store that knows the count but not the
//! timestamps leaves the age at NaN while `available` is 1 (`outbox-seaorm` dates the
//! oldest row on all three of its databases, SQLite included).
//!
//! Backlog sampling runs only when
//! [`backlog_sampling`](crate::RelayOptionsBuilder::backlog_sampling) is enabled (the
//! facade cannot tell whether anyone records), on its own task, with at most one query
//! in flight per relay.

pub mod names;
#[cfg(feature = "prometheus")]
pub mod prometheus;
mod registry;
mod sampler;

pub use registry::RelayMetrics;
pub use sampler::{BacklogSampler, BacklogSnapshot};
