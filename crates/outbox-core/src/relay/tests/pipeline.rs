//! A lane's pipeline: batch N+1 is fetched past N's last id while N is published,
//! published only after N was answered, and dropped when N fails; rows still in the
//! pipeline are never fetched twice; a failure never loses a row; a store that honours
//! the cursor is asked for one batch, one that read from below it for one batch plus
//! the rows in the pipeline.

use super::*;

/// Owns buckets 0 and 1, bucket 0 ready, and has published `[1, 2]` of bucket 0 with the
/// fetch of the next batch (past id 2) in flight. Probes run only every minute, so none
/// comes to the rescue of a lane that forgot its bucket still holds rows.
fn publishing_first_batch() -> TestRelay {
    let mut h = TestRelay::new(
        options()
            .poll_interval(std::time::Duration::from_secs(60))
            .build()
            .unwrap(),
        RENEWING,
    );
    h.start(&[0, 1], &[0]);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(
        h.briefs(),
        ["publish 0 [1, 2]", "fetch 0 after 2 limit 4"],
        "batch N+1 is fetched past N's last id while N is published (the limit leaves \
         room for N's rows, should the store read from the head)"
    );
    h
}

#[test]
fn the_next_batch_is_published_only_after_the_previous_one_was_answered() {
    let mut h = publishing_first_batch();
    h.fetched(0, rows(0, 3..=6));
    assert_eq!(h.briefs(), Vec::<String>::new(), "[3, 4] waits for [1, 2]");
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
    h.deleted(0);
    assert_eq!(
        h.briefs(),
        ["fetch 0 after 4 limit 2"],
        "the fetch had a full batch: the lane stays ready; the store honoured the cursor, \
         so one batch is asked for, not one plus the rows in the pipeline"
    );
    h.fetched(0, rows(0, 5..=6));
    assert_eq!(h.briefs(), Vec::<String>::new(), "[5, 6] waits for [3, 4]");
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [3, 4]", "publish 0 [5, 6]"]);
    h.deleted(0);
    assert_eq!(
        h.briefs(),
        ["fetch 0 after 6 limit 2"],
        "a full batch of one: the bucket may hold more"
    );
    h.fetched(0, Vec::new());
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [5, 6]"]);
    h.deleted(0);
    assert_eq!(h.cmd(), None, "drained");
}

#[test]
fn a_failed_publish_drops_the_batch_fetched_behind_it() {
    let mut h = publishing_first_batch();
    h.fetched(0, rows(0, 3..=6));
    h.publish_failed(0, 0);
    assert_eq!(h.briefs(), Vec::<String>::new(), "backing off");
    h.at(1_000);
    let briefs = h.briefs();
    assert!(
        briefs.contains(&"fetch 0 from head limit 2".to_string()),
        "after the backoff the lane reads from the head: {briefs:?}"
    );
    assert!(
        !briefs.iter().any(|b| b.starts_with("publish")),
        "[3, 4] was dropped: {briefs:?}"
    );
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(
        h.briefs(),
        ["publish 0 [1, 2]", "fetch 0 after 2 limit 2"],
        "the failed batch goes first again"
    );
}

#[test]
fn a_failed_publish_drops_the_batch_still_being_fetched() {
    let mut h = publishing_first_batch();
    h.publish_failed(0, 0);
    h.fetched(0, rows(0, 3..=4));
    assert_eq!(h.briefs(), Vec::<String>::new());
    h.at(1_000);
    let briefs = h.briefs();
    assert!(
        briefs.contains(&"fetch 0 from head limit 2".to_string()),
        "{briefs:?}"
    );
    assert!(
        !briefs.iter().any(|b| b.starts_with("publish")),
        "{briefs:?}"
    );
}

#[test]
fn after_a_failure_the_lane_reads_from_the_head_only_once_nothing_of_it_is_in_flight() {
    let mut h = publishing_first_batch();
    h.fetched(0, rows(0, 3..=6));
    h.publish_failed(0, 1);
    assert_eq!(h.briefs(), ["delete 0 [1]"]);
    // The backoff ends while the delete is still in flight.
    h.at(1_000);
    for command in h.cmds() {
        assert!(
            lane_of(&command).is_none(),
            "nothing of the lane while its delete is in flight: {command:?}"
        );
        if matches!(command, Command::ProbePending { .. }) {
            h.m.handle(h.now, Outcome::Probed(Ok(vec![0])));
        }
    }
    h.deleted(0);
    assert_eq!(h.briefs(), ["fetch 0 from head limit 2"]);
    h.fetched(0, rows(0, 2..=3));
    assert_eq!(
        h.briefs(),
        ["publish 0 [2, 3]", "fetch 0 after 3 limit 2"],
        "the unacknowledged row 2 goes out again, before 3"
    );
}

#[test]
fn a_head_read_drops_the_rows_being_published() {
    let mut h = publishing_first_batch();
    // The store could not honour the cursor (a lower id might still commit) and read
    // from the head: rows 1 and 2 are the ones being published.
    h.fetched(0, rows(0, 1..=4));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
}

#[test]
fn a_head_read_drops_the_rows_waiting_to_be_deleted() {
    let mut h = publishing_first_batch();
    // [1, 2] is acknowledged while the fetch is in flight: its delete waits for the
    // lane's store call, and the head read returns its rows again.
    h.acked(0, 2);
    assert_eq!(h.briefs(), Vec::<String>::new());
    h.fetched(0, rows(0, 1..=4));
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
    h.deleted(0);
    assert_eq!(h.briefs(), ["fetch 0 after 4 limit 4"]);
    h.fetched(0, rows(0, 3..=6));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [3, 4]", "publish 0 [5, 6]"]);
}

#[test]
fn rows_a_fetch_leaves_over_keep_the_lane_ready() {
    let mut h = publishing_first_batch();
    // The store honours the cursor: three rows past id 2, more than a batch and fewer
    // than the limit of 4. Only [3, 4] fits the batch; row 5 is still pending.
    h.fetched(0, rows(0, 3..=5));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
    h.deleted(0);
    assert_eq!(
        h.briefs(),
        ["fetch 0 after 4 limit 2"],
        "row 5 was seen and left over: the lane is not drained and must not wait for \
         the next probe"
    );
}

#[test]
fn a_failed_delete_while_the_next_batch_is_published_loses_no_row_and_backs_off() {
    let mut h = publishing_first_batch();
    h.fetched(0, rows(0, 3..=6));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
    h.delete_failed(0);
    let events = h.events();
    assert!(events.iter().any(|e| matches!(
        e,
        RelayEvent::StoreFailed {
            operation: "delete_published",
            bucket: Some(0),
            ..
        }
    )));
    assert_eq!(lane_backoffs(&events, 0), [(1_000, 1)]);
    // [3, 4] was handed out before the failure; its acknowledgement may still be
    // deleted, but nothing new starts until the backoff is over.
    h.acked(0, 2);
    for command in h.cmds() {
        match brief(&command).as_str() {
            "delete 0 [3, 4]" => h.deleted(0),
            other => panic!("only [3, 4]'s delete may run during the backoff: {other}"),
        }
    }
    assert_eq!(h.briefs(), Vec::<String>::new(), "the lane backs off");
    h.at(999);
    assert_eq!(h.briefs(), Vec::<String>::new(), "the lane backs off");
    h.at(1_000);
    let briefs = h.briefs();
    assert!(
        briefs.contains(&"fetch 0 from head limit 2".to_string()),
        "{briefs:?}"
    );
    // Rows 1 and 2 were never deleted: the head read finds them and they go out again.
    h.fetched(0, rows(0, 1..=2));
    assert_eq!(h.briefs(), ["publish 0 [1, 2]", "fetch 0 after 2 limit 2"]);
}

#[test]
fn a_failed_delete_answered_after_the_next_publish_also_backs_off() {
    let mut h = publishing_first_batch();
    h.fetched(0, rows(0, 3..=6));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
    // This time [3, 4] is acknowledged first, then [1, 2]'s delete fails.
    h.acked(0, 2);
    h.delete_failed(0);
    assert_eq!(h.briefs(), ["delete 0 [3, 4]"]);
    h.deleted(0);
    assert_eq!(h.briefs(), Vec::<String>::new(), "the lane backs off");
    h.at(1_000);
    let briefs = h.briefs();
    assert!(
        briefs.contains(&"fetch 0 from head limit 2".to_string()),
        "{briefs:?}"
    );
}

#[test]
fn a_lane_retries_its_unacknowledged_rows_after_the_backoff_without_waiting_for_a_probe() {
    let mut h = publishing_first_batch();
    // The fetch past id 2 finds the bucket drained behind [3, 4]...
    h.fetched(0, rows(0, 3..=4));
    // ...then [1, 2] fails: rows 1 to 4 are all still pending, and the lane knows it.
    h.publish_failed(0, 0);
    assert_eq!(h.briefs(), Vec::<String>::new(), "backing off");
    h.at(1_000);
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 2"],
        "the retry is due at the end of the backoff, not at the next probe (60 s)"
    );
}

#[test]
fn a_lane_retries_rows_whose_delete_failed_after_the_backoff_without_waiting_for_a_probe() {
    let mut h = publishing_first_batch();
    h.fetched(0, rows(0, 3..=4));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
    h.acked(0, 2);
    h.delete_failed(0);
    assert_eq!(h.briefs(), ["delete 0 [3, 4]"]);
    h.deleted(0);
    h.at(1_000);
    assert_eq!(
        h.briefs(),
        ["fetch 0 from head limit 2"],
        "rows 1 and 2 are still pending: the retry is due at the end of the backoff"
    );
}

#[test]
fn the_limit_leaves_room_for_the_pipeline_only_after_a_read_from_below_the_cursor() {
    let mut h = publishing_first_batch();
    // The first cursor read (after 2, limit 4) comes back from the head: [1, 2] is the
    // batch being published. The next cursor read must leave room for it again.
    h.fetched(0, rows(0, 1..=4));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [1, 2]", "publish 0 [3, 4]"]);
    h.deleted(0);
    assert_eq!(
        h.briefs(),
        ["fetch 0 after 4 limit 4"],
        "the store read from below the cursor: one batch plus the two rows in flight"
    );
    // This one is honoured: only rows past 4 (more than a batch: [7, 8] is left over).
    h.fetched(0, rows(0, 5..=8));
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [3, 4]", "publish 0 [5, 6]"]);
    h.deleted(0);
    assert_eq!(
        h.briefs(),
        ["fetch 0 after 6 limit 2"],
        "the store honoured the cursor: one batch"
    );
    // A row below the cursor that committed late comes back with row 7: the read was
    // not honoured: the next one leaves room for the pipeline again.
    h.fetched(
        0,
        rows(0, 0..=0).into_iter().chain(rows(0, 7..=7)).collect(),
    );
    h.acked(0, 2);
    assert_eq!(h.briefs(), ["delete 0 [5, 6]", "publish 0 [0, 7]"]);
    h.deleted(0);
    assert_eq!(h.briefs(), ["fetch 0 after 7 limit 4"]);
}

#[test]
fn the_fetch_limit_adds_the_pipeline_unless_the_cursor_is_expected_to_hold() {
    use crate::relay::machine::fetch_limit;
    assert_eq!(fetch_limit(500, 500, false), 1000);
    assert_eq!(fetch_limit(500, 500, true), 500);
    assert_eq!(fetch_limit(500, 0, false), 500);
    assert_eq!(fetch_limit(usize::MAX, 1, false), usize::MAX);
}
