//! Waiting for a started broker to be ready ([`Broker::wait_ready`]): the readiness probe
//! on the right listener, and an early, explained failure when the process exits first.

use super::handle::Broker;
use crate::broker::kind::BrokerKind;
use crate::broker::probe::{api_versions, ready};
use anyhow::{Result, bail};
use std::fs;
use std::thread::sleep;
use std::time::{Duration, Instant};

impl Broker {
    /// Waits until the broker is ready ([`ready`]: `ApiVersions`, and itself live in
    /// `Metadata`); fails early, with the end of the log and its path, if the process
    /// exits meanwhile.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let addr = self.addr();
        let sasl = self.client_sasl();
        loop {
            if !self.alive() {
                bail!(
                    "{} on {addr} exited before it became ready; its log is {}{}, ending:\n{}",
                    self.kind.label(),
                    self.log_path().display(),
                    self.log_errors(8),
                    self.log_tail(20)
                );
            }
            let err = match self.ready_once(sasl, Duration::from_secs(1)) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(err.context(format!(
                    "{} on {addr} (pid {}) was not ready within {:.1} s; its log is {}, ending:\n{}",
                    self.kind.label(),
                    self.pid,
                    timeout.as_secs_f64(),
                    self.log_path().display(),
                    self.log_tail(20)
                )));
            }
            sleep(Duration::from_millis(50));
        }
    }

    /// One readiness check. A client listener that demands SASL refuses Metadata before
    /// authentication, so there the node is asked on its internal listener (itself
    /// live in Metadata) and the client listener only for ApiVersions, which Kafka
    /// answers before the SASL handshake.
    fn ready_once(&self, sasl: bool, timeout: Duration) -> Result<()> {
        if sasl {
            ready(&self.admin_addr(), timeout)?;
            api_versions(&self.addr(), timeout)
        } else {
            ready(&self.addr(), timeout)
        }
    }

    /// Whether the client listener speaks SASL (from the node's `server.properties`).
    fn client_sasl(&self) -> bool {
        self.kind == BrokerKind::Kafka
            && fs::read_to_string(self.dir.join("server.properties"))
                .is_ok_and(|p| p.contains("CLIENT:SASL_PLAINTEXT"))
    }
}
