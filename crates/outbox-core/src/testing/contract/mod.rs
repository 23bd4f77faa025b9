//! The behaviour every [`OutboxStore`](crate::OutboxStore) must show, as a reusable async
//! test suite.
//!
//! A backend provides a [`StoreFixture`] factory (a fresh, empty outbox per call) and
//! runs [`run_store_contract`]. Each check states the rule it guards in its panic
//! message. Times are explicit, so the suite never sleeps. A check of an optional
//! capability the store does not claim is reported as not applicable in the returned
//! [`ContractReport`], never passed silently.

mod batches;
mod cursor;
mod fixture;
mod leases;
mod optional;
mod report;
mod suite;
mod support;

pub use batches::{
    delete_published_deletes_exactly_the_listed_rows, next_batch_is_oldest_first_and_bounded,
    out_of_range_bucket_is_fatal, pending_probe_reports_owned_buckets_with_rows,
};
pub use cursor::cursor_read_never_skips_a_late_commit;
pub use fixture::{PendingInsert, StoreFixture};
pub use leases::{
    acquisition_reports_the_buckets_it_waits_for, acquisition_reports_the_heartbeat_it_replaced,
    busy_buckets_are_kept_above_the_share, expired_lease_is_taken_over,
    fair_share_converges_as_relays_join_and_leave, lease_is_live_until_its_expiry,
    live_lease_is_never_granted_twice, single_relay_owns_every_bucket,
};
pub use optional::{
    backlog_metrics_count_and_age, released_leases_are_taken_at_once,
    renewal_extends_held_leases_and_reports_lost_ones,
};
pub(crate) use report::run_check;
pub use report::{Capability, CheckOutcome, ContractReport, NotApplicable};
pub use suite::run_store_contract;
pub use support::row;
