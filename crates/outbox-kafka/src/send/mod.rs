//! Sending one publish call's partitions: the shared sending state
//! ([`PartitionSender`]), the pure per-partition decisions ([`machine`]), the thin async
//! executor that performs them ([`executor`]), and how a producer id is obtained
//! ([`producer_id`]).

use std::time::Duration;

use crate::cluster::Cluster;
use crate::compression::Compression;
use crate::session::{Sequences, SessionCell};

mod executor;
mod machine;
mod pause;
mod producer_id;

pub(crate) use machine::GroupOutcome;
pub(crate) use pause::RetryPause;

/// The per-partition send engine of a publisher: connections, the idempotent producer
/// identity and each partition's sequence, shared by every partition's send (each run
/// by a [`machine::PartitionSendMachine`] through [`PartitionSender::send_group`]).
#[derive(Debug)]
pub(crate) struct PartitionSender {
    pub cluster: Cluster,
    pub session: SessionCell,
    pub sequences: Sequences,
    pub compression: Compression,
    pub delivery_timeout: Duration,
    pub retry_backoff: Duration,
    pub max_retry_backoff: Duration,
}

impl PartitionSender {
    /// The backoff between retries within one publish call. The configuration was
    /// validated (both at least 1 ms, initial at most max); the fallback is unreachable.
    pub(crate) fn backoff(&self) -> outbox_core::backoff::Backoff {
        outbox_core::backoff::Backoff::new(self.retry_backoff, self.max_retry_backoff)
            .unwrap_or_default()
    }
}
