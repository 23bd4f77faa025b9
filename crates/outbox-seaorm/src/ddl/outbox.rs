//! The outbox's own three tables (messages with its `(bucket, id)` index, leases,
//! relays) as SQL, and the reviewable script of them and the parked table that
//! `migrations/<backend>.sql` holds.

use sea_query::{ColumnDef, Index, IndexCreateStatement, Table, TableCreateStatement};

use super::columns::{mysql_options, record_columns};
use super::parked::{parked_create_statements, parked_drop_statements};
use super::render::{create_schema, render_drop, render_index, render_table};
use crate::backend::Backend;
use crate::entity::{lease, message, relay};
use crate::tables::{OutboxTables, SqlNames};

/// `CREATE` statements for the three tables and the index, in order. On PostgreSQL a
/// custom schema is created first when missing.
pub fn create_statements(backend: Backend, tables: &OutboxTables) -> Vec<String> {
    let mut out: Vec<String> = create_schema(backend, tables.schema())
        .into_iter()
        .collect();
    out.push(render_table(backend, &messages_table(backend, tables)));
    out.push(render_index(
        backend,
        tables.schema(),
        tables.messages(),
        tables.messages_index(),
        &messages_index(tables),
        &["bucket", "id"],
    ));
    out.push(render_table(backend, &leases_table(backend, tables)));
    out.push(render_table(backend, &relays_table(backend, tables)));
    out
}

/// `DROP` statements for the three tables (the index goes with its table). A custom
/// schema is left in place: it may hold other objects.
pub fn drop_statements(backend: Backend, tables: &OutboxTables) -> Vec<String> {
    [
        tables.relays_name(),
        tables.leases_name(),
        tables.messages_name(),
    ]
    .into_iter()
    .map(|name| render_drop(backend, name))
    .collect()
}

/// The statements of both migrations ([`Migration`](crate::Migration) then
/// [`ParkedMigration`](crate::ParkedMigration)): every table of one outbox, for tools and
/// tests that create an outbox without a migrator.
pub fn create_all_statements(backend: Backend, tables: &OutboxTables) -> Vec<String> {
    let mut all = create_statements(backend, tables);
    all.extend(parked_create_statements(backend, tables));
    all
}

/// `DROP` statements for every table of one outbox, parked table first.
pub fn drop_all_statements(backend: Backend, tables: &OutboxTables) -> Vec<String> {
    let mut all = parked_drop_statements(backend, tables);
    all.extend(drop_statements(backend, tables));
    all
}

/// The whole schema as one reviewable script: a header, then each create statement
/// terminated by `;`. This is what `migrations/<backend>.sql` holds for the default names.
pub fn script(backend: Backend, tables: &OutboxTables) -> String {
    let name = match backend {
        Backend::Postgres => "PostgreSQL",
        Backend::MySql => "MySQL / MariaDB",
        Backend::Sqlite => "SQLite",
    };
    let mut out = format!(
        "-- Outbox tables for {name}, generated from the sea-orm migration in\n\
         -- crates/outbox-seaorm (src/ddl.rs). Do not edit: regenerate with\n\
         --   OUTBOX_BLESS=1 cargo test -p outbox-seaorm --lib ddl\n\
         -- Lease expiry and heartbeats are BIGINT milliseconds since the Unix epoch (UTC).\n"
    );
    for stmt in create_statements(backend, tables) {
        out.push('\n');
        out.push_str(&stmt);
        out.push_str(";\n");
    }
    out.push_str(
        "\n-- The parked-rows table (outbox_seaorm::ParkedMigration): rows set aside after\n\
         -- permanent publish failures, and the rows of their keys held behind them.\n",
    );
    for stmt in parked_create_statements(backend, tables) {
        out.push('\n');
        out.push_str(&stmt);
        out.push_str(";\n");
    }
    out
}

fn messages_table(backend: Backend, tables: &OutboxTables) -> TableCreateStatement {
    use message::Column as C;
    let mut t = Table::create();
    t.table(tables.messages_name()).col(
        ColumnDef::new(C::Id)
            .big_integer()
            .not_null()
            .auto_increment()
            .primary_key(),
    );
    record_columns(backend, &mut t);
    mysql_options(backend, &mut t, false);
    t
}

fn messages_index(tables: &OutboxTables) -> IndexCreateStatement {
    Index::create()
        .name(tables.messages_index())
        .table(tables.messages_name())
        .col(message::Column::Bucket)
        .col(message::Column::Id)
        .to_owned()
}

fn leases_table(backend: Backend, tables: &OutboxTables) -> TableCreateStatement {
    use lease::Column as C;
    let mut t = Table::create();
    t.table(tables.leases_name())
        .col(ColumnDef::new(C::Bucket).integer().not_null().primary_key())
        .col(ColumnDef::new(C::Owner).string_len(relay_id_len()).null())
        .col(ColumnDef::new(C::ExpiresAtMs).big_integer().not_null());
    mysql_options(backend, &mut t, true);
    t
}

fn relays_table(backend: Backend, tables: &OutboxTables) -> TableCreateStatement {
    use relay::Column as C;
    let mut t = Table::create();
    t.table(tables.relays_name())
        .col(
            ColumnDef::new(C::RelayId)
                .string_len(relay_id_len())
                .not_null()
                .primary_key(),
        )
        .col(ColumnDef::new(C::LastSeenAtMs).big_integer().not_null());
    mysql_options(backend, &mut t, true);
    t
}

fn relay_id_len() -> u32 {
    u32::try_from(outbox_core::options::MAX_RELAY_ID_LEN).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "outbox_tests.rs"]
mod tests;
