//! The settings a test gives its Apache Kafka broker, and the KRaft `server.properties`
//! and storage-format arguments they become. One combined broker+controller node with
//! three listeners on loopback:
//!
//! * `CLIENT` on the broker's port: what clients bootstrap from (PLAINTEXT, or
//!   SASL_PLAINTEXT with SCRAM when [`KafkaSettings::scram_user`] is used);
//! * `INTERNAL` on the admin port: PLAINTEXT, the inter-broker listener and the one the
//!   harness's admin tools use; its anonymous principal is a super user, so creating
//!   topics and granting ACLs works whatever the client listener demands;
//! * `CONTROLLER` on the controller port (KRaft quorum).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// Broker settings a test needs, as options (not a properties file per test).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaSettings {
    auto_create_topics: bool,
    scram_users: Vec<(String, String)>,
    authorizer: bool,
    producer_id_expiration: Option<Duration>,
    extra: Vec<(String, String)>,
}

impl Default for KafkaSettings {
    /// Auto-creation on (as the suite's shared broker has), no SASL, no authorizer,
    /// Kafka's own producer-id expiry.
    fn default() -> Self {
        KafkaSettings {
            auto_create_topics: true,
            scram_users: Vec::new(),
            authorizer: false,
            producer_id_expiration: None,
            extra: Vec::new(),
        }
    }
}

impl KafkaSettings {
    /// `auto.create.topics.enable`.
    pub fn auto_create_topics(mut self, on: bool) -> Self {
        self.auto_create_topics = on;
        self
    }

    /// A SCRAM user (both SCRAM-SHA-256 and SCRAM-SHA-512 credentials); with at least one,
    /// the client listener requires SASL (SCRAM-SHA-256, SCRAM-SHA-512).
    pub fn scram_user(mut self, name: &str, password: &str) -> Self {
        self.scram_users
            .push((name.to_owned(), password.to_owned()));
        self
    }

    /// The StandardAuthorizer: clients of the client listener need ACLs.
    pub fn authorizer(mut self, on: bool) -> Self {
        self.authorizer = on;
        self
    }

    /// `producer.id.expiration.ms` (and a check interval short enough to act on it).
    pub fn producer_id_expiration(mut self, after: Duration) -> Self {
        self.producer_id_expiration = Some(after);
        self
    }

    /// Any other broker property.
    pub fn property(mut self, key: &str, value: &str) -> Self {
        self.extra.push((key.to_owned(), value.to_owned()));
        self
    }

    /// `true` when the client listener speaks SASL.
    pub fn sasl(&self) -> bool {
        !self.scram_users.is_empty()
    }

    /// The `server.properties` of a node with these settings.
    pub fn properties(&self, ports: KafkaPorts, data_dir: &Path) -> String {
        let KafkaPorts {
            client,
            internal,
            controller,
        } = ports;
        let client_protocol = if self.sasl() {
            "SASL_PLAINTEXT"
        } else {
            "PLAINTEXT"
        };
        let mut p = String::new();
        let mut set = |k: &str, v: &str| {
            let _ = writeln!(p, "{k}={v}");
        };
        set("process.roles", "broker,controller");
        set("node.id", "1");
        set(
            "controller.quorum.bootstrap.servers",
            &format!("127.0.0.1:{controller}"),
        );
        set(
            "listeners",
            &format!(
                "CLIENT://127.0.0.1:{client},INTERNAL://127.0.0.1:{internal},CONTROLLER://127.0.0.1:{controller}"
            ),
        );
        set(
            "advertised.listeners",
            &format!("CLIENT://127.0.0.1:{client},INTERNAL://127.0.0.1:{internal}"),
        );
        set("controller.listener.names", "CONTROLLER");
        set("inter.broker.listener.name", "INTERNAL");
        set(
            "listener.security.protocol.map",
            &format!("CLIENT:{client_protocol},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"),
        );
        set("log.dirs", &data_dir.display().to_string());
        set("num.partitions", "1");
        set("offsets.topic.replication.factor", "1");
        set("offsets.topic.num.partitions", "4");
        set("transaction.state.log.replication.factor", "1");
        set("transaction.state.log.min.isr", "1");
        set("transaction.state.log.num.partitions", "4");
        set("share.coordinator.state.topic.replication.factor", "1");
        set("share.coordinator.state.topic.min.isr", "1");
        set("group.initial.rebalance.delay.ms", "0");
        set(
            "auto.create.topics.enable",
            if self.auto_create_topics {
                "true"
            } else {
                "false"
            },
        );
        // A small machine: few threads, and segments small enough that tests' data stays
        // small on disk.
        set("num.network.threads", "2");
        set("num.io.threads", "4");
        set("log.segment.bytes", &(64 << 20).to_string());
        if self.sasl() {
            set("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512");
            for mechanism in ["scram-sha-256", "scram-sha-512"] {
                set(
                    &format!("listener.name.client.{mechanism}.sasl.jaas.config"),
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                );
            }
        }
        if self.authorizer {
            set(
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            );
            // The internal and controller listeners are unauthenticated: their principal.
            set("super.users", "User:ANONYMOUS");
        }
        if let Some(after) = self.producer_id_expiration {
            let ms = after.as_millis().max(1).to_string();
            set("producer.id.expiration.ms", &ms);
            set("producer.id.expiration.check.interval.ms", &ms);
        }
        for (k, v) in &self.extra {
            set(k, v);
        }
        p
    }

    /// The storage tool's `--add-scram` arguments for the SCRAM users.
    pub fn scram_format_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (name, password) in &self.scram_users {
            for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
                args.push("--add-scram".to_owned());
                args.push(format!("{mechanism}=[name={name},password={password}]"));
            }
        }
        args
    }
}

/// The three ports of one Kafka node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KafkaPorts {
    /// The client listener: the bootstrap address's port.
    pub client: u16,
    /// The internal PLAINTEXT listener (inter-broker, admin tools).
    pub internal: u16,
    /// The KRaft controller listener.
    pub controller: u16,
}

impl KafkaPorts {
    /// `client internal controller`, as the ports file stores them.
    pub fn to_line(self) -> String {
        format!("{} {} {}\n", self.client, self.internal, self.controller)
    }

    /// Reads [`KafkaPorts::to_line`]'s format.
    pub fn parse(line: &str) -> Option<KafkaPorts> {
        let mut it = line.split_whitespace().map(|p| p.parse::<u16>().ok());
        let ports = KafkaPorts {
            client: it.next()??,
            internal: it.next()??,
            controller: it.next()??,
        };
        it.next().is_none().then_some(ports)
    }
}

/// A fresh KRaft cluster id: 16 bytes from `seed` and the clock, as Kafka prints a `Uuid`
/// (URL-safe base64 without padding, 22 characters).
pub fn new_cluster_id(seed: &str) -> String {
    use sha2::{Digest, Sha256};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let digest = Sha256::digest(format!("{seed}/{}/{nanos}", std::process::id()));
    let mut id = [0u8; 16];
    id.copy_from_slice(digest.get(..16).unwrap_or(&[0; 16]));
    // The storage tool's argument parser takes an id that starts with `-` for an option
    // (and fails: "--cluster-id: expected one argument"); with the top bit clear the
    // first character is a letter.
    id[0] &= 0x7f;
    base64_url(&id)
}

fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            let idx = (n >> (18 - 6 * i)) & 63;
            out.push(char::from(ALPHABET[idx as usize]));
        }
    }
    out
}

#[cfg(test)]
#[path = "kafka_config_tests.rs"]
mod tests;
