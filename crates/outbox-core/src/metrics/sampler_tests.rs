use super::*;

fn t(ms: u64) -> Monotonic {
    Monotonic::from_millis(ms)
}

fn sample(count: u64) -> Option<PendingMetrics> {
    Some(PendingMetrics {
        count,
        oldest_created_at: None,
        parked_count: None,
        oldest_parked_at: None,
    })
}

#[test]
fn one_outstanding_sample_and_the_interval_counts_from_completion() {
    let mut s = BacklogSampler::new(
        t(0),
        Duration::from_secs(30),
        Duration::from_secs(5),
        false,
        true,
    );
    assert_eq!(s.poll_sample(t(0), false), Ok(Some(t(5_000))));
    assert_eq!(s.poll_sample(t(1), false), Ok(None), "never two at once");
    assert_eq!(s.poll_timeout(), None);
    // A slow sample completing at 100 s schedules the next at 130 s: no catch-up.
    let snap = s.handle_sample(t(100_000), sample(3), false);
    assert_eq!(
        snap,
        BacklogSnapshot::Available(PendingMetrics {
            count: 3,
            oldest_created_at: None,
            parked_count: None,
            oldest_parked_at: None,
        })
    );
    assert_eq!(s.poll_timeout(), Some(t(130_000)));
    assert_eq!(s.poll_sample(t(129_999), false), Ok(None));
    assert!(matches!(s.poll_sample(t(130_000), false), Ok(Some(_))));
}

#[test]
fn failures_clear_the_snapshot() {
    let mut s = BacklogSampler::new(
        t(0),
        Duration::from_secs(30),
        Duration::from_secs(5),
        false,
        true,
    );
    s.poll_sample(t(0), false).unwrap();
    assert_eq!(
        s.handle_sample(t(5_000), None, false),
        BacklogSnapshot::Unavailable
    );
}

#[test]
fn bucket_zero_mode_samples_only_on_the_owner_and_discards_late_samples() {
    let mut s = BacklogSampler::new(
        t(0),
        Duration::from_secs(30),
        Duration::from_secs(5),
        true,
        true,
    );
    assert_eq!(
        s.poll_sample(t(0), false),
        Err(BacklogSnapshot::Unavailable)
    );
    assert_eq!(s.poll_sample(t(30_000), true), Ok(Some(t(35_000))));
    assert_eq!(
        s.handle_sample(t(31_000), sample(7), false),
        BacklogSnapshot::Unavailable,
        "lease lost meanwhile"
    );
}

#[test]
fn unsupported_stores_never_sample() {
    let mut s = BacklogSampler::new(
        t(0),
        Duration::from_secs(30),
        Duration::from_secs(5),
        false,
        false,
    );
    assert_eq!(s.poll_sample(t(0), true), Ok(None));
    assert_eq!(s.poll_timeout(), None);
}
