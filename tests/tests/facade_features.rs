//! The `outbox` facade's feature switches, checked on the dependency graph cargo
//! resolves for the facade alone: a PostgreSQL-only service compiles no SQLite, no MySQL
//! and no C compression codec, the defaults compile no C codec, and no OpenTelemetry
//! crate is built without the `otel` feature.
//!
//! `cargo tree -p outbox -e normal,build` resolves features for that package only
//! (dev-dependencies, such as the facade's own all-features self dev-dependency, stay
//! out), so the graph is the one a service depending on `outbox` builds.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The package names in `cargo tree -p outbox <args>`: normal and build dependencies,
/// from the lock file, without network access.
fn facade_packages(features: &[&str]) -> BTreeSet<String> {
    // Cargo sets CARGO for the tests it runs; nextest may not, and the build's cargo
    // is the right one anyway.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "outbox",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--locked", "--offline", "--manifest-path"])
        .arg(&manifest)
        .args(features)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree {features:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let packages: BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    assert!(packages.contains("outbox"), "{packages:?}");
    packages
}

fn assert_absent(packages: &BTreeSet<String>, names: &[&str], what: &str) {
    let present: Vec<&&str> = names.iter().filter(|n| packages.contains(**n)).collect();
    assert!(present.is_empty(), "{what} compiles {present:?}");
}

fn assert_present(packages: &BTreeSet<String>, names: &[&str], what: &str) {
    let missing: Vec<&&str> = names.iter().filter(|n| !packages.contains(**n)).collect();
    assert!(missing.is_empty(), "{what} lacks {missing:?}");
}

const SQLITE: [&str; 2] = ["libsqlite3-sys", "sqlx-sqlite"];
const MYSQL: [&str; 1] = ["sqlx-mysql"];
const C_CODECS: [&str; 4] = ["zstd", "zstd-sys", "lz4", "lz4-sys"];
/// What the `otel` feature brings; nothing else may bring it.
const OTEL: [&str; 3] = [
    "opentelemetry",
    "opentelemetry_sdk",
    "tracing-opentelemetry",
];

#[test]
fn facade_postgres_and_kafka_compile_no_other_backend_and_no_c_codec() {
    let what = "outbox with postgres,kafka";
    let p = facade_packages(&["--no-default-features", "--features", "postgres,kafka"]);
    assert_absent(&p, &SQLITE, what);
    assert_absent(&p, &MYSQL, what);
    assert_absent(&p, &C_CODECS, what);
    assert_absent(&p, &["flate2", "snap", "redis"], what);
    assert_absent(&p, &OTEL, what);
    assert_present(
        &p,
        &["sqlx-postgres", "rskafka", "outbox-seaorm", "outbox-kafka"],
        what,
    );
}

#[test]
fn facade_otel_brings_opentelemetry_and_nothing_else_does() {
    let what = "outbox with postgres,kafka,otel";
    let p = facade_packages(&["--no-default-features", "--features", "postgres,kafka,otel"]);
    assert_present(&p, &OTEL, what);
    let p = facade_packages(&["--no-default-features", "--features", "otel"]);
    assert_present(&p, &OTEL, "outbox with otel alone");
    assert_absent(&p, &["rskafka", "sea-orm"], "outbox with otel alone");
}

#[test]
fn facade_defaults_are_kafka_with_pure_rust_codecs_and_no_database() {
    let what = "outbox with its default features";
    let p = facade_packages(&[]);
    assert_absent(&p, &C_CODECS, what);
    assert_absent(&p, &SQLITE, what);
    assert_absent(
        &p,
        &["sea-orm", "sqlx-core", "sqlx-postgres", "redis"],
        what,
    );
    assert_absent(&p, &OTEL, what);
    assert_present(&p, &["rskafka", "outbox-kafka", "flate2", "snap"], what);
}

#[test]
fn facade_sqlite_alone_compiles_no_server_driver() {
    let what = "outbox with sqlite only";
    let p = facade_packages(&["--no-default-features", "--features", "sqlite"]);
    assert_absent(&p, &["sqlx-postgres", "sqlx-mysql", "rskafka"], what);
    assert_present(&p, &SQLITE, what);
}

/// The names above are the real package names: with every feature they all appear.
#[test]
fn facade_all_features_bring_every_backend_and_codec() {
    let what = "outbox with every feature";
    let p = facade_packages(&["--all-features"]);
    assert_present(&p, &SQLITE, what);
    assert_present(&p, &MYSQL, what);
    assert_present(&p, &C_CODECS, what);
    assert_present(&p, &["sqlx-postgres", "redis", "flate2", "snap"], what);
    assert_present(&p, &OTEL, what);
}
