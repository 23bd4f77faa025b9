//! Tests of the relay handle's helpers that start no process: cleaning its log.

#[test]
fn strips_ansi() {
    assert_eq!(
        super::strip_ansi("\u{1b}[2mowned\u{1b}[0m=[1, 2]"),
        "owned=[1, 2]"
    );
}
