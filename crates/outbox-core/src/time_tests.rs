use super::*;

#[test]
fn system_time_round_trip() {
    let t = Timestamp::from_millis(1_700_000_000_123);
    assert_eq!(Timestamp::from_system_time(t.to_system_time()), t);
    let before = Timestamp::from_millis(-5_000);
    assert_eq!(Timestamp::from_system_time(before.to_system_time()), before);
}

#[test]
fn arithmetic_saturates_and_clamps() {
    let t = Timestamp::from_millis(1_000);
    assert_eq!(t.saturating_add(Duration::from_secs(2)).as_millis(), 3_000);
    assert_eq!(t.saturating_sub(Duration::from_secs(2)).as_millis(), -1_000);
    assert_eq!(
        Timestamp::from_millis(i64::MAX).saturating_add(Duration::from_secs(1)),
        Timestamp::from_millis(i64::MAX)
    );
    assert_eq!(
        t.saturating_duration_since(Timestamp::from_millis(5_000)),
        Duration::ZERO
    );
    assert_eq!(
        Timestamp::from_millis(5_000).saturating_duration_since(t),
        Duration::from_secs(4)
    );
}
