//! The opt-in inbox table as SQL, per backend (see [`InboxMigration`](crate::InboxMigration)).
//!
//! | column | PostgreSQL | MySQL / MariaDB | SQLite |
//! |---|---|---|---|
//! | `consumer` | `varchar(128)` | `varchar(128)`, collation `utf8mb4_bin` (names compare exactly, as on the other backends) | `varchar(128)` |
//! | `message_id` | `uuid` | `binary(16)`, RFC 4122 byte order | 16-byte blob |
//! | `processed_at` | `timestamp with time zone` | `datetime(6)`, UTC | RFC 3339 text |
//!
//! The primary key is `(consumer, message_id)`; an index on `processed_at` serves the
//! retention purge. `message_id` is stored exactly as in `outbox_messages`.

use sea_query::{ColumnDef, Index, IndexCreateStatement, Table, TableCreateStatement};

use super::columns::{mysql_options, utc_timestamp};
use super::render::{create_schema, render_drop, render_index, render_table};
use crate::backend::Backend;
use crate::entity::inbox::{CONSUMER_MAX_LEN, Column as C};
use crate::inbox::InboxTable;

/// `CREATE` statements for the inbox table and its index, in order. On PostgreSQL a
/// custom schema is created first when missing.
pub fn inbox_create_statements(backend: Backend, table: &InboxTable) -> Vec<String> {
    let mut out: Vec<String> = create_schema(backend, table.schema()).into_iter().collect();
    out.push(render_table(backend, &inbox_table(backend, table)));
    out.push(render_index(
        backend,
        table.schema(),
        table.table(),
        table.processed_at_index(),
        &processed_at_index(table),
        &["processed_at"],
    ));
    out
}

/// The `DROP` statement for the inbox table (its index goes with it). A custom schema
/// is left in place.
pub fn inbox_drop_statements(backend: Backend, table: &InboxTable) -> Vec<String> {
    vec![render_drop(backend, table.name())]
}

/// The inbox schema as one reviewable script, as `migrations/inbox/<backend>.sql` holds
/// it for the default name.
pub fn inbox_script(backend: Backend, table: &InboxTable) -> String {
    let name = match backend {
        Backend::Postgres => "PostgreSQL",
        Backend::MySql => "MySQL / MariaDB",
        Backend::Sqlite => "SQLite",
    };
    let mut out = format!(
        "-- Consumer inbox table for {name} (opt-in), generated from the sea-orm migration\n\
         -- in crates/outbox-seaorm (src/ddl/inbox.rs). Do not edit: regenerate with\n\
         --   OUTBOX_BLESS=1 cargo test -p outbox-seaorm --lib ddl\n\
         -- One row per (consumer, message id) processed; processed_at is UTC.\n"
    );
    for stmt in inbox_create_statements(backend, table) {
        out.push('\n');
        out.push_str(&stmt);
        out.push_str(";\n");
    }
    out
}

fn inbox_table(backend: Backend, table: &InboxTable) -> TableCreateStatement {
    let mut t = Table::create();
    t.table(table.name())
        .col(
            ColumnDef::new(C::Consumer)
                .string_len(CONSUMER_MAX_LEN)
                .not_null(),
        )
        .col(ColumnDef::new(C::MessageId).uuid().not_null())
        .col(utc_timestamp(backend, C::ProcessedAt))
        .primary_key(Index::create().col(C::Consumer).col(C::MessageId));
    // Binary collation: consumer names are keys and must compare exactly.
    mysql_options(backend, &mut t, true);
    t
}

fn processed_at_index(table: &InboxTable) -> IndexCreateStatement {
    Index::create()
        .name(table.processed_at_index())
        .table(table.name())
        .col(C::ProcessedAt)
        .to_owned()
}

#[cfg(test)]
#[path = "inbox_tests.rs"]
mod tests;
