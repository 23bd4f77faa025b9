//! Bad input: clear errors, nothing written, nobody notified.

use std::sync::Arc;

use outbox_core::{
    EnqueueConfig, LeaseRequest, MessageError, OutboxMessage, OutboxStore, Timestamp,
};
use outbox_seaorm::{EnqueueError, NameRole, Outbox, OutboxTables, TableNameError};

use crate::on_each_database;
use crate::support::{Recorder, TestDb};

async fn invalid_messages_write_nothing(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let recorder = Recorder::new();
    let config = EnqueueConfig::builder()
        .schema(tables.clone().into()) // 8 buckets
        .max_record_size(1_000)
        .build()
        .unwrap();
    let outbox = Outbox::new(config).with_notifier(recorder.clone());

    let err = outbox
        .enqueue(&tdb.db, OutboxMessage::builder("bad topic!").value("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            EnqueueError::Invalid {
                index: 0,
                source: MessageError::InvalidTopic { .. }
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("bad topic!"), "{err}");

    let err = outbox
        .enqueue(
            &tdb.db,
            OutboxMessage::builder("t").value(vec![0_u8; 2_000]),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            EnqueueError::Invalid {
                source: MessageError::RecordTooLarge { max: 1_000, .. },
                ..
            }
        ),
        "{err:?}"
    );

    // One bad message among good ones: nothing of the call is written, also inside a
    // transaction that then commits.
    let txn = outbox.begin(&tdb.db).await.unwrap();
    let err = txn
        .enqueue_all([
            OutboxMessage::builder("t").key("a"),
            OutboxMessage::builder("t").key("b"),
            OutboxMessage::builder("t").partition(-3),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            EnqueueError::Invalid {
                index: 2,
                source: MessageError::NegativePartition(-3)
            }
        ),
        "{err:?}"
    );
    txn.commit().await.unwrap();

    let err = outbox
        .enqueue(
            &tdb.db,
            OutboxMessage::builder("t").created_at(Timestamp::from_millis(i64::MAX)),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, EnqueueError::CreatedAtOutOfRange { index: 0, .. }),
        "{err:?}"
    );

    assert_eq!(tdb.count(&tables).await, 0, "nothing written");
    assert!(
        recorder.calls().is_empty(),
        "nobody notified: {:?}",
        recorder.calls()
    );
}

/// Hostile or odd names never reach SQL: they are refused when the options are built.
async fn invalid_table_names_are_refused(tdb: Arc<TestDb>) {
    let hostile = format!("{}\"; DROP TABLE x; --", "t");
    let err = OutboxTables::builder()
        .messages(hostile)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            TableNameError::InvalidChar {
                role: NameRole::Messages,
                ch: '"',
                ..
            }
        ),
        "{err:?}"
    );
    let err = OutboxTables::builder()
        .schema("public; --")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("schema"), "{err}");
    let err = OutboxTables::builder()
        .relays("r".repeat(64))
        .build()
        .unwrap_err();
    assert!(matches!(err, TableNameError::TooLong { .. }), "{err:?}");

    // A valid but odd name (mixed case) is quoted everywhere and works end to end.
    let base = outbox_tests::unique_name("Ob");
    let tables = OutboxTables::builder()
        .messages(format!("{base}_Messages"))
        .leases(format!("{base}_Leases"))
        .relays(format!("{base}_Relays"))
        .parked(format!("{base}_Parked"))
        .build()
        .unwrap();
    let tables = tdb.migrate(tables).await;
    let outbox = Outbox::new(EnqueueConfig::from(tables.clone()));
    outbox
        .enqueue(&tdb.db, OutboxMessage::builder("t").key("k"))
        .await
        .unwrap();
    assert_eq!(tdb.count(&tables).await, 1);
}

/// A relay id that cannot fit the lease tables is a fatal misconfiguration, not an
/// endless retry.
async fn oversized_relay_id_is_fatal(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let store = tdb.store(&tables);
    let id = "r".repeat(129);
    let err = store
        .acquire_leases(&LeaseRequest {
            relay_id: &id,
            bucket_count: 8,
            lease_duration: std::time::Duration::from_secs(30),
            now: Timestamp::now(),
            busy: &[],
        })
        .await
        .unwrap_err();
    assert!(err.is_fatal(), "{err}");
}

/// A relay whose options came from another schema than the store's (here 4 buckets
/// against the store's 8) is refused as a fatal misconfiguration before it claims
/// anything, and it probes nothing either.
async fn bucket_count_disagreeing_with_the_store_is_fatal(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let store = tdb.store(&tables);
    assert_eq!(store.schema().bucket_count().get(), 8);
    let err = store
        .acquire_leases(&LeaseRequest {
            relay_id: "relay-other-schema",
            bucket_count: 4,
            lease_duration: std::time::Duration::from_secs(30),
            now: Timestamp::now(),
            busy: &[],
        })
        .await
        .unwrap_err();
    assert!(err.is_fatal(), "{err}");
    assert!(err.to_string().contains("OutboxSchema"), "{err}");
    let err = store.buckets_with_pending(&[0], 4).await.unwrap_err();
    assert!(err.is_fatal(), "{err}");
    assert_eq!(tdb.count(&tables).await, 0);
}

on_each_database!(invalid_messages => super::invalid_messages_write_nothing);
on_each_database!(bucket_count_mismatch => super::bucket_count_disagreeing_with_the_store_is_fatal);
on_each_database!(invalid_table_names => super::invalid_table_names_are_refused);
on_each_database!(oversized_relay_id => super::oversized_relay_id_is_fatal);
