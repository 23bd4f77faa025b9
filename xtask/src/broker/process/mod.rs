//! One broker process, Apache Kafka or Tansu: start it in its own process group from its
//! instance directory, record its pid and ports there, signal it (pause, resume, stop,
//! crash) and recognise it again from that directory.
//!
//! An instance directory holds `kind`, `ports` (client, internal, controller), `broker.pid`
//! and `broker.log`; a Kafka instance also `server.properties` and `data/`. A restart, or a
//! start after a crash, reuses the ports and the data: records and producer state survive
//! as on a real cluster, and clients reconnect to the address they had. (Tansu's memory
//! engine keeps nothing across a restart, whatever the directory holds.)
//!
//! One file per job: `spec` ([`BrokerSpec`], what to start), `handle` ([`Broker`] and what
//! it tells about itself), `launch` (the command line of each kind, a Kafka node's
//! preparation), `start`, `stop` ([`STOP_GRACE`]), `readiness`, `log` (the failure
//! report's excerpts) and `instance_dir` (the pid file: [`read_pid`], [`wipe`]). The
//! `impl Broker` blocks are spread over those files; this module only declares them and
//! re-exports the public items, and the children import each other directly.

mod handle;
mod instance_dir;
mod launch;
mod log;
mod readiness;
mod spec;
mod start;
mod stop;

pub use handle::Broker;
pub use instance_dir::{read_pid, wipe};
pub use spec::BrokerSpec;
pub use stop::STOP_GRACE;
