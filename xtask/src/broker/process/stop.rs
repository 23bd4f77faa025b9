//! Stopping a broker: SIGTERM then SIGKILL to its process group ([`Broker::stop`]), a
//! crash (SIGKILL only), pause and resume (SIGSTOP, SIGCONT), and the stop on drop.

use super::handle::Broker;
use super::instance_dir::read_pid;
use anyhow::{Context, Result, ensure};
use std::fs;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long [`Broker::stop`] waits after SIGTERM before sending SIGKILL (a KRaft node's
/// controlled shutdown takes a second or two).
pub const STOP_GRACE: Duration = Duration::from_secs(20);

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

impl Broker {
    /// Stops the broker: SIGTERM to its process group, SIGKILL after [`STOP_GRACE`], then
    /// waits for it and removes the pid file. Stopping a stopped broker is a no-op.
    pub fn stop(&mut self) -> Result<()> {
        if self.alive() {
            // A paused process only acts on SIGTERM once continued.
            let _ = signal_group(self.pid, "CONT");
            let _ = signal_group(self.pid, "TERM");
            if !self.wait_exit(STOP_GRACE) {
                self.kill_and_wait()?;
            }
        }
        self.reap();
        Ok(())
    }

    /// Kills the broker with SIGKILL (a crash: no controlled shutdown, no snapshot) and
    /// waits until it is gone.
    pub fn crash(&mut self) -> Result<()> {
        if self.alive() {
            self.kill_and_wait()?;
        }
        self.reap();
        Ok(())
    }

    /// SIGKILL to the broker's process group, then up to 10 s for it to be gone.
    fn kill_and_wait(&mut self) -> Result<()> {
        signal_group(self.pid, "KILL")?;
        ensure!(
            self.wait_exit(Duration::from_secs(10)),
            "{} (pid {}) survived SIGKILL",
            self.kind.label(),
            self.pid
        );
        Ok(())
    }

    fn reap(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        if read_pid(&self.dir) == Some(self.pid) {
            let _ = fs::remove_file(self.dir.join("broker.pid"));
        }
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
        ensure!(self.alive(), "{} is not running", self.kind.label());
        signal_group(self.pid, "STOP")
    }

    /// Continues a paused broker (SIGCONT).
    pub fn resume(&mut self) -> Result<()> {
        ensure!(self.alive(), "{} is not running", self.kind.label());
        signal_group(self.pid, "CONT")
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if !self.keep_running
            && let Err(e) = self.stop()
        {
            eprintln!(
                "xtask: stopping {} (pid {}): {e:#}",
                self.kind.label(),
                self.pid
            );
        }
        if self.temporary && !self.keep_running && !std::thread::panicking() && !self.alive() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}
