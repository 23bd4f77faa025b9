//! Starting the binary with its output captured, and asking its endpoints.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_outbox-relay");

// The loopback helpers every process test shares (also the fault suite's).
pub use outbox_tests::endpoint::{free_port, http_get as get, wait_until as wait_for};

/// A running relay whose standard output and error are read through pipes (so the
/// binary sees no terminal) into one buffer. Dropping it kills the process.
#[derive(Debug)]
pub struct Relay {
    child: Child,
    /// The `--listen` port.
    pub port: u16,
    output: Arc<Mutex<String>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Relay {
    /// Starts the binary with `args` plus `--listen`; `env` is applied after removing
    /// `RUST_LOG`, `NO_COLOR` and every `OUTBOX_*` variable the suite might have set.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Relay {
        let port = free_port();
        let mut command = Command::new(BIN);
        command
            .args(args)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env_remove("RUST_LOG")
            .env_remove("NO_COLOR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, _) in std::env::vars() {
            if name.starts_with("OUTBOX_") && !name.starts_with("OUTBOX_TEST_") {
                command.env_remove(name);
            }
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        for stream in [
            Box::new(stdout) as Box<dyn Read + Send>,
            Box::new(stderr) as Box<dyn Read + Send>,
        ] {
            let output = Arc::clone(&output);
            readers.push(std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                let mut line = Vec::new();
                while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                    output
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&line));
                    line.clear();
                }
            }));
        }
        Relay {
            child,
            port,
            output,
            readers,
        }
    }

    /// Everything printed so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        get(self.port, path)
    }

    /// Waits until `/readyz` answers 200.
    pub fn wait_ready(&self, within: Duration) {
        let mut last = None;
        let ready = wait_for(
            || {
                last = self.get("/readyz");
                last.as_ref().is_some_and(|(s, _)| *s == 200)
            },
            within,
        );
        assert!(
            ready,
            "not ready within {within:?}; last answer {last:?}\n{}",
            self.output()
        );
    }

    /// SIGTERM, then waits for the exit (and for the output to be read to its end).
    pub fn terminate(mut self) -> (ExitStatus, String) {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the relay did not stop\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        for reader in self.readers.drain(..) {
            reader.join().unwrap();
        }
        (status, self.output())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The outbox-relay arguments for a fresh SQLite database.
pub fn sqlite_args(url: &str) -> Vec<String> {
    ["--database-url", url, "--migrate", "true"]
        .map(str::to_owned)
        .to_vec()
}
