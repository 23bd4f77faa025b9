//! The business side: what a service writes. Copy this part.
//!
//! An order row and the event announcing it are written in ONE database transaction. If
//! anything fails before the commit, neither exists; once the commit succeeds, the relay
//! will publish the event, even if this process dies right after.

use outbox_core::OutboxMessage;
use outbox_seaorm::Outbox;
use sea_orm::entity::prelude::*;
use sea_orm::{ActiveValue::Set, DatabaseConnection};

/// The `orders` table.
pub mod order {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "orders")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: Uuid,
        pub customer: String,
        pub amount_cents: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// What happened to an order.
#[derive(Debug)]
pub enum Placed {
    /// Committed: the row and its event exist.
    Committed {
        /// The event's message id (what consumers deduplicate on).
        message_id: Uuid,
    },
    /// Rejected by a business rule after the writes: rolled back, nothing published.
    RolledBack,
}

/// Places one order: business row + outbox event, one transaction.
pub async fn place_order(
    db: &DatabaseConnection,
    outbox: &Outbox,
    customer: &str,
    amount_cents: i64,
) -> anyhow::Result<Placed> {
    let order_id = Uuid::now_v7();
    let txn = outbox.begin(db).await?;

    order::ActiveModel {
        id: Set(order_id),
        customer: Set(customer.to_owned()),
        amount_cents: Set(amount_cents),
    }
    .insert(&txn)
    .await?;

    // Serialize once, here: the relay forwards these bytes untouched. The key keeps all
    // events of one customer in order (same bucket, same partition).
    let event = format!(
        r#"{{"order_id":"{order_id}","customer":"{customer}","amount_cents":{amount_cents}}}"#
    );
    let message_id = Uuid::now_v7();
    txn.enqueue(
        OutboxMessage::builder("orders")
            .key(customer)
            .value(event)
            .header("event-type", "order-placed")
            .message_id(message_id),
    )
    .await?;

    if amount_cents <= 0 {
        // A business rule fails after both writes: roll back, and nothing is published.
        txn.rollback().await?;
        return Ok(Placed::RolledBack);
    }
    // Commit, then the local relay is woken with the exact bucket. No Kafka call here.
    txn.commit().await?;
    Ok(Placed::Committed { message_id })
}
