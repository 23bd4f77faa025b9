//! Connecting a database for the outbox: one place that knows how SQLite must be set up
//! for a writer and a relay sharing one file, how large the relay's pool must be, and
//! how loud sqlx may be.
//!
//! # SQLite
//!
//! * **`journal_mode=WAL`**: readers (batch reads, the pending probe, backlog samples)
//!   never wait for the writer and the writer never waits for them; only writers take
//!   turns. In the default rollback journal a commit waits until every reader is gone,
//!   which is what made a 38-row `DELETE` take seconds while a service wrote. WAL is a
//!   property of the file: the first connection switches it, and it stays.
//! * **`synchronous=NORMAL`**: in WAL mode a commit is appended to the log without an
//!   `fsync`; the log is synced at checkpoints. A committed transaction survives a crash
//!   of the *process* (the log is in the OS page cache and is replayed on open), so the
//!   relay's at-least-once promise holds across every process crash. The remaining window
//!   is an *operating system* crash or power loss, which can lose the last commits before
//!   the next checkpoint: a lost application commit loses the business row and its outbox
//!   row together (one transaction), so nothing is published for a change that does not
//!   exist; a lost relay `DELETE` only means those rows are published again, a duplicate
//!   that at-least-once allows. Use
//!   [`ConnectSettings::sqlite_synchronous_full`] when those commits must survive power
//!   loss too.
//! * **`busy_timeout`** ([`DEFAULT_BUSY_TIMEOUT`]): a writer that finds the file locked
//!   waits up to this long instead of failing with `SQLITE_BUSY`.
//! * **`foreign_keys=ON`** (sqlx's default, kept): the outbox tables have none, the
//!   application's may.
//! * **One writer path**: a pool built by [`connect`] without a size gets sea-orm's one
//!   connection on SQLite, so the application's writes queue in-process instead of
//!   polling SQLite's lock; the relay's store serializes its own writes (deletes, lease
//!   and heartbeat updates) behind one in-process lock (see
//!   [`SeaOrmStore`](crate::SeaOrmStore)); and [`Outbox::begin`](crate::Outbox::begin)
//!   starts SQLite transactions with `BEGIN IMMEDIATE`, so a transaction takes the write
//!   lock when it starts, waiting in `busy_timeout`, instead of failing halfway when it
//!   first writes. So at most two writers (the application and the relay) ever contend
//!   for the file, and each waits in SQLite's busy handler, never errs.
//!
//! # Backends left out of the build
//!
//! Each backend's driver is a cargo feature of this crate (`postgres`, `mysql`, `sqlite`;
//! all three by default). [`ConnectSettings::connect`] and [`connect`] refuse a URL whose
//! backend was left out with [`DbErr::BackendNotSupported`], naming the feature to
//! enable, before sea-orm sees it (sea-orm would only say that no driver supports the
//! URL).
//!
//! # The relay's pool
//!
//! [`ConnectSettings::for_relay`] sizes the pool at `max_concurrent_lanes + 2` on every
//! backend: one connection for each lane that may have a fetch, publish bookkeeping or
//! delete in flight, one for lease calls (acquire, renew, heartbeat), which run beside
//! the lanes, and one for the backlog sampler. A smaller pool makes lanes queue for
//! connections (correct, but the lanes no longer run side by side); a larger one only
//! holds idle connections. [`ConnectSettings::max_connections`] overrides it.
//!
//! # Round trips
//!
//! sqlx pings every pooled connection before handing it out by default, one extra round
//! trip per statement. These settings ping only connections idle for over
//! [`IDLE_BEFORE_PING`]: on a busy relay a statement is one round trip, and a lease call
//! a fixed one or two (see `SeaOrmStore`'s lease docs). A pool built elsewhere keeps
//! whatever it was given.
//!
//! # Logging
//!
//! sqlx logs every statement at INFO and, by default, any statement slower than one
//! second as a multi-line WARN. Under load a SQLite statement legitimately waits for the
//! write lock, and a WARN per wait drowns a terminal. These settings log statements at
//! DEBUG, slow statements (over [`SLOW_STATEMENT_THRESHOLD`]) and slow pool acquires at
//! INFO: visible when asked for, never a warning on a normal run. The relay's own
//! metrics (cycle and publish durations) are the place to watch for slowness.

use std::time::Duration;

/// A pooled connection idle longer than this is pinged before it is handed out.
pub const IDLE_BEFORE_PING: Duration = Duration::from_secs(30);

use log::LevelFilter;
use outbox_core::RelayOptions;
#[cfg(feature = "sqlite")]
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{ConnectOptions, Database, DatabaseConnection, DbErr};

use crate::Backend;

/// How long a SQLite connection waits for a lock before giving up with `SQLITE_BUSY`.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Statements slower than this are logged (at INFO, not WARN).
pub const SLOW_STATEMENT_THRESHOLD: Duration = Duration::from_secs(1);

/// Extra connections a relay's pool holds beyond one per lane: lease calls and the
/// backlog sampler.
pub const RELAY_POOL_EXTRA: u32 = 2;

/// Connection settings for a database the outbox runs on (see the [module](self) docs).
///
/// ```no_run
/// use outbox_core::RelayOptions;
/// use outbox_seaorm::ConnectSettings;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let url = "sqlite://orders.db?mode=rwc";
/// let options = RelayOptions::builder().build()?;
/// // The application's writes: SQLite in WAL mode, one writer path.
/// let db = outbox_seaorm::connect(url).await?;
/// // The relay's store: its own pool, sized for the relay's lanes.
/// let store_db = ConnectSettings::new(url).for_relay(&options).connect().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ConnectSettings {
    url: String,
    max_connections: Option<u32>,
    relay_pool: Option<u32>,
    // Read by the SQLite options only; kept (and settable) in every build so code that
    // sets them compiles whichever backends are enabled.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    busy_timeout: Duration,
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    synchronous_full: bool,
}

impl ConnectSettings {
    /// Settings for `url` (`postgres://`, `mysql://` or `sqlite:`) with this crate's
    /// defaults; the pool size is sea-orm's (one connection on SQLite).
    pub fn new(url: impl Into<String>) -> Self {
        ConnectSettings {
            url: url.into(),
            max_connections: None,
            relay_pool: None,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            synchronous_full: false,
        }
    }

    /// Sizes the pool for a relay running with `options`: `max_concurrent_lanes + 2`
    /// connections (see the [module](self) docs), unless
    /// [`max_connections`](Self::max_connections) sets a size.
    pub fn for_relay(mut self, options: &RelayOptions) -> Self {
        let lanes = u32::try_from(options.max_concurrent_lanes()).unwrap_or(u32::MAX);
        self.relay_pool = Some(lanes.saturating_add(RELAY_POOL_EXTRA));
        self
    }

    /// The pool's size, overriding [`for_relay`](Self::for_relay) and the default.
    pub fn max_connections(mut self, connections: u32) -> Self {
        self.max_connections = Some(connections.max(1));
        self
    }

    /// SQLite only: how long a connection waits for a lock ([`DEFAULT_BUSY_TIMEOUT`]).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// SQLite only: `synchronous=FULL` instead of `NORMAL`, so a commit survives an
    /// operating-system crash or power loss too, at the price of an `fsync` per commit.
    pub fn sqlite_synchronous_full(mut self) -> Self {
        self.synchronous_full = true;
        self
    }

    /// The pool size these settings ask for; `None` leaves sea-orm's default.
    pub fn pool_size(&self) -> Option<u32> {
        self.max_connections.or(self.relay_pool)
    }

    /// The sea-orm options, for callers that set more before connecting.
    pub fn options(&self) -> ConnectOptions {
        let mut options = ConnectOptions::new(self.url.clone());
        if let Some(size) = self.pool_size() {
            options.max_connections(size);
        }
        // A ping before every checkout doubles the round trips of every statement; only
        // a connection idle long enough to have been dropped by a firewall or a server
        // timeout is checked first (a dead one still fails its statement, which the
        // relay retries after its backoff).
        options.test_before_acquire_if_idle_for(IDLE_BEFORE_PING);
        options
            .sqlx_logging(true)
            .sqlx_logging_level(LevelFilter::Debug)
            .sqlx_slow_statements_logging_settings(LevelFilter::Info, SLOW_STATEMENT_THRESHOLD);
        self.sqlite_options(&mut options);
        // A pool acquire that waits for a busy pool is a queue, not a fault.
        #[cfg(feature = "postgres")]
        options.map_sqlx_postgres_pool_opts(|p| p.acquire_slow_level(LevelFilter::Info));
        #[cfg(feature = "mysql")]
        options.map_sqlx_mysql_pool_opts(|p| p.acquire_slow_level(LevelFilter::Info));
        options
    }

    /// WAL, `synchronous`, the busy timeout and foreign keys (see the [module](self) docs).
    #[cfg(feature = "sqlite")]
    fn sqlite_options(&self, options: &mut ConnectOptions) {
        let busy_timeout = self.busy_timeout;
        let synchronous = if self.synchronous_full {
            SqliteSynchronous::Full
        } else {
            SqliteSynchronous::Normal
        };
        options.map_sqlx_sqlite_opts(move |o| {
            o.journal_mode(SqliteJournalMode::Wal)
                .synchronous(synchronous)
                .busy_timeout(busy_timeout)
                .foreign_keys(true)
        });
        options.map_sqlx_sqlite_pool_opts(|p| p.acquire_slow_level(LevelFilter::Info));
    }

    /// Without the `sqlite` feature there is no SQLite pool to set up ([`connect`]
    /// refuses `sqlite:` URLs).
    #[cfg(not(feature = "sqlite"))]
    fn sqlite_options(&self, _options: &mut ConnectOptions) {}

    /// Connects a pool with these settings.
    ///
    /// A URL whose backend this build leaves out (its cargo feature is off) fails with
    /// [`DbErr::BackendNotSupported`] naming the feature (see the [module](self) docs).
    pub async fn connect(&self) -> Result<DatabaseConnection, DbErr> {
        refuse_disabled(&self.url, Backend::is_enabled)?;
        Database::connect(self.options()).await
    }
}

/// `Err` when `url` names a backend for which `enabled` is false: sea-orm would refuse
/// it too, but without saying which feature brings the driver in.
fn refuse_disabled(url: &str, enabled: impl Fn(Backend) -> bool) -> Result<(), DbErr> {
    match Backend::from_url(url) {
        Some(backend) if !enabled(backend) => Err(DbErr::BackendNotSupported {
            db: backend.name(),
            ctx: match backend {
                Backend::Postgres => DISABLED_POSTGRES,
                Backend::MySql => DISABLED_MYSQL,
                Backend::Sqlite => DISABLED_SQLITE,
            },
        }),
        _ => Ok(()),
    }
}

/// The fix for a backend left out of the build, one per feature (the error holds a
/// `&'static str`).
macro_rules! disabled {
    ($feature:literal) => {
        concat!(
            "connecting: this build of outbox-seaorm has no ",
            $feature,
            " driver; enable the `",
            $feature,
            "` cargo feature (of outbox-seaorm, or of the outbox crate)"
        )
    };
}
const DISABLED_POSTGRES: &str = disabled!("postgres");
const DISABLED_MYSQL: &str = disabled!("mysql");
const DISABLED_SQLITE: &str = disabled!("sqlite");

/// Connects `url` with [`ConnectSettings::new`]: on SQLite WAL, `synchronous=NORMAL`,
/// a busy timeout and one connection (the application's one writer path); statements
/// logged at DEBUG on every backend. For a relay's store use
/// [`ConnectSettings::for_relay`].
pub async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    ConnectSettings::new(url).connect().await
}

#[cfg(test)]
#[path = "connect_tests.rs"]
mod tests;
