//! Connecting: the refusal of a backend left out of the build, by a chosen feature set
//! and by the build's own, and a connection to an enabled one.

use super::*;

#[test]
fn a_url_whose_backend_is_left_out_names_the_feature() {
    let only_postgres = |b: Backend| b == Backend::Postgres;
    let e =
        refuse_disabled("sqlite://orders.db?mode=rwc", only_postgres).expect_err("sqlite is off");
    assert!(
        matches!(e, DbErr::BackendNotSupported { db: "sqlite", .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("the `sqlite` cargo feature"), "{e}");
    let e =
        refuse_disabled("mysql://root@localhost/test", only_postgres).expect_err("mysql is off");
    assert!(e.to_string().contains("the `mysql` cargo feature"), "{e}");
    assert!(refuse_disabled("postgres://u@localhost/test", only_postgres).is_ok());
    // Other schemes are sea-orm's to refuse.
    assert!(refuse_disabled("oracle://h/db", only_postgres).is_ok());
}

/// With its feature on, a backend connects: `connect` lets the URL through to sea-orm.
/// (PostgreSQL and MySQL/MariaDB need a server: the database tests connect them.)
#[cfg(feature = "sqlite")]
#[tokio::test]
async fn connect_accepts_an_enabled_backend() {
    use sea_orm::ConnectionTrait;
    let db = connect("sqlite::memory:").await.unwrap();
    db.execute_unprepared("SELECT 1").await.unwrap();
}

/// Asserts that connecting `url`, with both entry points, fails before any I/O with
/// [`DbErr::BackendNotSupported`] naming `feature`.
#[cfg(not(all(feature = "postgres", feature = "mysql", feature = "sqlite")))]
async fn refused_naming(url: &str, feature: &'static str) {
    let options = RelayOptions::builder().build().unwrap();
    for e in [
        connect(url).await.expect_err("the backend is off"),
        ConnectSettings::new(url)
            .for_relay(&options)
            .connect()
            .await
            .expect_err("the backend is off"),
    ] {
        assert!(
            matches!(&e, DbErr::BackendNotSupported { db, .. } if *db == feature),
            "{e:?}"
        );
        let shown = e.to_string();
        assert!(
            shown.contains(&format!("the `{feature}` cargo feature")),
            "{shown}"
        );
    }
}

// A build without a backend's feature (only there do the `feature_off_` tests exist;
// `cargo xtask test` runs them in a build with only `sqlite`) refuses that backend's URLs
// with a typed error naming the feature, instead of sea-orm's "no driver" message. No
// server is needed: the refusal comes first.

#[cfg(not(feature = "postgres"))]
#[tokio::test]
async fn feature_off_postgres_urls_are_refused_naming_the_feature() {
    refused_naming("postgres://u@localhost:5432/outbox", "postgres").await;
    refused_naming("PostgreSQL://u@localhost/outbox", "postgres").await;
}

#[cfg(not(feature = "mysql"))]
#[tokio::test]
async fn feature_off_mysql_urls_are_refused_naming_the_feature() {
    refused_naming("mysql://root@localhost:3306/outbox", "mysql").await;
}

#[cfg(not(feature = "sqlite"))]
#[tokio::test]
async fn feature_off_sqlite_urls_are_refused_naming_the_feature() {
    refused_naming("sqlite::memory:", "sqlite").await;
}
