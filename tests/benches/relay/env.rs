//! What every section needs: database connections, fresh outbox tables, topics, the
//! publisher and relay settings the benchmark uses.

use std::sync::Arc;
use std::time::Duration;

use outbox_core::{EnqueueConfig, OutboxSchema, RelayOptions, RelayOptionsBuilder};
use outbox_kafka::KafkaPublisher;
use outbox_seaorm::{Backend, OutboxTables, ddl};
use outbox_tests::{kafka, unique_name};
use rskafka::client::Client;
use rskafka::client::partition::UnknownTopicHandling;
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};

use crate::args::{Args, DbKind};

/// Partitions of every benchmark topic; equal to the default bucket count, so one
/// bucket's batch goes to one partition.
pub const PARTITIONS: i32 = 8;
/// The relay's default batch size, used by the ceilings and the naive loop too.
pub const BATCH: usize = 500;
/// Bytes per value unless a section says otherwise.
pub const VALUE_SIZE: usize = 1024;

#[derive(Debug)]
pub struct Env {
    pub args: Args,
    pub url: String,
    pub brokers: String,
    pub kafka: Arc<Client>,
}

impl Env {
    pub async fn new(args: Args) -> Env {
        let url = match args.database {
            DbKind::Postgres => outbox_tests::postgres_url(),
            DbKind::MariaDb => outbox_tests::mysql_url(),
            DbKind::Sqlite => outbox_tests::sqlite_url(),
        };
        let brokers = args.brokers.clone().unwrap_or_else(outbox_tests::brokers);
        if args.database != DbKind::Sqlite {
            outbox_tests::require_tcp(args.database.name(), &outbox_tests::host_port(&url));
        }
        let first = brokers.split(',').next().unwrap_or_default().to_owned();
        outbox_tests::require_tcp("the Kafka broker", &first);
        let kafka = Arc::new(kafka::client(&brokers).await);
        Env {
            args,
            url,
            brokers,
            kafka,
        }
    }

    pub fn kind(&self) -> DbKind {
        self.args.database
    }

    /// A new pool, set up as `outbox_seaorm::connect` sets it up (on SQLite: WAL,
    /// `synchronous=NORMAL`, a busy timeout, one connection), for the baselines and our
    /// store alike, so their ratios compare the same database settings.
    pub async fn db(&self) -> DatabaseConnection {
        self.db_at(&self.url).await
    }

    /// A pool of exactly one connection: one task's own session (the ceilings, the
    /// snapshot holder).
    pub async fn db_single(&self) -> DatabaseConnection {
        let mut options = outbox_seaorm::ConnectSettings::new(&self.url)
            .max_connections(1)
            .options();
        options.sqlx_logging(false).min_connections(1);
        Database::connect(options)
            .await
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", self.url))
    }

    pub async fn db_at(&self, url: &str) -> DatabaseConnection {
        let mut options = outbox_seaorm::ConnectSettings::new(url).options();
        options.sqlx_logging(false);
        Database::connect(options)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
    }

    pub fn backend(&self, db: &DatabaseConnection) -> Backend {
        Backend::try_from(db.get_database_backend()).unwrap()
    }

    /// Fresh outbox tables with unique names, created with the crate's own DDL.
    pub async fn tables(&self, db: &DatabaseConnection) -> OutboxTables {
        let tables = outbox_tests::database::unique_tables("bm");
        for sql in ddl::create_all_statements(self.backend(db), &tables) {
            db.execute_unprepared(&sql).await.unwrap();
        }
        tables
    }

    pub async fn drop_tables(&self, db: &DatabaseConnection, tables: &OutboxTables) {
        for sql in ddl::drop_all_statements(self.backend(db), tables) {
            let _ = db.execute_unprepared(&sql).await;
        }
    }

    /// A new topic with [`PARTITIONS`] partitions.
    pub async fn topic(&self) -> String {
        let topic = unique_name("bench");
        kafka::create_topic(&self.kafka, &topic, PARTITIONS).await;
        topic
    }

    /// Records in `topic`: the sum of the partitions' high watermarks (Fetch, never
    /// ListOffsets; the topics start empty at offset 0).
    pub async fn topic_count(&self, topic: &str) -> u64 {
        let mut total = 0;
        for p in 0..PARTITIONS {
            let pc = self
                .kafka
                .partition_client(topic, p, UnknownTopicHandling::Retry)
                .await
                .unwrap();
            let (_, high_watermark) = pc.fetch_records(0, 1..2, 10).await.unwrap();
            total += u64::try_from(high_watermark).unwrap_or(0);
        }
        total
    }

    pub async fn publisher(&self) -> KafkaPublisher {
        let publisher = KafkaPublisher::builder(self.brokers.split(','))
            .client_id("outbox-bench")
            .build()
            .unwrap();
        publisher.connect().await.unwrap();
        publisher
    }

    /// The schema of `tables` with `bucket_count` buckets, for the store, the relay and
    /// the writer alike.
    pub fn schema(&self, tables: &OutboxTables, bucket_count: u32) -> OutboxSchema {
        OutboxSchema::builder()
            .tables(tables.clone())
            .bucket_count(bucket_count)
            .build()
            .unwrap()
    }

    /// Relay options of the benchmark: defaults (batch 500, poll 1 s) unless changed.
    pub fn relay_options(&self, schema: &OutboxSchema) -> RelayOptionsBuilder {
        RelayOptions::builder()
            .relay_id(unique_name("relay"))
            .schema(schema.clone())
            .batch_size(BATCH)
    }

    /// Writer settings with `bucket_count` buckets (the rows are inserted with
    /// `insert_rows` into whichever tables the caller names).
    pub fn enqueue_config(&self, bucket_count: u32) -> EnqueueConfig {
        EnqueueConfig::from(
            OutboxSchema::builder()
                .bucket_count(bucket_count)
                .build()
                .unwrap(),
        )
    }

    /// The database's version string.
    pub async fn database_version(&self, db: &DatabaseConnection) -> String {
        let sql = match self.kind() {
            DbKind::Sqlite => "SELECT 'SQLite ' || sqlite_version() AS v",
            DbKind::MariaDb => "SELECT CONCAT('MariaDB ', version()) AS v",
            DbKind::Postgres => "SELECT version() AS v",
        };
        let row = db
            .query_one_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                sql,
            ))
            .await
            .unwrap()
            .unwrap();
        row.try_get::<String>("", "v").unwrap()
    }
}

/// Waits until `check` holds, polling every `every`; panics after `timeout`.
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, every: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(every).await;
    }
}
