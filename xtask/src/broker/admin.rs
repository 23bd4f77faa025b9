//! Kafka's own admin tools against a [`Broker`] of kind Kafka, through its internal
//! PLAINTEXT listener (whose anonymous principal is a super user when the authorizer is
//! on): topics with configs, more partitions, topic configs, ACLs. Each call is one JVM
//! run of a tool from the same jars as the broker (a second or two), so tests use them
//! for setup, not in loops.

use super::kind::BrokerKind;
use super::process::Broker;
use anyhow::{Context, Result, bail};
use std::process::Stdio;

/// Runs `tool` (a main class of Kafka's tools) with `args` after `--bootstrap-server
/// <internal listener>`, and returns its stdout; a failure carries its output.
pub fn run_tool(broker: &Broker, tool: &str, args: &[&str]) -> Result<String> {
    let Some(home) = broker.kafka_home() else {
        bail!(
            "{} has no admin tools: {tool} needs an Apache Kafka broker",
            BrokerKind::Tansu.label()
        );
    };
    let admin = broker.admin_addr();
    let out = home
        .java(tool)
        .args(["--bootstrap-server", &admin])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {tool}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "{tool} {} failed ({}):\n{stdout}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(stdout)
}

/// Creates `topic` with `partitions` partitions (replication factor 1) and the topic
/// `configs` (`max.message.bytes`, ...).
pub fn create_topic(
    broker: &Broker,
    topic: &str,
    partitions: u32,
    configs: &[(&str, &str)],
) -> Result<()> {
    let partitions = partitions.to_string();
    let mut args = vec![
        "--create",
        "--topic",
        topic,
        "--partitions",
        &partitions,
        "--replication-factor",
        "1",
    ];
    let configs: Vec<String> = configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for c in &configs {
        args.extend(["--config", c]);
    }
    run_tool(broker, "org.apache.kafka.tools.TopicCommand", &args).map(drop)
}

/// Raises `topic`'s partition count to `partitions`.
pub fn add_partitions(broker: &Broker, topic: &str, partitions: u32) -> Result<()> {
    let partitions = partitions.to_string();
    run_tool(
        broker,
        "org.apache.kafka.tools.TopicCommand",
        &["--alter", "--topic", topic, "--partitions", &partitions],
    )
    .map(drop)
}

/// Sets topic configs (`key=value`) on `topic`.
pub fn alter_topic_config(broker: &Broker, topic: &str, configs: &[(&str, &str)]) -> Result<()> {
    let configs: Vec<String> = configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    run_tool(
        broker,
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
            "--add-config",
            &configs.join(","),
        ],
    )
    .map(drop)
}

/// Grants `principal` (`User:relay`) the `operations` (`Write`, `Describe`, ...) on
/// `topic` (a literal name).
pub fn grant_topic(
    broker: &Broker,
    principal: &str,
    topic: &str,
    operations: &[&str],
) -> Result<()> {
    let mut args = vec!["--add", "--allow-principal", principal, "--topic", topic];
    for op in operations {
        args.extend(["--operation", op]);
    }
    run_tool(broker, "org.apache.kafka.tools.AclCommand", &args).map(drop)
}
