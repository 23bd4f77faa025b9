//! Bulk enqueue through a plain connection: on PostgreSQL a binary COPY, elsewhere
//! multi-row inserts in a transaction of their own. Either way the stored rows are
//! exactly what the same messages enqueued inside a transaction store (the insert path),
//! field by field, in call order; an invalid message or a failed write stores nothing.

use std::sync::Arc;

use outbox_core::{EnqueueConfig, MessageBuilder, OutboxMessage, Timestamp, Uuid};
use outbox_seaorm::{EnqueueError, Outbox};
use sea_orm::ConnectionTrait;

use crate::on_each_database;
use crate::support::TestDb;

/// Rows per call: several insert statements' worth, so the bulk path is taken.
const ROWS: usize = 1_000;

/// Message `i`: keys, values, headers and partitions present or absent in every
/// combination, a creation time of its own (before and after 2000, PostgreSQL's epoch).
fn message(i: usize) -> MessageBuilder {
    let mut m = OutboxMessage::builder(format!("topic-{}", i % 3))
        .message_id(Uuid::from_u128(
            0x00ab_0000_0000_0000_0000_0000_0000_0000 + i as u128,
        ))
        .created_at(Timestamp::from_millis(
            (i as i64 - 500) * 86_400_000 * 40 + 946_684_800_123,
        ));
    if !i.is_multiple_of(3) {
        m = m.key(format!("key-{i}"));
    }
    if !i.is_multiple_of(5) {
        m = m.value(vec![(i % 251) as u8; i % 700]);
    }
    if i.is_multiple_of(4) {
        m = m.header("h", format!("v{i}")).null_header("empty");
    }
    if i.is_multiple_of(7) {
        m = m.partition((i % 3) as i32);
    }
    m
}

/// What two stored rows must share: everything but the id the database drew.
fn fields(m: &OutboxMessage) -> impl PartialEq + std::fmt::Debug + use<> {
    (
        m.message_id,
        m.bucket,
        m.topic.clone(),
        m.key.clone(),
        m.value.clone(),
        m.headers.clone(),
        m.partition,
        m.created_at,
    )
}

async fn bulk_enqueue_stores_what_the_insert_stores(tdb: Arc<TestDb>) {
    let (bulk, inserted) = (tdb.fresh_tables().await, tdb.fresh_tables().await);
    let bulk_outbox = Outbox::new(EnqueueConfig::from(bulk.clone()));
    let insert_outbox = Outbox::new(EnqueueConfig::from(inserted.clone()));

    let done = bulk_outbox
        .enqueue_all(&tdb.db, (0..ROWS).map(message))
        .await
        .unwrap();
    assert_eq!(done.len(), ROWS);
    let txn = insert_outbox.begin(&tdb.db).await.unwrap();
    txn.enqueue_all((0..ROWS).map(message)).await.unwrap();
    txn.commit().await.unwrap();

    let (got, want) = (tdb.pending(&bulk).await, tdb.pending(&inserted).await);
    assert_eq!(got.len(), ROWS, "every bulk row stored");
    assert_eq!(want.len(), ROWS);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            fields(g),
            fields(w),
            "row {i} differs from the inserted one"
        );
    }
    // Ids follow the call's order (the relay reads a bucket in id order).
    let order: Vec<Uuid> = got.iter().map(|m| m.message_id).collect();
    let called: Vec<Uuid> = (0..ROWS)
        .map(|i| {
            message(i)
                .build(&EnqueueConfig::from(bulk.clone()))
                .unwrap()
                .message_id
        })
        .collect();
    assert_eq!(order, called);
}

async fn an_invalid_message_stores_no_bulk_row(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let outbox = Outbox::new(EnqueueConfig::from(tables.clone()));
    let bad = 600;
    let messages = (0..ROWS).map(|i| {
        if i == bad {
            message(i).partition(-1)
        } else {
            message(i)
        }
    });
    match outbox.enqueue_all(&tdb.db, messages).await {
        Err(EnqueueError::Invalid { index, .. }) => assert_eq!(index, bad),
        other => panic!("expected message #{bad} refused, got {other:?}"),
    }
    assert_eq!(tdb.count(&tables).await, 0);
}

/// The write itself fails (the table is gone): a typed database error, nothing stored,
/// and the pool still works.
async fn a_failed_bulk_write_is_a_database_error(tdb: Arc<TestDb>) {
    let tables = tdb.fresh_tables().await;
    let outbox = Outbox::new(EnqueueConfig::from(tables.clone()));
    let gone = tdb.fresh_tables().await;
    for sql in outbox_seaorm::ddl::drop_all_statements(
        outbox_seaorm::Backend::try_from(tdb.backend()).unwrap(),
        &gone,
    ) {
        tdb.db.execute_unprepared(&sql).await.unwrap();
    }
    let to_gone = Outbox::new(EnqueueConfig::from(gone.clone()));
    match to_gone.enqueue_all(&tdb.db, (0..ROWS).map(message)).await {
        Err(EnqueueError::Database(_)) => {}
        other => panic!("expected a database error, got {other:?}"),
    }
    outbox
        .enqueue_all(&tdb.db, (0..ROWS).map(message))
        .await
        .unwrap();
    assert_eq!(tdb.count(&tables).await, ROWS as i64);
}

on_each_database!(stores_what_the_insert_stores => super::bulk_enqueue_stores_what_the_insert_stores);
on_each_database!(invalid_message_stores_nothing => super::an_invalid_message_stores_no_bulk_row);
on_each_database!(failed_write_is_a_database_error => super::a_failed_bulk_write_is_a_database_error);
