//! [`Broker`], the handle on one broker process: its fields, what it tells about itself
//! (address, ports, pid, directory, log file, install) and whether it still runs. Starting,
//! stopping, readiness and the log live in sibling files as further `impl Broker` blocks.

use super::launch::Launch;
use crate::broker::kafka_config::KafkaPorts;
use crate::broker::kafka_install::KafkaHome;
use crate::broker::kind::BrokerKind;
use crate::broker::procfs::process_alive;
use std::path::{Path, PathBuf};
use std::process::Child;

/// A handle on one broker process listening on `127.0.0.1:port`.
///
/// Dropping the handle stops the broker (SIGTERM, then SIGKILL) unless [`Broker::detach`]
/// was called.
#[derive(Debug)]
pub struct Broker {
    pub(super) kind: BrokerKind,
    pub(super) launch: Launch,
    pub(super) dir: PathBuf,
    pub(super) ports: KafkaPorts,
    pub(super) pid: u32,
    pub(super) child: Option<Child>,
    pub(super) keep_running: bool,
    /// Remove `dir` on drop (a private broker whose test did not fail).
    pub(super) temporary: bool,
}

impl Broker {
    pub(super) fn listening_ports(&self) -> Vec<u16> {
        match self.kind {
            BrokerKind::Tansu => vec![self.ports.client],
            BrokerKind::Kafka => vec![
                self.ports.client,
                self.ports.internal,
                self.ports.controller,
            ],
        }
    }

    /// Which broker this is.
    pub fn kind(&self) -> BrokerKind {
        self.kind
    }

    /// `127.0.0.1:PORT`, the bootstrap address of this broker.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.ports.client)
    }

    /// `127.0.0.1:PORT` of the internal PLAINTEXT listener (Kafka only: admin tools reach
    /// the broker there whatever the client listener requires).
    pub fn admin_addr(&self) -> String {
        format!("127.0.0.1:{}", self.ports.internal)
    }

    /// The port this broker listens on.
    pub fn port(&self) -> u16 {
        self.ports.client
    }

    /// The broker's process id (also its process group id); 0 when not running.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The Kafka install this node runs from (`None` for Tansu).
    pub fn kafka_home(&self) -> Option<&KafkaHome> {
        match &self.launch {
            Launch::Kafka(home) => Some(home),
            Launch::Tansu(_) => None,
        }
    }

    /// The file that receives the broker's stdout and stderr.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("broker.log")
    }

    /// `true` while the broker process exists (stopped-by-SIGSTOP counts as alive).
    pub fn alive(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => self.pid != 0 && process_alive(self.pid),
        }
    }

    /// Leaves the broker running when this handle is dropped (for `cargo xtask broker
    /// start`); returns its pid.
    pub fn detach(mut self) -> u32 {
        self.keep_running = true;
        self.pid
    }
}
