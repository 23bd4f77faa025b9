//! One Tansu broker process: start it in its own process group, record its pid, signal
//! it (pause, resume, stop) and recognise it again from its pid file.

use super::probe::api_versions;
use super::{default_state_dir, log_path, pid_path};
use anyhow::{Context, Result, bail, ensure};
use std::fs;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long [`Broker::stop`] waits after SIGTERM before sending SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// A free TCP port on 127.0.0.1 (bound and released; another process could take it first,
/// which [`Broker::start`] detects).
pub fn pick_free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// `true` when the broker that xtask started on `port` (pid file in the default state
/// directory) is alive and answers `ApiVersions`.
pub fn is_running(port: u16) -> bool {
    is_running_in(&default_state_dir(), port)
}

/// [`is_running`] for an explicit state directory.
pub fn is_running_in(state_dir: &Path, port: u16) -> bool {
    read_pid(state_dir, port).is_some_and(is_our_tansu)
        && api_versions(&format!("127.0.0.1:{port}"), Duration::from_secs(1)).is_ok()
}

/// The pid recorded in the pid file of the broker on `port`, if any.
pub fn read_pid(state_dir: &Path, port: u16) -> Option<u32> {
    fs::read_to_string(pid_path(state_dir, port))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Fields of `/proc/PID/stat` after the command name: (state, pgid).
fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

fn process_alive(pid: u32) -> bool {
    proc_state(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// `pid` is a live tansu process leading its own process group (as [`Broker::start`]
/// leaves it). Guards against signalling a recycled pid from a stale pid file.
fn is_our_tansu(pid: u32) -> bool {
    let Some((state, pgid)) = proc_state(pid) else {
        return false;
    };
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    state != 'Z' && state != 'X' && pgid == pid && String::from_utf8_lossy(argv0).ends_with("tansu")
}

fn signal_group(pid: u32, signal: &str) -> Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(format!("-{pid}"))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("running `kill`")?;
    ensure!(
        status.success(),
        "`kill -{signal} -- -{pid}` failed: {status}"
    );
    Ok(())
}

/// A handle on one Tansu broker process listening on `127.0.0.1:port`.
///
/// Dropping the handle stops the broker (SIGTERM, then SIGKILL) unless [`Broker::detach`]
/// was called.
#[derive(Debug)]
pub struct Broker {
    bin: PathBuf,
    port: u16,
    state_dir: PathBuf,
    pid: u32,
    child: Option<Child>,
    keep_running: bool,
}

impl Broker {
    /// Starts `bin broker` on `127.0.0.1:port` with the memory engine; logs and pid file go
    /// to the default state directory (`<workspace>/.tools/tansu/`). Does not wait for it:
    /// call [`Broker::wait_ready`].
    pub fn start(bin: &Path, port: u16) -> Result<Broker> {
        Self::start_in(&default_state_dir(), bin, port)
    }

    /// [`Broker::start`] with an explicit directory for the log and pid files.
    pub fn start_in(state_dir: &Path, bin: &Path, port: u16) -> Result<Broker> {
        let mut broker = Broker {
            bin: bin.to_path_buf(),
            port,
            state_dir: state_dir.to_path_buf(),
            pid: 0,
            child: None,
            keep_running: false,
        };
        broker.spawn()?;
        Ok(broker)
    }

    /// A handle on the broker that a previous `start` recorded in the pid file for `port`,
    /// if that process still runs. The handle is detached: dropping it does not stop the
    /// broker, but [`Broker::stop`] and the other methods work.
    pub fn attach(state_dir: &Path, bin: &Path, port: u16) -> Option<Broker> {
        let pid = read_pid(state_dir, port).filter(|pid| is_our_tansu(*pid))?;
        Some(Broker {
            bin: bin.to_path_buf(),
            port,
            state_dir: state_dir.to_path_buf(),
            pid,
            child: None,
            keep_running: true,
        })
    }

    fn spawn(&mut self) -> Result<()> {
        let addr = self.addr();
        ensure!(
            !crate::tcp_accepts(&addr, Duration::from_millis(300)),
            "cannot start Tansu on {addr}: something already listens there"
        );
        fs::create_dir_all(&self.state_dir)
            .with_context(|| format!("creating {}", self.state_dir.display()))?;
        let log_file = log_path(&self.state_dir, self.port);
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_file)
            .with_context(|| format!("opening {}", log_file.display()))?;
        let url = format!("tcp://{addr}");
        let child = Command::new(&self.bin)
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .current_dir(&self.state_dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("spawning {}", self.bin.display()))?;
        self.pid = child.id();
        self.child = Some(child);
        let pid_file = pid_path(&self.state_dir, self.port);
        fs::write(&pid_file, format!("{}\n", self.pid))
            .with_context(|| format!("writing {}", pid_file.display()))?;
        Ok(())
    }

    /// `127.0.0.1:PORT`, the bootstrap address of this broker.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The port this broker listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The broker's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The file that receives the broker's stdout and stderr.
    pub fn log_path(&self) -> PathBuf {
        log_path(&self.state_dir, self.port)
    }

    /// Waits until the broker answers `ApiVersions`; fails early, with the end of the log,
    /// if the process exits meanwhile.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let addr = self.addr();
        loop {
            if !self.alive() {
                bail!(
                    "Tansu on {addr} exited before it became ready; end of {}:\n{}",
                    self.log_path().display(),
                    self.log_tail(20)
                );
            }
            let err = match api_versions(&addr, Duration::from_secs(1)) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(err.context(format!(
                    "Tansu on {addr} (pid {}) did not answer ApiVersions within {:.1} s; end of {}:\n{}",
                    self.pid,
                    timeout.as_secs_f64(),
                    self.log_path().display(),
                    self.log_tail(20)
                )));
            }
            sleep(Duration::from_millis(50));
        }
    }

    /// The last `lines` lines of the broker log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// `true` while the broker process exists (stopped-by-SIGSTOP counts as alive).
    pub fn alive(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => self.pid != 0 && process_alive(self.pid),
        }
    }

    /// Stops the broker: SIGTERM to its process group, SIGKILL after [`STOP_GRACE`], then
    /// waits for it and removes the pid file. Stopping a stopped broker is a no-op.
    pub fn stop(&mut self) -> Result<()> {
        if self.alive() {
            // A paused process only acts on SIGTERM once continued.
            let _ = signal_group(self.pid, "CONT");
            let _ = signal_group(self.pid, "TERM");
            if !self.wait_exit(STOP_GRACE) {
                let _ = signal_group(self.pid, "KILL");
                ensure!(
                    self.wait_exit(Duration::from_secs(10)),
                    "Tansu (pid {}) survived SIGKILL",
                    self.pid
                );
            }
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        if read_pid(&self.state_dir, self.port) == Some(self.pid) {
            let _ = fs::remove_file(pid_path(&self.state_dir, self.port));
        }
        Ok(())
    }

    fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if !self.alive() {
                return true;
            }
            sleep(Duration::from_millis(20));
        }
        !self.alive()
    }

    /// Freezes the broker (SIGSTOP): connections stay open, nothing is answered.
    pub fn pause(&mut self) -> Result<()> {
        ensure!(self.alive(), "Tansu (pid {}) is not running", self.pid);
        signal_group(self.pid, "STOP")
    }

    /// Continues a paused broker (SIGCONT).
    pub fn resume(&mut self) -> Result<()> {
        ensure!(self.alive(), "Tansu (pid {}) is not running", self.pid);
        signal_group(self.pid, "CONT")
    }

    /// Stops the broker and starts a new process on the same port. With the memory engine
    /// everything the broker held is lost. Does not wait: call [`Broker::wait_ready`].
    pub fn restart(&mut self) -> Result<()> {
        self.stop()?;
        // The listening socket of the old process may linger for a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while crate::tcp_accepts(&self.addr(), Duration::from_millis(200))
            && Instant::now() < deadline
        {
            sleep(Duration::from_millis(50));
        }
        self.spawn()
    }

    /// Leaves the broker running when this handle is dropped (for `cargo xtask broker
    /// start`); returns its pid.
    pub fn detach(mut self) -> u32 {
        self.keep_running = true;
        self.pid
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if !self.keep_running
            && let Err(e) = self.stop()
        {
            eprintln!("xtask: stopping Tansu (pid {}): {e:#}", self.pid);
        }
    }
}
