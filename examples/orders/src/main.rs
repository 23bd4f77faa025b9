//! The demo: an orders service places orders on SQLite (or PostgreSQL / MariaDB), each
//! order row and its event in one transaction; the relay publishes the events to Kafka;
//! a consumer deduplicates on the message-id header and prints what it receives.
//!
//! Run it with `cargo xtask demo` (which starts a local broker first), or directly:
//! `cargo run -p orders-demo -- --brokers 127.0.0.1:9092`.

mod consumer;
mod orders;
mod poison;
mod report;
mod topic;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use outbox_core::driver::Relay;
use outbox_core::{OutboxSchema, RelayOptions};
use outbox_kafka::KafkaPublisher;
use outbox_seaorm::{ConnectSettings, MessageIdHeader, Outbox, SeaOrmStore};
use rskafka::client::ClientBuilder;
use sea_orm::{ConnectionTrait, DatabaseConnection, Schema};
use sea_orm_migration::MigratorTrait;
use uuid::Uuid;

use crate::consumer::Consumer;
use crate::orders::{Placed, place_order};
use crate::report::{Progress, Summary};
use crate::topic::{PARTITIONS, TOPIC};

#[derive(Debug, Parser)]
#[command(about = "Transactional outbox demo: orders service, relay and deduplicating consumer")]
struct Args {
    /// Kafka bootstrap server.
    #[arg(long, default_value = "127.0.0.1:19092")]
    brokers: String,
    /// Database URL; the default is a fresh SQLite file under target/demo/.
    #[arg(long)]
    database_url: Option<String>,
    /// Orders to place.
    #[arg(long, default_value_t = 2_000)]
    orders: u32,
    /// Orders per second.
    #[arg(long, default_value_t = 500)]
    rate: u32,
    /// Print every n-th received record.
    #[arg(long, default_value_t = 250)]
    print_every: u64,
    /// Also write one row another program corrupted (its headers do not decode): watch
    /// the relay park it and hold its customer's later orders behind it, then the demo
    /// repairs and requeues it, and the customer's orders arrive in commit order.
    #[arg(long)]
    poison: bool,
}

/// The application's migrator: its own tables plus the outbox's, appended in one line.
struct Migrator;

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn sea_orm_migration::MigrationTrait>> {
        outbox_seaorm::migrations(outbox_core::OutboxSchema::default())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
        .init();
    let args = Args::parse();
    let metrics = outbox_core::metrics::prometheus::builder()?.install_recorder()?;

    // The database: orders table and outbox tables.
    let url = match &args.database_url {
        Some(url) => url.clone(),
        None => {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/demo");
            std::fs::create_dir_all(&dir)?;
            let file = dir.join(format!("orders-{}.db", std::process::id()));
            format!("sqlite://{}?mode=rwc", file.display())
        }
    };
    // On SQLite: WAL, synchronous=NORMAL, a busy timeout, one writer path (see
    // `outbox_seaorm::connect`); statements logged at DEBUG on every backend.
    let db = outbox_seaorm::connect(&url).await?;
    Migrator::up(&db, None).await?;
    create_orders_table(&db).await?;
    println!("database   {url}");

    // The topic.
    let kafka = Arc::new(
        ClientBuilder::new(vec![args.brokers.clone()])
            .build()
            .await?,
    );
    topic::ensure_topic(&kafka, TOPIC, PARTITIONS).await?;
    println!(
        "broker     {} (topic {TOPIC}, {PARTITIONS} partitions)",
        args.brokers
    );

    // One schema (table names, bucket count, message-id header) for the store, the
    // publisher, the relay, the writer and the consumer: they cannot disagree.
    let schema = OutboxSchema::default();
    // The consumer starts at the topic's current end, before anything of this run is
    // published: records of earlier runs are not this run's.
    let header = MessageIdHeader::new(&schema);
    let mut consumer = Consumer::at_end(Arc::clone(&kafka), TOPIC, PARTITIONS, header).await?;
    // The relay, in this process: sea-orm store + Kafka publisher.
    let options = RelayOptions::builder()
        .schema(schema.clone())
        .metrics_name("orders-demo")
        .backlog_sampling(true)
        .build()?;
    // The store gets its own pool, sized for the relay's lanes (max_concurrent_lanes + 2):
    // on SQLite the writer's pool is one connection, and its open transactions must not
    // hold the relay up.
    let store_db = ConnectSettings::new(url.as_str())
        .for_relay(&options)
        .connect()
        .await?;
    let store = SeaOrmStore::new(store_db, schema.clone())?;
    let publisher = KafkaPublisher::builder([args.brokers.as_str()])
        .client_id("orders-demo-relay")
        .schema(&schema)
        .build()?;
    // One call starts the relay; its handle carries the writer, already bound to the
    // relay's notifier and on the store's schema, so each commit wakes the relay.
    let relay = Relay::builder(store, publisher)
        .options(options.clone())
        .spawn()?;
    let outbox: Outbox = relay.outbox().clone();
    println!("relay      {}", relay.relay_id());
    // The operator's handle on parked rows (what `outbox-relay parked` uses).
    let operator = SeaOrmStore::new(outbox_seaorm::connect(&url).await?, schema.clone())?;
    let poisoned = if args.poison {
        let id = poison::write_corrupt_row(&db, &schema).await?;
        println!(
            "poison     wrote a corrupt row of {} ({id})",
            poison::CUSTOMER
        );
        Some(id)
    } else {
        None
    };
    let mut parked_seen = poisoned.is_none();
    let mut requeued = poisoned.is_none();
    // The poisoned customer's deliveries, in arrival order.
    let mut poisoned_arrivals: Vec<Uuid> = Vec::new();

    // The service places orders; commit instants are kept for the latency figures.
    let committed: Arc<Mutex<HashMap<Uuid, Instant>>> = Arc::default();
    // The poisoned customer's committed orders, in commit order.
    let poisoned_order: Arc<Mutex<Vec<Uuid>>> = Arc::default();
    let mut writer = Some({
        let (db, outbox, committed) = (db.clone(), outbox.clone(), Arc::clone(&committed));
        let (count, rate) = (args.orders, args.rate.max(1));
        let order_of = Arc::clone(&poisoned_order);
        tokio::spawn(
            async move { write_orders(&db, &outbox, &committed, &order_of, count, rate).await },
        )
    });

    // The consumer runs until every committed order arrived.
    let mut progress = Progress::new(u64::from(args.orders));
    let mut latencies = Vec::new();
    let started = Instant::now();
    let mut placed = None;
    loop {
        for delivery in consumer.poll().await? {
            let commit = committed
                .lock()
                .map(|c| c.get(&delivery.message_id).copied())
                .unwrap_or(None);
            if let Some(at) = commit {
                latencies.push(at.elapsed());
            }
            if delivery.key == poison::CUSTOMER {
                poisoned_arrivals.push(delivery.message_id);
            }
            progress.received(&delivery, args.print_every);
        }
        if let Some(id) = poisoned {
            if !parked_seen {
                parked_seen = poison::parked_yet(&operator, id).await?;
            }
            // Once the orders are placed, the operator repairs the row and requeues.
            if parked_seen && !requeued && placed.is_some() {
                poison::repair_and_requeue(&operator.connection().clone(), &operator, id).await?;
                requeued = true;
            }
        }
        if let Some(handle) = writer.take_if(|w| w.is_finished()) {
            let outcome = handle.await??;
            progress.expect(outcome.committed + u64::from(poisoned.is_some()));
            placed = Some(outcome);
        }
        if placed.as_ref().is_some_and(|o| {
            progress.received_count() >= o.committed + u64::from(poisoned.is_some())
        }) {
            break;
        }
        if started.elapsed() > Duration::from_secs(300) {
            anyhow::bail!("not every committed order arrived within 5 minutes");
        }
        Consumer::pause().await;
    }
    progress.finish();
    // Every order arrived, so nothing is pending (the poisoned row was requeued and
    // published); the relay hands its leases back as it stops.
    relay.drained().await?;
    relay.stop(Duration::from_secs(10)).await?;
    let Some(outcome) = placed else {
        anyhow::bail!("the writer did not finish")
    };
    let in_order = match poisoned {
        None => true,
        Some(id) => {
            let mut expected = vec![id];
            expected.extend(poisoned_order.lock().map(|o| o.clone()).unwrap_or_default());
            let in_order = poisoned_arrivals == expected;
            println!(
                "poison     {} orders of {} arrived {}, the repaired row first",
                expected.len(),
                poison::CUSTOMER,
                if in_order {
                    "in commit order"
                } else {
                    "OUT OF ORDER"
                }
            );
            in_order
        }
    };
    let consistent = Summary {
        placed: outcome.committed + outcome.rolled_back + u64::from(poisoned.is_some()),
        rolled_back: outcome.rolled_back,
        published: progress.received_count(),
        duplicates: consumer.duplicates,
        unidentified: consumer.unidentified,
        latencies,
        elapsed: started.elapsed(),
    }
    .print();
    println!("\nthe relay's instruments (Prometheus text):");
    for line in metrics
        .render()
        .lines()
        .filter(|l| l.starts_with("outbox_") && !l.contains("_bucket{"))
    {
        println!("  {line}");
    }
    anyhow::ensure!(consistent, "the demo's counts do not add up");
    anyhow::ensure!(
        in_order,
        "the poisoned customer's orders arrived out of order"
    );
    Ok(())
}

async fn create_orders_table(db: &DatabaseConnection) -> anyhow::Result<()> {
    let schema = Schema::new(db.get_database_backend());
    let mut create = schema.create_table_from_entity(orders::order::Entity);
    create.if_not_exists();
    db.execute(&create).await?;
    Ok(())
}

/// What the writer did.
struct Written {
    committed: u64,
    rolled_back: u64,
}

async fn write_orders(
    db: &DatabaseConnection,
    outbox: &Outbox,
    committed: &Mutex<HashMap<Uuid, Instant>>,
    poisoned_order: &Mutex<Vec<Uuid>>,
    count: u32,
    rate: u32,
) -> anyhow::Result<Written> {
    let mut written = Written {
        committed: 0,
        rolled_back: 0,
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate);
    for n in 0..count {
        tick.tick().await;
        let customer = format!("customer-{}", n % 40);
        // Every 25th order breaks a business rule after its writes: it is rolled back.
        let amount = if n % 25 == 24 {
            -1
        } else {
            100 + i64::from(n % 7) * 250
        };
        match place_order(db, outbox, &customer, amount).await? {
            Placed::Committed { message_id } => {
                if let Ok(mut map) = committed.lock() {
                    map.insert(message_id, Instant::now());
                }
                if customer == poison::CUSTOMER
                    && let Ok(mut order) = poisoned_order.lock()
                {
                    order.push(message_id);
                }
                written.committed += 1;
            }
            Placed::RolledBack => written.rolled_back += 1,
        }
    }
    Ok(written)
}
