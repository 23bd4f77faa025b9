//! The produce coalescer: one per broker connection, shared by every concurrent publish
//! call. Partition batches that are ready while a produce request is on its way gather
//! into the next request, so concurrent lanes writing to different partitions of the
//! same broker share requests instead of sending one each.
//!
//! Which batches join a request is decided by the pure [`policy::Coalescer`]; this
//! module only sends what it hands out and routes each partition's part of the answer
//! back to the send machine waiting for it. A request-level failure (connection lost,
//! timeout) reaches every partition in the request as the same transport error a
//! single-partition request would have produced; what to do about it stays each
//! partition's machine's decision.
//!
//! A request is sent from its own task, so a publish call that is cancelled does not
//! cancel a request that carries other calls' batches. A batch whose caller went away
//! before its request left is dropped unsent.

mod policy;
pub(crate) mod queue;

#[cfg(test)]
mod measure_tests;

use std::sync::Arc;

use tokio::sync::oneshot;
use tracing::debug;

pub(crate) use self::policy::RequestLimit;
use self::policy::Waiting;
pub use self::queue::{PRODUCE_BATCHES_METRIC, PRODUCE_REQUESTS_METRIC};
use self::queue::{Pending, ProduceQueue};
use crate::wire::{Connection, PartitionBatch, ProduceAnswer, WireError};

/// Produce requests awaiting their answer on one connection at a time (Kafka's own
/// producer allows 5 too). With one, every lane's batch for a broker queued behind the
/// request before it: measured with 8 lanes, a publish took 27 ms against 2.2 ms with
/// one lane, while the broker used a quarter of a core. Batches that become ready while
/// all are out still gather into the next request. Ordering within a partition does not
/// depend on it: a partition has one batch out at a time (its sequence lock, held by
/// the send from first try to answer). Metadata and InitProducerId requests are not
/// limited by it.
pub(crate) const MAX_IN_FLIGHT_PER_CONNECTION: usize = 5;

/// Sends one partition's record batch on `conn`, in a request shared with whatever other
/// batches are ready, and returns the broker's answer for that partition.
pub(crate) async fn produce(
    conn: &Arc<Connection>,
    topic: &str,
    partition: i32,
    batch: Arc<[u8]>,
) -> Result<ProduceAnswer, WireError> {
    let (reply, answer) = oneshot::channel();
    conn.produce_queue().lock().push(Waiting {
        topic: topic.to_owned(),
        partition,
        bytes: batch.len(),
        item: Pending { batch, reply },
    });
    dispatch(conn);
    match answer.await {
        Ok(answer) => answer,
        // Only when the runtime dropped the request's task.
        Err(_) => Err(conn.transport_error("the produce request was abandoned")),
    }
}

/// Starts every request the policy allows now.
fn dispatch(conn: &Arc<Connection>) {
    loop {
        let request = {
            let mut queue = conn.produce_queue().lock();
            queue.retain(|p| !p.reply.is_closed());
            queue.next_request()
        };
        match request {
            Some(request) => {
                tokio::spawn(send(Arc::clone(conn), request));
            }
            None => return,
        }
    }
}

/// Frees the in-flight slot however the request ends.
struct Slot<'a>(&'a ProduceQueue);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.lock().answered();
    }
}

async fn send(conn: Arc<Connection>, request: Vec<Waiting<Pending>>) {
    let slot = Slot(conn.produce_queue());
    let answers = if conn.is_broken() {
        // An earlier request on it failed: the stream may be out of step.
        Err(conn.transport_error("the connection failed before this request was sent"))
    } else {
        let batches: Vec<PartitionBatch<'_>> = request
            .iter()
            .map(|w| PartitionBatch {
                topic: &w.topic,
                partition: w.partition,
                batch: &w.item.batch,
            })
            .collect();
        slot.0.counters.sent(batches.len());
        debug!(
            broker = conn.addr(),
            partitions = batches.len(),
            "produce request"
        );
        conn.produce(&batches).await
    };
    match answers {
        Ok(answers) => {
            for (waiting, answer) in request.into_iter().zip(answers) {
                let _ = waiting.item.reply.send(answer);
            }
        }
        Err(e) => {
            for waiting in request {
                let _ = waiting.item.reply.send(Err(e.duplicate()));
            }
        }
    }
    drop(slot);
    dispatch(&conn);
}
