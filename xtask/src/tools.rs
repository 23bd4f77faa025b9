//! Running the external tools of the pipeline: cargo, cargo-nextest, cargo-deny, and any
//! command echoed with its arguments.

use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The cargo-deny version the project checks with; installed project-locally (under
/// `.tools/`) when the machine has none, like the broker.
pub(crate) const CARGO_DENY_VERSION: &str = "0.20.2";

/// A `cargo-deny` binary: the one on PATH if it runs, else a project-local install.
pub(crate) fn ensure_cargo_deny(cargo: &OsString, root: &Path) -> Result<PathBuf> {
    let on_path = Command::new("cargo-deny").arg("--version").output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return Ok(PathBuf::from("cargo-deny"));
    }
    let local_root = root.join(".tools").join("cargo-deny");
    let local = local_root.join("bin").join("cargo-deny");
    if local.exists() {
        return Ok(local);
    }
    println!(
        "    installing cargo-deny {CARGO_DENY_VERSION} into .tools/ (first run only, a few minutes)"
    );
    run_cmd(
        Command::new(cargo)
            .args([
                "install",
                "cargo-deny",
                "--locked",
                "--version",
                CARGO_DENY_VERSION,
                "--root",
            ])
            .arg(&local_root),
    )?;
    Ok(local)
}

pub(crate) fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

pub(crate) fn has_nextest(cargo: &OsString) -> bool {
    Command::new(cargo)
        .args(["nextest", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub(crate) fn run_cmd(cmd: &mut Command) -> Result<()> {
    let program = Path::new(cmd.get_program());
    let shown = format!(
        "{} {}",
        program
            .file_name()
            .unwrap_or(program.as_os_str())
            .to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("    $ {shown}");
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed: {status}");
    }
    Ok(())
}
