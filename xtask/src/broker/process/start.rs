//! Starting a broker: install what its kind needs, prepare its instance directory (kind,
//! ports, a Kafka node's properties and storage), spawn it in its own process group and
//! record its pid; attach to one already running, restart one stopped or crashed.

use super::handle::Broker;
use super::instance_dir::{is_our_broker, read_pid};
use super::launch::{Launch, prepare_kafka};
use super::spec::BrokerSpec;
use crate::broker::install::{ensure_installed, installed as tansu_installed};
use crate::broker::kafka_config::KafkaPorts;
use crate::broker::kafka_install::{ensure_kafka_installed, kafka_installed};
use crate::broker::kind::BrokerKind;
use crate::broker::ports::{pick_free_port, pick_port_other_than, port_free};
use anyhow::{Context, Result, ensure};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::thread::sleep;
use std::time::{Duration, Instant};

impl Broker {
    /// Installs what `spec` needs (Kafka's jars, or the Tansu binary), prepares its
    /// directory (a Kafka node's storage is formatted by Kafka's own storage tool on its
    /// first start) and starts it. Does not wait for it: call [`Broker::wait_ready`].
    pub fn start(spec: &BrokerSpec) -> Result<Broker> {
        let launch = match spec.kind {
            BrokerKind::Kafka => Launch::Kafka(ensure_kafka_installed()?),
            BrokerKind::Tansu => Launch::Tansu(ensure_installed(&crate::workspace_root())?),
        };
        fs::create_dir_all(&spec.dir)
            .with_context(|| format!("creating {}", spec.dir.display()))?;
        let ports = pick_ports(spec)?;
        let mut broker = Broker {
            kind: spec.kind,
            launch,
            dir: spec.dir.clone(),
            ports,
            pid: 0,
            child: None,
            keep_running: false,
            temporary: spec.temporary,
        };
        fs::write(broker.dir.join("kind"), spec.kind.name())?;
        fs::write(broker.dir.join("ports"), ports.to_line())?;
        if let Launch::Kafka(home) = &broker.launch {
            prepare_kafka(home, &broker.dir, ports, &spec.kafka)?;
        }
        broker.spawn()?;
        Ok(broker)
    }

    /// [`Broker::start`] then [`Broker::wait_ready`]. A new node whose ports were picked
    /// here (no port in `spec`, none remembered in its directory) and that lost one of them
    /// to another process before the JVM bound it ("Address already in use") is started
    /// again on other free ports, up to three times; a restart keeps its address and fails.
    pub fn start_ready(spec: &BrokerSpec, timeout: Duration) -> Result<Broker> {
        let repick = spec.port.is_none() && !spec.dir.join("ports").exists();
        let mut attempt = 1;
        loop {
            let mut broker = Broker::start(spec)?;
            match broker.wait_ready(timeout) {
                Ok(()) => return Ok(broker),
                Err(e) if repick && attempt < 3 && broker.lost_a_port() => {
                    eprintln!(
                        "{} on {} lost a port to another process before binding it; starting it on others",
                        broker.kind.label(),
                        broker.addr()
                    );
                    // Stopped, but its directory stays for the next attempt.
                    broker.temporary = false;
                    drop(broker);
                    fs::remove_file(spec.dir.join("ports"))
                        .with_context(|| format!("after: {e:#}"))?;
                    // Kept for a look, and out of the way of the next attempt's check.
                    let old_log = spec.dir.join(format!("broker-attempt-{attempt}.log"));
                    fs::rename(spec.dir.join("broker.log"), &old_log)
                        .with_context(|| format!("keeping {}", old_log.display()))?;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the broker exited because a port it was given was taken.
    fn lost_a_port(&mut self) -> bool {
        !self.alive()
            && fs::read_to_string(self.log_path())
                .is_ok_and(|log| log.contains("Address already in use"))
    }

    /// A handle on the broker whose pid `dir` records, if that process still runs. The
    /// handle is detached: dropping it does not stop the broker, but [`Broker::stop`] and
    /// the other methods work.
    pub fn attach(dir: &Path) -> Option<Broker> {
        let mut broker = Self::recorded(dir)?;
        let pid = read_pid(dir).filter(|pid| is_our_broker(*pid, broker.kind, dir))?;
        broker.pid = pid;
        Some(broker)
    }

    /// A detached handle on the broker `dir` describes, running or not: what `restart`
    /// after a crash needs. `None` when `dir` holds no broker or its software is gone.
    pub fn recorded(dir: &Path) -> Option<Broker> {
        let kind = BrokerKind::parse(fs::read_to_string(dir.join("kind")).ok()?.trim()).ok()?;
        let ports = KafkaPorts::parse(&fs::read_to_string(dir.join("ports")).ok()?)?;
        let launch = match kind {
            BrokerKind::Kafka => Launch::Kafka(kafka_installed()?),
            BrokerKind::Tansu => Launch::Tansu(tansu_installed(&crate::workspace_root())?),
        };
        Some(Broker {
            kind,
            launch,
            dir: dir.to_path_buf(),
            ports,
            pid: 0,
            child: None,
            keep_running: true,
            temporary: false,
        })
    }

    fn spawn(&mut self) -> Result<()> {
        let addr = self.addr();
        for port in self.listening_ports() {
            ensure!(
                port_free(port),
                "cannot start {} on 127.0.0.1:{port}: something already listens there",
                self.kind.label()
            );
        }
        let log_file = self.log_path();
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_file)
            .with_context(|| format!("opening {}", log_file.display()))?;
        let mut cmd = self.launch.command(&self.dir, &addr);
        let child = cmd
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {}", self.kind.label()))?;
        self.pid = child.id();
        self.child = Some(child);
        let pid_file = self.dir.join("broker.pid");
        fs::write(&pid_file, format!("{}\n", self.pid))
            .with_context(|| format!("writing {}", pid_file.display()))?;
        Ok(())
    }

    /// Stops the broker (if it runs) and starts it again on the same ports and data
    /// directory. Does not wait: call [`Broker::wait_ready`].
    pub fn restart(&mut self) -> Result<()> {
        self.stop()?;
        self.start_again()
    }

    /// Starts a stopped or crashed broker again on the same ports and data directory.
    pub fn start_again(&mut self) -> Result<()> {
        // The listening sockets of the old process may linger for a moment.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.listening_ports().into_iter().all(port_free) && Instant::now() < deadline {
            sleep(Duration::from_millis(50));
        }
        self.spawn()
    }
}

/// The ports of a new broker: the directory's remembered ones (a restart after a crash
/// keeps its address), else the spec's client port (or a free one) and free ports for the
/// rest.
fn pick_ports(spec: &BrokerSpec) -> Result<KafkaPorts> {
    let remembered = fs::read_to_string(spec.dir.join("ports"))
        .ok()
        .and_then(|l| KafkaPorts::parse(&l));
    if let Some(ports) = remembered
        && spec.port.is_none_or(|p| p == ports.client)
    {
        return Ok(ports);
    }
    let client = match spec.port {
        Some(p) => p,
        None => pick_free_port()?,
    };
    let (internal, controller) = match spec.kind {
        BrokerKind::Tansu => (0, 0),
        BrokerKind::Kafka => {
            let internal = pick_port_other_than(&[client])?;
            (internal, pick_port_other_than(&[client, internal])?)
        }
    };
    Ok(KafkaPorts {
        client,
        internal,
        controller,
    })
}
