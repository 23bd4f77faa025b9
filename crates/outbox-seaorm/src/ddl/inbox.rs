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
mod tests {
    use super::*;

    #[test]
    fn default_statements() {
        let t = InboxTable::default();
        assert_eq!(
            inbox_create_statements(Backend::Postgres, &t),
            [
                r#"CREATE TABLE "outbox_inbox" ( "consumer" varchar(128) NOT NULL, "message_id" uuid NOT NULL, "processed_at" timestamp with time zone NOT NULL, PRIMARY KEY ("consumer", "message_id") )"#,
                r#"CREATE INDEX "outbox_inbox_processed_at_idx" ON "outbox_inbox" ("processed_at")"#,
            ]
        );
        assert_eq!(
            inbox_drop_statements(Backend::MySql, &t),
            ["DROP TABLE `outbox_inbox`"]
        );
    }

    #[test]
    fn custom_names_are_quoted_everywhere() {
        let t = InboxTable::builder()
            .schema("Billing")
            .table("Billing_Inbox")
            .build()
            .unwrap();
        let pg = inbox_create_statements(Backend::Postgres, &t);
        assert_eq!(pg[0], r#"CREATE SCHEMA IF NOT EXISTS "Billing""#);
        assert!(
            pg[1].starts_with(r#"CREATE TABLE "Billing"."Billing_Inbox" ("#),
            "{pg:?}"
        );
        assert_eq!(
            pg[2],
            r#"CREATE INDEX "Billing_Inbox_processed_at_idx" ON "Billing"."Billing_Inbox" ("processed_at")"#
        );
        let my = inbox_create_statements(Backend::MySql, &t);
        assert_eq!(my.len(), 2, "no schema creation on MySQL");
        assert!(my[0].contains("COLLATE=utf8mb4_bin"), "{my:?}");
        assert_eq!(
            my[1],
            "CREATE INDEX `Billing_Inbox_processed_at_idx` ON `Billing`.`Billing_Inbox` (`processed_at`)"
        );
        assert_eq!(
            inbox_create_statements(Backend::Sqlite, &t)[1],
            r#"CREATE INDEX "Billing"."Billing_Inbox_processed_at_idx" ON "Billing_Inbox" ("processed_at")"#
        );
        assert_eq!(
            inbox_drop_statements(Backend::Sqlite, &t),
            [r#"DROP TABLE "Billing"."Billing_Inbox""#]
        );
    }
}
