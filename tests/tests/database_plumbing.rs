//! Plumbing check for each database the outbox stores target, through sea-orm: create a
//! uniquely named table, insert with bound parameters, select back, drop.

// Test code: a panic is the failure report (clippy.toml allows this only inside #[test]
// functions, not in their async helpers).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use outbox_tests::{host_port, mysql_url, postgres_url, require_tcp, sqlite_url, unique_name};
use sea_orm::{ConnectionTrait, Database, DbBackend, Statement};
use std::time::Duration;

const ROWS: [(i64, &str); 3] = [(1, "hello"), (2, "wörld ✓"), (3, "")];

async fn round_trip(url: &str) {
    tokio::time::timeout(Duration::from_secs(60), round_trip_inner(url))
        .await
        .unwrap_or_else(|_| panic!("database round trip on {url} did not finish within 60 s"));
}

async fn round_trip_inner(url: &str) {
    let db = Database::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    let backend = db.get_database_backend();
    let table = unique_name("plumbing");

    db.execute_unprepared(&format!(
        "CREATE TABLE {table} (id BIGINT NOT NULL PRIMARY KEY, body VARCHAR(64) NOT NULL)"
    ))
    .await
    .unwrap();

    // Do the work, then always drop the table before asserting.
    let result = async {
        let placeholders = match backend {
            DbBackend::Postgres => "$1, $2",
            _ => "?, ?",
        };
        for (id, body) in ROWS {
            let res = db
                .execute_raw(Statement::from_sql_and_values(
                    backend,
                    format!("INSERT INTO {table} (id, body) VALUES ({placeholders})"),
                    [id.into(), body.into()],
                ))
                .await?;
            assert_eq!(res.rows_affected(), 1);
        }
        let rows = db
            .query_all_raw(Statement::from_string(
                backend,
                format!("SELECT id, body FROM {table} ORDER BY id"),
            ))
            .await?;
        rows.iter()
            .map(|row| {
                Ok((
                    row.try_get::<i64>("", "id")?,
                    row.try_get::<String>("", "body")?,
                ))
            })
            .collect::<Result<Vec<_>, sea_orm::DbErr>>()
    }
    .await;

    db.execute_unprepared(&format!("DROP TABLE {table}"))
        .await
        .unwrap();
    db.close().await.unwrap();

    let rows = result.unwrap();
    let expected: Vec<(i64, String)> = ROWS.iter().map(|(i, s)| (*i, (*s).to_owned())).collect();
    assert_eq!(rows, expected);
}

#[tokio::test]
async fn postgres_create_insert_select_drop() {
    let url = postgres_url();
    require_tcp("PostgreSQL (OUTBOX_TEST_POSTGRES_URL)", &host_port(&url));
    round_trip(&url).await;
}

#[tokio::test]
async fn mysql_create_insert_select_drop() {
    let url = mysql_url();
    require_tcp("MariaDB/MySQL (OUTBOX_TEST_MYSQL_URL)", &host_port(&url));
    round_trip(&url).await;
}

#[tokio::test]
async fn sqlite_create_insert_select_drop() {
    let url = sqlite_url();
    round_trip(&url).await;
    if let Some(path) = url
        .strip_prefix("sqlite://")
        .and_then(|r| r.split('?').next())
    {
        let _ = std::fs::remove_file(path);
    }
}
