//! The databases the tests need (PostgreSQL, MariaDB, Redis): their URLs, and starting one
//! that is down.

use crate::secs;
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long `test` waits for a database it tried to start.
pub(crate) const SERVICE_START_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
pub(crate) const MYSQL_URL: &str = "mysql://root@127.0.0.1:3306/test";
pub(crate) const REDIS_URL: &str = "redis://127.0.0.1:6379/";

pub(crate) struct Service {
    name: &'static str,
    addr: &'static str,
    start: fn() -> Result<String>,
}

pub(crate) const SERVICES: [Service; 3] = [
    Service {
        name: "PostgreSQL",
        addr: "127.0.0.1:5432",
        start: start_postgres,
    },
    Service {
        name: "MariaDB",
        addr: "127.0.0.1:3306",
        start: start_mariadb,
    },
    Service {
        name: "Redis",
        addr: "127.0.0.1:6379",
        start: start_redis,
    },
];

pub(crate) fn service_up(s: &Service) -> bool {
    xtask::tcp_accepts(s.addr, Duration::from_millis(500))
}

/// Every database must accept connections; one that does not is started and awaited.
/// Never skips: a service that stays down fails the run (in CI and outside it).
pub(crate) fn ensure_databases() -> Result<()> {
    let mut attempts: Vec<(&Service, String)> = Vec::new();
    for s in &SERVICES {
        if service_up(s) {
            println!("    {} accepts connections on {}", s.name, s.addr);
            continue;
        }
        println!("    {} is down on {}: starting it", s.name, s.addr);
        let outcome = match (s.start)() {
            Ok(cmd) => format!("ran `{cmd}`"),
            Err(e) => format!("starting it failed: {e:#}"),
        };
        println!("    {}: {outcome}", s.name);
        attempts.push((s, outcome));
    }
    if attempts.is_empty() {
        return Ok(());
    }
    let t = Instant::now();
    while t.elapsed() < SERVICE_START_TIMEOUT {
        if attempts.iter().all(|(s, _)| service_up(s)) {
            break;
        }
        sleep(Duration::from_millis(250));
    }
    let mut down = Vec::new();
    for (s, outcome) in &attempts {
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
    Ok(())
}

pub(crate) fn spawn_ok(program: &str, args: &[&str]) -> Result<String> {
    let shown = format!("{program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed: {status}");
    }
    Ok(shown)
}

pub(crate) fn start_postgres() -> Result<String> {
    let conf = Path::new("/etc/postgresql");
    let mut versions: Vec<String> = std::fs::read_dir(conf)
        .with_context(|| format!("listing {} (is PostgreSQL installed?)", conf.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    versions.sort();
    if versions.is_empty() {
        bail!("no PostgreSQL cluster configured under {}", conf.display());
    }
    let mut ran = Vec::new();
    for v in &versions {
        ran.push(spawn_ok(
            "pg_ctlcluster",
            &["--skip-systemctl-redirect", v, "main", "start"],
        )?);
    }
    Ok(ran.join("; "))
}

pub(crate) fn start_mariadb() -> Result<String> {
    spawn_ok(
        "start-stop-daemon",
        &[
            "--start",
            "--oknodo",
            "--background",
            "--exec",
            "/usr/sbin/mariadbd",
        ],
    )
}

pub(crate) fn start_redis() -> Result<String> {
    spawn_ok(
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
    )
}
