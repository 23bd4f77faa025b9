//! Running the external tools of the pipeline: cargo, the pinned cargo-nextest and
//! cargo-deny from the machine's tool cache, and any command echoed with its arguments.

use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A cargo subcommand the pipeline needs, pinned, built once into the machine's tool
/// cache (outside every clone, keyed by version) and reused by later runs and clones.
pub(crate) struct CargoTool {
    /// The crate (and binary) name.
    pub(crate) name: &'static str,
    pub(crate) version: &'static str,
}

/// The test runner.
pub(crate) const NEXTEST: CargoTool = CargoTool {
    name: "cargo-nextest",
    version: "0.9.151",
};

/// Licenses, bans and sources.
pub(crate) const CARGO_DENY: CargoTool = CargoTool {
    name: "cargo-deny",
    version: "0.20.2",
};

impl CargoTool {
    fn root(&self) -> PathBuf {
        xtask::cache_dir()
            .join("tools")
            .join(format!("{}-{}", self.name, self.version))
    }

    /// The binary in the cache, if it was built.
    pub(crate) fn cached(&self) -> Option<PathBuf> {
        let bin = self.root().join("bin").join(self.name);
        bin.is_file().then_some(bin)
    }

    /// The cached binary, built first with `cargo install --locked` when missing (into a
    /// temporary root moved into place, so an interrupted build leaves nothing half-made).
    pub(crate) fn ensure(&self, cargo: &OsString) -> Result<PathBuf> {
        if let Some(bin) = self.cached() {
            return Ok(bin);
        }
        let root = self.root();
        let tmp = root.with_extension(format!("tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        println!(
            "    building {} {} into {} (once per machine, a few minutes)",
            self.name,
            self.version,
            root.display()
        );
        run_cmd(
            Command::new(cargo)
                .args([
                    "install",
                    "--locked",
                    "--quiet",
                    self.name,
                    "--version",
                    self.version,
                ])
                .arg("--root")
                .arg(&tmp),
        )?;
        let _ = std::fs::remove_dir_all(&root);
        std::fs::rename(&tmp, &root)
            .with_context(|| format!("moving {} into place", root.display()))?;
        self.cached().with_context(|| {
            format!(
                "{} is not in {} after its install",
                self.name,
                root.display()
            )
        })
    }
}

pub(crate) fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
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
