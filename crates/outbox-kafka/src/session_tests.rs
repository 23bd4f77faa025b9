use super::*;

#[test]
fn sequences_wrap_like_kafka() {
    assert_eq!(increment_sequence(0, 3), 3);
    assert_eq!(increment_sequence(i32::MAX - 2, 2), i32::MAX);
    assert_eq!(increment_sequence(i32::MAX - 2, 3), 0);
    assert_eq!(increment_sequence(i32::MAX, 5), 4);
}

#[test]
fn new_generation_restarts_sequences() {
    let cell = SessionCell::default();
    let s1 = cell.install(10, 0);
    let mut p = PartitionSequence::default();
    assert_eq!(p.next_for(&s1), 0);
    p.advance(5);
    assert_eq!(p.next_for(&s1), 5);
    cell.invalidate(s1.generation, "test");
    assert_eq!(cell.current(), None);
    let s2 = cell.install(11, 0);
    assert_eq!(p.next_for(&s2), 0);
    // Invalidating an old generation leaves the new one alone.
    cell.invalidate(s1.generation, "late");
    assert_eq!(cell.current(), Some(s2));
}

#[test]
fn an_armed_guard_invalidates_on_drop() {
    let cell = SessionCell::default();
    let s = cell.install(1, 0);
    {
        let mut g = InFlight::new(&cell, s.generation);
        g.arm();
        g.settle();
    }
    assert_eq!(cell.current(), Some(s));
    {
        let mut g = InFlight::new(&cell, s.generation);
        g.arm();
    }
    assert_eq!(cell.current(), None);
}
