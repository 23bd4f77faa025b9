//! The databases this crate speaks, as a closed set.
//!
//! sea-orm's `DbBackend` is `#[non_exhaustive]`; a backend added to sea-orm later must be
//! refused clearly rather than handed SQL written for another dialect.

use sea_orm::DbBackend;

/// A database this crate supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// PostgreSQL.
    Postgres,
    /// MySQL or MariaDB.
    MySql,
    /// SQLite.
    Sqlite,
}

/// A sea-orm backend this crate has no SQL for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("outbox-seaorm supports PostgreSQL, MySQL/MariaDB and SQLite, not {0:?}")]
pub struct UnsupportedBackend(pub DbBackend);

impl Backend {
    /// All supported backends.
    pub const ALL: [Backend; 3] = [Backend::Postgres, Backend::MySql, Backend::Sqlite];

    /// The sea-orm backend.
    pub fn db_backend(self) -> DbBackend {
        match self {
            Backend::Postgres => DbBackend::Postgres,
            Backend::MySql => DbBackend::MySql,
            Backend::Sqlite => DbBackend::Sqlite,
        }
    }

    /// Short lowercase name: `postgres`, `mysql` or `sqlite`; also the name of the cargo
    /// feature that compiles the backend's driver into this crate.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::MySql => "mysql",
            Backend::Sqlite => "sqlite",
        }
    }

    /// The backend a connection URL names by its scheme, as sea-orm reads it:
    /// `postgres:` or `postgresql:`, `mysql:`, `sqlite:` (case-insensitive). `None` for
    /// any other URL, which sea-orm refuses on its own.
    pub fn from_url(url: &str) -> Option<Backend> {
        let (scheme, _) = url.split_once(':')?;
        match scheme.to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" => Some(Backend::Postgres),
            "mysql" => Some(Backend::MySql),
            "sqlite" => Some(Backend::Sqlite),
            _ => None,
        }
    }

    /// Whether this build has the backend's driver: its cargo feature (`postgres`,
    /// `mysql`, `sqlite`; all three by default) was enabled.
    pub fn is_enabled(self) -> bool {
        match self {
            Backend::Postgres => cfg!(feature = "postgres"),
            Backend::MySql => cfg!(feature = "mysql"),
            Backend::Sqlite => cfg!(feature = "sqlite"),
        }
    }
}

impl TryFrom<DbBackend> for Backend {
    type Error = UnsupportedBackend;

    fn try_from(backend: DbBackend) -> Result<Self, Self::Error> {
        match backend {
            DbBackend::Postgres => Ok(Backend::Postgres),
            DbBackend::MySql => Ok(Backend::MySql),
            DbBackend::Sqlite => Ok(Backend::Sqlite),
            other => Err(UnsupportedBackend(other)),
        }
    }
}

#[cfg(test)]
#[path = "backend_tests.rs"]
mod tests;
