//! How a broker runs: the installed software of its kind ([`Launch`]), the command line
//! that starts it, and a Kafka node's preparation (its `server.properties` and, on a first
//! start, its formatted storage).

use crate::broker::kafka_config::{KafkaPorts, KafkaSettings, new_cluster_id};
use crate::broker::kafka_install::{KafkaHome, run_logged};
use anyhow::{Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The JVM options of a Kafka node on a 2-core machine: a small fixed heap and Kafka's
/// own G1 settings.
const KAFKA_JVM_OPTIONS: &[&str] = &[
    "-Xms256m",
    "-Xmx768m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:+ExitOnOutOfMemoryError",
];

/// The software a broker runs from: Tansu's binary or a Kafka install.
#[derive(Clone, Debug)]
pub(super) enum Launch {
    Tansu(PathBuf),
    Kafka(KafkaHome),
}

impl Launch {
    /// The command that runs the broker of instance directory `dir` listening on `addr`
    /// (`127.0.0.1:PORT`), before its working directory, output and process group are set.
    pub(super) fn command(&self, dir: &Path, addr: &str) -> Command {
        match self {
            Launch::Tansu(bin) => {
                let url = format!("tcp://{addr}");
                let mut cmd = Command::new(bin);
                cmd.args([
                    "broker",
                    "--listener-url",
                    &url,
                    "--advertised-listener-url",
                    &url,
                ]);
                cmd
            }
            Launch::Kafka(home) => {
                let mut cmd = Command::new("java");
                cmd.args(KAFKA_JVM_OPTIONS)
                    .arg("-cp")
                    .arg(home.classpath())
                    .arg(format!(
                        "-Dlog4j2.configurationFile={}",
                        home.log4j_config().display()
                    ))
                    .arg("-Djava.awt.headless=true")
                    .arg("kafka.Kafka")
                    .arg(dir.join("server.properties"));
                cmd
            }
        }
    }
}

/// Writes `server.properties` and, on a node's first start, formats its storage with
/// Kafka's storage tool (a fresh cluster id, `--standalone`, the SCRAM users).
pub(super) fn prepare_kafka(
    home: &KafkaHome,
    dir: &Path,
    ports: KafkaPorts,
    settings: &KafkaSettings,
) -> Result<()> {
    let data = dir.join("data");
    let props = dir.join("server.properties");
    let formatted = data.join("meta.properties").is_file();
    if formatted && props.is_file() {
        // A restart after a crash: the node runs as it was configured.
        return Ok(());
    }
    fs::write(&props, settings.properties(ports, &data))
        .with_context(|| format!("writing {}", props.display()))?;
    if formatted {
        return Ok(());
    }
    let cluster_id = new_cluster_id(&dir.display().to_string());
    let mut format = home.java("kafka.tools.StorageTool");
    format
        .args([
            "format",
            "--standalone",
            "--cluster-id",
            &cluster_id,
            "--config",
        ])
        .arg(&props)
        .args(settings.scram_format_args())
        .stdin(Stdio::null());
    run_logged(
        &mut format,
        &dir.join("format.log"),
        &format!("Kafka's storage tool could not format {}", data.display()),
    )?;
    Ok(())
}
