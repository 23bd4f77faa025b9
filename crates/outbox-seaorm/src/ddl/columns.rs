//! The column types and table options that differ per backend, shared by the outbox's
//! tables: byte columns, points in time, the stored record's columns (the messages
//! table's and the parked table's copy of them) and MySQL's engine and collation.

use sea_query::{Alias, ColumnDef, IntoIden, TableCreateStatement};

use crate::backend::Backend;
use crate::entity::message;

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
pub(super) fn utc_timestamp(backend: Backend, column: impl IntoIden) -> ColumnDef {
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
