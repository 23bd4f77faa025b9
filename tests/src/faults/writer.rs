//! A writer enqueuing keyed records continuously, the way an application would.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use outbox_core::{OutboxMessage, OutboxSchema};
use outbox_seaorm::Outbox;
use sea_orm::DatabaseConnection;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::env::FaultEnv;

/// One record the writer enqueued: key `k<n>`, its per-key sequence number, and the
/// message id it set. The value on the topic is `"<key>:<seq>"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Committed {
    /// The record key.
    pub key: String,
    /// Position of the record among its key's records (0, 1, 2, ...), in commit order.
    pub seq: u64,
    /// The message id the writer set, expected in the record's message-id header.
    pub message_id: Uuid,
}

/// What the writer did.
#[derive(Debug, Clone, Default)]
pub struct WriterReport {
    /// Records whose transaction committed: each must be published.
    pub committed: Vec<Committed>,
    /// Records whose commit failed with an unknown outcome (they may or may not exist):
    /// allowed on the topic, not required.
    pub uncertain: Vec<Committed>,
    /// Transactions that failed before commit (rolled back: their records must not
    /// appear).
    pub failed_transactions: usize,
}

#[derive(Default)]
struct State {
    report: WriterReport,
    next_seq: Vec<u64>,
}

/// A running writer: one transaction of `per_txn` records every `interval`, keys chosen
/// round robin among `keys` keys. Stop it with [`Writer::stop`].
#[derive(Debug)]
pub struct Writer {
    stop: Arc<AtomicBool>,
    state: Arc<Mutex<WriterReportCell>>,
    task: JoinHandle<()>,
}

/// The shared state, behind a newtype so `Writer` can derive `Debug`.
struct WriterReportCell(State);

impl std::fmt::Debug for WriterReportCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterState")
            .field("committed", &self.0.report.committed.len())
            .finish_non_exhaustive()
    }
}

impl Writer {
    /// Starts writing to `env`'s table and topic with `bucket_count` buckets.
    pub fn start(
        env: &FaultEnv,
        bucket_count: u32,
        keys: usize,
        per_txn: usize,
        interval: Duration,
    ) -> Writer {
        let schema = OutboxSchema::builder()
            .tables(env.tables.clone())
            .bucket_count(bucket_count)
            .build()
            .unwrap_or_else(|e| panic!("outbox schema: {e}"));
        let outbox = Outbox::new(schema);
        let stop = Arc::new(AtomicBool::new(false));
        let state = Arc::new(Mutex::new(WriterReportCell(State {
            report: WriterReport::default(),
            next_seq: vec![0; keys],
        })));
        let task = tokio::spawn(write_loop(
            env.db.clone(),
            outbox,
            env.topic.clone(),
            Arc::clone(&stop),
            Arc::clone(&state),
            keys,
            per_txn,
            interval,
        ));
        Writer { stop, state, task }
    }

    /// Records committed so far.
    pub fn committed_count(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .report
            .committed
            .len()
    }

    /// Stops after the transaction in progress and returns the report.
    ///
    /// # Panics
    /// When the writer does not stop within 10 s.
    pub async fn stop(self) -> WriterReport {
        self.stop.store(true, Ordering::SeqCst);
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .unwrap_or_else(|_| panic!("the writer did not stop within 10 s"))
            .unwrap_or_else(|e| panic!("the writer task failed: {e}"));
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0.report.clone()
    }
}

#[allow(clippy::too_many_arguments)]
async fn write_loop(
    db: DatabaseConnection,
    outbox: Outbox,
    topic: String,
    stop: Arc<AtomicBool>,
    state: Arc<Mutex<WriterReportCell>>,
    keys: usize,
    per_txn: usize,
    interval: Duration,
) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_key = 0usize;
    while !stop.load(Ordering::SeqCst) {
        tick.tick().await;
        // Reserve sequence numbers up front: a failed transaction leaves a gap, which
        // the order check tolerates (it compares committed records only).
        let batch: Vec<Committed> = {
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            (0..per_txn)
                .map(|_| {
                    let k = next_key % keys;
                    next_key += 1;
                    let seq = s.0.next_seq[k];
                    s.0.next_seq[k] += 1;
                    Committed {
                        key: format!("k{k}"),
                        seq,
                        message_id: Uuid::new_v4(),
                    }
                })
                .collect()
        };
        let Ok(txn) = outbox.begin(&db).await else {
            state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .0
                .report
                .failed_transactions += 1;
            continue;
        };
        let messages = batch.iter().map(|c| {
            OutboxMessage::builder(topic.clone())
                .key(c.key.clone())
                .value(format!("{}:{}", c.key, c.seq))
                .message_id(c.message_id)
        });
        if txn.enqueue_all(messages).await.is_err() {
            let _ = txn.rollback().await;
            state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .0
                .report
                .failed_transactions += 1;
            continue;
        }
        // Only a successful commit makes a record "committed".
        let committed = txn.commit().await.is_ok();
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        if committed {
            s.0.report.committed.extend(batch);
        } else {
            s.0.report.uncertain.extend(batch);
        }
    }
}
