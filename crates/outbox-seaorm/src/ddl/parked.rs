//! The parked-rows table, created by its own migration ([`ParkedMigration`](crate::ParkedMigration))
//! so that a database migrated before parking existed gains it by adding one migration.
//!
//! The copied columns have exactly the messages table's types (a requeue copies them
//! back); `id` is the original id, not generated. Failure and park times are `BIGINT`
//! milliseconds since the Unix epoch, like lease expiries.

use sea_query::{ColumnDef, Index, IndexCreateStatement, Table, TableCreateStatement};

use super::columns::{mysql_options, record_columns};
use super::render::{render_drop, render_index, render_table};
use crate::backend::Backend;
use crate::entity::parked;
use crate::tables::{OutboxTables, SqlNames};

/// `CREATE` statements for the parked table and its `(bucket, id)` index.
pub fn parked_create_statements(backend: Backend, tables: &OutboxTables) -> Vec<String> {
    let index = tables.parked_index();
    vec![
        render_table(backend, &parked_table(backend, tables)),
        render_index(
            backend,
            tables.schema(),
            tables.parked(),
            index,
            &parked_index(tables, index),
            &["bucket", "id"],
        ),
    ]
}

/// `DROP` statement for the parked table.
pub fn parked_drop_statements(backend: Backend, tables: &OutboxTables) -> Vec<String> {
    vec![render_drop(backend, tables.parked_name())]
}

fn parked_table(backend: Backend, tables: &OutboxTables) -> TableCreateStatement {
    use parked::Column as C;
    let mut t = Table::create();
    t.table(tables.parked_name())
        .col(ColumnDef::new(C::Id).big_integer().not_null().primary_key());
    record_columns(backend, &mut t);
    t.col(ColumnDef::new(C::Error).text().null())
        .col(ColumnDef::new(C::Attempts).integer().not_null())
        .col(ColumnDef::new(C::FirstFailedAtMs).big_integer().null())
        .col(ColumnDef::new(C::LastFailedAtMs).big_integer().null())
        .col(ColumnDef::new(C::HeldBehind).big_integer().null())
        .col(ColumnDef::new(C::ParkedAtMs).big_integer().not_null());
    mysql_options(backend, &mut t, false);
    t
}

fn parked_index(tables: &OutboxTables, name: &str) -> IndexCreateStatement {
    Index::create()
        .name(name)
        .table(tables.parked_name())
        .col(parked::Column::Bucket)
        .col(parked::Column::Id)
        .to_owned()
}
