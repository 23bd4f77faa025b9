//! Support for the workspace end-to-end tests (`tests/tests/*.rs`).
//!
//! The tests talk to real services. `cargo xtask test` starts what they need and passes the
//! addresses in environment variables; run on their own (`cargo nextest run -p
//! outbox-tests`), the tests fall back to the same defaults. A test whose service is down
//! **fails** with a message saying what to start ([`require_tcp`]); it never skips.
//!
//! | variable                   | default                                   |
//! |----------------------------|-------------------------------------------|
//! | `OUTBOX_TEST_BROKERS`      | `127.0.0.1:19092`                         |
//! | `OUTBOX_TEST_POSTGRES_URL` | `postgres://postgres@127.0.0.1:5432/test` |
//! | `OUTBOX_TEST_MYSQL_URL`    | `mysql://root@127.0.0.1:3306/test`        |
//! | `OUTBOX_TEST_REDIS_URL`    | `redis://127.0.0.1:6379/`                 |
//! | `OUTBOX_TEST_BROKER_KIND`  | `kafka` (private brokers' kind; or `tansu`) |
//! | `OUTBOX_TEST_TANSU_BROKERS`| `127.0.0.1:19192` (the second kind)       |
//!
//! The broker is Apache Kafka; the publisher's broker suite runs once more on Tansu (see
//! `shared/reference/broker-facts.md`). Read a topic to its end with Fetch's high
//! watermark, never with ListOffsets(latest), which Tansu 0.6.0 gets wrong.
//!
//! Helpers for fault tests: [`endpoint`] (a free port, HTTP `GET` on a child's endpoints,
//! polling), [`proxy`] (a TCP proxy that cuts or refuses connections, with
//! a Kafka-aware mode that drops responses or injects Produce errors), [`statement_delay`]
//! (a PostgreSQL proxy that slows down the statements matching a pattern), [`kafka`] (topics
//! and reading partitions to their end), [`tls`] (a throw-away CA and certificates) and
//! [`faults`] (relay processes, a continuous writer and a topic checker for the
//! fault-injection suite).

use std::time::Duration;

use broker::{Broker, BrokerKind, BrokerSpec};

pub mod database;
pub mod endpoint;
pub mod faults;
pub mod forward;
pub mod kafka;
pub mod proxy;
pub mod slow_link;
pub mod statement_delay;
pub mod tls;

/// Re-exported so fault tests can start, stop, pause and restart private brokers.
pub use xtask::broker;

/// Default bootstrap address of the shared test broker (what `cargo xtask broker start`
/// and `cargo xtask test` run).
pub const DEFAULT_BROKERS: &str = "127.0.0.1:19092";
/// Default PostgreSQL URL.
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// Default MariaDB/MySQL URL.
pub const DEFAULT_MYSQL_URL: &str = "mysql://root@127.0.0.1:3306/test";
/// Default Redis URL.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379/";

fn env_or(name: &str, default: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v.trim().to_owned(),
        _ => default.to_owned(),
    }
}

/// Kafka bootstrap address(es), comma separated: `OUTBOX_TEST_BROKERS`, default
/// [`DEFAULT_BROKERS`].
pub fn brokers() -> String {
    env_or("OUTBOX_TEST_BROKERS", DEFAULT_BROKERS)
}

/// [`brokers`] split into a list, as rskafka's `ClientBuilder::new` wants it.
pub fn broker_list() -> Vec<String> {
    brokers()
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// PostgreSQL URL: `OUTBOX_TEST_POSTGRES_URL`, default [`DEFAULT_POSTGRES_URL`].
pub fn postgres_url() -> String {
    env_or("OUTBOX_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
}

/// MariaDB/MySQL URL: `OUTBOX_TEST_MYSQL_URL`, default [`DEFAULT_MYSQL_URL`].
pub fn mysql_url() -> String {
    env_or("OUTBOX_TEST_MYSQL_URL", DEFAULT_MYSQL_URL)
}

/// Redis URL: `OUTBOX_TEST_REDIS_URL`, default [`DEFAULT_REDIS_URL`].
pub fn redis_url() -> String {
    env_or("OUTBOX_TEST_REDIS_URL", DEFAULT_REDIS_URL)
}

/// A fresh SQLite database in a new file under the system temp directory, as a URL with
/// `?mode=rwc` (create if missing). Each call gives a different file; the files are small
/// and left to the temp directory's cleanup.
pub fn sqlite_url() -> String {
    let path = std::env::temp_dir().join(format!("{}.sqlite", unique_name("outbox_test")));
    format!("sqlite://{}?mode=rwc", path.display())
}

/// The kind of the run's brokers, shared and private: `OUTBOX_TEST_BROKER_KIND`
/// (`kafka` or `tansu`), Apache Kafka by default.
///
/// # Panics
/// On any other value.
pub fn broker_kind() -> BrokerKind {
    let name = env_or("OUTBOX_TEST_BROKER_KIND", "kafka");
    BrokerKind::parse(&name).unwrap_or_else(|e| panic!("OUTBOX_TEST_BROKER_KIND: {e:#}"))
}

/// What a private broker of the run's kind starts from: a new directory of its own, a
/// free port, default [`broker::KafkaSettings`]. Set the port or the settings on it and
/// pass it to [`start_broker`].
pub fn private_broker_spec() -> BrokerSpec {
    BrokerSpec::private(broker_kind())
}

/// Starts `spec` and waits until it is ready (up to 90 s: a cold JVM on a busy machine).
///
/// # Panics
/// When it does not start or get ready, with the end of its log.
pub fn start_broker(spec: &BrokerSpec) -> Broker {
    Broker::start_ready(spec, BROKER_READY_TIMEOUT).unwrap_or_else(|e| panic!("{e:#}"))
}

/// A private broker of the run's kind with default settings, started and ready, for tests
/// that stop, pause, crash or restart it. Dropping it stops it.
pub fn private_broker() -> Broker {
    start_broker(&private_broker_spec())
}

/// How long [`start_broker`] waits for readiness.
pub const BROKER_READY_TIMEOUT: Duration = Duration::from_secs(90);

/// `prefix` followed by `_` and 32 lowercase hex digits of a random (v4) UUID: unique
/// topic, table and file names, so tests can share one broker and one database.
///
/// Keep `prefix` lowercase ASCII letters, digits and `_`, at most 30 characters, so the
/// result is a valid unquoted SQL identifier on PostgreSQL (63), MariaDB (64) and SQLite,
/// and a valid Kafka topic name.
pub fn unique_name(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// `host:port` of a URL such as `postgres://user:pw@host:5432/db?x=y`.
///
/// # Panics
/// When the URL has no explicit `host:port`.
pub fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    if host_port
        .rsplit_once(':')
        .is_none_or(|(_, p)| p.parse::<u16>().is_err())
    {
        panic!("cannot find host:port in the URL {url:?}");
    }
    host_port.to_owned()
}

/// `url` reaching its server through `proxy_addr` (`127.0.0.1:PORT`) instead of its own
/// `host:port`; a PostgreSQL URL also gets `sslmode=disable`, so the connection stays
/// plain text (a proxy can read the protocol, and no TLS negotiation costs round trips).
pub fn database_url_through(url: &str, proxy_addr: &str) -> String {
    let far = url.replacen(&host_port(url), proxy_addr, 1);
    if far.starts_with("postgres") {
        let sep = if far.contains('?') { '&' } else { '?' };
        format!("{far}{sep}sslmode=disable")
    } else {
        far
    }
}

/// Asserts that `service` accepts TCP connections at `addr` (`host:port`) within 3 s.
///
/// # Panics
/// When it does not, naming the service, the address and how to start it — so a test fails
/// loudly instead of skipping.
pub fn require_tcp(service: &str, addr: &str) {
    if xtask::tcp_accepts(addr, Duration::from_secs(3)) {
        return;
    }
    panic!(
        "{service} is not accepting connections at {addr}. These tests never skip: start it. \
         `cargo xtask test` starts every service the tests need (databases and the brokers) \
         and runs the suite; `cargo xtask broker start` starts just the Kafka test broker on \
         127.0.0.1:19092. Override addresses with the OUTBOX_TEST_* environment variables."
    );
}

/// [`require_tcp`] for the first address of [`brokers`].
pub fn require_broker() {
    let list = broker_list();
    let first = list.first().map_or(DEFAULT_BROKERS, String::as_str);
    require_tcp("The Kafka broker (OUTBOX_TEST_BROKERS)", first);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_of_urls() {
        assert_eq!(
            host_port("postgres://postgres@127.0.0.1:5432/test"),
            "127.0.0.1:5432"
        );
        assert_eq!(
            host_port("mysql://root:pw@db:3306/test?ssl=false"),
            "db:3306"
        );
        assert_eq!(host_port("redis://127.0.0.1:6379/"), "127.0.0.1:6379");
    }

    #[test]
    fn unique_names_differ_and_are_identifiers() {
        let (a, b) = (unique_name("t"), unique_name("t"));
        assert_ne!(a, b);
        assert_eq!(a.len(), 2 + 32);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        );
    }

    #[test]
    #[should_panic(expected = "Nothing is not accepting connections at 127.0.0.1:1")]
    fn require_tcp_fails_loudly() {
        require_tcp("Nothing", "127.0.0.1:1");
    }
}
