//! Relay processes (the `outbox-relay` binary) for section 5.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use outbox_seaorm::OutboxTables;

/// The binary xtask built; `OUTBOX_BENCH_RELAY_BIN`.
pub fn relay_bin() -> PathBuf {
    match std::env::var_os("OUTBOX_BENCH_RELAY_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => panic!(
            "section 5 runs the outbox-relay binary: run the benchmark through `cargo xtask bench`, \
             or `cargo build -p outbox-relay` and set OUTBOX_BENCH_RELAY_BIN=target/debug/outbox-relay"
        ),
    }
}

/// A running relay process; dropped without [`stop`](Self::stop), it is killed.
pub struct RelayProcess {
    pub id: String,
    child: Option<Child>,
}

impl std::fmt::Debug for RelayProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayProcess")
            .field("id", &self.id)
            .finish()
    }
}

impl RelayProcess {
    /// Starts `outbox-relay` on `tables` at `url` with `bucket_count` buckets, plus
    /// `extra` flags; its output goes to `target/bench/logs/<id>.log`.
    pub fn spawn(
        url: &str,
        tables: &OutboxTables,
        brokers: &str,
        bucket_count: u32,
        id: &str,
        extra: &[&str],
    ) -> RelayProcess {
        let logs = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/bench/logs"));
        std::fs::create_dir_all(&logs).unwrap();
        let log = std::fs::File::create(logs.join(format!("{id}.log"))).unwrap();
        let child = Command::new(relay_bin())
            .args(["--database-url", url])
            .args(["--messages-table", tables.messages()])
            .args(["--leases-table", tables.leases()])
            .args(["--relays-table", tables.relays()])
            .args(["--parked-table", tables.parked()])
            .args(["--brokers", brokers])
            .args(["--bucket-count", &bucket_count.to_string()])
            .args(["--relay-id", id])
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", relay_bin().display()));
        RelayProcess {
            id: id.to_owned(),
            child: Some(child),
        }
    }

    /// SIGTERM (a graceful stop), then SIGKILL after 15 s.
    pub fn stop(mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Fails loudly when the process already exited (misconfiguration, crash).
    pub fn assert_running(&mut self) {
        if let Some(child) = &mut self.child
            && let Ok(Some(status)) = child.try_wait()
        {
            panic!(
                "relay process {} exited with {status}; see target/bench/logs/{}.log",
                self.id, self.id
            );
        }
    }
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
