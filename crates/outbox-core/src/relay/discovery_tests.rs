use super::*;

fn t(ms: u64) -> Monotonic {
    Monotonic::from_millis(ms)
}

#[test]
fn discovery_is_forced_at_start_then_periodic() {
    let mut d = Discovery::new(t(0), Duration::from_secs(1));
    assert!(d.due(t(0)));
    d.on_probed(t(0));
    assert!(!d.due(t(999)));
    assert!(d.due(t(1_000)));
    d.force();
    assert!(d.due(t(1)));
    d.on_failed(t(5_000));
    assert!(!d.due(t(4_999)) && d.due(t(5_000)));
}
