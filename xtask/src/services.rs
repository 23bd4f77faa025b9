//! The databases the tests need (PostgreSQL, MariaDB, Redis): installed from Debian's
//! packages when missing, configured as the tests expect, started when down. Idempotent
//! and quick when everything already runs.
//!
//! * PostgreSQL on 127.0.0.1:5432, trust authentication for loopback TCP, database `test`;
//! * MariaDB on 127.0.0.1:3306, `root` with an empty password over TCP, database `test`;
//! * Redis on 127.0.0.1:6379, no persistence.

use crate::workspace::secs;
use anyhow::{Context, Result, bail};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long `test` waits for a database it started.
pub(crate) const SERVICE_START_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
pub(crate) const MYSQL_URL: &str = "mysql://root@127.0.0.1:3306/test";
pub(crate) const REDIS_URL: &str = "redis://127.0.0.1:6379/";

/// The comment that marks what this file wrote into a configuration.
const MARKER: &str = "# outbox-dev (written by cargo xtask)";

struct Service {
    name: &'static str,
    addr: &'static str,
    /// The Debian package that provides the server.
    package: &'static str,
    installed: fn() -> bool,
    /// Writes the configuration the tests expect; `true` when a running server must reload.
    configure: fn() -> Result<bool>,
    start: fn() -> Result<String>,
    reload: fn() -> Result<()>,
    /// Once it accepts connections: users and the `test` database.
    prepare: fn() -> Result<()>,
}

const SERVICES: [Service; 3] = [
    Service {
        name: "PostgreSQL",
        addr: "127.0.0.1:5432",
        package: "postgresql",
        installed: || postgres_version().is_some(),
        configure: configure_postgres,
        start: start_postgres,
        reload: reload_postgres,
        prepare: prepare_postgres,
    },
    Service {
        name: "MariaDB",
        addr: "127.0.0.1:3306",
        package: "mariadb-server",
        installed: || Path::new("/usr/sbin/mariadbd").is_file(),
        configure: configure_mariadb,
        start: start_mariadb,
        reload: || Ok(()),
        prepare: prepare_mariadb,
    },
    Service {
        name: "Redis",
        addr: "127.0.0.1:6379",
        package: "redis-server",
        installed: || on_path("redis-server"),
        configure: || Ok(false),
        start: start_redis,
        reload: || Ok(()),
        prepare: || Ok(()),
    },
];

fn service_up(s: &Service) -> bool {
    xtask::tcp_accepts(s.addr, Duration::from_millis(500))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Every database must run as the tests expect; what is missing is installed, configured
/// and started, and awaited. Never skips: a service that stays down fails the run.
pub(crate) fn ensure_databases() -> Result<()> {
    let missing: Vec<&Service> = SERVICES
        .iter()
        .filter(|s| !service_up(s) && !(s.installed)())
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|s| s.name).collect();
        let packages: Vec<&str> = missing.iter().map(|s| s.package).collect();
        println!(
            "    {} not installed: installing {}",
            names.join(", "),
            packages.join(" ")
        );
        apt_install(&packages)?;
    }
    let mut started: Vec<(&Service, String)> = Vec::new();
    for s in &SERVICES {
        let reload = (s.configure)().with_context(|| format!("configuring {}", s.name))?;
        if service_up(s) {
            if reload {
                (s.reload)().with_context(|| format!("reloading {}", s.name))?;
                println!(
                    "    {} accepts connections on {} (configuration reloaded)",
                    s.name, s.addr
                );
            } else {
                println!("    {} accepts connections on {}", s.name, s.addr);
            }
            continue;
        }
        let outcome = match (s.start)() {
            Ok(cmd) => format!("ran `{cmd}`"),
            Err(e) => format!("starting it failed: {e:#}"),
        };
        println!("    {} was down on {}: {outcome}", s.name, s.addr);
        started.push((s, outcome));
    }
    let t = Instant::now();
    while t.elapsed() < SERVICE_START_TIMEOUT && !started.iter().all(|(s, _)| service_up(s)) {
        sleep(Duration::from_millis(250));
    }
    let mut down = Vec::new();
    for (s, outcome) in &started {
        if service_up(s) {
            println!(
                "    {} accepts connections on {} after {:.1} s",
                s.name,
                s.addr,
                secs(t)
            );
        } else {
            down.push(format!(
                "{} does not accept connections on {} ({outcome}; waited {:.0} s)",
                s.name,
                s.addr,
                SERVICE_START_TIMEOUT.as_secs_f64()
            ));
        }
    }
    if !down.is_empty() {
        bail!(
            "the tests need these services and will not skip them:\n  {}",
            down.join("\n  ")
        );
    }
    for s in &SERVICES {
        (s.prepare)().with_context(|| format!("preparing {} for the tests", s.name))?;
    }
    Ok(())
}

/// `apt-get update` and `apt-get install` of `packages`, or a one-line error naming them.
fn apt_install(packages: &[&str]) -> Result<()> {
    if !on_path("apt-get") {
        bail!(
            "this machine has no apt-get: install {} yourself and run again",
            packages.join(" ")
        );
    }
    let t = Instant::now();
    quiet("apt-get", &["update", "-qq"])?;
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend(packages);
    quiet("apt-get", &args)?;
    println!("    installed {} in {:.1} s", packages.join(" "), secs(t));
    Ok(())
}

/// Runs a command with its output captured; a failure carries the end of it.
fn quiet(program: &str, args: &[&str]) -> Result<String> {
    let shown = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running `{shown}`"))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        bail!(
            "`{shown}` failed ({}): {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Writes `text` to `path` unless it already holds exactly that; `true` when it wrote.
fn write_if_changed(path: &Path, text: &str) -> Result<bool> {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

// ---- PostgreSQL -------------------------------------------------------------------------

/// The newest PostgreSQL major version with a server under `/usr/lib/postgresql`.
fn postgres_version() -> Option<String> {
    let mut versions: Vec<(u32, String)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|v| {
            Path::new("/usr/lib/postgresql")
                .join(v)
                .join("bin/postgres")
                .is_file()
        })
        .filter_map(|v| Some((v.parse().ok()?, v)))
        .collect();
    versions.sort();
    versions.pop().map(|(_, v)| v)
}

fn postgres_conf_dir(version: &str) -> PathBuf {
    Path::new("/etc/postgresql").join(version).join("main")
}

/// Trust for loopback TCP (first in pg_hba.conf, so it wins), listening on 127.0.0.1:5432
/// with room for the suite's pools. Only a Debian cluster this machine runs is touched.
fn configure_postgres() -> Result<bool> {
    let Some(version) = postgres_version() else {
        return Ok(false);
    };
    let dir = postgres_conf_dir(&version);
    if !dir.is_dir() {
        quiet("pg_createcluster", &[&version, "main"])?;
    }
    let hba = dir.join("pg_hba.conf");
    let old = fs::read_to_string(&hba).with_context(|| format!("reading {}", hba.display()))?;
    let mut changed = false;
    if !old.contains(MARKER) {
        let text = format!(
            "{MARKER}: trust on loopback TCP for the test suite\n\
             host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n{old}"
        );
        fs::write(&hba, text).with_context(|| format!("writing {}", hba.display()))?;
        changed = true;
    }
    let conf =
        format!("{MARKER}\nlisten_addresses = '127.0.0.1'\nport = 5432\nmax_connections = 300\n");
    // A port or connection limit change needs a restart; it only happens on a cluster
    // that was not running (the first provisioning).
    write_if_changed(&dir.join("conf.d").join("outbox-dev.conf"), &conf)?;
    let _ = Command::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(&dir)
        .status();
    Ok(changed)
}

fn start_postgres() -> Result<String> {
    let version = postgres_version().context("no PostgreSQL server is installed")?;
    quiet(
        "pg_ctlcluster",
        &["--skip-systemctl-redirect", &version, "main", "start"],
    )?;
    Ok(format!("pg_ctlcluster {version} main start"))
}

fn reload_postgres() -> Result<()> {
    let version = postgres_version().context("no PostgreSQL server is installed")?;
    quiet("pg_ctlcluster", &[&version, "main", "reload"]).map(drop)
}

fn prepare_postgres() -> Result<()> {
    let psql = |sql: &str| {
        quiet(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-tAc",
                sql,
            ],
        )
    };
    let exists = psql("SELECT 1 FROM pg_database WHERE datname = 'test'")?;
    if exists.trim() != "1" {
        psql("CREATE DATABASE test")?;
        println!("    PostgreSQL: created the database test");
    }
    Ok(())
}

// ---- MariaDB ----------------------------------------------------------------------------

fn configure_mariadb() -> Result<bool> {
    if !Path::new("/etc/mysql/mariadb.conf.d").is_dir() {
        return Ok(false);
    }
    let conf = format!(
        "{MARKER}\n[mysqld]\nbind-address = 127.0.0.1\nport = 3306\nmax_connections = 500\n"
    );
    write_if_changed(
        Path::new("/etc/mysql/mariadb.conf.d/99-outbox-dev.cnf"),
        &conf,
    )?;
    Ok(false)
}

fn start_mariadb() -> Result<String> {
    let run = Path::new("/run/mysqld");
    fs::create_dir_all(run).context("creating /run/mysqld")?;
    let _ = Command::new("chown")
        .args(["mysql:mysql"])
        .arg(run)
        .status();
    if !Path::new("/var/lib/mysql/mysql").is_dir() {
        quiet("mariadb-install-db", &["--user=mysql", "--skip-test-db"])?;
    }
    quiet(
        "start-stop-daemon",
        &[
            "--start",
            "--oknodo",
            "--background",
            "--exec",
            "/usr/sbin/mariadbd",
            "--",
            "--user=mysql",
        ],
    )?;
    Ok("start-stop-daemon --start --exec /usr/sbin/mariadbd".to_owned())
}

/// `root` may log in over TCP with an empty password (Debian's root uses the unix
/// socket only), and the database `test` exists.
fn prepare_mariadb() -> Result<()> {
    let over_tcp = |sql: &str| {
        quiet(
            "mariadb",
            &[
                "-h",
                "127.0.0.1",
                "-P",
                "3306",
                "-u",
                "root",
                "--skip-password",
                "-e",
                sql,
            ],
        )
    };
    if over_tcp("SELECT 1").is_err() {
        quiet(
            "mariadb",
            &[
                "-u",
                "root",
                "-e",
                "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password \
                 USING PASSWORD('') OR unix_socket",
            ],
        )
        .context("letting root log in over TCP without a password (through the socket)")?;
        println!("    MariaDB: root may log in over TCP with an empty password");
    }
    over_tcp("CREATE DATABASE IF NOT EXISTS test").map(drop)
}

// ---- Redis ------------------------------------------------------------------------------

fn start_redis() -> Result<String> {
    quiet(
        "redis-server",
        &[
            "--daemonize",
            "yes",
            "--bind",
            "127.0.0.1",
            "--port",
            "6379",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
    )?;
    Ok("redis-server --daemonize yes --port 6379".to_owned())
}
