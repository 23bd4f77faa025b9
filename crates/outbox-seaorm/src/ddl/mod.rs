//! The outbox schema as SQL, per backend: the single source for the migration and for
//! the reviewed files under `migrations/`. The opt-in inbox table has its own
//! statements ([`inbox_create_statements`], `migrations/inbox/`).
//!
//! The statements are sea-query builders rendered by the backend's own query builder, so
//! every name is quoted. Where sea-query's portable type would be wrong, the type is
//! chosen per backend:
//!
//! | column | PostgreSQL | MySQL / MariaDB | SQLite |
//! |---|---|---|---|
//! | `key`, `value`, `headers` | `bytea` | `longblob` (`blob` stops at 64 KiB) | `blob` |
//! | `created_at` | `timestamp with time zone` | `datetime(6)`, UTC (`timestamp` would follow the session time zone and end in 2038) | RFC 3339 text |
//! | `id` | `bigserial` | `bigint AUTO_INCREMENT` | `integer PRIMARY KEY AUTOINCREMENT` (never reuses a deleted id) |
//!
//! On MySQL/MariaDB the leases and relays tables use the binary collation
//! `utf8mb4_bin`: relay ids are compared in lease guards, and the default
//! case-insensitive collation would make `relay-A` and `relay-a` one owner.

use sea_query::{
    Alias, ColumnDef, Index, IndexCreateStatement, IntoIden, MysqlQueryBuilder,
    PostgresQueryBuilder, SqliteQueryBuilder, Table, TableCreateStatement, TableDropStatement,
    TableName,
};

use crate::backend::Backend;
use crate::entity::{lease, message, relay};
use crate::tables::{OutboxTables, SqlNames};

mod inbox;
mod parked;

pub use inbox::{inbox_create_statements, inbox_drop_statements, inbox_script};
pub use parked::{parked_create_statements, parked_drop_statements};

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

pub(super) fn render_drop(backend: Backend, name: TableName) -> String {
    let stmt: TableDropStatement = Table::drop().table(name).to_owned();
    match backend {
        Backend::Postgres => stmt.to_string(PostgresQueryBuilder),
        Backend::MySql => stmt.to_string(MysqlQueryBuilder),
        Backend::Sqlite => stmt.to_string(SqliteQueryBuilder),
    }
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

/// `CREATE SCHEMA IF NOT EXISTS` on PostgreSQL when a schema is set; MySQL databases and
/// SQLite attached databases must exist already.
fn create_schema(backend: Backend, schema: Option<&str>) -> Option<String> {
    match (backend, schema) {
        (Backend::Postgres, Some(schema)) => Some(format!(
            "CREATE SCHEMA IF NOT EXISTS {}",
            quote(backend, schema)
        )),
        _ => None,
    }
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

/// The columns of a stored record after its id, with their per-backend types: the
/// messages table's, and the parked table's copy of them (same names, same types, so a
/// park and a requeue copy rows with `INSERT ... SELECT`).
pub(super) fn record_columns(backend: Backend, t: &mut TableCreateStatement) {
    use message::Column as C;
    t.col(ColumnDef::new(C::MessageId).uuid().not_null())
        .col(ColumnDef::new(C::Bucket).integer().not_null())
        .col(
            ColumnDef::new(C::Topic)
                .string_len(message::TOPIC_MAX_LEN)
                .not_null(),
        )
        .col(blob(backend, C::Key))
        .col(blob(backend, C::Value))
        .col(blob(backend, C::Headers))
        .col(ColumnDef::new(C::Partition).integer().null())
        .col(created_at(backend));
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

/// A nullable byte column: `longblob` on MySQL/MariaDB, `bytea` / `blob` elsewhere.
fn blob(backend: Backend, column: message::Column) -> ColumnDef {
    let mut def = ColumnDef::new(column);
    match backend {
        Backend::MySql => def.custom(Alias::new("longblob").into_iden()),
        Backend::Postgres | Backend::Sqlite => def.blob(),
    };
    def.null();
    def
}

fn created_at(backend: Backend) -> ColumnDef {
    utc_timestamp(backend, message::Column::CreatedAt)
}

/// A non-null point in time: `timestamptz` (PostgreSQL), `datetime(6)` holding UTC
/// (MySQL/MariaDB), RFC 3339 text (SQLite).
fn utc_timestamp(backend: Backend, column: impl IntoIden) -> ColumnDef {
    let mut def = ColumnDef::new(column);
    match backend {
        Backend::MySql => def.custom(Alias::new("datetime(6)").into_iden()),
        Backend::Postgres | Backend::Sqlite => def.timestamp_with_time_zone(),
    };
    def.not_null();
    def
}

/// InnoDB and utf8mb4 on MySQL/MariaDB; binary collation where relay ids are compared.
pub(super) fn mysql_options(backend: Backend, table: &mut TableCreateStatement, binary: bool) {
    if backend != Backend::MySql {
        return;
    }
    table.engine("InnoDB").character_set("utf8mb4");
    if binary {
        table.collate("utf8mb4_bin");
    }
}

pub(super) fn render_table(backend: Backend, stmt: &TableCreateStatement) -> String {
    match backend {
        Backend::Postgres => stmt.to_string(PostgresQueryBuilder),
        Backend::MySql => stmt.to_string(MysqlQueryBuilder),
        Backend::Sqlite => stmt.to_string(SqliteQueryBuilder),
    }
}

/// Renders `CREATE INDEX index ON [schema.]table (columns)`.
pub(super) fn render_index(
    backend: Backend,
    schema: Option<&str>,
    table: &str,
    index: &str,
    stmt: &IndexCreateStatement,
    columns: &[&str],
) -> String {
    let Some(schema) = schema else {
        return match backend {
            Backend::Postgres => stmt.to_string(PostgresQueryBuilder),
            Backend::MySql => stmt.to_string(MysqlQueryBuilder),
            Backend::Sqlite => stmt.to_string(SqliteQueryBuilder),
        };
    };
    // sea-query 1.0 panics on a schema-qualified table in MySQL's CREATE INDEX, and
    // SQLite wants the schema on the index name instead of the table; spell these out.
    let (index, table) = match backend {
        Backend::Postgres | Backend::MySql => (
            quote(backend, index),
            format!("{}.{}", quote(backend, schema), quote(backend, table)),
        ),
        Backend::Sqlite => (
            format!("{}.{}", quote(backend, schema), quote(backend, index)),
            quote(backend, table),
        ),
    };
    let columns: Vec<String> = columns.iter().map(|c| quote(backend, c)).collect();
    format!("CREATE INDEX {index} ON {table} ({})", columns.join(", "))
}

/// Quotes an identifier the way the backend's query builder does (doubling any quote
/// character inside). The names reaching here are validated already; this is for the
/// two statements sea-query has no builder for.
fn quote(backend: Backend, name: &str) -> String {
    let q = match backend {
        Backend::MySql => '`',
        Backend::Postgres | Backend::Sqlite => '"',
    };
    let mut out = String::with_capacity(name.len() + 2);
    out.push(q);
    for c in name.chars() {
        if c == q {
            out.push(q);
        }
        out.push(c);
    }
    out.push(q);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const BACKENDS: [Backend; 3] = Backend::ALL;

    fn migrations_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../migrations")
    }

    /// The checked-in DDL files are exactly what the migrations run for the default
    /// names: `migrations/<backend>.sql` for the outbox, `migrations/inbox/<backend>.sql`
    /// for the opt-in inbox. `OUTBOX_BLESS=1` rewrites them instead of failing.
    #[test]
    fn migrations_dir_matches_the_migration() {
        let bless = std::env::var("OUTBOX_BLESS").is_ok_and(|v| v == "1");
        let mut drifted = Vec::new();
        for backend in BACKENDS {
            let file = format!("{}.sql", backend.name());
            let expected = [
                (
                    migrations_dir().join(&file),
                    script(backend, &OutboxTables::default()),
                ),
                (
                    migrations_dir().join("inbox").join(&file),
                    inbox_script(backend, &crate::InboxTable::default()),
                ),
            ];
            for (path, expected) in expected {
                if bless {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, &expected).unwrap();
                    continue;
                }
                let actual = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{} is missing ({e})", path.display()));
                if actual != expected {
                    drifted.push(format!(
                        "{}:\n--- checked in\n{actual}\n--- generated\n{expected}",
                        path.display()
                    ));
                }
            }
        }
        assert!(
            drifted.is_empty(),
            "migrations/ drifted from the sea-orm migrations; review and regenerate with \
             `OUTBOX_BLESS=1 cargo test -p outbox-seaorm --lib ddl`:\n{}",
            drifted.join("\n")
        );
    }

    #[test]
    fn custom_names_are_quoted_everywhere() {
        let tables = OutboxTables::builder()
            .schema("Messaging")
            .messages("Orders_Outbox")
            .leases("orders_leases")
            .relays("orders_relays")
            .build()
            .unwrap();
        for backend in BACKENDS {
            let all = create_statements(backend, &tables).join("\n");
            let q = if backend == Backend::MySql { '`' } else { '"' };
            assert!(
                all.contains(&format!("{q}Messaging{q}.{q}Orders_Outbox{q}")),
                "{all}"
            );
            assert!(!all.contains(" Orders_Outbox "), "unquoted name in {all}");
            let drops = drop_statements(backend, &tables).join("\n");
            assert!(
                drops.contains(&format!("{q}Messaging{q}.{q}orders_relays{q}")),
                "{drops}"
            );
        }
        assert_eq!(
            create_statements(Backend::Postgres, &tables)[0],
            r#"CREATE SCHEMA IF NOT EXISTS "Messaging""#
        );
        assert_eq!(
            create_statements(Backend::MySql, &tables)[1],
            "CREATE INDEX `Orders_Outbox_bucket_id_idx` ON `Messaging`.`Orders_Outbox` (`bucket`, `id`)"
        );
        assert_eq!(
            create_statements(Backend::Sqlite, &tables)[1],
            r#"CREATE INDEX "Messaging"."Orders_Outbox_bucket_id_idx" ON "Orders_Outbox" ("bucket", "id")"#
        );
        assert_eq!(quote(Backend::MySql, "a`b"), "`a``b`");
    }
}
