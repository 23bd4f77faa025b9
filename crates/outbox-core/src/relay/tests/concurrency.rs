//! Bounded concurrency: at most `max_concurrent_lanes` lanes hold work at once, and when
//! more lanes are ready than slots, each gives its slot up after one batch.

use std::collections::VecDeque;

use super::*;

fn with_lanes(max: usize) -> TestRelay {
    TestRelay::new(
        options().max_concurrent_lanes(max).build().unwrap(),
        RENEWING,
    )
}

/// Runs five full buckets to empty, answering the oldest command in flight first, and
/// returns the most buckets that had a command in flight at once.
fn drain_five_buckets(max: usize) -> usize {
    let mut h = with_lanes(max);
    let mut w = World::owning(&[0, 1, 2, 3, 4]);
    for bucket in 0..5 {
        w.add(bucket, 4);
    }
    let mut in_flight: VecDeque<Command> = VecDeque::new();
    let mut most_busy = 0;
    for _ in 0..1_000 {
        in_flight.extend(h.cmds());
        let busy: BTreeSet<i32> = in_flight.iter().filter_map(lane_of).collect();
        assert!(
            busy.len() <= max && h.m.active_lanes() <= max,
            "{} lanes busy ({busy:?}), {} active, with {max} slots",
            busy.len(),
            h.m.active_lanes()
        );
        most_busy = most_busy.max(busy.len());
        let Some(command) = in_flight.pop_front() else {
            break;
        };
        if let Some(outcome) = w.answer(h.ms(), &command) {
            h.m.handle(h.now, outcome);
        }
    }
    assert!(in_flight.is_empty(), "the relay settles");
    for bucket in 0..5 {
        assert_eq!(w.pending_in(bucket), 0, "bucket {bucket} drained");
        let published: Vec<i64> = w
            .publishes_of(bucket)
            .into_iter()
            .flat_map(|(_, ids)| ids)
            .collect();
        let mut sorted = published.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(published, sorted, "bucket {bucket}: in order, each once");
    }
    most_busy
}

#[test]
fn at_most_max_concurrent_lanes_have_work_at_once() {
    assert_eq!(drain_five_buckets(1), 1);
    assert_eq!(drain_five_buckets(2), 2);
    assert_eq!(drain_five_buckets(3), 3);
    assert_eq!(
        drain_five_buckets(8),
        5,
        "every ready lane when slots allow"
    );
}

#[test]
fn the_slots_are_taken_at_once_and_freed_ones_go_to_waiting_lanes() {
    let mut h = with_lanes(2);
    h.start(&[0, 1, 2], &[0, 1, 2]);
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 2", "fetch 1 from head limit 2"]
    );
    h.fetched(0, rows(0, 1..=1));
    assert_eq!(h.briefs(), ["publish 0 [1]"]);
    h.fetched(1, Vec::new());
    assert_eq!(
        h.briefs(),
        ["fetch 2 from head limit 2"],
        "an emptied lane frees its slot"
    );
}

#[test]
fn with_one_slot_lanes_take_turns_one_batch_each() {
    let mut h = with_lanes(1);
    let mut w = World::owning(&[0, 1, 2]);
    w.add(0, 8);
    w.add(1, 4);
    w.add(2, 2);
    h.run(&mut w, 0);
    let order: Vec<i32> = w.published.iter().map(|(_, b, _)| *b).collect();
    assert_eq!(
        order,
        [0, 1, 2, 0, 1, 0, 0],
        "a bounded sweep: no lane takes a second batch while another waits"
    );
    assert_eq!(w.pending.values().map(BTreeSet::len).sum::<usize>(), 0);
}

#[test]
fn with_one_slot_a_lone_ready_lane_still_pipelines() {
    let mut h = with_lanes(1);
    h.start(&[0, 1], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(h.briefs(), ["publish 0 [1, 2]", "fetch 0 after 2 limit 4"]);
}

#[test]
fn with_one_slot_a_lane_gives_its_slot_up_after_one_batch_when_another_waits() {
    let mut h = with_lanes(1);
    h.start(&[0, 1], &[0, 1]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(
        h.briefs(),
        ["publish 0 [1, 2]"],
        "no fetch of bucket 0's next batch while bucket 1 waits for the slot"
    );
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]"]);
    h.deleted(0);
    assert_eq!(
        h.briefs(),
        ["fetch 1 from head limit 2"],
        "bucket 0 is still ready, but bucket 1's turn comes first"
    );
}
