//! How many bytes a record takes on the wire, computed one way for the writer's
//! enqueue-time check and for the Kafka publisher's request sizing, so that what a
//! writer accepts a publisher built from the same [`OutboxSchema`](crate::OutboxSchema)
//! never refuses as too large.
//!
//! The size of a record is an upper bound of its encoding in an uncompressed record
//! batch (format v2, varint lengths counted at their widest). The size of a request that
//! carries one record alone adds the batch header, the produce request's fixed fields,
//! the topic name and the client id. A writer does not know the publisher's client id,
//! so it counts the longest one a publisher accepts ([`MAX_CLIENT_ID_LEN`] bytes): the
//! writer's check is at most that many bytes stricter than the publisher's.

/// Kafka's default `max.request.size`: 1 MiB.
pub const DEFAULT_MAX_REQUEST_SIZE: usize = 1024 * 1024;

/// The smallest accepted `max_request_size`: room for a request with a small record.
pub const MIN_MAX_REQUEST_SIZE: usize = 1024;

/// The longest client id, in bytes, a publisher accepts (and the writer's check assumes).
pub const MAX_CLIENT_ID_LEN: usize = 255;

/// Bytes of a produce request besides its record batches, topic names and client id:
/// size prefix, request header and the body's fixed fields for one topic and one
/// partition, rounded up.
pub const REQUEST_OVERHEAD: usize = 64;

/// Bytes of a record batch header (format v2) before its records.
pub const BATCH_OVERHEAD: usize = 61;

/// The most a record's framing adds to its key, value and header bytes: its length (5),
/// attributes (1), timestamp delta (10), offset delta (5), key and value lengths (5 each)
/// and header count (5).
pub const RECORD_FRAMING_MAX: usize = 36;

/// The most one header's framing adds: name and value lengths (5 each).
pub const HEADER_FRAMING_MAX: usize = 10;

/// Upper bound of one record's encoding inside an uncompressed batch, from the lengths of
/// its key, value and headers (`(name, value)` byte lengths).
pub fn record_len(
    key: usize,
    value: usize,
    headers: impl IntoIterator<Item = (usize, usize)>,
) -> usize {
    let headers: usize = headers
        .into_iter()
        .map(|(name, value)| HEADER_FRAMING_MAX + name + value)
        .sum();
    RECORD_FRAMING_MAX + key + value + headers
}

/// Bytes a produce request needs besides the records of its one batch: the fixed fields,
/// the client id and the topic name.
pub fn request_overhead(client_id_len: usize, topic_len: usize) -> usize {
    REQUEST_OVERHEAD + client_id_len + topic_len + BATCH_OVERHEAD
}

#[cfg(test)]
#[path = "wire_size_tests.rs"]
mod tests;
