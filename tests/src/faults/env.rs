//! One scenario's PostgreSQL tables and Kafka topic.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use outbox_seaorm::{Backend, OutboxTables, ddl};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};

use super::poll::eventually;

/// A scenario's own outbox tables (unique names, so scenarios share one database) and
/// its own topic on `brokers`.
#[derive(Debug)]
pub struct FaultEnv {
    /// Connection of the test itself (writer and checks), separate from the relays'.
    pub db: DatabaseConnection,
    /// The PostgreSQL URL, without an application name.
    pub database_url: String,
    /// The scenario's table names.
    pub tables: OutboxTables,
    /// The scenario's topic.
    pub topic: String,
    /// Bootstrap address the relays and the checker use.
    pub brokers: String,
    /// Partitions of the topic.
    pub partitions: i32,
}

impl FaultEnv {
    /// Creates the tables (`<prefix>_<random>_m`, `_l`, `_r`) on [`crate::postgres_url`]
    /// and the topic (`<prefix>_<random>`) with `partitions` partitions on `brokers`.
    ///
    /// # Panics
    /// When PostgreSQL or the broker is unreachable (the tests never skip).
    pub async fn new(prefix: &str, brokers: &str, partitions: i32) -> FaultEnv {
        let database_url = crate::postgres_url();
        crate::require_tcp(
            "PostgreSQL (OUTBOX_TEST_POSTGRES_URL)",
            &crate::host_port(&database_url),
        );
        let first_broker = brokers.split(',').next().unwrap_or(brokers);
        crate::require_tcp("The Kafka broker", first_broker);
        let base = crate::unique_name(prefix);
        let tables = crate::database::outbox_tables_named(&base);
        let db = Database::connect(&database_url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {database_url}: {e}"));
        for sql in ddl::create_all_statements(Backend::Postgres, &tables) {
            db.execute_unprepared(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        let client = crate::kafka::client(brokers).await;
        crate::kafka::create_topic(&client, &base, partitions).await;
        FaultEnv {
            db,
            database_url,
            tables,
            topic: base,
            brokers: brokers.to_owned(),
            partitions,
        }
    }

    /// The database URL with `application_name` set, so that a relay's sessions can be
    /// found (and cut) in `pg_stat_activity`.
    pub fn database_url_for(&self, application_name: &str) -> String {
        let sep = if self.database_url.contains('?') {
            '&'
        } else {
            '?'
        };
        format!(
            "{}{sep}application_name={application_name}",
            self.database_url
        )
    }

    /// [`database_url_for`](Self::database_url_for), but reaching the server through
    /// `proxy_addr` (`127.0.0.1:PORT`, e.g. a [`crate::statement_delay`] proxy) and in
    /// plain text (`sslmode=disable`), so a proxy can read the protocol.
    pub fn database_url_via(&self, proxy_addr: &str, application_name: &str) -> String {
        crate::database_url_through(&self.database_url_for(application_name), proxy_addr)
    }

    async fn scalar_i64(&self, sql: String) -> i64 {
        let row = self
            .db
            .query_one_raw(Statement::from_string(self.db.get_database_backend(), sql))
            .await
            .unwrap_or_else(|e| panic!("query failed: {e}"));
        row.and_then(|r| r.try_get_by_index::<i64>(0).ok())
            .unwrap_or(0)
    }

    /// Rows still pending in the messages table.
    pub async fn pending(&self) -> i64 {
        self.scalar_i64(format!(
            "SELECT count(*) FROM \"{}\"",
            self.tables.messages()
        ))
        .await
    }

    /// Rows in the parked table.
    pub async fn parked(&self) -> i64 {
        self.scalar_i64(format!("SELECT count(*) FROM \"{}\"", self.tables.parked()))
            .await
    }

    /// Pending rows per bucket (buckets without rows are absent).
    pub async fn pending_by_bucket(&self) -> BTreeMap<i32, i64> {
        let sql = format!(
            "SELECT bucket, count(*) FROM \"{}\" GROUP BY bucket",
            self.tables.messages()
        );
        let rows = self
            .db
            .query_all_raw(Statement::from_string(self.db.get_database_backend(), sql))
            .await
            .unwrap_or_else(|e| panic!("counting pending rows: {e}"));
        rows.iter()
            .filter_map(|r| {
                let bucket: i32 = r.try_get_by_index(0).ok()?;
                let count: i64 = r.try_get_by_index(1).ok()?;
                Some((bucket, count))
            })
            .collect()
    }

    /// Unexpired leases per owner (by wall clock, which all processes here share).
    pub async fn leases_by_owner(&self) -> BTreeMap<String, usize> {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let sql = format!(
            "SELECT owner, count(*) FROM \"{}\" WHERE owner IS NOT NULL AND expires_at_ms > {now_ms} GROUP BY owner",
            self.tables.leases()
        );
        let rows = self
            .db
            .query_all_raw(Statement::from_string(self.db.get_database_backend(), sql))
            .await
            .unwrap_or_else(|e| panic!("reading leases: {e}"));
        rows.iter()
            .filter_map(|r| {
                let owner: String = r.try_get_by_index(0).ok()?;
                let count: i64 = r.try_get_by_index(1).ok()?;
                Some((owner, usize::try_from(count).ok()?))
            })
            .collect()
    }

    /// Terminates every PostgreSQL session with this `application_name`; returns how
    /// many were terminated.
    pub async fn terminate_sessions(&self, application_name: &str) -> i64 {
        self.scalar_i64(format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = '{application_name}' AND pid <> pg_backend_pid()"
        ))
        .await
    }

    /// Sessions of `application_name` waiting for a lock in a `DELETE` on the messages
    /// table: the relay deleting acknowledged rows, held up by a test transaction.
    pub async fn deletes_waiting_on_lock(&self, application_name: &str) -> Vec<i32> {
        let sql = format!(
            "SELECT pid FROM pg_stat_activity WHERE application_name = '{application_name}' \
             AND state = 'active' AND wait_event_type = 'Lock' AND query ILIKE 'DELETE%'"
        );
        let rows = self
            .db
            .query_all_raw(Statement::from_string(self.db.get_database_backend(), sql))
            .await
            .unwrap_or_else(|e| panic!("reading pg_stat_activity: {e}"));
        rows.iter()
            .filter_map(|r| r.try_get_by_index::<i32>(0).ok())
            .collect()
    }

    /// Waits until the messages table is empty; returns whether it became empty within
    /// `within`.
    pub async fn wait_drained(&self, within: Duration) -> bool {
        eventually(within, || async { self.pending().await == 0 }).await
    }

    /// Drops the scenario's tables (best effort; the names are unique anyway).
    pub async fn drop_tables(&self) {
        for sql in ddl::drop_all_statements(Backend::Postgres, &self.tables) {
            let _ = self.db.execute_unprepared(&sql).await;
        }
    }
}
