//! `cargo xtask arch`: the workspace's shape, checked. Every crate target's file-level
//! import graph has no circle ([`graph`]), no source file is over
//! [`rules::MAX_PRODUCTION_LINES`] lines, no library file (`crates/*/src`) holds its unit
//! tests inline, and no test asserts a `cfg!(feature)` value ([`rules`]). Run by the lint step of `cargo xtask test`.

mod graph;
mod paths;
mod rules;
mod source;

use anyhow::{Context, Result, bail};
use graph::ImportGraph;
use rules::{MAX_PRODUCTION_LINES, cfg_assertions, inline_test_modules};
use std::path::{Path, PathBuf};

/// The workspace members named in the root manifest's `members = [...]`.
fn members(root: &Path) -> Result<Vec<PathBuf>> {
    let manifest =
        std::fs::read_to_string(root.join("Cargo.toml")).context("reading Cargo.toml")?;
    let list = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .context("no `members = [...]` in the root Cargo.toml")?;
    Ok(list
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(PathBuf::from)
        .collect())
}

/// The crate targets of a member: `src/lib.rs`, `src/main.rs`, `src/bin/*.rs`.
fn targets(root: &Path, member: &Path) -> Vec<PathBuf> {
    let src = member.join("src");
    let mut out: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .filter(|p| root.join(p).is_file())
        .collect();
    if let Ok(entries) = std::fs::read_dir(root.join(src.join("bin"))) {
        let mut bins: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .filter_map(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
            .collect();
        bins.sort();
        out.extend(bins);
    }
    out
}

/// Every `.rs` file below `dir` (relative to `root`), sorted.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let rel = dir.join(entry.file_name());
        if entry.path().is_dir() {
            if entry.file_name() != "target" {
                rust_files(root, &rel, out);
            }
        } else if rel.extension().is_some_and(|x| x == "rs") {
            out.push(rel);
        }
    }
}

/// Checks the workspace at `root`; prints one line per finding and a summary, and fails
/// when there is any finding.
pub(crate) fn check(root: &Path) -> Result<()> {
    let mut findings = Vec::new();
    let (mut target_count, mut file_count) = (0, 0);
    for member in members(root)? {
        for target in targets(root, &member) {
            let graph = ImportGraph::read(root, &target)?;
            target_count += 1;
            file_count += graph.files.len();
            for circle in graph.circles() {
                let mut text = format!(
                    "circle in {}: {}",
                    target.display(),
                    circle
                        .iter()
                        .map(|&f| graph.files[f].path.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                for &a in &circle {
                    for (b, why) in &graph.edges[a] {
                        if circle.contains(b) {
                            let why: Vec<&str> = why.iter().map(String::as_str).take(4).collect();
                            text.push_str(&format!(
                                "\n      {} -> {} ({})",
                                graph.files[a].path.display(),
                                graph.files[*b].path.display(),
                                why.join(", ")
                            ));
                        }
                    }
                }
                findings.push(text);
            }
            // Every member's source files keep to the size; the library crates' also keep
            // their unit tests in sibling files.
            for file in &graph.files {
                let src = std::fs::read_to_string(root.join(&file.path))?;
                if member.starts_with("crates") {
                    for line in inline_test_modules(&src) {
                        findings.push(format!(
                            "{}:{line}: an inline test module (move it to a sibling *_tests.rs file)",
                            file.path.display()
                        ));
                    }
                }
                let lines = src.lines().count();
                if lines > MAX_PRODUCTION_LINES {
                    findings.push(format!(
                        "{}: {lines} lines (a source file has at most {MAX_PRODUCTION_LINES})",
                        file.path.display()
                    ));
                }
            }
        }
        let mut all = Vec::new();
        rust_files(root, &member, &mut all);
        all.sort();
        for file in all {
            let src = std::fs::read_to_string(root.join(&file))?;
            for line in cfg_assertions(&src) {
                findings.push(format!(
                    "{}:{line}: a test asserts a cfg! value (it restates the build; test the behaviour)",
                    file.display()
                ));
            }
        }
    }
    for f in &findings {
        println!("    {f}");
    }
    println!(
        "    arch: {target_count} crate targets, {file_count} source files: {} finding(s)",
        findings.len()
    );
    if !findings.is_empty() {
        bail!(
            "the workspace's shape has {} finding(s), listed above",
            findings.len()
        );
    }
    Ok(())
}

#[cfg(test)]
#[path = "arch_tests.rs"]
mod tests;
