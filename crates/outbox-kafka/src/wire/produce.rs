//! Produce (API key 0) carrying one pre-encoded record batch for one partition.
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
#[derive(Debug)]
pub(crate) struct ProduceBatchRequest<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub batch: &'a [u8],
    /// How long the broker may wait for the in-sync replicas.
    pub timeout_ms: i32,
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
        Int32(1).write(writer)?; // one topic
        let name = self.topic.as_bytes();
        Int16(i16::try_from(name.len()).map_err(WriteError::from)?).write(writer)?;
        writer.write_all(name).map_err(WriteError::from)?;
        Int32(1).write(writer)?; // one partition
        Int32(self.partition).write(writer)?;
        Int32(i32::try_from(self.batch.len()).map_err(WriteError::from)?).write(writer)?;
        writer.write_all(self.batch).map_err(WriteError::from)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let mut out = Vec::new();
        ProduceBatchRequest {
            topic: "t",
            partition: 2,
            batch: &[9, 9],
            timeout_ms: 1000,
        }
        .write_versioned(&mut out, ApiVersion(Int16(7)))
        .unwrap();
        let expected: Vec<u8> = [
            &[0xff, 0xff][..],      // null transactional id
            &[0xff, 0xff],          // acks -1
            &1000i32.to_be_bytes(), // timeout
            &1i32.to_be_bytes(),
            &[0, 1, b't'],
            &1i32.to_be_bytes(),
            &2i32.to_be_bytes(),
            &2i32.to_be_bytes(),
            &[9, 9],
        ]
        .concat();
        assert_eq!(out, expected);
    }
}
