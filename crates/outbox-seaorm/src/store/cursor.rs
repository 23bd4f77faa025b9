//! When a keyset cursor may be honoured on PostgreSQL: per bucket, the highest id below
//! which every row that will ever commit has already been returned.
//!
//! # The hazard
//!
//! Rows of different keys commit out of id order. If r50 (key k) is still uncommitted
//! when a read returns rows up to 60, and r50 then commits, followed by r70 (key k), a read
//! `id > 60` returns r70 and never r50: key k's first deliveries are out of order. A read
//! from the head returns r50 first. So a cursor read from `b` is correct only if every
//! committed row with an id `<= b` has been returned by an earlier read.
//!
//! # What a snapshot proves
//!
//! Every read runs in one statement that also returns that statement's own snapshot
//! (`pg_current_snapshot()` is the active snapshot; PostgreSQL >= 13) and the next
//! transaction id to be assigned, read after that snapshot was taken (`N`; see
//! `batches::next_batch_postgres` for how). Suppose a read R saw row `c` (so `c`
//! committed before R's snapshot S was taken). Every id `<= c` was drawn from the
//! sequence before `c` was (a `bigserial` sequence with the default cache of 1 hands ids
//! out in order), so before S. If the transaction that drew it already had a transaction
//! id (xid) then, that xid was assigned before S, so it is below `N`. Hence the record
//! `(c, N)`: once a later snapshot's `pg_snapshot_xmin` is `>= N`, every such transaction
//! has ended, and every id `<= c` is final: committed (and visible to that later
//! snapshot) or rolled back, never to appear again.
//!
//! Why not the snapshot's own `pg_snapshot_xmax`, which the documentation calls the
//! first unassigned xid: PostgreSQL computes it as one past the newest *completed*
//! transaction. A transaction running with a newer xid than every completed one is below
//! no snapshot's `xmax`, is not listed as running, and does not lower `xmin`. With
//! `xmax` as the bound, T_c (xid A) and T_d (xid B > A) running, T_d holding d, T_c
//! committing c > d, a read seeing c records `(c, A + 1)`, and a read while T_d still runs
//! has `xmin = B >= A + 1`: the record matured, the cursor moved past d, and d was never
//! read again (`tests/db/cursor_newer_xid.rs`; it cost one record in 2,500 in a bench run).
//!
//! What it does not prove: that the rows `<= c` that committed *after* R were returned.
//! A cursor `id > c` honoured as soon as the record matures would skip exactly them (the
//! r50 above). So a matured record only moves the bucket's *safe point* `P`, and only by
//! a read that ran from `<= P` and saw them: the read with a mature `(c, X)` in hand sees
//! every final row `<= c`; it returns every visible row above its start unless it hit
//! its limit, so afterwards every row `<= min(c, last id returned)` (or `<= c` when it
//! returned fewer rows than asked) that will ever commit has been returned.
//! A cursor read `after = a` is honoured when `a <= P` and reads from the head otherwise
//! (all or nothing, the rule the simulation checks on the memory store). A first version
//! started such reads at `min(a, P)` instead; `cargo xtask bench` then left one record of
//! 52,500 unacknowledged at 5,000 msg/s, twice, and all-or-nothing did not, so the partial
//! start is gone until that is understood. Under short writer transactions `P` trails the
//! cursor by about one batch, so most pipelined reads fall back to the head; a drain with
//! no concurrent writer (the dead-rows case) is honoured. A transaction holding
//! an xid for long (a long write) pins `P` where it was when that transaction began:
//! reads start there, growing costlier, until it ends. A long *read-only* transaction,
//! the usual vacuum blocker, has no xid and does not hold `P` back.
//!
//! # The limit: an id drawn before the xid
//!
//! A transaction gets its xid at its first write. An `INSERT` evaluates the id's default
//! (`nextval`) before the heap insert assigns the xid, so a transaction whose first write
//! is the outbox insert holds, for the span of that statement, an id without an xid: a
//! snapshot then neither lists it as running nor bounds it by `N`, and a record made
//! in that instant can mature too early. The library's writers close this by taking the
//! xid first (see `enqueue::insert_rows`); writers that insert rows themselves must write
//! their business row first or call `pg_current_xact_id()` before the outbox insert.

use std::collections::{HashMap, VecDeque};

/// Records kept per bucket; older ones are dropped, which only delays the safe point.
const MAX_RECORDS: usize = 64;

/// One bucket's knowledge.
#[derive(Debug, Default, Clone)]
struct Lane {
    /// Every row with an id `<= safe` that will ever commit has been returned.
    safe: Option<i64>,
    /// `(c, n)`: once a snapshot's xmin is `>= n`, every id `<= c` is final. Ascending.
    records: VecDeque<(i64, i64)>,
    /// Where the last read started (`None`: the head), for tests and tracing.
    last_start: Option<Option<i64>>,
}

/// What one read saw, in the terms the cursor needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadOutcome {
    /// Where the read started (exclusive); `None` for the head.
    pub start: Option<i64>,
    /// The highest id returned, if any.
    pub last_id: Option<i64>,
    /// Whether the read returned fewer rows than asked (it saw every visible row above
    /// its start).
    pub exhausted: bool,
    /// `pg_snapshot_xmin` of the read's snapshot.
    pub xmin: i64,
    /// The next transaction id to be assigned, read after the read's snapshot was taken
    /// (not the snapshot's `xmax`: see the module docs).
    pub next_xid: i64,
}

/// Per-bucket safe points of one store instance. A new instance (or a restarted relay)
/// knows nothing and reads from the head.
#[derive(Debug, Default)]
pub(crate) struct SafePoints {
    lanes: HashMap<i32, Lane>,
}

impl SafePoints {
    /// Where a read asked to continue after `after` must start.
    pub(crate) fn start(&self, bucket: i32, after: Option<i64>) -> Option<i64> {
        let safe = self.lanes.get(&bucket).and_then(|l| l.safe);
        // All or nothing, like the memory store the simulation checks: the cursor when
        // it is at or below the safe point, else the head.
        match (after, safe) {
            (Some(a), Some(p)) if a <= p => Some(a),
            _ => None,
        }
    }

    /// Learns from a read of `bucket` (see the module docs for why each step holds).
    pub(crate) fn observe(&mut self, bucket: i32, read: ReadOutcome) {
        let lane = self.lanes.entry(bucket).or_default();
        lane.last_start = Some(read.start);
        if let Some(last) = read.last_id {
            lane.records.push_back((last, read.next_xid));
            if lane.records.len() > MAX_RECORDS {
                lane.records.pop_front();
            }
        }
        // Without a start the read came from the head, which is always complete; a read
        // that started above the safe point may have missed a late row and proves nothing
        // (its records stay for a later read).
        let start_ok = match (read.start, lane.safe) {
            (None, _) => true,
            (Some(s), Some(p)) => s <= p,
            (Some(_), None) => false,
        };
        if !start_ok {
            return;
        }
        // Records whose transactions have all ended: their ids are final, and this read
        // saw the committed ones.
        let mut mature: Option<i64> = None;
        lane.records.retain(|(c, x)| {
            if *x <= read.xmin {
                mature = Some(mature.map_or(*c, |m| m.max(*c)));
                false
            } else {
                true
            }
        });
        let Some(mature) = mature else { return };
        let covered = match (read.exhausted, read.last_id) {
            (true, _) => mature,
            (false, Some(last)) => mature.min(last),
            (false, None) => return,
        };
        lane.safe = Some(lane.safe.map_or(covered, |p| p.max(covered)));
    }

    /// Where the last read of `bucket` started: `None` if there was none, `Some(None)`
    /// for the head.
    pub(crate) fn last_start(&self, bucket: i32) -> Option<Option<i64>> {
        self.lanes.get(&bucket).and_then(|l| l.last_start)
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn no_record_means_head() {
        let p = SafePoints::default();
        assert_eq!(p.start(0, Some(10)), None);
    }

    /// The r50/r70 scenario: r50's transaction (xid 100) runs while rows up to 60 are
    /// read; it commits; the cursor read after 60 must not start above 50.
    #[test]
    fn late_commit_is_not_skipped() {
        let mut p = SafePoints::default();
        // Head read sees up to 60 while xid 100 runs: xmin 100, next xid 101.
        p.observe(0, read(None, Some(60), true, 100, 101));
        assert_eq!(p.start(0, Some(60)), None, "xid 100 may hold a lower id");
        // xid 100 committed; the next read (from the head, as told) sees r50, r70.
        p.observe(0, read(None, Some(70), true, 102, 102));
        assert_eq!(p.start(0, Some(70)), Some(70));
    }

    #[test]
    fn a_matured_record_moves_the_safe_point_only_through_a_covering_read() {
        let mut p = SafePoints::default();
        p.observe(0, read(None, Some(10), false, 5, 6));
        assert_eq!(p.start(0, Some(10)), None);
        // Mature at this read, which was a head read, but it hit its limit at 8.
        p.observe(0, read(None, Some(8), false, 7, 9));
        assert_eq!(
            p.start(0, Some(10)),
            None,
            "above the safe point 8: from the head"
        );
        // A read that started above the safe point teaches nothing.
        p.observe(0, read(Some(9), Some(20), true, 50, 50));
        assert_eq!(p.start(0, Some(20)), None);
        p.observe(0, read(Some(8), Some(20), true, 50, 50));
        assert_eq!(p.start(0, Some(20)), Some(20));
        assert_eq!(
            p.start(0, Some(15)),
            Some(15),
            "never above the caller's cursor"
        );
    }

    #[test]
    fn a_long_writer_pins_the_safe_point() {
        let mut p = SafePoints::default();
        p.observe(0, read(None, Some(10), true, 3, 3));
        assert_eq!(p.start(0, Some(10)), Some(10));
        // xid 3 begins and holds on; later reads never mature.
        for (i, last) in [20, 30, 40].into_iter().enumerate() {
            let s = p.start(0, Some(last - 10));
            p.observe(0, read(s, Some(last), true, 3, 10 + i as i64));
            assert_eq!(p.start(0, Some(last)), None);
        }
        // It ends: the next read (from 10) sees whatever it wrote.
        p.observe(0, read(Some(10), Some(45), true, 20, 20));
        assert_eq!(p.start(0, Some(45)), Some(45));
    }
}
