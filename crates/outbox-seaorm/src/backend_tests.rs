//! Which backend a connection URL names.

use super::*;

#[test]
fn url_schemes() {
    assert_eq!(
        Backend::from_url("postgres://u@h/db"),
        Some(Backend::Postgres)
    );
    assert_eq!(
        Backend::from_url("PostgreSQL://u@h/db"),
        Some(Backend::Postgres)
    );
    assert_eq!(Backend::from_url("mysql://root@h/db"), Some(Backend::MySql));
    assert_eq!(Backend::from_url("sqlite::memory:"), Some(Backend::Sqlite));
    assert_eq!(
        Backend::from_url("sqlite://a.db?mode=rwc"),
        Some(Backend::Sqlite)
    );
    assert_eq!(Backend::from_url("mariadb://h/db"), None);
    assert_eq!(Backend::from_url("no scheme"), None);
}
