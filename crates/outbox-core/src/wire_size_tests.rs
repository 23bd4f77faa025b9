use super::*;

#[test]
fn sizes_add_up() {
    assert_eq!(record_len(0, 0, []), RECORD_FRAMING_MAX);
    assert_eq!(record_len(3, 5, [(2, 4), (1, 0)]), 36 + 8 + 16 + 11);
    assert_eq!(request_overhead(6, 10), 64 + 6 + 10 + 61);
}
