//! Turning statements into SQL text with the backend's own query builder, and the
//! statements sea-query has no (working) builder for: `CREATE SCHEMA` and a
//! schema-qualified `CREATE INDEX`. Shared by every table's DDL.

use sea_query::{
    IndexCreateStatement, MysqlQueryBuilder, PostgresQueryBuilder, SqliteQueryBuilder, Table,
    TableCreateStatement, TableDropStatement, TableName,
};

use crate::backend::Backend;

/// `CREATE TABLE` as the backend writes it.
pub(super) fn render_table(backend: Backend, stmt: &TableCreateStatement) -> String {
    match backend {
        Backend::Postgres => stmt.to_string(PostgresQueryBuilder),
        Backend::MySql => stmt.to_string(MysqlQueryBuilder),
        Backend::Sqlite => stmt.to_string(SqliteQueryBuilder),
    }
}

/// `DROP TABLE` for `name`.
pub(super) fn render_drop(backend: Backend, name: TableName) -> String {
    let stmt: TableDropStatement = Table::drop().table(name).to_owned();
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

/// `CREATE SCHEMA IF NOT EXISTS` on PostgreSQL when a schema is set; MySQL databases and
/// SQLite attached databases must exist already.
pub(super) fn create_schema(backend: Backend, schema: Option<&str>) -> Option<String> {
    match (backend, schema) {
        (Backend::Postgres, Some(schema)) => Some(format!(
            "CREATE SCHEMA IF NOT EXISTS {}",
            quote(backend, schema)
        )),
        _ => None,
    }
}

/// Quotes an identifier the way the backend's query builder does (doubling any quote
/// character inside). The names reaching here are validated already; this is for the
/// two statements sea-query has no builder for.
pub(super) fn quote(backend: Backend, name: &str) -> String {
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
