//! Several statements in one round trip, unprepared: how lease calls stay at a fixed,
//! small number of round trips over a slow link.
//!
//! A lease call is a handful of short statements (heartbeat, guarded updates, a read of
//! what was won). Sent one by one through sea-orm, each costs a round trip, and one
//! whose text changes between calls (the bucket lists are literals) also costs a
//! `Parse` round trip first, plus a cache eviction. Here the statements are rendered by
//! sea-query for the connection's dialect with their values inline, joined with `;` and
//! sent as one unprepared request through sqlx's `raw_sql`: PostgreSQL's simple-query
//! protocol (the statements run as one implicit transaction), MySQL's multi-statement
//! `COM_QUERY` (sqlx connects with `CLIENT_MULTI_STATEMENTS`; each statement commits on
//! its own, as it did when sent alone), SQLite's in-process execution of each.
//!
//! Inline values are safe here because they are integers and relay ids, and a relay id
//! that could not be written as a plain literal in every dialect (quotes, backslashes,
//! control characters) is refused before any statement is built (see `leases.rs`).
//!
//! A connection that is not a sqlx pool (sea-orm's mock or proxy connections) gets the
//! same statements one by one: same SQL, only more round trips.

use outbox_core::StoreError;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use sea_query::{
    MysqlQueryBuilder, PostgresQueryBuilder, QueryStatementWriter, SqliteQueryBuilder,
};

use super::db_error::store_error;

/// One value of a result row, as far as the lease tables need: integers and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cell {
    Int(i64),
    Text(String),
    Null,
    /// A type the lease tables never hold.
    Other,
}

impl Cell {
    pub(crate) fn int(&self) -> Result<i64, StoreError> {
        match self {
            Cell::Int(v) => Ok(*v),
            other => Err(StoreError::unavailable(format!(
                "lease tables: expected an integer, read {other:?}"
            ))),
        }
    }

    pub(crate) fn text(&self) -> Result<Option<String>, StoreError> {
        match self {
            Cell::Text(v) => Ok(Some(v.clone())),
            Cell::Null => Ok(None),
            other => Err(StoreError::unavailable(format!(
                "lease tables: expected text, read {other:?}"
            ))),
        }
    }
}

/// Statements to send together; rows of every statement come back in order.
pub(crate) struct SqlBatch {
    backend: DbBackend,
    /// Each statement, and whether it returns rows.
    statements: Vec<(String, bool)>,
}

impl SqlBatch {
    pub(crate) fn new(db: &DatabaseConnection) -> Self {
        SqlBatch {
            backend: db.get_database_backend(),
            statements: Vec::new(),
        }
    }

    /// A statement that returns no rows (a write).
    pub(crate) fn write(&mut self, stmt: &impl QueryStatementWriter) -> &mut Self {
        let sql = self.render(stmt);
        self.statements.push((sql, false));
        self
    }

    /// A statement whose rows the caller wants.
    pub(crate) fn read(&mut self, stmt: &impl QueryStatementWriter) -> &mut Self {
        let sql = self.render(stmt);
        self.statements.push((sql, true));
        self
    }

    fn render(&self, stmt: &impl QueryStatementWriter) -> String {
        match self.backend {
            DbBackend::MySql => stmt.to_string(MysqlQueryBuilder),
            DbBackend::Sqlite => stmt.to_string(SqliteQueryBuilder),
            _ => stmt.to_string(PostgresQueryBuilder),
        }
    }

    /// The whole request, as sent.
    #[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
    fn joined(&self) -> String {
        let mut sql = String::new();
        for (statement, _) in &self.statements {
            sql.push_str(statement);
            sql.push_str(";\n");
        }
        sql
    }

    /// Sends every statement in one request; returns the rows of all of them in order.
    pub(crate) async fn run(&self, db: &DatabaseConnection) -> Result<Vec<Vec<Cell>>, StoreError> {
        if self.statements.is_empty() {
            return Ok(Vec::new());
        }
        match self.run_on_pool(db).await {
            Some(rows) => rows,
            None => self.run_one_by_one(db).await,
        }
    }

    /// The one request, when `db` is a sqlx pool of a backend this build has; `None` for
    /// any other connection.
    #[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
    async fn run_on_pool(
        &self,
        db: &DatabaseConnection,
    ) -> Option<Result<Vec<Vec<Cell>>, StoreError>> {
        use sea_orm::DatabaseConnectionType as C;
        let sql = sea_orm::sqlx::AssertSqlSafe(self.joined());
        let rows = match &db.inner {
            #[cfg(feature = "postgres")]
            C::SqlxPostgresPoolConnection(_) => sea_orm::sqlx::raw_sql(sql)
                .fetch_all(db.get_postgres_connection_pool())
                .await
                .map(|rows| rows.iter().map(cells).collect()),
            #[cfg(feature = "mysql")]
            C::SqlxMySqlPoolConnection(_) => sea_orm::sqlx::raw_sql(sql)
                .fetch_all(db.get_mysql_connection_pool())
                .await
                .map(|rows| rows.iter().map(cells).collect()),
            #[cfg(feature = "sqlite")]
            C::SqlxSqlitePoolConnection(_) => sea_orm::sqlx::raw_sql(sql)
                .fetch_all(db.get_sqlite_connection_pool())
                .await
                .map(|rows| rows.iter().map(cells).collect()),
            _ => return None,
        };
        Some(rows.map_err(driver_error))
    }

    /// Without a backend feature there is no sqlx pool to send one request through.
    #[cfg(not(any(feature = "postgres", feature = "mysql", feature = "sqlite")))]
    async fn run_on_pool(
        &self,
        _db: &DatabaseConnection,
    ) -> Option<Result<Vec<Vec<Cell>>, StoreError>> {
        None
    }

    async fn run_one_by_one(&self, db: &DatabaseConnection) -> Result<Vec<Vec<Cell>>, StoreError> {
        let mut out = Vec::new();
        for (sql, returns_rows) in &self.statements {
            if *returns_rows {
                let rows = db
                    .query_all_raw(Statement::from_string(self.backend, sql.clone()))
                    .await
                    .map_err(store_error)?;
                for row in rows {
                    out.push(result_cells(&row));
                }
            } else {
                db.execute_unprepared(sql).await.map_err(store_error)?;
            }
        }
        Ok(out)
    }
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
fn driver_error(error: sea_orm::sqlx::Error) -> StoreError {
    store_error(sea_orm::DbErr::Query(sea_orm::RuntimeErr::SqlxError(
        std::sync::Arc::new(error),
    )))
}

/// A sqlx row's values: integers whatever their width, text, NULL.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
fn cells<R>(row: &R) -> Vec<Cell>
where
    R: sea_orm::sqlx::Row,
    usize: sea_orm::sqlx::ColumnIndex<R>,
    i64: for<'r> sea_orm::sqlx::Decode<'r, R::Database> + sea_orm::sqlx::Type<R::Database>,
    i32: for<'r> sea_orm::sqlx::Decode<'r, R::Database> + sea_orm::sqlx::Type<R::Database>,
    String: for<'r> sea_orm::sqlx::Decode<'r, R::Database> + sea_orm::sqlx::Type<R::Database>,
{
    (0..row.len())
        .map(|i| {
            if let Ok(v) = row.try_get::<Option<i64>, _>(i) {
                return v.map_or(Cell::Null, Cell::Int);
            }
            if let Ok(v) = row.try_get::<Option<i32>, _>(i) {
                return v.map_or(Cell::Null, |v| Cell::Int(i64::from(v)));
            }
            if let Ok(v) = row.try_get::<Option<String>, _>(i) {
                return v.map_or(Cell::Null, Cell::Text);
            }
            Cell::Other
        })
        .collect()
}

/// The same for a sea-orm row (connections that are not sqlx pools).
fn result_cells(row: &sea_orm::QueryResult) -> Vec<Cell> {
    (0..row.column_names().len())
        .map(|i| {
            if let Ok(v) = row.try_get_by_index::<Option<i64>>(i) {
                return v.map_or(Cell::Null, Cell::Int);
            }
            if let Ok(v) = row.try_get_by_index::<Option<i32>>(i) {
                return v.map_or(Cell::Null, |v| Cell::Int(i64::from(v)));
            }
            if let Ok(v) = row.try_get_by_index::<Option<String>>(i) {
                return v.map_or(Cell::Null, Cell::Text);
            }
            Cell::Other
        })
        .collect()
}
