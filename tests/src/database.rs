//! The relational databases the store tests run on, and table names of a test's own.

use outbox_seaorm::OutboxTables;

use crate::{host_port, mysql_url, postgres_url, require_tcp, sqlite_url, unique_name};

/// One of the three databases every store test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseKind {
    /// PostgreSQL (`OUTBOX_TEST_POSTGRES_URL`).
    Postgres,
    /// MariaDB or MySQL (`OUTBOX_TEST_MYSQL_URL`).
    MySql,
    /// SQLite, a fresh file per call.
    Sqlite,
}

impl DatabaseKind {
    /// This run's URL for the database. A server that does not answer fails the calling
    /// test with what to start ([`require_tcp`]); SQLite is a new file each call.
    pub fn url(self) -> String {
        match self {
            DatabaseKind::Postgres => {
                let url = postgres_url();
                require_tcp("PostgreSQL (OUTBOX_TEST_POSTGRES_URL)", &host_port(&url));
                url
            }
            DatabaseKind::MySql => {
                let url = mysql_url();
                require_tcp("MariaDB/MySQL (OUTBOX_TEST_MYSQL_URL)", &host_port(&url));
                url
            }
            DatabaseKind::Sqlite => sqlite_url(),
        }
    }
}

/// The outbox tables `{base}_m`, `{base}_l`, `{base}_r` and `{base}_p` (messages, leases,
/// relays, parked).
///
/// # Panics
/// When `base` does not make valid table names.
pub fn outbox_tables_named(base: &str) -> OutboxTables {
    OutboxTables::builder()
        .messages(format!("{base}_m"))
        .leases(format!("{base}_l"))
        .relays(format!("{base}_r"))
        .parked(format!("{base}_p"))
        .build()
        .unwrap_or_else(|e| panic!("table names from {base}: {e}"))
}

/// Outbox tables no other test uses: [`outbox_tables_named`] on a
/// [`unique_name`] of `prefix`.
pub fn unique_tables(prefix: &str) -> OutboxTables {
    outbox_tables_named(&unique_name(prefix))
}
