use super::*;

fn read(
    start: Option<i64>,
    last: Option<i64>,
    exhausted: bool,
    xmin: i64,
    next_xid: i64,
) -> ReadOutcome {
    ReadOutcome {
        start,
        last_id: last,
        exhausted,
        xmin,
        next_xid,
    }
}

/// The start of a plain cursor read, if the plan is one.
fn from(p: &SafePoints, after: Option<i64>) -> Option<i64> {
    match p.plan(0, after) {
        ReadPlan::From(a) => Some(a),
        _ => None,
    }
}

fn observe(p: &mut SafePoints, read: ReadOutcome) {
    let ids: Vec<i64> = read.last_id.into_iter().collect();
    p.observe(0, read, &ids);
}

#[test]
fn no_record_means_head() {
    let p = SafePoints::default();
    assert_eq!(from(&p, Some(10)), None);
}

/// The r50/r70 scenario: r50's transaction (xid 100) runs while rows up to 60 are
/// read; it commits; the cursor read after 60 must not start above 50.
#[test]
fn late_commit_is_not_skipped() {
    let mut p = SafePoints::default();
    // Head read sees up to 60 while xid 100 runs: xmin 100, next xid 101.
    observe(&mut p, read(None, Some(60), true, 100, 101));
    assert_eq!(from(&p, Some(60)), None, "xid 100 may hold a lower id");
    // xid 100 committed; the next read (from the head, as told) sees r50, r70.
    observe(&mut p, read(None, Some(70), true, 102, 102));
    assert_eq!(from(&p, Some(70)), Some(70));
}

#[test]
fn a_matured_record_moves_the_safe_point_only_through_a_covering_read() {
    let mut p = SafePoints::default();
    observe(&mut p, read(None, Some(10), false, 5, 6));
    assert_eq!(from(&p, Some(10)), None);
    // Mature at this read, which was a head read, but it hit its limit at 8.
    observe(&mut p, read(None, Some(8), false, 7, 9));
    assert_eq!(
        from(&p, Some(10)),
        None,
        "above the safe point 8: from the head"
    );
    // A read that started above the safe point teaches nothing.
    observe(&mut p, read(Some(9), Some(20), true, 50, 50));
    assert_eq!(from(&p, Some(20)), None);
    observe(&mut p, read(Some(8), Some(20), true, 50, 50));
    assert_eq!(from(&p, Some(20)), Some(20));
    assert_eq!(
        from(&p, Some(15)),
        Some(15),
        "never above the caller's cursor"
    );
}

#[test]
fn a_long_writer_pins_the_safe_point() {
    let mut p = SafePoints::default();
    observe(&mut p, read(None, Some(10), true, 3, 3));
    assert_eq!(from(&p, Some(10)), Some(10));
    // xid 3 begins and holds on; later reads never mature.
    for (i, last) in [20, 30, 40].into_iter().enumerate() {
        let s = from(&p, Some(last - 10));
        observe(&mut p, read(s, Some(last), true, 3, 10 + i as i64));
        assert_eq!(from(&p, Some(last)), None);
    }
    // It ends: the next read (from 10) sees whatever it wrote.
    observe(&mut p, read(Some(10), Some(45), true, 20, 20));
    assert_eq!(from(&p, Some(45)), Some(45));
}

/// A drain with relays deleting beside it: each read's own record has not matured
/// when it is taken (another lane's delete holds an xid), so the safe point trails the
/// cursor by a batch; the checked read proves the batch in between instead of
/// reading it again from the head.
#[test]
fn a_checked_read_moves_the_safe_point_past_the_cursor() {
    let mut p = SafePoints::default();
    let batch = |from: i64| (from..from + 5).collect::<Vec<i64>>();
    // Head read of 1..=5 while xid 9 (a delete) runs; next xid 10.
    p.observe(0, read(None, Some(5), false, 9, 10), &batch(1));
    assert_eq!(p.plan(0, Some(5)), ReadPlan::Head, "nothing matured yet");
    // A head read (5 rows in the pipeline are returned again, 6..=10 behind them)
    // with the first record matured: the safe point moves to 5.
    let ids: Vec<i64> = (1..=10).collect();
    p.observe(0, read(None, Some(10), false, 11, 12), &ids);
    assert_eq!(p.plan(0, Some(5)), ReadPlan::From(5));
    // The cursor is at 10 now, above the safe point, and the record (10, 12) is
    // known to have matured only once some snapshot's xmin reached 12.
    assert_eq!(p.plan(0, Some(10)), ReadPlan::Head);
    p.observe(1, read(None, None, true, 12, 12), &[]);
    assert_eq!(
        p.plan(0, Some(10)),
        ReadPlan::Checked {
            since: 5,
            after: 10
        }
    );
    // The check saw 7..=10 (6 already deleted): all returned before. It counts.
    let r = read(Some(10), Some(15), false, 12, 13);
    assert!(p.observe_checked(0, r, (5, 10), &[7, 8, 9, 10], &batch(11)));
    assert_eq!(p.plan(0, Some(10)), ReadPlan::From(10));
    assert_eq!(p.last_start(0), Some(Some(10)));
}

/// The check fails on a row in `(since, after]` no read returned (it committed
/// late), and when no record covering `after` has matured by the read's snapshot.
#[test]
fn a_checked_read_is_refused_on_a_late_row_or_an_unmatured_record() {
    let setup = || {
        let mut p = SafePoints::default();
        p.observe(0, read(None, Some(5), true, 3, 3), &[1, 2, 3, 4, 5]);
        assert_eq!(p.plan(0, Some(5)), ReadPlan::From(5));
        // 7 is held by a running transaction (xid 20) while 6 and 8 are read.
        p.observe(0, read(Some(5), Some(8), true, 20, 21), &[6, 8]);
        p.observe(1, read(None, None, true, 21, 21), &[]);
        assert_eq!(p.plan(0, Some(8)), ReadPlan::Checked { since: 5, after: 8 });
        p
    };
    // 7 committed: the check sees it, and no read returned it.
    let mut p = setup();
    let r = read(Some(8), None, true, 21, 21);
    assert!(!p.observe_checked(0, r, (5, 8), &[6, 7, 8], &[]));
    assert_eq!(
        p.plan(0, Some(5)),
        ReadPlan::From(5),
        "the safe point stays"
    );
    // The same check, but this read's snapshot still has xid 20 running.
    let mut p = setup();
    let r = read(Some(8), None, true, 20, 21);
    assert!(!p.observe_checked(0, r, (5, 8), &[6, 8], &[]));
    // Neither touched the records: a head read then moves the safe point.
    p.observe(0, read(None, Some(8), true, 21, 21), &[6, 7, 8]);
    assert_eq!(p.plan(0, Some(8)), ReadPlan::From(8));
}

/// Ids the store could not keep make the check fail, never pass.
#[test]
fn returned_ids_beyond_the_cap_fail_the_check() {
    let mut p = SafePoints::default();
    p.observe(0, read(None, Some(1), true, 3, 3), &[1]);
    let many: Vec<i64> = (2..2 + MAX_RETURNED as i64 + 10).collect();
    let last = *many.last().unwrap();
    p.observe(0, read(Some(1), Some(last), false, 3, 4), &many);
    p.observe(1, read(None, None, true, 4, 4), &[]);
    // Too many kept ids: the plan is a head read, and a check anyway would fail.
    assert_eq!(p.plan(0, Some(last)), ReadPlan::Head);
    let r = read(Some(last), None, true, 4, 4);
    assert!(!p.observe_checked(0, r, (1, last), &many, &[]));
}
