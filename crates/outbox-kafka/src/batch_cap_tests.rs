use super::*;

#[test]
fn a_refused_batch_halves_its_topic_and_only_shrinks() {
    let mut caps = BatchCaps::default();
    assert_eq!(caps.cap("t"), None);
    assert_eq!(caps.refused("t", 10, 8000), Some(4000));
    assert_eq!(caps.refused("t", 5, 4000), Some(2000));
    // A larger refused batch (planned before the cap was known) never raises it.
    assert_eq!(caps.refused("t", 10, 8000), Some(2000));
    // A single refused record is its own fault: no cap change.
    assert_eq!(caps.refused("t", 1, 600), Some(2000));
    assert_eq!(caps.refused("other", 1, 600), None);
    assert_eq!(caps.cap("other"), None);
}
