//! InitProducerId (API key 22), written by hand: rskafka has no type for it.
//!
//! Versions 0–1 are classic; 2 and later use the flexible encoding (compact strings,
//! tagged fields); 3 and later carry the current producer id and epoch (-1 and -1 for a
//! new producer); 5 only adds an error code. Tansu answers versions 0–2 with
//! UNKNOWN_SERVER_ERROR for non-transactional producers, Apache Kafka accepts all of
//! them, so the messenger's negotiation (the highest version both sides know) is what
//! makes this work on both.

use std::io::{Read, Write};

use rskafka::protocol::api_key::ApiKey;
use rskafka::protocol::api_version::{ApiVersion, ApiVersionRange};
use rskafka::protocol::messages::{
    ReadVersionedError, ReadVersionedType, RequestBody, WriteVersionedError, WriteVersionedType,
};
use rskafka::protocol::primitives::{
    CompactNullableString, Int16, Int32, Int64, NullableString, TaggedFields,
};
use rskafka::protocol::traits::{ReadType, WriteType};

/// A request for a new, non-transactional producer id.
#[derive(Debug)]
pub(crate) struct InitProducerIdRequest;

/// The broker's answer.
#[derive(Debug)]
pub(crate) struct InitProducerIdResponse {
    pub error_code: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl RequestBody for InitProducerIdRequest {
    type ResponseBody = InitProducerIdResponse;
    const API_KEY: ApiKey = ApiKey::InitProducerId;
    const API_VERSION_RANGE: ApiVersionRange =
        ApiVersionRange::new(ApiVersion(Int16(0)), ApiVersion(Int16(5)));
    const FIRST_TAGGED_FIELD_IN_REQUEST_VERSION: ApiVersion = ApiVersion(Int16(2));
}

impl<W: Write> WriteVersionedType<W> for InitProducerIdRequest {
    fn write_versioned(
        &self,
        writer: &mut W,
        version: ApiVersion,
    ) -> Result<(), WriteVersionedError> {
        let v = version.0.0;
        // No transactional id: an idempotent, non-transactional producer.
        if v >= 2 {
            CompactNullableString(None).write(writer)?;
        } else {
            NullableString(None).write(writer)?;
        }
        // The transaction timeout means nothing without transactions; the Java client
        // sends i32::MAX here too.
        Int32(i32::MAX).write(writer)?;
        if v >= 3 {
            Int64(-1).write(writer)?; // producer id: none yet
            Int16(-1).write(writer)?; // producer epoch: none yet
        }
        if v >= 2 {
            TaggedFields::default().write(writer)?;
        }
        Ok(())
    }
}

impl<R: Read> ReadVersionedType<R> for InitProducerIdResponse {
    fn read_versioned(reader: &mut R, version: ApiVersion) -> Result<Self, ReadVersionedError> {
        // Throttling is not acted on: one InitProducerId per producer lifetime.
        let _throttle_time_ms = Int32::read(reader)?;
        let response = InitProducerIdResponse {
            error_code: Int16::read(reader)?.0,
            producer_id: Int64::read(reader)?.0,
            producer_epoch: Int16::read(reader)?.0,
        };
        if version.0.0 >= 2 {
            TaggedFields::read(reader)?;
        }
        Ok(response)
    }
}

#[cfg(test)]
#[path = "init_producer_id_tests.rs"]
mod tests;
