//! What a broker's instance directory records about its process: the pid file
//! ([`read_pid`]), whether the recorded pid is still that broker ([`is_our_broker`]), and
//! wiping the directory for a fresh start ([`wipe`]).

use crate::broker::kind::BrokerKind;
use crate::broker::procfs::proc_state;
use anyhow::{Context, Result};
use std::fs;
use std::path::Path;

/// The pid recorded in `dir`, if any.
pub fn read_pid(dir: &Path) -> Option<u32> {
    fs::read_to_string(dir.join("broker.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Removes an instance directory's data (records, producer state, cluster id) and its
/// remembered ports, for a fresh start. The broker must not be running.
pub fn wipe(dir: &Path) -> Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(())
}

/// `pid` is a live broker of `kind` leading its own process group (as `Broker::start`
/// leaves it) and, for Kafka, running this directory's properties. Guards against
/// signalling a recycled pid from a stale pid file.
pub(super) fn is_our_broker(pid: u32, kind: BrokerKind, dir: &Path) -> bool {
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
