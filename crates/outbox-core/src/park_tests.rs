use super::*;

fn row(id: i64, key: Option<&str>, partition: Option<i32>) -> OutboxMessage {
    OutboxMessage {
        id,
        bucket: 0,
        message_id: crate::Uuid::from_u128(id as u128),
        topic: "t".into(),
        key: key.map(|k| k.as_bytes().to_vec()),
        value: None,
        headers: None,
        partition,
        created_at: Timestamp::from_millis(0),
        store_ref: None,
    }
}

fn failed() -> ParkReason {
    ParkReason::Failed(ParkedFailure {
        error: "too large".into(),
        attempts: 3,
        first_failed_at: Timestamp::from_millis(1),
        last_failed_at: Timestamp::from_millis(2),
    })
}

fn parked(id: i64, key: Option<&str>, partition: Option<i32>) -> ParkedRow {
    ParkedRow {
        message: row(id, key, partition),
        reason: failed(),
        parked_at: Timestamp::from_millis(3),
    }
}

#[test]
fn hold_keys() {
    assert_eq!(HoldKey::of(&row(1, None, None)), None);
    assert!(matches!(
        HoldKey::of(&row(1, Some("k"), Some(2))),
        Some(HoldKey::Partition { partition: 2, .. })
    ));
    assert!(matches!(
        HoldKey::of(&row(1, Some(""), None)),
        Some(HoldKey::Key { ref key, .. }) if key.is_empty()
    ));
}

#[test]
fn only_a_lower_parked_row_of_the_key_holds() {
    let k = HoldKey::of(&row(0, Some("k"), None)).unwrap();
    let holds = Holds::from_parked(vec![(Some(k.clone()), 10), (Some(k), 20)]);
    assert_eq!(holds.held_keys(), 1);
    assert!(Holds::default().is_empty());
    assert!(!Holds::from_parked(vec![(None, 3)]).is_empty());
    assert_eq!(holds.blocking(&row(10, Some("k"), None)), None);
    assert_eq!(holds.blocking(&row(15, Some("k"), None)), Some(10));
    assert_eq!(holds.blocking(&row(15, Some("j"), None)), None);
    assert_eq!(holds.blocking(&row(15, None, None)), None);
}

#[test]
fn the_store_parks_held_rows_only_behind_a_parked_row() {
    let behind = |id| ParkRow {
        message: row(id, Some("k"), None),
        reason: ParkReason::HeldBehind { blocking_id: 1 },
    };
    // Nothing parked: a held row is released; a failed row parks and then holds.
    let rows = [
        behind(5),
        ParkRow {
            message: row(6, Some("k"), None),
            reason: failed(),
        },
        behind(7),
    ];
    assert_eq!(park_decisions(&[], &rows), [false, true, true]);
    let k = HoldKey::of(&row(0, Some("k"), None)).unwrap();
    assert_eq!(
        park_decisions(&[(Some(k.clone()), 4)], &rows),
        [true, true, true]
    );
    assert_eq!(park_decisions(&[(Some(k), 9)], &[behind(5)]), [false]);
    assert_eq!(park_decisions(&[(None, 1)], &[behind(5)]), [false]);
}

#[test]
fn a_requeue_takes_the_earlier_parked_rows_of_the_key() {
    let rows = [
        parked(1, Some("k"), None),
        parked(2, Some("j"), None),
        parked(3, Some("k"), None),
        parked(4, Some("k"), None),
        parked(5, None, Some(1)),
        parked(6, None, Some(1)),
    ];
    assert_eq!(requeue_closure(&rows, &ParkedSelection::Id(3)), [1, 3]);
    assert_eq!(
        requeue_closure(&rows, &ParkedSelection::Key(b"k".to_vec())),
        [1, 3, 4]
    );
    assert_eq!(requeue_closure(&rows, &ParkedSelection::Id(6)), [5, 6]);
    assert_eq!(requeue_closure(&rows, &ParkedSelection::Id(2)), [2]);
    assert_eq!(requeue_closure(&rows, &ParkedSelection::All).len(), 6);
    assert!(requeue_closure(&rows, &ParkedSelection::Id(99)).is_empty());
}
