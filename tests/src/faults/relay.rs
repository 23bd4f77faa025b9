//! One `outbox-relay` process, driven by signals.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::env::FaultEnv;
pub use crate::endpoint::free_port;
use crate::endpoint::http_get;

/// How to start a relay: everything but the binary and the scenario has a default suited
/// to fault tests (short leases, fast retries).
#[derive(Debug, Clone)]
pub struct RelaySpec {
    /// The `outbox-relay` binary (`env!("CARGO_BIN_EXE_outbox-relay")` in its tests).
    pub bin: PathBuf,
    /// The relay id (also its PostgreSQL `application_name`).
    pub relay_id: String,
    /// Database URL (with `application_name`).
    pub database_url: String,
    /// Bootstrap servers.
    pub brokers: String,
    /// Messages, leases, relays and parked table names.
    pub tables: [String; 4],
    /// Bucket count.
    pub bucket_count: u32,
    /// Lease duration (default 3 s).
    pub lease: Duration,
    /// Lease renewal interval (default 1 s).
    pub renew: Duration,
    /// Rows per batch (default 50: several batches per second under the writers here).
    pub batch_size: usize,
    /// Wait after the first failure in a row (default 200 ms).
    pub error_backoff: Duration,
    /// Longest wait after repeated failures (default 1 s).
    pub max_error_backoff: Duration,
    /// `RUST_LOG` of the process.
    pub log_filter: String,
    /// Start without `--relay-id` (and without `OUTBOX_RELAY_ID`), with `POD_NAME` set to
    /// [`relay_id`](Self::relay_id): the process then runs under its default id,
    /// `<relay_id>-outbox` (default false).
    pub default_relay_id: bool,
}

impl RelaySpec {
    /// A relay for `env` with id `relay_id` and `bucket_count` buckets.
    pub fn new(bin: impl Into<PathBuf>, env: &FaultEnv, relay_id: &str, bucket_count: u32) -> Self {
        RelaySpec {
            bin: bin.into(),
            relay_id: relay_id.to_owned(),
            database_url: env.database_url_for(relay_id),
            brokers: env.brokers.clone(),
            tables: [
                env.tables.messages().to_owned(),
                env.tables.leases().to_owned(),
                env.tables.relays().to_owned(),
                env.tables.parked().to_owned(),
            ],
            bucket_count,
            lease: Duration::from_secs(3),
            renew: Duration::from_secs(1),
            batch_size: 50,
            error_backoff: Duration::from_millis(200),
            max_error_backoff: Duration::from_secs(1),
            // `published` events (debug) carry the bucket: scenario checks read them.
            log_filter: "warn,outbox_relay=info,outbox_core=debug".to_owned(),
            default_relay_id: false,
        }
    }

    /// Starts the process; its stdout and stderr go to a file under the temp directory.
    ///
    /// # Panics
    /// When the process cannot be started.
    pub fn spawn(&self) -> RelayProcess {
        let port = free_port();
        let log_path = std::env::temp_dir().join(format!(
            "outbox-fault-{}-{}-{}.log",
            self.relay_id,
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap_or_else(|e| panic!("creating {}: {e}", log_path.display()));
        let err = log
            .try_clone()
            .unwrap_or_else(|e| panic!("log file handle: {e}"));
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let mut command = Command::new(&self.bin);
        if self.default_relay_id {
            command
                .env_remove("OUTBOX_RELAY_ID")
                .env("POD_NAME", &self.relay_id);
        } else {
            command.args(["--relay-id", &self.relay_id]);
        }
        let child = command
            .args(["--database-url", &self.database_url])
            .args(["--brokers", &self.brokers])
            .args(["--messages-table", &self.tables[0]])
            .args(["--leases-table", &self.tables[1]])
            .args(["--relays-table", &self.tables[2]])
            .args(["--parked-table", &self.tables[3]])
            .args(["--bucket-count", &self.bucket_count.to_string()])
            .args(["--batch-size", &self.batch_size.to_string()])
            .args(["--lease-duration", &ms(self.lease)])
            .args(["--lease-renew-interval", &ms(self.renew)])
            .args(["--poll-interval", "200ms"])
            .args(["--error-backoff", &ms(self.error_backoff)])
            .args(["--max-error-backoff", &ms(self.max_error_backoff)])
            .args(["--metrics-interval", "1s"])
            .args(["--metrics-timeout", "1s"])
            .args(["--shutdown-grace", "2s"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("RUST_LOG", &self.log_filter)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.bin.display()));
        RelayProcess {
            child,
            relay_id: self.relay_id.clone(),
            port,
            log_path,
            exit: None,
        }
    }
}

/// A running relay process. Dropping it kills it (SIGCONT, then SIGKILL) and reaps it, so
/// a failing test leaks no process.
#[derive(Debug)]
pub struct RelayProcess {
    child: Child,
    relay_id: String,
    port: u16,
    log_path: PathBuf,
    exit: Option<ExitStatus>,
}

impl RelayProcess {
    /// The relay id.
    pub fn relay_id(&self) -> &str {
        &self.relay_id
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The file holding the process's stdout and stderr.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("running kill -{name}: {e}"));
        assert!(status.success(), "kill -{name} {} failed", self.pid());
    }

    /// `kill -9` and reap.
    pub fn kill9(&mut self) {
        if self.exited().is_none() {
            self.signal("KILL");
        }
        let _ = self.wait_exit(Duration::from_secs(10));
    }

    /// SIGSTOP: the process freezes, its connections stay open.
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// SIGCONT.
    pub fn resume(&self) {
        self.signal("CONT");
    }

    /// SIGTERM: a graceful stop.
    pub fn terminate(&self) {
        self.signal("TERM");
    }

    /// The exit status if the process has ended.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten();
        }
        self.exit
    }

    /// Waits up to `within` for the process to end.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process output so far (ANSI colours removed).
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(&self.log_path) {
            let _ = f.read_to_string(&mut text);
        }
        strip_ansi(&text)
    }

    /// The length of the log file now (a marker for "what was logged after this").
    pub fn log_len(&self) -> usize {
        self.log().len()
    }

    /// The last `lines` lines of the log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        format!(
            "--- {} ({}) ---\n{}",
            self.relay_id,
            self.log_path.display(),
            all[all.len().saturating_sub(lines)..].join("\n")
        )
    }

    /// The `/metrics` page, if the relay answers.
    pub fn metrics(&self) -> Option<String> {
        http_get(self.port, "/metrics").map(|(_, body)| body)
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        http_get(self.port, "/readyz").is_some_and(|(status, _)| status == 200)
    }

    /// The sum of every sample of the metric family `name` (e.g.
    /// `outbox_lease_expirations_total`) on `/metrics`, if the relay answers.
    pub fn metric_sum(&self, name: &str) -> Option<f64> {
        let page = self.metrics()?;
        Some(
            page.lines()
                .filter(|l| !l.starts_with('#'))
                .filter(|l| {
                    l.strip_prefix(name)
                        .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum(),
        )
    }
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        if self.exited().is_none() {
            // A stopped process dies on SIGKILL too, but continue it first to be safe.
            let _ = Command::new("kill")
                .args(["-CONT", &self.pid().to_string()])
                .status();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `text` without ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
