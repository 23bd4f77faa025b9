//! Turning a relay batch into per-partition chunks, with every record-level check done
//! before anything is sent.
//!
//! Rows are taken in order. The first row that fails a check (invalid topic,
//! undecodable headers, unknown pinned partition, too large, topic metadata error)
//! ends the plan: no row after it is sent in this attempt, because none of them could
//! be part of the acknowledged prefix anyway. The rows before it are grouped by
//! partition, keeping row order, and cut into chunks that each fit one produce request;
//! each chunk becomes one atomic record batch.

use std::collections::HashMap;
use std::num::NonZeroU32;

use outbox_core::bucket::partition_for_key;
use outbox_core::validate::validate_topic;
use outbox_core::{Headers, OutboxMessage};
use rand::Rng;

use crate::batch_cap::BatchCaps;
use crate::error::KafkaPublishError;
use crate::record_batch::RecordRef;

/// The rows' decoded headers and message-id texts, which the records borrow.
#[derive(Debug)]
pub(crate) struct Decoded {
    headers: Vec<Headers>,
    ids: Vec<String>,
    /// The first row that failed to decode, and why.
    failure: Option<(usize, KafkaPublishError)>,
}

impl Decoded {
    /// Checks topics and decodes headers row by row, stopping at the first failure.
    pub(crate) fn new(batch: &[OutboxMessage]) -> Decoded {
        let mut decoded = Decoded {
            headers: Vec::with_capacity(batch.len()),
            ids: Vec::with_capacity(batch.len()),
            failure: None,
        };
        for (row, m) in batch.iter().enumerate() {
            if let Err(reason) = validate_topic(&m.topic) {
                decoded.failure = Some((
                    row,
                    KafkaPublishError::InvalidTopic {
                        topic: m.topic.clone(),
                        reason,
                    },
                ));
                break;
            }
            match m.decoded_headers() {
                Ok(headers) => decoded.headers.push(headers),
                Err(e) => {
                    decoded.failure = Some((row, e.into()));
                    break;
                }
            }
            decoded.ids.push(m.message_id.hyphenated().to_string());
        }
        decoded
    }

    /// How many leading rows decoded.
    pub(crate) fn rows(&self) -> usize {
        self.headers.len()
    }
}

/// One produce request's worth of one partition's rows, in row order.
#[derive(Debug)]
pub(crate) struct Chunk<'a> {
    /// Batch indexes of the rows.
    pub rows: Vec<usize>,
    /// The records, in the same order.
    pub records: Vec<RecordRef<'a>>,
    size: usize,
}

impl Chunk<'_> {
    /// The records' estimated encoded size (an upper bound), without request framing.
    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

/// All planned rows of one partition.
#[derive(Debug)]
pub(crate) struct Group<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub chunks: Vec<Chunk<'a>>,
}

/// What to send.
#[derive(Debug)]
pub(crate) struct Plan<'a> {
    /// Partitions in order of their first row.
    pub groups: Vec<Group<'a>>,
    /// Rows `0..planned` are in the groups; row `planned` failed a check (if any).
    pub planned: usize,
    /// Why row `planned` cannot be sent.
    pub failure: Option<KafkaPublishError>,
}

/// Settings the plan needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits<'a> {
    pub max_request_size: usize,
    pub client_id_len: usize,
    pub message_id_header: &'a str,
    /// Per-topic batch caps learned from the broker (see [`BatchCaps`]).
    pub batch_caps: Option<&'a BatchCaps>,
}

/// Plans `batch`. `partitions` gives a topic's partition count or the metadata error
/// that stops the plan at the first row of that topic.
pub(crate) fn plan<'a>(
    batch: &'a [OutboxMessage],
    decoded: &'a mut Decoded,
    limits: Limits<'a>,
    mut partitions: impl FnMut(&str) -> Result<NonZeroU32, KafkaPublishError>,
) -> Plan<'a> {
    let decode_failure = decoded.failure.take();
    let decoded: &'a Decoded = decoded;
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut index: HashMap<(&'a str, i32), usize> = HashMap::new();
    let mut failure = None;
    let mut planned = 0;
    for (row, m) in batch.iter().enumerate().take(decoded.rows()) {
        let partition = match choose_partition(m, &mut partitions) {
            Ok(p) => p,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        let record = RecordRef {
            timestamp_ms: m.created_at.as_millis(),
            key: m.key.as_deref(),
            value: m.value.as_deref(),
            // A row written without this library may carry its own message-id header:
            // the stamped id replaces it, so a record never has two.
            headers: decoded.headers[row]
                .iter()
                .filter(|h| h.name != limits.message_id_header)
                .map(|h| (h.name.as_str(), h.value.as_deref()))
                .chain(std::iter::once((
                    limits.message_id_header,
                    Some(decoded.ids[row].as_bytes()),
                )))
                .collect(),
        };
        let fixed = outbox_core::wire_size::request_overhead(limits.client_id_len, m.topic.len());
        let size = record.max_encoded_len();
        if fixed + size > limits.max_request_size {
            failure = Some(KafkaPublishError::RecordTooLarge {
                size: fixed + size,
                max: limits.max_request_size,
            });
            break;
        }
        let slot = *index
            .entry((m.topic.as_str(), partition))
            .or_insert_with(|| {
                groups.push(Group {
                    topic: m.topic.as_str(),
                    partition,
                    chunks: Vec::new(),
                });
                groups.len() - 1
            });
        let chunks = &mut groups[slot].chunks;
        let cap = limits.batch_caps.and_then(|c| c.cap(&m.topic));
        match chunks.last_mut() {
            Some(chunk)
                if fixed + chunk.size + size <= limits.max_request_size
                    && cap.is_none_or(|cap| chunk.size + size <= cap) =>
            {
                chunk.rows.push(row);
                chunk.records.push(record);
                chunk.size += size;
            }
            _ => chunks.push(Chunk {
                rows: vec![row],
                records: vec![record],
                size,
            }),
        }
        planned = row + 1;
    }
    if failure.is_none()
        && let Some((row, e)) = decode_failure
    {
        debug_assert_eq!(row, planned);
        failure = Some(e);
    }
    Plan {
        groups,
        planned,
        failure,
    }
}

/// The explicit partition, else Kafka's murmur2 of the key (an empty key is a key),
/// else a random partition.
fn choose_partition(
    m: &OutboxMessage,
    partitions: &mut impl FnMut(&str) -> Result<NonZeroU32, KafkaPublishError>,
) -> Result<i32, KafkaPublishError> {
    let count = partitions(&m.topic)?;
    let chosen = match (m.partition, &m.key) {
        (Some(p), _) => {
            if u32::try_from(p).is_ok_and(|p| p < count.get()) {
                return Ok(p);
            }
            return Err(KafkaPublishError::UnknownPartition {
                topic: m.topic.clone(),
                partition: p,
                partitions: count.get(),
            });
        }
        (None, Some(key)) => partition_for_key(key, count),
        (None, None) => rand::rng().random_range(0..count.get()),
    };
    // Partition counts come from i32 metadata, so the index fits.
    Ok(i32::try_from(chosen).unwrap_or(i32::MAX))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
