//! `cargo xtask broker ...` and the broker step of the pipelines: install, start, stop,
//! restart and inspect the project-local Apache Kafka or Tansu, or use the broker the
//! caller names.

use crate::cli::Args;
use crate::workspace::{root, secs};
use anyhow::{Context, Result};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use xtask::broker::{self, Broker, BrokerKind, BrokerSpec};

/// How long `broker start` / `test` wait for a fresh broker to be ready (a cold JVM on a
/// busy 2-core machine takes a few seconds).
pub(crate) const BROKER_READY_TIMEOUT: Duration = Duration::from_secs(90);

/// The kind `--kind` names, Apache Kafka by default.
pub(crate) fn kind(args: &Args) -> Result<BrokerKind> {
    args.kind
        .as_deref()
        .map_or(Ok(BrokerKind::Kafka), BrokerKind::parse)
}

fn install_kind(kind: BrokerKind, root: &Path) -> Result<String> {
    Ok(match kind {
        BrokerKind::Kafka => broker::ensure_kafka_installed()?
            .dir()
            .display()
            .to_string(),
        BrokerKind::Tansu => broker::ensure_installed(root)?.display().to_string(),
    })
}

pub(crate) fn install(args: &Args) -> Result<ExitCode> {
    let kind = kind(args)?;
    let t = Instant::now();
    let at = install_kind(kind, &root())?;
    println!("{} installed at {at} ({:.1} s)", kind.label(), secs(t));
    Ok(ExitCode::SUCCESS)
}

/// The shared broker of `kind`, started unless it already runs; `fresh` wipes its data
/// first. Returns the handle (detached when it was already running) and whether this call
/// started it.
fn start_shared(kind: BrokerKind, port: Option<u16>, fresh: bool) -> Result<(Broker, bool)> {
    let dir = broker::shared_dir(&root(), kind);
    if let Some(mut running) = Broker::attach(&dir) {
        if !fresh && port.is_none_or(|p| p == running.port()) {
            running.wait_ready(BROKER_READY_TIMEOUT)?;
            return Ok((running, false));
        }
        running.stop()?;
    }
    if fresh {
        broker::wipe(&dir)?;
    }
    let remembered = dir.join("ports").is_file();
    let mut spec = BrokerSpec::new(kind, &dir);
    let port = match port {
        Some(p) => Some(p),
        None if remembered => None,
        // The well-known port when free, so addresses in docs and shells keep working.
        None => Some(kind.default_port())
            .filter(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok()),
    };
    if let Some(p) = port {
        spec = spec.port(p);
    }
    Ok((Broker::start_ready(&spec, BROKER_READY_TIMEOUT)?, true))
}

pub(crate) fn start(args: &Args) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        println!("external broker {external} given: not starting one; probing it");
        broker::wait_ready(external, Duration::from_secs(5))?;
        println!("{external}");
        return Ok(ExitCode::SUCCESS);
    }
    let kind = kind(args)?;
    let t = Instant::now();
    let (b, started) = start_shared(kind, args.port, args.fresh)?;
    if started {
        println!(
            "{} started in {:.1} s (pid {}, data and log in {})\n  log:  {}\n  stop: cargo xtask broker stop --kind {}",
            kind.label(),
            secs(t),
            b.pid(),
            b.dir().display(),
            b.log_path().display(),
            kind.name()
        );
    } else {
        println!("{} already runs (pid {})", kind.label(), b.pid());
    }
    println!("{}", b.addr());
    b.detach();
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn restart(args: &Args) -> Result<ExitCode> {
    let kind = kind(args)?;
    let dir = broker::shared_dir(&root(), kind);
    let t = Instant::now();
    let mut b = match Broker::attach(&dir).or_else(|| Broker::recorded(&dir)) {
        Some(b) => b,
        None => {
            println!("no {} was started here before: starting one", kind.label());
            return start(args);
        }
    };
    b.restart()?;
    b.wait_ready(BROKER_READY_TIMEOUT)?;
    println!(
        "{} restarted in {:.1} s (pid {}, same port and data)",
        kind.label(),
        secs(t),
        b.pid()
    );
    println!("{}", b.addr());
    b.detach();
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn stop(args: &Args) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        println!("external broker {external} given: nothing to stop");
        return Ok(ExitCode::SUCCESS);
    }
    let kind = kind(args)?;
    let dir = broker::shared_dir(&root(), kind);
    match Broker::attach(&dir) {
        Some(mut b) => {
            let pid = b.pid();
            b.stop()?;
            println!("stopped {} on {} (pid {pid})", kind.label(), b.addr());
        }
        None => println!("no {} started by xtask runs", kind.label()),
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn status(args: &Args) -> Result<ExitCode> {
    if let Some(external) = &args.brokers {
        return Ok(match broker::ready(external, Duration::from_secs(2)) {
            Ok(()) => {
                println!("external broker {external}: ready");
                ExitCode::SUCCESS
            }
            Err(e) => {
                println!("external broker {external}: not ready: {e:#}");
                ExitCode::from(3)
            }
        });
    }
    let kind = kind(args)?;
    let dir = broker::shared_dir(&root(), kind);
    let installed = match kind {
        BrokerKind::Kafka => broker::kafka_installed().map(|h| h.dir().display().to_string()),
        BrokerKind::Tansu => broker::tansu_installed(&root()).map(|b| b.display().to_string()),
    };
    println!(
        "installed: {}",
        installed
            .unwrap_or_else(|| format!("no (cargo xtask broker install --kind {})", kind.name()))
    );
    let Some(b) = Broker::attach(&dir) else {
        println!(
            "{}: not running (directory {})",
            kind.label(),
            dir.display()
        );
        return Ok(ExitCode::from(3));
    };
    let addr = b.addr();
    let state = match broker::ready(&addr, Duration::from_secs(2)) {
        Ok(()) => "ready".to_owned(),
        Err(e) => format!("not ready: {e:#}"),
    };
    println!(
        "{}: pid {}, {state}, log {}",
        kind.label(),
        b.pid(),
        b.log_path().display()
    );
    println!("{addr}");
    Ok(ExitCode::SUCCESS)
}

/// A broker for a pipeline: `--brokers` as given, or the shared broker of `kind` (started
/// fresh when it is not running, and returned so that dropping it stops it again; one
/// already running is used and left running).
pub(crate) fn ensure_broker(args: &Args, kind: BrokerKind) -> Result<(String, Option<Broker>)> {
    if let Some(external) = &args.brokers {
        println!("    external broker {external}: not starting one");
        broker::wait_ready(external, Duration::from_secs(10))?;
        println!("    {external} is ready");
        return Ok((external.clone(), None));
    }
    let t = Instant::now();
    let dir = broker::shared_dir(&root(), kind);
    let fresh = Broker::attach(&dir).is_none();
    let (b, started) =
        start_shared(kind, None, fresh).with_context(|| format!("starting {}", kind.label()))?;
    let addr = b.addr();
    if started {
        println!(
            "    started {} on {addr} (pid {}, ready in {:.1} s, log {})",
            kind.label(),
            b.pid(),
            secs(t),
            b.log_path().display()
        );
        Ok((addr, Some(b)))
    } else {
        println!(
            "    {} already runs on {addr} (pid {}): using it and leaving it running",
            kind.label(),
            b.pid()
        );
        b.detach();
        Ok((addr, None))
    }
}

/// What the benchmark reports as the broker.
pub(crate) fn broker_version(args: &Args, kind: BrokerKind) -> String {
    match &args.brokers {
        Some(external) => format!("external broker {external} (version unknown)"),
        None => match kind {
            BrokerKind::Kafka => format!("{} (project-local, KRaft, one node)", kind.label()),
            BrokerKind::Tansu => format!("{} (project-local, memory engine)", kind.label()),
        },
    }
}

/// Stops a broker a pipeline started, saying so.
pub(crate) fn stop_started(started: Option<Broker>) -> Result<()> {
    if let Some(mut b) = started {
        let t = Instant::now();
        let pid = b.pid();
        b.stop()?;
        println!(
            "==> stopped the {} started for this run (pid {pid}, {:.1} s)",
            b.kind().label(),
            secs(t)
        );
    }
    Ok(())
}
