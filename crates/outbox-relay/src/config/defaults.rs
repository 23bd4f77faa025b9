//! The defaults this binary sets itself (the rest are the library's, read from
//! `RelayOptions::default()` and `OutboxSchema::default()`); `help` shows them all.

use std::net::SocketAddr;
use std::time::Duration;

/// Default `--client-id`.
pub const DEFAULT_CLIENT_ID: &str = "outbox-relay";
/// Default `--listen`: loopback only, so the endpoints are not exposed by accident.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    9464,
));
/// Default `--shutdown-grace`.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Default `--migrate`: the tables are the application's to create.
pub const DEFAULT_MIGRATE: bool = false;
/// Default `--tls`.
pub const DEFAULT_TLS: bool = false;
/// Default `--backlog-sampling`: on for the binary (the library's default is off), since
/// a standalone relay is where an operator reads the backlog gauges.
pub const DEFAULT_BACKLOG_SAMPLING: bool = true;
