//! One broker process, Apache Kafka or Tansu: start it in its own process group from its
//! instance directory, record its pid and ports there, signal it (pause, resume, stop,
//! crash) and recognise it again from that directory.
//!
//! An instance directory holds `kind`, `ports` (client, internal, controller), `broker.pid`
//! and `broker.log`; a Kafka instance also `server.properties` and `data/`. A restart, or a
//! start after a crash, reuses the ports and the data: records and producer state survive
//! as on a real cluster, and clients reconnect to the address they had. (Tansu's memory
//! engine keeps nothing across a restart, whatever the directory holds.)

use super::install::{ensure_installed, installed as tansu_installed};
use super::kafka_config::{KafkaPorts, KafkaSettings, new_cluster_id};
use super::kafka_install::{KafkaHome, ensure_kafka_installed, kafka_installed, run_logged};
use super::kind::BrokerKind;
use super::ports::{pick_free_port, pick_port_other_than, port_free};
use super::probe::{api_versions, ready};
use super::procfs::{proc_state, process_alive};
use anyhow::{Context, Result, bail, ensure};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long [`Broker::stop`] waits after SIGTERM before sending SIGKILL (a KRaft node's
/// controlled shutdown takes a second or two).
pub const STOP_GRACE: Duration = Duration::from_secs(20);

/// The JVM options of a Kafka node on a 2-core machine: a small fixed heap and Kafka's
/// own G1 settings.
const KAFKA_JVM_OPTIONS: &[&str] = &[
    "-Xms256m",
    "-Xmx768m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:+ExitOnOutOfMemoryError",
];

/// What to start: the kind, the instance directory, the client port and Kafka's settings.
#[derive(Clone, Debug)]
pub struct BrokerSpec {
    kind: BrokerKind,
    dir: PathBuf,
    port: Option<u16>,
    kafka: KafkaSettings,
    temporary: bool,
}

impl BrokerSpec {
    /// A broker of `kind` whose files live in `dir`.
    pub fn new(kind: BrokerKind, dir: impl Into<PathBuf>) -> Self {
        BrokerSpec {
            kind,
            dir: dir.into(),
            port: None,
            kafka: KafkaSettings::default(),
            temporary: false,
        }
    }

    /// A broker of `kind` in a new directory under the system temp directory (private
    /// brokers of tests). Dropping the broker removes the directory, unless the thread is
    /// panicking: a failed test leaves its broker's log behind.
    pub fn private(kind: BrokerKind) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "outbox-broker-{}-{}-{n}-{nanos:08x}",
            kind.name(),
            std::process::id()
        ));
        BrokerSpec {
            temporary: true,
            ..Self::new(kind, dir)
        }
    }

    /// The client port (default: the one the directory remembers, else a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Kafka's settings (ignored by Tansu, which has none of them).
    pub fn kafka(mut self, settings: KafkaSettings) -> Self {
        self.kafka = settings;
        self
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The kind.
    pub fn kind(&self) -> BrokerKind {
        self.kind
    }
}

/// Removes an instance directory's data (records, producer state, cluster id) and its
/// remembered ports, for a fresh start. The broker must not be running.
pub fn wipe(dir: &Path) -> Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(())
}

/// `pid` is a live broker of `kind` leading its own process group (as [`Broker::start`]
/// leaves it) and, for Kafka, running this directory's properties. Guards against
/// signalling a recycled pid from a stale pid file.
fn is_our_broker(pid: u32, kind: BrokerKind, dir: &Path) -> bool {
    let Some((state, pgid)) = proc_state(pid) else {
        return false;
    };
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let matches = match kind {
        BrokerKind::Tansu => args.first().is_some_and(|a| a.ends_with("tansu")),
        BrokerKind::Kafka => {
            let props = dir.join("server.properties").display().to_string();
            args.iter().any(|a| a == "kafka.Kafka") && args.contains(&props)
        }
    };
    state != 'Z' && state != 'X' && pgid == pid && matches
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

#[derive(Clone, Debug)]
enum Launch {
    Tansu(PathBuf),
    Kafka(KafkaHome),
}

/// A handle on one broker process listening on `127.0.0.1:port`.
///
/// Dropping the handle stops the broker (SIGTERM, then SIGKILL) unless [`Broker::detach`]
/// was called.
#[derive(Debug)]
pub struct Broker {
    kind: BrokerKind,
    launch: Launch,
    dir: PathBuf,
    ports: KafkaPorts,
    pid: u32,
    child: Option<Child>,
    keep_running: bool,
    /// Remove `dir` on drop (a private broker whose test did not fail).
    temporary: bool,
}

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
        let mut cmd = match &self.launch {
            Launch::Tansu(bin) => {
                let url = format!("tcp://{addr}");
                let mut cmd = Command::new(bin);
                cmd.args([
                    "broker",
                    "--listener-url",
                    &url,
                    "--advertised-listener-url",
                    &url,
                ]);
                cmd
            }
            Launch::Kafka(home) => {
                let mut cmd = Command::new("java");
                cmd.args(KAFKA_JVM_OPTIONS)
                    .arg("-cp")
                    .arg(home.classpath())
                    .arg(format!(
                        "-Dlog4j2.configurationFile={}",
                        home.log4j_config().display()
                    ))
                    .arg("-Djava.awt.headless=true")
                    .arg("kafka.Kafka")
                    .arg(self.dir.join("server.properties"));
                cmd
            }
        };
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

    fn listening_ports(&self) -> Vec<u16> {
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

    /// The first `lines` ERROR or FATAL lines of the broker log, each with the exception
    /// line after it, and the first causes, as ` with these errors:\n…` (empty when there
    /// are none): a JVM that fails logs its reason well before the shutdown chatter the
    /// tail shows.
    pub fn log_errors(&self, lines: usize) -> String {
        errors_in(
            &fs::read_to_string(self.log_path()).unwrap_or_default(),
            lines,
        )
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

/// The pid recorded in `dir`, if any.
pub fn read_pid(dir: &Path) -> Option<u32> {
    fs::read_to_string(dir.join("broker.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
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

/// What [`Broker::log_errors`] picks out of a broker log's `text`.
fn errors_in(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let mut errors = Vec::new();
    for (i, line) in all.iter().enumerate() {
        if line.contains("] ERROR ") || line.contains("] FATAL ") {
            errors.push(*line);
            // The exception's message follows on a line of its own.
            if let Some(next) = all.get(i + 1).filter(|l| !l.starts_with('[')) {
                errors.push(next);
            }
        } else if line.starts_with("Caused by:") {
            errors.push(*line);
        }
    }
    errors.dedup();
    errors.truncate(lines);
    if errors.is_empty() {
        String::new()
    } else {
        format!(" with these errors:\n{}\n", errors.join("\n"))
    }
}

/// Writes `server.properties` and, on a node's first start, formats its storage with
/// Kafka's storage tool (a fresh cluster id, `--standalone`, the SCRAM users).
fn prepare_kafka(
    home: &KafkaHome,
    dir: &Path,
    ports: KafkaPorts,
    settings: &KafkaSettings,
) -> Result<()> {
    let data = dir.join("data");
    let props = dir.join("server.properties");
    let formatted = data.join("meta.properties").is_file();
    if formatted && props.is_file() {
        // A restart after a crash: the node runs as it was configured.
        return Ok(());
    }
    fs::write(&props, settings.properties(ports, &data))
        .with_context(|| format!("writing {}", props.display()))?;
    if formatted {
        return Ok(());
    }
    let cluster_id = new_cluster_id(&dir.display().to_string());
    let mut format = home.java("kafka.tools.StorageTool");
    format
        .args([
            "format",
            "--standalone",
            "--cluster-id",
            &cluster_id,
            "--config",
        ])
        .arg(&props)
        .args(settings.scram_format_args())
        .stdin(Stdio::null());
    run_logged(
        &mut format,
        &dir.join("format.log"),
        &format!("Kafka's storage tool could not format {}", data.display()),
    )?;
    Ok(())
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;
