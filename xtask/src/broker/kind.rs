//! The two broker implementations the project runs ([`BrokerKind`]): their names on the
//! command line, Tansu's pinned version, both versions for humans and the ports their
//! shared brokers get.

use super::kafka_install::KAFKA_VERSION;
use anyhow::{Result, bail};

/// The Tansu version the project is pinned to (Kafka's, [`KAFKA_VERSION`], lives with
/// the jars it names in `kafka_install`).
pub const TANSU_VERSION: &str = "0.6.0";
/// The port `cargo xtask` gives the shared Apache Kafka broker when it is free.
pub const DEFAULT_PORT: u16 = 19092;
/// The port `cargo xtask` gives the shared Tansu broker when it is free.
pub const DEFAULT_TANSU_PORT: u16 = 19192;

/// Which broker implementation a [`Broker`](super::Broker) runs.
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
