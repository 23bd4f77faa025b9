use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use outbox_core::ParkPolicy;

use super::*;
use crate::logging::LogFormat;
use crate::notify::NotifyKind;

fn cli(args: &[&str]) -> Cli {
    let mut argv = vec!["outbox-relay"];
    argv.extend_from_slice(args);
    Cli::try_parse_from(argv).unwrap()
}

#[test]
fn minimal_flags_resolve_with_defaults() {
    let c = cli(&[
        "--database-url",
        "sqlite://x.db",
        "--brokers",
        "127.0.0.1:9092",
    ])
    .resolve()
    .unwrap();
    assert_eq!(c.brokers, vec!["127.0.0.1:9092"]);
    assert_eq!(c.relay.bucket_count().get(), 8);
    assert!(c.relay.backlog_sampling());
    assert_eq!(c.listen, SocketAddr::from(([127, 0, 0, 1], 9464)));
    assert_eq!(c.shutdown_grace, Duration::from_secs(10));
    assert_eq!(c.relay.max_publish_attempts().map(|n| n.get()), Some(3));
    assert_eq!(c.relay.park_policy(), ParkPolicy::HoldKey);
    assert_eq!(c.relay.schema().tables().parked(), "outbox_parked");
}

#[test]
fn parking_options_resolve_and_reject_nonsense() {
    let base = ["--database-url", "sqlite://x.db", "--brokers", "b:1"];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        cli(&args).resolve()
    };
    let c = with(&[
        "--max-publish-attempts",
        "never",
        "--park-policy",
        "skip-row",
        "--parked-table",
        "orders_parked",
    ])
    .unwrap();
    assert_eq!(c.relay.max_publish_attempts(), None);
    assert_eq!(c.relay.park_policy(), ParkPolicy::SkipRow);
    assert_eq!(c.relay.schema().tables().parked(), "orders_parked");
    assert_eq!(
        with(&["--max-publish-attempts", "5"])
            .unwrap()
            .relay
            .max_publish_attempts()
            .map(|n| n.get()),
        Some(5)
    );
    for (flag, value) in [
        ("--max-publish-attempts", "0"),
        ("--max-publish-attempts", "many"),
        ("--park-policy", "drop"),
    ] {
        let e = with(&[flag, value]).unwrap_err().to_string();
        assert!(e.contains(flag.trim_start_matches("--")), "{e}");
    }
}

#[test]
fn missing_and_invalid_values_name_the_option() {
    let e = cli(&["--brokers", "b:1"])
        .resolve()
        .unwrap_err()
        .to_string();
    assert!(e.contains("OUTBOX_DATABASE_URL"), "{e}");
    let e = cli(&["--database-url", "sqlite://x", "--brokers", "nope"])
        .resolve()
        .unwrap_err()
        .to_string();
    assert!(e.contains("brokers") && e.contains("host:port"), "{e}");
    let e = cli(&["--database-url", "oracle://x", "--brokers", "b:1"])
        .resolve()
        .unwrap_err()
        .to_string();
    assert!(e.contains("database-url"), "{e}");
    let e = cli(&[
        "--database-url",
        "sqlite://x",
        "--brokers",
        "b:1",
        "--lease-renew-interval",
        "40s",
    ])
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(e.contains("lease_renew_interval"), "{e}");
    let e = cli(&[
        "--database-url",
        "sqlite://x",
        "--brokers",
        "b:1",
        "--sasl-mechanism",
        "plain",
    ])
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(e.contains("together"), "{e}");
    // Table names, bucket count and header are checked once, as the outbox schema.
    let schema_error = |flag: &str, value: &str| {
        cli(&[
            "--database-url",
            "sqlite://x",
            "--brokers",
            "b:1",
            flag,
            value,
        ])
        .resolve()
        .unwrap_err()
    };
    for (flag, value, says) in [
        ("--bucket-count", "0", "bucket_count"),
        ("--message-id-header", " ", "message_id_header"),
        ("--messages-table", "a;b", "messages table"),
    ] {
        let e = schema_error(flag, value);
        assert!(matches!(e, ConfigError::Schema(_)), "{flag}: {e:?}");
        assert!(e.to_string().contains(says), "{flag}: {e}");
    }
    assert!(
        Cli::try_parse_from(["outbox-relay", "--poll-interval", "5"]).is_err(),
        "a duration needs a unit"
    );
}

#[test]
fn the_file_fills_gaps_and_flags_win() {
    let dir = std::env::temp_dir().join(format!("outbox-relay-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("relay.toml");
    std::fs::write(
        &path,
        "database_url = \"postgres://db/x\"\nbrokers = \"k1:9092,k2:9092\"\nbucket_count = 16\npoll_interval = \"250ms\"\nmessages_table = \"orders_outbox\"\n",
    )
    .unwrap();
    let c = cli(&["--config", path.to_str().unwrap(), "--bucket-count", "32"])
        .resolve()
        .unwrap();
    assert_eq!(c.database_url, "postgres://db/x");
    assert_eq!(c.brokers.len(), 2);
    assert_eq!(c.relay.bucket_count().get(), 32, "flag beats file");
    assert_eq!(c.relay.poll_interval(), Duration::from_millis(250));
    assert_eq!(c.relay.schema().tables().messages(), "orders_outbox");
    assert_eq!(c.relay.schema().bucket_count().get(), 32);
    // The log format and the notification transport come from the file too.
    std::fs::write(
        &path,
        "database_url = \"postgres://db/x\"\nbrokers = \"k:9092\"\nlog_format = \"json\"\nnotify = \"postgres\"\nnotify_channel = \"orders_prod\"\n",
    )
    .unwrap();
    let c = cli(&["--config", path.to_str().unwrap()])
        .resolve()
        .unwrap();
    assert_eq!(c.log_format, LogFormat::Json);
    let notify = c.notify.unwrap();
    assert_eq!(notify.kind, NotifyKind::Postgres);
    assert_eq!(notify.url, "postgres://db/x", "the database by default");
    assert_eq!(notify.channel.as_str(), "orders_prod");
    let c = cli(&[
        "--config",
        path.to_str().unwrap(),
        "--log-format",
        "text",
        "--notify",
        "none",
        "--notify-channel",
        "x",
    ])
    .resolve();
    assert!(
        c.unwrap_err().to_string().contains("notify-channel"),
        "a channel without a transport is a mistake"
    );
    std::fs::write(
        &path,
        "database_url = \"postgres://db/x\"\nbrokers = \"k:9092\"\nlog_format = \"xml\"\n",
    )
    .unwrap();
    let e = cli(&["--config", path.to_str().unwrap()])
        .resolve()
        .unwrap_err();
    assert!(e.to_string().contains("log-format"), "{e}");
    std::fs::write(&path, "databse_url = \"typo\"\n").unwrap();
    let e = cli(&["--config", path.to_str().unwrap()])
        .resolve()
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
