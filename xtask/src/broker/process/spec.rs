//! [`BrokerSpec`]: what to start, a broker's kind, instance directory, client port and
//! Kafka settings. Its own file because both the start (which reads it) and the callers
//! that build it need it, and nothing in it needs a running broker.

use crate::broker::kafka_config::KafkaSettings;
use crate::broker::kind::BrokerKind;
use std::path::{Path, PathBuf};

/// What to start: the kind, the instance directory, the client port and Kafka's settings.
#[derive(Clone, Debug)]
pub struct BrokerSpec {
    pub(super) kind: BrokerKind,
    pub(super) dir: PathBuf,
    pub(super) port: Option<u16>,
    pub(super) kafka: KafkaSettings,
    /// Remove the directory when the broker is dropped (see [`BrokerSpec::private`]).
    pub(super) temporary: bool,
}

impl BrokerSpec {
    /// A broker of `kind` whose files live in `dir`.
    pub fn new(kind: BrokerKind, dir: impl Into<PathBuf>) -> Self {
        BrokerSpec {
            kind,
            dir: dir.into(),
            port: None,
            kafka: KafkaSettings::default(),
            temporary: false,
        }
    }

    /// A broker of `kind` in a new directory under the system temp directory (private
    /// brokers of tests). Dropping the broker removes the directory, unless the thread is
    /// panicking: a failed test leaves its broker's log behind.
    pub fn private(kind: BrokerKind) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "outbox-broker-{}-{}-{n}-{nanos:08x}",
            kind.name(),
            std::process::id()
        ));
        BrokerSpec {
            temporary: true,
            ..Self::new(kind, dir)
        }
    }

    /// The client port (default: the one the directory remembers, else a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Kafka's settings (ignored by Tansu, which has none of them).
    pub fn kafka(mut self, settings: KafkaSettings) -> Self {
        self.kafka = settings;
        self
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The kind.
    pub fn kind(&self) -> BrokerKind {
        self.kind
    }
}
