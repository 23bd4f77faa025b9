//! Reads a topic back and checks it against what the writer committed.
//!
//! The properties, for the records the checker is given:
//! - **no loss**: every committed record's message id is on the topic;
//! - **message ids**: every record carries a message-id header naming a record the writer
//!   enqueued (committed, or with an unknown commit outcome);
//! - **order**: per key, the first deliveries of committed records appear in enqueue
//!   (sequence) order;
//! - **duplicates**: counted (deliveries beyond the first of one message id), so each
//!   scenario can assert that they happen only where its fault explains them.

use std::collections::{BTreeMap, HashMap, HashSet};

use uuid::Uuid;

use super::writer::WriterReport;

/// The header carrying the message id (the relay's default).
pub const MESSAGE_ID_HEADER: &str = "x-outbox-message-id";

/// One record read from the topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// Partition it was read from.
    pub partition: i32,
    /// Its offset there.
    pub offset: i64,
    /// The record key, as text.
    pub key: Option<String>,
    /// The record value, as text.
    pub value: Option<String>,
    /// The message id header, parsed; `None` when missing or not a UUID.
    pub message_id: Option<Uuid>,
}

/// Every record of `topic` on `brokers`, partition by partition (offset order), reading
/// each partition to the high watermark that Fetch reports.
pub async fn read_topic(brokers: &str, topic: &str) -> Vec<Published> {
    let client = crate::kafka::client(brokers).await;
    let partitions = client
        .list_topics()
        .await
        .unwrap_or_else(|e| panic!("listing topics: {e}"))
        .into_iter()
        .find(|t| t.name == topic)
        .map(|t| t.partitions)
        .unwrap_or_default();
    let mut out = Vec::new();
    for partition in partitions {
        for r in crate::kafka::read_partition(&client, topic, partition).await {
            let message_id = crate::kafka::header_text(&r, MESSAGE_ID_HEADER)
                .and_then(|t| Uuid::parse_str(&t).ok())
                .or_else(|| {
                    let raw = r.record.headers.get(MESSAGE_ID_HEADER)?;
                    Uuid::from_slice(raw).ok()
                });
            out.push(Published {
                partition,
                offset: r.offset,
                key: r
                    .record
                    .key
                    .as_deref()
                    .map(|k| String::from_utf8_lossy(k).into_owned()),
                value: r
                    .record
                    .value
                    .as_deref()
                    .map(|v| String::from_utf8_lossy(v).into_owned()),
                message_id,
            });
        }
    }
    out
}

/// What the checker found.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Records the writer committed.
    pub committed: usize,
    /// Distinct message ids on the topic(s).
    pub distinct_published: usize,
    /// Deliveries beyond the first of a message id.
    pub duplicates: usize,
    /// The message ids delivered more than once.
    pub duplicated_ids: HashSet<Uuid>,
    /// Committed records not on the topic: **lost**.
    pub missing: Vec<Uuid>,
    /// Records without a (parsable) message-id header.
    pub without_id: usize,
    /// Records whose message id the writer never committed nor attempted, or whose
    /// key/value do not match the writer's record with that id.
    pub foreign: usize,
    /// Keys whose first deliveries are out of enqueue order, with the offending
    /// sequence numbers in delivery order.
    pub out_of_order: BTreeMap<String, Vec<u64>>,
}

impl Verdict {
    /// Panics with a summary unless nothing was lost, every record carries a valid id of
    /// this writer, and per-key order of first deliveries holds.
    pub fn assert_sound(&self, context: &str) {
        assert!(
            self.missing.is_empty()
                && self.without_id == 0
                && self.foreign == 0
                && self.out_of_order.is_empty(),
            "{context}: {}",
            self.summary()
        );
    }

    /// One line with every count, plus the first few problems.
    pub fn summary(&self) -> String {
        format!(
            "committed {}, distinct published {}, duplicates {}, missing {} (first: {:?}), \
             without id {}, foreign {}, keys out of order {} (first: {:?})",
            self.committed,
            self.distinct_published,
            self.duplicates,
            self.missing.len(),
            self.missing.iter().take(5).collect::<Vec<_>>(),
            self.without_id,
            self.foreign,
            self.out_of_order.len(),
            self.out_of_order.iter().next()
        )
    }
}

/// Checks `views` (the topic read at different moments, e.g. before and after a broker
/// restart that lost everything) against `report`.
///
/// A committed record counts as published when it is in any view. Order is checked
/// within each view separately: a view's per-partition offset order is the order a
/// consumer sees.
pub fn check(report: &WriterReport, views: &[&[Published]]) -> Verdict {
    let mut expected: HashMap<Uuid, (&str, u64, bool)> = HashMap::new();
    for c in &report.committed {
        expected.insert(c.message_id, (&c.key, c.seq, true));
    }
    for c in &report.uncertain {
        expected.insert(c.message_id, (&c.key, c.seq, false));
    }
    let mut verdict = Verdict {
        committed: report.committed.len(),
        ..Verdict::default()
    };
    let mut seen: HashSet<Uuid> = HashSet::new();
    for view in views {
        let mut ordered: Vec<&Published> = view.iter().collect();
        ordered.sort_by_key(|p| (p.partition, p.offset));
        let mut first_in_view: HashSet<Uuid> = HashSet::new();
        let mut per_key: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for p in ordered {
            let Some(id) = p.message_id else {
                verdict.without_id += 1;
                continue;
            };
            let Some(&(key, seq, committed)) = expected.get(&id) else {
                verdict.foreign += 1;
                continue;
            };
            let value = format!("{key}:{seq}");
            if p.key.as_deref() != Some(key) || p.value.as_deref() != Some(value.as_str()) {
                verdict.foreign += 1;
                continue;
            }
            if !seen.insert(id) {
                verdict.duplicates += 1;
                verdict.duplicated_ids.insert(id);
            }
            if committed && first_in_view.insert(id) {
                per_key.entry(key).or_default().push(seq);
            }
        }
        for (key, seqs) in per_key {
            if seqs.windows(2).any(|w| w[0] >= w[1]) {
                verdict.out_of_order.insert(key.to_owned(), seqs);
            }
        }
    }
    verdict.distinct_published = seen.len();
    verdict.missing = report
        .committed
        .iter()
        .filter(|c| !seen.contains(&c.message_id))
        .map(|c| c.message_id)
        .collect();
    verdict
}

#[cfg(test)]
#[path = "checker_tests.rs"]
mod tests;
