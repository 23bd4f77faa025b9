use super::*;
use crate::message::OutboxMessage;
use crate::time::Timestamp;

fn row(id: i64) -> OutboxMessage {
    OutboxMessage {
        id,
        bucket: 0,
        message_id: crate::Uuid::from_u128(id as u128),
        topic: "t".into(),
        key: None,
        value: None,
        headers: None,
        partition: None,
        created_at: Timestamp::from_millis(0),
        store_ref: None,
    }
}

#[test]
fn rows_in_the_pipeline_are_not_fetched_twice() {
    let mut lane = Lane::new(0);
    lane.publishing = Some(Publishing {
        batch: vec![row(1), row(3)].into(),
        started: Monotonic::ZERO,
        lease_lost: false,
        failures_seen: 0,
    });
    lane.to_delete.push_back(PendingDelete {
        batch: vec![row(0), row(5)].into(),
        count: 1,
        failures_seen: 0,
        published_in_full: false,
    });
    let fresh: Vec<i64> = lane
        .fresh_rows(vec![row(0), row(1), row(2), row(3), row(5)], 10)
        .0
        .iter()
        .map(|m| m.id)
        .collect();
    // 5 was not acknowledged (outside the deleted prefix): it is fetched again.
    assert_eq!(fresh, vec![2, 5]);
}

#[test]
fn a_failure_drops_what_is_queued_behind_and_reads_from_the_head() {
    let mut lane = Lane::new(0);
    lane.cursor = Some(9);
    lane.next = Some(vec![row(10)].into());
    lane.store_call = Some(StoreCall::Fetching {
        discard: false,
        limit: 1,
        after: Some(9),
        after_probe: false,
    });
    assert_eq!(lane.fail(Monotonic::from_millis(100)), 1);
    assert_eq!(lane.fail(Monotonic::from_millis(300)), 2);
    assert!(lane.next.is_none() && lane.cursor.is_none() && lane.resync);
    assert!(matches!(
        lane.store_call,
        Some(StoreCall::Fetching { discard: true, .. })
    ));
    lane.succeed();
    assert_eq!(lane.failures, 0);
}
