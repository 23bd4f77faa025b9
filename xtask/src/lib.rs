//! Developer tasks for the outbox workspace, as a library.
//!
//! The `cargo xtask` binary is a thin command-line front end over this library; the
//! `outbox-tests` crate uses [`broker`] directly to start, stop, pause and restart
//! private Tansu broker instances for fault tests.
//!
//! Dependencies are deliberately tiny (std, `sha2`, `anyhow`) so that `cargo xtask`
//! compiles in seconds and never rebuilds the big crates.

pub mod broker;

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The workspace root (the directory holding the root `Cargo.toml`).
///
/// Derived from this crate's manifest directory at compile time, so it is right both for
/// the `cargo xtask` binary and for test crates that link this library.
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// `true` when something accepts a TCP connection at `addr` (`host:port`) within `timeout`.
///
/// Every address `addr` resolves to is tried. This says nothing about the protocol spoken
/// there; for a Kafka broker use [`broker::api_versions`].
pub fn tcp_accepts(addr: &str, timeout: Duration) -> bool {
    let Ok(addrs) = addr.to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|a| TcpStream::connect_timeout(&a, timeout).is_ok())
}

/// The machine-wide cache of the project's tools, outside every clone, so that later
/// runs and fresh clones on the same machine reuse them: `OUTBOX_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/outbox-dev`, else `$HOME/.cache/outbox-dev`. Each entry below it is
/// keyed by its version (`kafka-4.4.0/`, `tools/cargo-nextest-0.9.151/`).
pub fn cache_dir() -> PathBuf {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("OUTBOX_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = non_empty("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("outbox-dev");
    }
    let home = non_empty("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache").join("outbox-dev")
}
