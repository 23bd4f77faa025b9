//! Quick start: an order row and its event in one transaction; the relay in the same
//! process publishes the event to Kafka; Ctrl-C stops it gracefully. The README's quick
//! start is this file; CI compiles it.
//!
//! `DATABASE_URL=postgres://app@localhost/app KAFKA_BROKERS=localhost:9092 cargo run -p outbox --example quickstart`
//! (default: a SQLite file in the working directory and a broker on 127.0.0.1:9092).
use std::time::Duration;

use outbox::prelude::*;
use outbox::seaorm::sea_orm_migration::{MigrationTrait, MigratorTrait};

struct Migrator; // your application's migrator, with the outbox's migrations appended

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        outbox::seaorm::migrations(OutboxSchema::default())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let url = env("DATABASE_URL", "sqlite://quickstart.db?mode=rwc");
    let db = outbox::seaorm::connect(&url).await?;
    Migrator::up(&db, None).await?;
    db.execute_unprepared("CREATE TABLE IF NOT EXISTS orders (id BIGINT, total BIGINT)")
        .await?;

    // The relay: a store on a pool of its own (sized for the relay), a Kafka publisher.
    let options = RelayOptions::default();
    let store_db = ConnectSettings::new(url.as_str())
        .for_relay(&options)
        .connect()
        .await?;
    let store = SeaOrmStore::new(store_db, options.schema().clone())?;
    let publisher = KafkaPublisher::builder([env("KAFKA_BROKERS", "127.0.0.1:9092")])
        .schema(options.schema())
        .build()?;
    let relay = Relay::builder(store, publisher).options(options).spawn()?;

    // The business row and its event commit together; the commit wakes the relay.
    relay
        .outbox()
        .transaction::<_, (), EnqueueError>(&db, |txn| {
            Box::pin(async move {
                txn.execute_unprepared("INSERT INTO orders (id, total) VALUES (7, 1990)")
                    .await?;
                let event = OutboxMessage::builder("orders")
                    .key("order-7")
                    .value(r#"{"id":7}"#);
                txn.enqueue(event).await?;
                Ok(())
            })
        })
        .await?;

    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    relay.stop_on(ctrl_c, Duration::from_secs(10)).await?;
    Ok(())
}
