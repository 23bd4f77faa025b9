use super::*;

#[test]
fn examples() {
    assert_eq!(fair_share([], "a", 8), 8);
    assert_eq!(fair_share(["a", "b"], "a", 8), 4);
    assert_eq!(
        fair_shares(["c", "a", "b"], 8),
        vec![("a", 3), ("b", 3), ("c", 2)]
    );
    assert_eq!(fair_share(["a", "b", "c"], "c", 8), 2);
    assert_eq!(
        fair_shares(["a", "b", "c"], 2),
        vec![("a", 1), ("b", 1), ("c", 0)]
    );
    assert_eq!(
        fair_share(["b"], "a", 3),
        2,
        "the caller counts even when missing from the list"
    );
    assert!(fair_shares([], 8).is_empty());
}
