//! Where the workspace is and how long a step took: the two facts every command prints.

use std::path::PathBuf;
use std::time::Instant;

/// The workspace root (see [`xtask::workspace_root`]).
pub(crate) fn root() -> PathBuf {
    xtask::workspace_root()
}

/// Seconds since `since`, for the step lines.
pub(crate) fn secs(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}
