//! Produce (API key 0) carrying pre-encoded record batches for one or more partitions
//! (at most one batch per partition; the coalescer guarantees that).
//!
//! rskafka's `ProduceRequest` takes its own `RecordBatch` type, which cannot carry null
//! header values; this request sends the bytes of [`crate::record_batch`] as they are
//! and reuses rskafka's response type. acks is always -1 (all in-sync replicas): there is
//! no field to set it to anything else.

use std::io::Write;

use rskafka::protocol::api_key::ApiKey;
use rskafka::protocol::api_version::{ApiVersion, ApiVersionRange};
use rskafka::protocol::messages::{
    ProduceResponse, RequestBody, WriteVersionedError, WriteVersionedType,
};
use rskafka::protocol::primitives::{Int16, Int32, NullableString};
use rskafka::protocol::traits::{WriteError, WriteType};

/// acks=all.
const ACKS_ALL: i16 = -1;

/// One record batch for one partition.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartitionBatch<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub batch: &'a [u8],
}

/// A produce request: record batches of several partitions, written grouped by topic
/// (topics in order of their first batch, partitions in the given order).
#[derive(Debug)]
pub(crate) struct ProduceBatchRequest<'a> {
    pub batches: &'a [PartitionBatch<'a>],
    /// How long the broker may wait for the in-sync replicas.
    pub timeout_ms: i32,
}

impl ProduceBatchRequest<'_> {
    /// The batches grouped by topic.
    fn by_topic(&self) -> Vec<(&str, Vec<&PartitionBatch<'_>>)> {
        let mut topics: Vec<(&str, Vec<&PartitionBatch<'_>>)> = Vec::new();
        for b in self.batches {
            match topics.iter_mut().find(|(t, _)| *t == b.topic) {
                Some((_, list)) => list.push(b),
                None => topics.push((b.topic, vec![b])),
            }
        }
        topics
    }
}

impl RequestBody for ProduceBatchRequest<'_> {
    type ResponseBody = ProduceResponse;
    const API_KEY: ApiKey = ApiKey::Produce;
    // v3 is the first with record batches (message format v2); rskafka's response reader
    // goes up to v7, the last version before the flexible encoding changes nothing we need.
    const API_VERSION_RANGE: ApiVersionRange =
        ApiVersionRange::new(ApiVersion(Int16(3)), ApiVersion(Int16(7)));
    const FIRST_TAGGED_FIELD_IN_REQUEST_VERSION: ApiVersion = ApiVersion(Int16(9));
}

impl<W: Write> WriteVersionedType<W> for ProduceBatchRequest<'_> {
    fn write_versioned(
        &self,
        writer: &mut W,
        _version: ApiVersion,
    ) -> Result<(), WriteVersionedError> {
        NullableString(None).write(writer)?; // transactional id: none
        Int16(ACKS_ALL).write(writer)?;
        Int32(self.timeout_ms).write(writer)?;
        let topics = self.by_topic();
        Int32(i32::try_from(topics.len()).map_err(WriteError::from)?).write(writer)?;
        for (topic, batches) in topics {
            let name = topic.as_bytes();
            Int16(i16::try_from(name.len()).map_err(WriteError::from)?).write(writer)?;
            writer.write_all(name).map_err(WriteError::from)?;
            Int32(i32::try_from(batches.len()).map_err(WriteError::from)?).write(writer)?;
            for b in batches {
                Int32(b.partition).write(writer)?;
                Int32(i32::try_from(b.batch.len()).map_err(WriteError::from)?).write(writer)?;
                writer.write_all(b.batch).map_err(WriteError::from)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "produce_tests.rs"]
mod tests;
