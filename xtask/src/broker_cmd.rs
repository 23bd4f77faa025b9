//! `cargo xtask broker ...` and the broker step of the pipelines: install, start, stop and
//! inspect the project-local Tansu, or use the broker the caller names.

use crate::cli::Args;
use crate::{root, secs};
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use xtask::broker::{self, Broker, DEFAULT_PORT};

/// How long `broker start` / `test` wait for a fresh broker to answer.
pub(crate) const BROKER_READY_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) fn install(args: &Args) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        println!("external broker {external} given: not installing Tansu");
        return Ok(ExitCode::SUCCESS);
    }
    let t = Instant::now();
    let bin = broker::ensure_installed(&root())?;
    println!(
        "Tansu {} ready at {} ({:.1} s)",
        broker::TANSU_VERSION,
        bin.display(),
        secs(t)
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn start(args: &Args, port: u16) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        println!("external broker {external} given: not starting Tansu; probing it");
        broker::wait_ready(external, Duration::from_secs(5))?;
        println!("{external} answers ApiVersions");
        return Ok(ExitCode::SUCCESS);
    }
    let addr = format!("127.0.0.1:{port}");
    if broker::api_versions(&addr, Duration::from_secs(1)).is_ok() {
        match broker::read_pid(&broker::default_state_dir(), port) {
            Some(pid) => println!("a broker already answers on {addr} (pid file: {pid})"),
            None => println!("a broker already answers on {addr} (not started by xtask)"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let t = Instant::now();
    let bin = broker::ensure_installed(&root())?;
    let mut b = Broker::start(&bin, port)?;
    b.wait_ready(BROKER_READY_TIMEOUT)?;
    let log = b.log_path();
    let pid = b.detach();
    println!(
        "Tansu {} answers on {addr} (pid {pid}, started in {:.1} s)\n  log:  {}\n  stop: cargo xtask broker stop{}",
        broker::TANSU_VERSION,
        secs(t),
        log.display(),
        if port == DEFAULT_PORT {
            String::new()
        } else {
            format!(" --port {port}")
        }
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn stop(args: &Args, port: u16) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        println!("external broker {external} given: nothing to stop");
        return Ok(ExitCode::SUCCESS);
    }
    let state_dir = broker::default_state_dir();
    let bin = broker::installed(&root()).unwrap_or_else(|| PathBuf::from("tansu"));
    match Broker::attach(&state_dir, &bin, port) {
        Some(mut b) => {
            let pid = b.pid();
            b.stop()?;
            println!("stopped Tansu on 127.0.0.1:{port} (pid {pid})");
        }
        None => {
            let _ = std::fs::remove_file(broker::pid_path(&state_dir, port));
            if xtask::tcp_accepts(&format!("127.0.0.1:{port}"), Duration::from_millis(500)) {
                println!(
                    "something listens on 127.0.0.1:{port}, but xtask did not start it (no live pid file): not stopping it"
                );
            } else {
                println!("no broker started by xtask runs on 127.0.0.1:{port}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn status(args: &Args, port: u16) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        return Ok(
            match broker::api_versions(external, Duration::from_secs(2)) {
                Ok(()) => {
                    println!("external broker {external}: answers ApiVersions");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    println!("external broker {external}: not answering: {e:#}");
                    ExitCode::from(3)
                }
            },
        );
    }
    let root = root();
    match broker::installed(&root) {
        Some(bin) => println!(
            "installed: Tansu {} at {}",
            broker::TANSU_VERSION,
            bin.display()
        ),
        None => println!(
            "installed: no (cargo xtask broker install puts it into {})",
            broker::tools_dir(&root).display()
        ),
    }
    let state_dir = broker::default_state_dir();
    match broker::read_pid(&state_dir, port) {
        Some(pid) => println!(
            "pid file:  {} (pid {pid})",
            broker::pid_path(&state_dir, port).display()
        ),
        None => println!("pid file:  none for port {port}"),
    }
    let addr = format!("127.0.0.1:{port}");
    Ok(match broker::api_versions(&addr, Duration::from_secs(2)) {
        Ok(()) => {
            let ours = if broker::is_running_in(&state_dir, port) {
                "started by xtask"
            } else {
                "not started by xtask"
            };
            println!("broker:    answers ApiVersions on {addr} ({ours})");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("broker:    none answering on {addr} ({e:#})");
            ExitCode::from(3)
        }
    })
}

/// The broker to use: `--brokers` as given, one already answering on the default port,
/// or a project-local Tansu started now (returned, so that dropping it stops it).
pub(crate) fn ensure_broker(args: &Args, root: &Path) -> Result<(String, Option<Broker>)> {
    if let Some(external) = &args.brokers {
        println!("    external broker {external}: not installing or starting Tansu");
        broker::wait_ready(external, Duration::from_secs(10))?;
        println!("    {external} answers ApiVersions");
        let bin = broker::ensure_installed(root)?;
        println!(
            "    Tansu binary for private test brokers: {}",
            bin.display()
        );
        return Ok((external.clone(), None));
    }
    let addr = format!("127.0.0.1:{DEFAULT_PORT}");
    if broker::api_versions(&addr, Duration::from_secs(1)).is_ok() {
        println!("    a broker already answers on {addr}: using it (and leaving it running)");
        // Some tests start private brokers of their own (restarts, the demo): they need
        // the binary even when the shared broker is someone else's.
        let bin = broker::ensure_installed(root)?;
        println!(
            "    Tansu binary for private test brokers: {}",
            bin.display()
        );
        return Ok((addr, None));
    }
    let ti = Instant::now();
    let bin = broker::ensure_installed(root)?;
    println!(
        "    Tansu {} at {} ({:.1} s)",
        broker::TANSU_VERSION,
        bin.display(),
        secs(ti)
    );
    let ts = Instant::now();
    let mut b = Broker::start(&bin, DEFAULT_PORT)?;
    b.wait_ready(BROKER_READY_TIMEOUT)?;
    println!(
        "    started Tansu on {addr} (pid {}, ready in {:.1} s, log {})",
        b.pid(),
        secs(ts),
        b.log_path().display()
    );
    Ok((addr, Some(b)))
}

/// What the benchmark reports as the broker version.
pub(crate) fn broker_version(args: &Args, started_here: bool) -> String {
    if let Some(external) = &args.brokers {
        return format!("external broker {external} (version unknown)");
    }
    if started_here || broker::is_running_in(&broker::default_state_dir(), DEFAULT_PORT) {
        format!(
            "Tansu {} (project-local, memory engine)",
            broker::TANSU_VERSION
        )
    } else {
        format!("unknown (a broker not started by xtask answers on 127.0.0.1:{DEFAULT_PORT})")
    }
}
