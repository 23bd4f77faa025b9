//! `--poison`: what happens to a row that can never be published, and how an operator gets
//! it out.
//!
//! A row of one customer is written around the library, as another program might: its
//! headers blob does not decode. The publisher refuses it for good; after
//! `max_publish_attempts` the relay parks it, and parks that customer's later orders
//! behind it so they cannot overtake it, while every other customer's orders flow. The
//! operator then repairs the row (drops the garbage headers) and requeues the customer:
//! the parked rows go back under their original ids and arrive in commit order.

use outbox_core::bucket::bucket_for;
use outbox_core::{OutboxMessage, OutboxSchema, ParkedRows, ParkedSelection, Timestamp};
use outbox_seaorm::entity::parked;
use outbox_seaorm::{SeaOrmStore, SqlNames, insert_rows};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use sea_query::{Expr, ExprTrait, Query};
use uuid::Uuid;

/// The customer whose orders the corrupt row holds up.
pub const CUSTOMER: &str = "customer-0";

/// Writes the corrupt row of [`CUSTOMER`], bypassing the enqueue checks; returns its id.
pub async fn write_corrupt_row(
    db: &DatabaseConnection,
    schema: &OutboxSchema,
) -> anyhow::Result<Uuid> {
    let message_id = Uuid::now_v7();
    let row = OutboxMessage {
        id: 0,
        message_id,
        bucket: bucket_for(
            Some(CUSTOMER.as_bytes()),
            None,
            &message_id,
            schema.bucket_count(),
        ),
        topic: crate::topic::TOPIC.to_owned(),
        key: Some(CUSTOMER.as_bytes().to_vec()),
        value: Some(br#"{"order_id":"written-by-another-program"}"#.to_vec()),
        // Version byte 0xff: no build of this library can decode it.
        headers: Some(vec![0xff, 0, 0, 0]),
        partition: None,
        created_at: Timestamp::now(),
        store_ref: None,
    };
    insert_rows(db, schema.tables(), &[row]).await?;
    Ok(message_id)
}

/// Whether the relay has parked the corrupt row yet; says so the first time it has.
pub async fn parked_yet(store: &SeaOrmStore, message_id: Uuid) -> anyhow::Result<bool> {
    let parked = store.list_parked(10_000).await?;
    let Some(row) = parked.iter().find(|p| p.message.message_id == message_id) else {
        return Ok(false);
    };
    println!(
        "parked     row {} of {CUSTOMER}: {}",
        row.message.id, row.reason
    );
    println!(
        "           {CUSTOMER}'s later orders are parked behind it; every other customer flows"
    );
    Ok(true)
}

/// Repairs the corrupt row in the parked table and requeues [`CUSTOMER`]; returns how many
/// rows went back.
pub async fn repair_and_requeue(
    db: &DatabaseConnection,
    store: &SeaOrmStore,
    message_id: Uuid,
) -> anyhow::Result<usize> {
    let repair = Query::update()
        .table(store.tables().parked_name())
        .value(parked::Column::Headers, Option::<Vec<u8>>::None)
        .and_where(Expr::col(parked::Column::MessageId).eq(message_id))
        .to_owned();
    db.execute(&repair).await?;
    let requeued = store
        .requeue_parked(&ParkedSelection::Key(CUSTOMER.as_bytes().to_vec()))
        .await?;
    println!(
        "requeued   {} parked rows of {CUSTOMER} after repairing the corrupt one (outbox-relay parked requeue --key {CUSTOMER} does the same)",
        requeued.len()
    );
    Ok(requeued.len())
}
