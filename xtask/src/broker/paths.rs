//! Where the project keeps its brokers inside the workspace: the Tansu binary under
//! `.tools/tansu` and each kind's shared instance directory under `.tools/broker`.
//! (Kafka's jars live in the machine-wide cache instead, see `kafka_install`.)

use super::kind::BrokerKind;
use std::path::{Path, PathBuf};

/// `<root>/.tools/tansu`: the Tansu binary lives here.
pub fn tools_dir(root: &Path) -> PathBuf {
    root.join(".tools").join("tansu")
}

/// `<root>/.tools/broker/<kind>`: the instance directory of the shared broker of `kind`
/// that `cargo xtask broker start` and `cargo xtask test` run.
pub fn shared_dir(root: &Path, kind: BrokerKind) -> PathBuf {
    root.join(".tools").join("broker").join(kind.name())
}
