//! Kafka record batches (message format v2), written by hand.
//!
//! rskafka's own `RecordBatch` cannot carry a null header value (its header value is a
//! `Vec<u8>`), while outbox rows may hold them and Kafka allows them. Encoding the batch
//! here keeps every key, value and header byte for byte, null included, and lets the
//! publisher size chunks exactly. The layout follows the Kafka protocol guide
//! ("Record Batch", "Record", "Record Header"); `wire` tests decode our output with
//! rskafka's reader as an independent check.

use crate::compression::Compression;

/// Bytes of a batch header before its records (one definition, in `outbox-core`).
pub(crate) use outbox_core::wire_size::BATCH_OVERHEAD;

/// One record, borrowed from an outbox row.
#[derive(Debug, Clone)]
pub(crate) struct RecordRef<'a> {
    /// CreateTime in milliseconds since the epoch.
    pub timestamp_ms: i64,
    /// Key bytes, `None` for a null key.
    pub key: Option<&'a [u8]>,
    /// Value bytes, `None` for a tombstone.
    pub value: Option<&'a [u8]>,
    /// Headers in order; a `None` value is written as a null value.
    pub headers: Vec<(&'a str, Option<&'a [u8]>)>,
}

impl RecordRef<'_> {
    /// An upper bound of this record's encoded size inside an uncompressed batch.
    pub(crate) fn max_encoded_len(&self) -> usize {
        outbox_core::wire_size::record_len(
            self.key.map_or(0, <[u8]>::len),
            self.value.map_or(0, <[u8]>::len),
            self.headers
                .iter()
                .map(|(name, value)| (name.len(), value.map_or(0, <[u8]>::len))),
        )
    }
}

/// Who produced a batch: the idempotence fields of its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProducerStamp {
    /// Producer id from InitProducerId.
    pub producer_id: i64,
    /// Producer epoch from InitProducerId.
    pub producer_epoch: i16,
    /// Sequence number of the first record.
    pub base_sequence: i32,
}

/// Why a batch could not be encoded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EncodeError {
    /// A length does not fit the format's 32-bit fields.
    #[error("record batch field too large for the Kafka format")]
    TooLarge,
    /// The compressor failed.
    #[error("compressing the record batch failed: {0}")]
    Compression(#[from] std::io::Error),
}

/// Encodes `records` as one record batch (base offset 0, CreateTime timestamps, not
/// transactional), stamped with `stamp` and compressed with `compression`.
pub(crate) fn encode_batch(
    records: &[RecordRef<'_>],
    stamp: ProducerStamp,
    compression: Compression,
) -> Result<Vec<u8>, EncodeError> {
    let first_timestamp = records.first().map_or(0, |r| r.timestamp_ms);
    let max_timestamp = records
        .iter()
        .map(|r| r.timestamp_ms)
        .max()
        .unwrap_or(first_timestamp);
    let mut plain = Vec::with_capacity(records.iter().map(RecordRef::max_encoded_len).sum());
    let mut body = Vec::new();
    for (offset_delta, record) in records.iter().enumerate() {
        let offset_delta = i32::try_from(offset_delta).map_err(|_| EncodeError::TooLarge)?;
        body.clear();
        encode_record(
            &mut body,
            record,
            record.timestamp_ms.wrapping_sub(first_timestamp),
            offset_delta,
        )?;
        put_varint(&mut plain, len_i32(body.len())?);
        plain.extend_from_slice(&body);
    }
    let payload = compression.compress(&plain)?;
    let count = len_i32(records.len())?;

    // Everything the CRC covers: from the attributes to the end.
    let mut checked = Vec::with_capacity(BATCH_OVERHEAD + payload.len());
    checked.extend_from_slice(&compression.attribute().to_be_bytes());
    checked.extend_from_slice(&(count - 1).max(0).to_be_bytes()); // last offset delta
    checked.extend_from_slice(&first_timestamp.to_be_bytes());
    checked.extend_from_slice(&max_timestamp.to_be_bytes());
    checked.extend_from_slice(&stamp.producer_id.to_be_bytes());
    checked.extend_from_slice(&stamp.producer_epoch.to_be_bytes());
    checked.extend_from_slice(&stamp.base_sequence.to_be_bytes());
    checked.extend_from_slice(&count.to_be_bytes());
    checked.extend_from_slice(&payload);

    let mut batch = Vec::with_capacity(checked.len() + 21);
    batch.extend_from_slice(&0i64.to_be_bytes()); // base offset: the broker assigns it
    // Batch length: everything after this field (leader epoch, magic, crc, checked part).
    batch.extend_from_slice(&len_i32(checked.len() + 9)?.to_be_bytes());
    batch.extend_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch: unknown
    batch.push(2); // magic: format v2
    batch.extend_from_slice(&crc32c::crc32c(&checked).to_be_bytes());
    batch.extend_from_slice(&checked);
    Ok(batch)
}

fn encode_record(
    out: &mut Vec<u8>,
    record: &RecordRef<'_>,
    timestamp_delta: i64,
    offset_delta: i32,
) -> Result<(), EncodeError> {
    out.push(0); // record attributes: unused
    put_varlong(out, timestamp_delta);
    put_varint(out, offset_delta);
    put_nullable_bytes(out, record.key)?;
    put_nullable_bytes(out, record.value)?;
    put_varint(out, len_i32(record.headers.len())?);
    for (name, value) in &record.headers {
        put_nullable_bytes(out, Some(name.as_bytes()))?;
        put_nullable_bytes(out, *value)?;
    }
    Ok(())
}

fn len_i32(len: usize) -> Result<i32, EncodeError> {
    i32::try_from(len).map_err(|_| EncodeError::TooLarge)
}

fn put_nullable_bytes(out: &mut Vec<u8>, bytes: Option<&[u8]>) -> Result<(), EncodeError> {
    match bytes {
        None => put_varint(out, -1),
        Some(bytes) => {
            put_varint(out, len_i32(bytes.len())?);
            out.extend_from_slice(bytes);
        }
    }
    Ok(())
}

/// Zig-zag encoded, then LEB128: Kafka's `varint`.
fn put_varint(out: &mut Vec<u8>, value: i32) {
    put_uleb(out, u64::from(((value << 1) ^ (value >> 31)) as u32));
}

/// Zig-zag encoded, then LEB128: Kafka's `varlong`.
fn put_varlong(out: &mut Vec<u8>, value: i64) {
    put_uleb(out, ((value << 1) ^ (value >> 63)) as u64);
}

fn put_uleb(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
#[path = "record_batch_tests.rs"]
mod tests;
