use std::time::Duration;

use super::*;

fn m(ms: u64) -> Monotonic {
    Monotonic::from_millis(ms)
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

#[test]
fn quick_calls_renew_on_the_interval() {
    let mut t = LeaseCallTiming::default();
    t.record(m(0), m(20));
    assert_eq!(t.margin(), ms(30));
    assert_eq!(t.next_renewal(m(1_000), m(7_000), ms(2_000)), m(3_000));
}

#[test]
fn slow_calls_start_the_renewal_early_enough_to_land_before_the_deadline() {
    // Lease 6 s, renew every 5 s, calls of 2 s: on the interval the renewal would start
    // at 5 s and answer at 7 s, after the 6 s deadline.
    let mut t = LeaseCallTiming::default();
    t.record(m(0), m(2_000));
    let start = t.next_renewal(m(0), m(6_000), ms(5_000));
    assert_eq!(start, m(3_000));
    assert!(start.saturating_add(ms(2_000)) < m(6_000));
}

#[test]
fn the_margin_follows_the_slowest_recent_call_and_forgets_old_ones() {
    let mut t = LeaseCallTiming::default();
    t.record(m(0), m(4_000));
    for i in 0..7 {
        t.record(m(10_000 * i), m(10_000 * i + 100));
    }
    assert_eq!(t.margin(), ms(6_000), "the slow call is still remembered");
    t.record(m(100_000), m(100_100));
    assert_eq!(
        t.margin(),
        ms(150),
        "eight quick calls later it is forgotten"
    );
}

#[test]
fn the_renewal_never_starts_before_the_call_it_follows() {
    let mut t = LeaseCallTiming::default();
    t.record(m(0), m(9_000));
    assert_eq!(t.next_renewal(m(500), m(6_500), ms(2_000)), m(500));
}

#[test]
fn calls_of_half_a_lease_are_slow() {
    assert_eq!(judge(ms(2_999), ms(6_000)), None);
    assert_eq!(
        judge(ms(3_000), ms(6_000)),
        Some(SlowLeaseCall {
            took: ms(3_000),
            lease_duration: ms(6_000),
            outlasted_lease: false
        })
    );
    assert!(judge(ms(6_000), ms(6_000)).unwrap().outlasted_lease);
}
