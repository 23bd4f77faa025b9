//! The store contract's runner: every check on a fresh fixture, and the report of what
//! passed and what did not apply.

use std::future::Future;

use super::batches::{
    delete_published_deletes_exactly_the_listed_rows, next_batch_is_oldest_first_and_bounded,
    out_of_range_bucket_is_fatal, pending_probe_reports_owned_buckets_with_rows,
};
use super::cursor::cursor_read_never_skips_a_late_commit;
use super::fixture::StoreFixture;
use super::leases::{
    acquisition_reports_the_buckets_it_waits_for, acquisition_reports_the_heartbeat_it_replaced,
    busy_buckets_are_kept_above_the_share, expired_lease_is_taken_over,
    fair_share_converges_as_relays_join_and_leave, lease_is_live_until_its_expiry,
    live_lease_is_never_granted_twice, single_relay_owns_every_bucket,
};
use super::optional::{
    backlog_metrics_count_and_age, released_leases_are_taken_at_once,
    renewal_extends_held_leases_and_reports_lost_ones,
};
use super::report::{ContractReport, run_check};

/// Runs every check, each on a fresh fixture from `make`; a failing check panics.
/// Returns (and prints) the report: how many checks passed, and each check that did not
/// apply with the capability the store lacks.
pub async fn run_store_contract<F, Fut, X>(make: F) -> ContractReport
where
    F: Fn() -> Fut,
    Fut: Future<Output = X>,
    X: StoreFixture,
{
    let mut report = ContractReport::new("store contract");
    run_check!(report, make, single_relay_owns_every_bucket);
    run_check!(report, make, live_lease_is_never_granted_twice);
    run_check!(report, make, lease_is_live_until_its_expiry);
    run_check!(report, make, expired_lease_is_taken_over);
    run_check!(report, make, fair_share_converges_as_relays_join_and_leave);
    run_check!(report, make, busy_buckets_are_kept_above_the_share);
    run_check!(report, make, pending_probe_reports_owned_buckets_with_rows);
    run_check!(report, make, out_of_range_bucket_is_fatal);
    run_check!(report, make, next_batch_is_oldest_first_and_bounded);
    run_check!(report, make, cursor_read_never_skips_a_late_commit);
    run_check!(
        report,
        make,
        delete_published_deletes_exactly_the_listed_rows
    );
    run_check!(
        report,
        make,
        renewal_extends_held_leases_and_reports_lost_ones
    );
    run_check!(report, make, released_leases_are_taken_at_once);
    run_check!(report, make, backlog_metrics_count_and_age);
    run_check!(report, make, acquisition_reports_the_heartbeat_it_replaced);
    run_check!(report, make, acquisition_reports_the_buckets_it_waits_for);
    println!("{report}");
    report
}

#[cfg(test)]
#[path = "suite_tests.rs"]
mod tests;
