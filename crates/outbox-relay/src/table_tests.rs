use super::*;

#[test]
fn columns_align_on_the_widest_cell() {
    let table = aligned(
        "  ",
        ["A", "BB"],
        &[["xyz".into(), "1".into()], ["q".into(), "".into()]],
    );
    assert_eq!(table, "  A    BB\n  xyz  1\n  q");
}
