//! Free loopback ports for brokers, proxies and child processes, handed out at most once
//! machine-wide while the process that picked them lives.
//!
//! A port is checked by binding it and then released, so between the pick and the bind
//! of whoever uses it (a JVM takes seconds; a test may leave a port unbound on purpose to
//! show "connection refused") anything else could take it. Two defences:
//! - picks come from below the kernel's ephemeral range, so no outgoing connection gets
//!   the port from the kernel;
//! - every pick is recorded as a file named after the port in a shared reservation
//!   directory, created exclusively and holding the picker's pid, so another picker (in
//!   this process or any other test process running in parallel) skips it until that
//!   pid has exited. Without it two parallel tests drew the same port and one broker
//!   found "something already listens there" (CI, once).

use super::procfs::process_alive;
use anyhow::{Context, Result, bail};
use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;

/// A free TCP port on 127.0.0.1, chosen below the kernel's ephemeral range, checked by
/// binding it (then released) and reserved machine-wide for the life of this process
/// (see the module docs). Only something that ignores the reservations can still take
/// it first, which [`super::Broker::start`] detects.
pub fn pick_free_port() -> Result<u16> {
    let (low, high) = PICK_RANGE;
    let below = ephemeral_low().unwrap_or(high).clamp(low + 1, high);
    let span = u64::from(below - low);
    for attempt in 0..1024u64 {
        let port = low + u16::try_from(random_u64(attempt) % span).unwrap_or(0);
        if port_free(port) && reserve(port) {
            return Ok(port);
        }
    }
    // A crowded range: let the kernel choose, as before.
    let listener = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// A free port that is none of `taken`.
pub(super) fn pick_port_other_than(taken: &[u16]) -> Result<u16> {
    for _ in 0..16 {
        let port = pick_free_port()?;
        if !taken.contains(&port) {
            return Ok(port);
        }
    }
    bail!("no free port on 127.0.0.1 other than {taken:?}")
}

/// Nothing listens on (or holds) 127.0.0.1:`port`.
pub(super) fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Where [`pick_free_port`] draws from: above the shared brokers' fixed ports (19092,
/// 19192) and the databases', up to the default start of the ephemeral range.
const PICK_RANGE: (u16, u16) = (20000, 32768);

/// The shared directory of reservations: one file per port, holding the picker's pid.
fn reservations_dir() -> PathBuf {
    std::env::temp_dir().join("outbox-dev-port-reservations")
}

/// Records `port` as this process's, unless a live process (this one included) holds it.
/// A reservation left by an exited process is taken over. When the directory cannot be
/// written the pick goes ahead unreserved (the bind check still applies).
fn reserve(port: u16) -> bool {
    let dir = reservations_dir();
    if fs::create_dir_all(&dir).is_err() {
        return true;
    }
    let path = dir.join(port.to_string());
    for _ in 0..2 {
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                return write!(file, "{}", std::process::id()).is_ok();
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let owner = fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| s.trim().parse::<u32>().ok());
                match owner {
                    Some(pid) if process_alive(pid) => return false,
                    // Being written right now (empty) by another picker: leave it to them.
                    None if fs::metadata(&path).is_ok_and(|m| m.len() == 0) => return false,
                    _ => {
                        let _ = fs::remove_file(&path);
                    }
                }
            }
            Err(_) => return true,
        }
    }
    false
}

/// The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`).
fn ephemeral_low() -> Option<u16> {
    fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A random number for port picking: process id, time and a counter hashed by the
/// standard library's randomly keyed hasher.
fn random_u64(attempt: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(attempt);
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish()
}

#[cfg(test)]
#[path = "ports_tests.rs"]
mod tests;
