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
//! A cursor read `after = a` is honoured when `a <= P` (all or nothing, the rule the
//! simulation checks on the memory store). A first version started other reads at
//! `min(a, P)`; `cargo xtask bench` then left one record of 52,500 unacknowledged at
//! 5,000 msg/s, twice. That was most likely the `xmax` bound above, found later; the
//! partial start has not come back.
//!
//! # The checked read: a cursor above the safe point
//!
//! `P` trails a pipelining lane's cursor by a batch whenever a read's own record does
//! not mature at once, which is the rule, not the exception, while other lanes' deletes
//! hold xids: the read of batch N+1 is issued with the cursor at the end of batch N, and
//! only a later read can see N's record mature. Reading from the head then returns the
//! batch still in the pipeline again and walks every dead entry the bucket has left
//! since the last vacuum (`cargo xtask bench --only drain --rows 100000`, counted with
//! `pg_stat_statements`: 165 such reads against 152 honoured ones with 8 lanes, 90,004
//! rows returned by them for 100,000 published; one lane: 8 against 196).
//!
//! So when `a > P` and some record `(c, N)` with `c >= a` has matured by the newest
//! xmin this instance has seen, the read past `a` also lists, in the same statement
//! and snapshot, the visible ids in `(P, a]` (ids only; the rows are not sent). The
//! store keeps the ids its reads returned above `P`. The read counts when a record
//! `(c >= a, N)` has matured by *its own* snapshot's xmin and every id listed is one
//! returned before: every id `<= a` is then final; the committed ones `<= P` were
//! returned (that is `P`), and those in `(P, a]` are visible to this snapshot, so
//! listed, so returned. The read then stands for one that started at `P`, and `P`
//! moves to at least `a`. Otherwise its rows are not used and the store reads from the
//! head at once (a second statement, only then). A kept id set that outgrew its cap
//! fails the check, never passes it.
//!
//! A transaction holding an xid for long (a long write) pins `P` where it was when that
//! transaction began: reads start there, growing costlier, until it ends. A long
//! *read-only* transaction, the usual vacuum blocker, has no xid and does not hold `P`
//! back.
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

use std::collections::{BTreeSet, HashMap, VecDeque};

/// Records kept per bucket; older ones are dropped, which only delays the safe point.
const MAX_RECORDS: usize = 64;

/// Returned ids kept per bucket above its safe point: a few batches' worth. A read that
/// would need more reads from the head.
const MAX_RETURNED: usize = 8_192;

/// How a read asked to continue after a cursor runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadPlan {
    /// From the head of the bucket.
    Head,
    /// Past this id: it is at or below the bucket's safe point.
    From(i64),
    /// Past `after`, which lies above the safe point `since`: the statement also lists
    /// the visible ids in `(since, after]`, and the read counts only if
    /// [`SafePoints::observe_checked`] accepts them.
    Checked { since: i64, after: i64 },
}

/// One bucket's knowledge.
#[derive(Debug, Default, Clone)]
struct Lane {
    /// Every row with an id `<= safe` that will ever commit has been returned.
    safe: Option<i64>,
    /// `(c, n)`: once a snapshot's xmin is `>= n`, every id `<= c` is final. Ascending.
    records: VecDeque<(i64, i64)>,
    /// Where the last read started (`None`: the head), for tests and tracing.
    last_start: Option<Option<i64>>,
    /// Ids above `safe` that reads returned (at most [`MAX_RETURNED`]).
    returned: BTreeSet<i64>,
}

impl Lane {
    /// What a read teaches: its record; when it `covers` the bucket from the safe point
    /// (a head read, or one that started at or below it), the safe point its matured
    /// records prove; and the ids it returned above the safe point, for
    /// [`SafePoints::observe_checked`].
    fn learn(&mut self, read: ReadOutcome, covers: bool, ids: &[i64]) {
        if let Some(last) = read.last_id {
            self.records.push_back((last, read.next_xid));
            if self.records.len() > MAX_RECORDS {
                self.records.pop_front();
            }
        }
        if covers {
            self.move_safe_point(read);
        }
        let safe = self.safe.unwrap_or(i64::MIN);
        // Ids at or below the safe point are settled. Leaving any other id out only makes
        // a later check fail (and that read go to the head), so the cap is safe.
        self.returned = self.returned.split_off(&safe.saturating_add(1));
        for id in ids.iter().filter(|id| **id > safe) {
            if self.returned.len() >= MAX_RETURNED {
                break;
            }
            self.returned.insert(*id);
        }
    }

    /// Records whose transactions have all ended: their ids are final, and this read saw
    /// the committed ones.
    fn move_safe_point(&mut self, read: ReadOutcome) {
        let mut mature: Option<i64> = None;
        self.records.retain(|(c, x)| {
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
        self.safe = Some(self.safe.map_or(covered, |p| p.max(covered)));
    }
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
    /// The highest snapshot xmin any read of this instance returned (xmin is
    /// database-wide), to tell whether a record will have matured by the next read.
    latest_xmin: i64,
}

impl SafePoints {
    /// How a read asked to continue after `after` runs.
    pub(crate) fn plan(&self, bucket: i32, after: Option<i64>) -> ReadPlan {
        let (Some(a), Some(lane)) = (after, self.lanes.get(&bucket)) else {
            return ReadPlan::Head;
        };
        let Some(p) = lane.safe else {
            return ReadPlan::Head;
        };
        if a <= p {
            // All or nothing, like the memory store the simulation checks: the cursor
            // when it is at or below the safe point.
            return ReadPlan::From(a);
        }
        // Above the safe point: check `(p, a]` in the same statement when a record
        // covering `a` has matured by the newest snapshot seen (so it will have by this
        // read's, unless snapshots go backwards, which the check itself then catches).
        let covered = lane
            .records
            .iter()
            .any(|(c, n)| *c >= a && *n <= self.latest_xmin);
        if covered && lane.returned.len() < MAX_RETURNED {
            ReadPlan::Checked { since: p, after: a }
        } else {
            ReadPlan::Head
        }
    }

    /// Learns from a plain read of `bucket` (a [`ReadPlan::Head`] or [`ReadPlan::From`]
    /// read) that returned `ids` (see the module docs for why each step holds).
    pub(crate) fn observe(&mut self, bucket: i32, read: ReadOutcome, ids: &[i64]) {
        self.latest_xmin = self.latest_xmin.max(read.xmin);
        let lane = self.lanes.entry(bucket).or_default();
        lane.last_start = Some(read.start);
        // Without a start the read came from the head, which is always complete; a read
        // that started above the safe point may have missed a late row and proves nothing
        // (its records stay for a later read).
        let start_ok = match (read.start, lane.safe) {
            (None, _) => true,
            (Some(s), Some(p)) => s <= p,
            (Some(_), None) => false,
        };
        lane.learn(read, start_ok, ids);
    }

    /// Learns from a [`ReadPlan::Checked`] read of `bucket` past `after` that returned
    /// `ids`, whose statement also listed `seen`, the visible ids in `(since, after]`.
    /// `true` when the read counts: every id it saw there is one an earlier read
    /// returned, and a record covering `after` has matured by its own snapshot, so no
    /// row at or below `after` that will ever commit is left unreturned. `false`: its
    /// rows must not be used (a row may have committed late below `after`); the caller
    /// reads from the head instead.
    pub(crate) fn observe_checked(
        &mut self,
        bucket: i32,
        read: ReadOutcome,
        (since, after): (i64, i64),
        seen: &[i64],
        ids: &[i64],
    ) -> bool {
        self.latest_xmin = self.latest_xmin.max(read.xmin);
        let lane = self.lanes.entry(bucket).or_default();
        let Some(safe) = lane.safe.filter(|p| *p >= since) else {
            return false;
        };
        let matured = lane
            .records
            .iter()
            .any(|(c, n)| *c >= after && *n <= read.xmin);
        let all_returned = seen
            .iter()
            .all(|id| *id <= safe || lane.returned.contains(id));
        if !(matured && all_returned) {
            return false;
        }
        // Every row `<= since` was returned (the safe point); every final row in
        // `(since, after]` is visible to this snapshot and was returned: the read counts
        // as one that started at the safe point.
        lane.safe = Some(safe.max(after));
        lane.last_start = Some(read.start);
        lane.learn(read, true, ids);
        true
    }

    /// Where the last read of `bucket` started: `None` if there was none, `Some(None)`
    /// for the head.
    pub(crate) fn last_start(&self, bucket: i32) -> Option<Option<i64>> {
        self.lanes.get(&bucket).and_then(|l| l.last_start)
    }
}

#[cfg(test)]
#[path = "cursor_tests.rs"]
mod tests;
