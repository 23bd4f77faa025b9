//! Turning a record into an outbox row: validate and serialize once, at enqueue time.

use uuid::Uuid;

use crate::bucket::bucket_for;
use crate::enqueue_config::EnqueueConfig;
use crate::headers::{HeaderEncodeError, Headers};
use crate::message::OutboxMessage;
use crate::time::Timestamp;
use crate::validate::{TopicNameError, validate_topic};
use crate::wire_size;

/// Length of a UUID in its canonical text form, which is how the message id travels in
/// its header.
const UUID_TEXT_LEN: usize = 36;

/// Why a message was refused at enqueue time. Each variant names the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// The topic breaks Kafka's naming rules.
    #[error("topic {topic:?} {reason}")]
    InvalidTopic {
        /// The topic as given.
        topic: String,
        /// The broken rule.
        reason: TopicNameError,
    },
    /// Partitions are numbered from zero.
    #[error("partition must be >= 0, got {0}")]
    NegativePartition(i32),
    /// A header name given as bytes is not UTF-8.
    #[error("header #{index} name is not valid UTF-8")]
    HeaderNameNotUtf8 {
        /// Position of the header among the message's headers.
        index: usize,
    },
    /// The writer used the header the relay stamps with the message id; consumers would
    /// see two and could deduplicate on the wrong one.
    #[error("header {0:?} is reserved for the outbox message id")]
    ReservedHeader(String),
    /// Larger than the configured maximum record size.
    #[error(
        "record is {size} bytes on the wire, larger than the maximum of {max} bytes (the schema's max_request_size unless the writer set a lower max_record_size); a publisher would refuse it forever"
    )]
    RecordTooLarge {
        /// The record's size as [`MessageBuilder::record_size`] measures it.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The headers exceed what the stored encoding can represent.
    #[error("headers cannot be encoded: {0}")]
    Headers(#[from] HeaderEncodeError),
    /// The key or value could not be serialized.
    #[error("{field} could not be serialized: {reason}")]
    Serialization {
        /// `key` or `value`.
        field: &'static str,
        /// The serializer's message.
        reason: String,
    },
}

/// Bytes for a key or value. Serialization is the caller's business: the outbox stores
/// and forwards bytes untouched. Implemented for the common owned and borrowed forms.
pub trait IntoPayload {
    /// The serialized bytes.
    fn into_payload(self) -> Vec<u8>;
}

impl IntoPayload for Vec<u8> {
    fn into_payload(self) -> Vec<u8> {
        self
    }
}
impl IntoPayload for &[u8] {
    fn into_payload(self) -> Vec<u8> {
        self.to_vec()
    }
}
impl<const N: usize> IntoPayload for &[u8; N] {
    fn into_payload(self) -> Vec<u8> {
        self.to_vec()
    }
}
impl IntoPayload for &Vec<u8> {
    fn into_payload(self) -> Vec<u8> {
        self.clone()
    }
}
impl IntoPayload for String {
    fn into_payload(self) -> Vec<u8> {
        self.into_bytes()
    }
}
impl IntoPayload for &String {
    fn into_payload(self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
}
impl IntoPayload for &str {
    fn into_payload(self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
}

/// Collects a record's parts; [`build`](Self::build) validates everything and produces
/// the row. Errors from setters (such as a JSON value that fails to serialize) are kept
/// and reported by `build`, so a chain never panics.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct MessageBuilder {
    topic: String,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Headers,
    partition: Option<i32>,
    message_id: Option<Uuid>,
    created_at: Option<Timestamp>,
    error: Option<MessageError>,
}

impl OutboxMessage {
    /// Starts building a message for `topic`. (Defined here, beside the builder, so that
    /// `message` does not depend on `builder`.)
    pub fn builder(topic: impl Into<String>) -> MessageBuilder {
        MessageBuilder::new(topic)
    }
}

impl MessageBuilder {
    pub(crate) fn new(topic: impl Into<String>) -> Self {
        MessageBuilder {
            topic: topic.into(),
            key: None,
            value: None,
            headers: Headers::new(),
            partition: None,
            message_id: None,
            created_at: None,
            error: None,
        }
    }

    /// The record key. Equal keys share a bucket and so keep their order. An empty key
    /// is a real key; leave the key unset for a keyless record.
    pub fn key(mut self, key: impl IntoPayload) -> Self {
        self.key = Some(key.into_payload());
        self
    }

    /// The record value. Leave unset for a tombstone.
    pub fn value(mut self, value: impl IntoPayload) -> Self {
        self.value = Some(value.into_payload());
        self
    }

    /// Serializes `value` as JSON into the record value.
    #[cfg(feature = "json")]
    pub fn json_value<T: serde::Serialize + ?Sized>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(bytes) => self.value = Some(bytes),
            Err(e) => self.keep_first_error(MessageError::Serialization {
                field: "value",
                reason: e.to_string(),
            }),
        }
        self
    }

    /// Serializes `key` as JSON into the record key.
    #[cfg(feature = "json")]
    pub fn json_key<T: serde::Serialize + ?Sized>(mut self, key: &T) -> Self {
        match serde_json::to_vec(key) {
            Ok(bytes) => self.key = Some(bytes),
            Err(e) => self.keep_first_error(MessageError::Serialization {
                field: "key",
                reason: e.to_string(),
            }),
        }
        self
    }

    /// Appends a header; order and duplicates are kept as given.
    pub fn header(mut self, name: impl Into<String>, value: impl IntoPayload) -> Self {
        self.headers.push(name, Some(value.into_payload()));
        self
    }

    /// Appends a header whose value is null.
    pub fn null_header(mut self, name: impl Into<String>) -> Self {
        self.headers.push(name, None);
        self
    }

    /// Appends a header whose name arrives as bytes (from another system); the name
    /// must be UTF-8.
    pub fn header_from_bytes(mut self, name: Vec<u8>, value: Option<Vec<u8>>) -> Self {
        match String::from_utf8(name) {
            Ok(name) => self.headers.push(name, value),
            Err(_) => {
                let index = self.headers.len();
                self.keep_first_error(MessageError::HeaderNameNotUtf8 { index });
            }
        }
        self
    }

    /// Sends to this partition instead of the key partitioner's choice. The bucket then
    /// follows the partition, so everything pinned to one partition keeps one order.
    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// Uses this message id instead of a fresh UUIDv7 (to re-enqueue a repaired record
    /// under its original identity, say).
    pub fn message_id(mut self, id: Uuid) -> Self {
        self.message_id = Some(id);
        self
    }

    /// Uses this creation time instead of the system clock.
    pub fn created_at(mut self, at: Timestamp) -> Self {
        self.created_at = Some(at);
        self
    }

    /// The size counted against [`EnqueueConfig::max_record_size`]: a produce request
    /// carrying this record alone, as the Kafka publisher sizes it (see
    /// [`wire_size`]): key, value, every header and the message-id header
    /// the relay adds, with the record, batch and request framing, the topic name and the
    /// longest client id a publisher accepts. (With the feature `otel`,
    /// [`build`](Self::build) adds the trace headers first and counts them; this method
    /// counts the headers set so far.)
    pub fn record_size(&self, config: &EnqueueConfig) -> usize {
        let headers = self
            .headers
            .iter()
            .map(|h| (h.name.len(), h.value.as_ref().map_or(0, Vec::len)))
            .chain(std::iter::once((
                config.message_id_header().len(),
                UUID_TEXT_LEN,
            )));
        let record = wire_size::record_len(
            self.key.as_ref().map_or(0, Vec::len),
            self.value.as_ref().map_or(0, Vec::len),
            headers,
        );
        wire_size::request_overhead(wire_size::MAX_CLIENT_ID_LEN, self.topic.len()) + record
    }

    /// Validates every field, computes the bucket and encodes the headers.
    ///
    /// With the feature `otel`, this is where every writer's message picks up the W3C
    /// trace context of the current `tracing` span (see
    /// `trace_context`), after the caller's headers were checked
    /// and before the size check, which therefore counts the trace headers too.
    pub fn build(
        #[cfg_attr(not(feature = "otel"), allow(unused_mut))] mut self,
        config: &EnqueueConfig,
    ) -> Result<OutboxMessage, MessageError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if let Err(reason) = validate_topic(&self.topic) {
            return Err(MessageError::InvalidTopic {
                topic: self.topic,
                reason,
            });
        }
        if let Some(p) = self.partition.filter(|p| *p < 0) {
            return Err(MessageError::NegativePartition(p));
        }
        if let Some(h) = self
            .headers
            .iter()
            .find(|h| h.name == config.message_id_header())
        {
            return Err(MessageError::ReservedHeader(h.name.clone()));
        }
        #[cfg(feature = "otel")]
        crate::trace_context::inject_current(&mut self.headers);
        let (size, max) = (self.record_size(config), config.max_record_size());
        if size > max {
            return Err(MessageError::RecordTooLarge { size, max });
        }
        let message_id = self.message_id.unwrap_or_else(Uuid::now_v7);
        let bucket = bucket_for(
            self.key.as_deref(),
            self.partition,
            &message_id,
            config.bucket_count(),
        );
        let headers = if self.headers.is_empty() {
            None
        } else {
            Some(self.headers.try_encode()?)
        };
        Ok(OutboxMessage {
            id: 0,
            message_id,
            bucket,
            topic: self.topic,
            key: self.key,
            value: self.value,
            headers,
            partition: self.partition,
            created_at: self.created_at.unwrap_or_else(Timestamp::now),
            store_ref: None,
        })
    }

    fn keep_first_error(&mut self, error: MessageError) {
        self.error.get_or_insert(error);
    }
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
