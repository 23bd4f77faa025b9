//! How a transaction that will write begins, for the writers and the relay's store
//! alike: on SQLite it takes the write lock at once.

use sea_orm::{
    DatabaseConnection, DatabaseTransaction, DbBackend, DbErr, SqliteTransactionMode,
    TransactionOptions, TransactionTrait,
};

/// A transaction that will write: `BEGIN IMMEDIATE` on SQLite, a plain `BEGIN` elsewhere.
pub(crate) async fn begin_writer(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    match db.get_database_backend() {
        DbBackend::Sqlite => {
            db.begin_with_options(TransactionOptions {
                sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                ..TransactionOptions::default()
            })
            .await
        }
        _ => db.begin().await,
    }
}
