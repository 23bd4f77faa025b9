//! What can go wrong, and how each failure is classified for the relay.

use std::time::Duration;

use outbox_core::validate::TopicNameError;
use outbox_core::{HeaderDecodeError, PublishError};
use uuid::Uuid;

/// Why a record or a produce request failed.
///
/// Carried as the `source` of the [`PublishError`] the relay receives; whether it is
/// permanent (an operator has to act) or retryable is [`KafkaPublishError::is_permanent`].
/// The relay retries both with backoff: rows are never dropped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KafkaPublishError {
    /// The record alone does not fit the configured maximum request size. Checked
    /// before anything is sent.
    #[error(
        "record of {size} bytes (encoded, with the batch and request framing) exceeds max_request_size {max}"
    )]
    RecordTooLarge {
        /// Upper bound of the request that would carry the record alone.
        size: usize,
        /// The configured maximum request size.
        max: usize,
    },
    /// The row's topic is not a valid Kafka topic name.
    #[error("topic {topic:?} is invalid: {reason}")]
    InvalidTopic {
        /// The topic.
        topic: String,
        /// Why it is invalid.
        reason: TopicNameError,
    },
    /// The row's stored headers cannot be decoded.
    #[error("the row's headers cannot be decoded: {0}")]
    InvalidHeaders(#[from] HeaderDecodeError),
    /// The row pins a partition the topic does not have.
    #[error("topic {topic} has {partitions} partitions; the row pins partition {partition}")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The pinned partition.
        partition: i32,
        /// How many partitions the topic has.
        partitions: u32,
    },
    /// The broker answered with an error code.
    #[error("broker error {name} for {topic}/{partition}")]
    Broker {
        /// The Kafka error code.
        code: i16,
        /// The code's name.
        name: String,
        /// The topic.
        topic: String,
        /// The partition (-1 when the error is about the whole topic).
        partition: i32,
        /// Whether the code means the record or the setup is at fault.
        permanent: bool,
    },
    /// The topic does not exist (after a fresh metadata request, so the broker does not
    /// create it on demand) or this client may not write it. Not the row's fault and not
    /// permanent in the sense of parking: the rows of the topic wait, with the relay's
    /// growing backoff, until an operator creates the topic or grants the ACL; then they
    /// flow with no further action. Counted in [`TOPIC_UNAVAILABLE_METRIC`](crate::TOPIC_UNAVAILABLE_METRIC).
    #[error("{}", describe_unavailable(topic, *reason))]
    TopicUnavailable {
        /// The topic.
        topic: String,
        /// Why it cannot be written.
        reason: TopicUnavailableReason,
    },
    /// The broker refused a record batch of several records as too large for the topic
    /// (its `max.message.bytes`, or the broker's `message.max.bytes`, is below the
    /// batch). Not any one row's fault: the publisher caps the topic's batches at half
    /// that size and the rows are retried in smaller batches. Retryable.
    #[error(
        "the broker refused a batch of {records} records for {topic}/{partition} as too large ({name}); sending smaller batches"
    )]
    BatchTooLarge {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// Records in the refused batch.
        records: i32,
        /// The error code's name (MESSAGE_TOO_LARGE or RECORD_LIST_TOO_LARGE).
        name: String,
    },
    /// The broker reported a broken producer sequence (out of order, unknown producer
    /// id, fenced epoch, or a duplicate where none was possible). The publisher asks
    /// for a new producer id before the next batch; the rows were not acknowledged.
    #[error(
        "producer sequence rejected for {topic}/{partition}: {name}; re-initialising the producer id"
    )]
    Sequence {
        /// The Kafka error code.
        code: i16,
        /// The code's name.
        name: String,
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// InitProducerId failed.
    #[error("cannot obtain a producer id: {0}")]
    ProducerId(String),
    /// Connecting, authenticating or talking to a broker failed.
    #[error("broker connection: {message}")]
    Connection {
        /// What failed.
        message: String,
        /// Whether retrying cannot help without an operator (authentication refused,
        /// no common protocol version).
        permanent: bool,
    },
    /// A batch could not be confirmed within the delivery timeout.
    #[error(
        "no acknowledgement for {topic}/{partition} within the delivery timeout ({timeout:?}); last problem: {last}"
    )]
    DeliveryTimeout {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The configured delivery timeout.
        timeout: Duration,
        /// The last failure seen.
        last: String,
    },
    /// Encoding or compressing a record batch failed.
    #[error("encoding the record batch failed: {0}")]
    Encode(String),
}

/// Why a topic cannot be written; see [`KafkaPublishError::TopicUnavailable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopicUnavailableReason {
    /// UNKNOWN_TOPIC_OR_PARTITION after a fresh metadata request: the topic does not
    /// exist and the broker does not create topics on demand (or it was deleted).
    Missing,
    /// TOPIC_AUTHORIZATION_FAILED: this client's principal has no WRITE (or DESCRIBE)
    /// ACL on the topic.
    NotAuthorized,
}

impl TopicUnavailableReason {
    /// The metric label: `missing` or `not_authorized`.
    pub fn label(self) -> &'static str {
        match self {
            TopicUnavailableReason::Missing => "missing",
            TopicUnavailableReason::NotAuthorized => "not_authorized",
        }
    }
}

fn describe_unavailable(topic: &str, reason: TopicUnavailableReason) -> String {
    match reason {
        TopicUnavailableReason::Missing => format!(
            "topic {topic} does not exist and the broker does not create it \
             (UNKNOWN_TOPIC_OR_PARTITION); its rows wait until it is created"
        ),
        TopicUnavailableReason::NotAuthorized => format!(
            "this client may not write topic {topic} (TOPIC_AUTHORIZATION_FAILED); its rows \
             wait until an ACL allows WRITE on it"
        ),
    }
}

impl KafkaPublishError {
    /// A broker error code about `topic`/`partition`: [`TopicUnavailable`](Self::TopicUnavailable)
    /// for TOPIC_AUTHORIZATION_FAILED, otherwise [`Broker`](Self::Broker).
    pub(crate) fn from_code(topic: &str, partition: i32, code: i16, permanent: bool) -> Self {
        if code == code::TOPIC_AUTHORIZATION_FAILED {
            return KafkaPublishError::TopicUnavailable {
                topic: topic.to_owned(),
                reason: TopicUnavailableReason::NotAuthorized,
            };
        }
        KafkaPublishError::Broker {
            code,
            name: crate::wire::error_name(code),
            topic: topic.to_owned(),
            partition,
            permanent,
        }
    }

    /// The topic and reason when the topic cannot be written at all.
    pub fn topic_unavailable(&self) -> Option<(&str, TopicUnavailableReason)> {
        match self {
            KafkaPublishError::TopicUnavailable { topic, reason } => Some((topic, *reason)),
            _ => None,
        }
    }

    /// Whether the failure is about the record or the setup, so that retrying alone
    /// cannot fix it.
    pub fn is_permanent(&self) -> bool {
        match self {
            KafkaPublishError::RecordTooLarge { .. }
            | KafkaPublishError::InvalidTopic { .. }
            | KafkaPublishError::InvalidHeaders(_)
            | KafkaPublishError::UnknownPartition { .. }
            | KafkaPublishError::TopicUnavailable { .. }
            | KafkaPublishError::Encode(_) => true,
            KafkaPublishError::Broker { permanent, .. }
            | KafkaPublishError::Connection { permanent, .. } => *permanent,
            KafkaPublishError::Sequence { .. }
            | KafkaPublishError::BatchTooLarge { .. }
            | KafkaPublishError::ProducerId(_)
            | KafkaPublishError::DeliveryTimeout { .. } => false,
        }
    }

    /// Whether a permanent failure is the row's own fault (so the relay parks the row
    /// after `max_publish_attempts`), rather than the setup's (authentication, cluster
    /// authorization, protocol versions, a missing or unauthorized topic), which the relay
    /// waits out without parking anything. See
    /// `docs/publish-errors.md` for the table.
    pub fn blames_row(&self) -> bool {
        match self {
            KafkaPublishError::RecordTooLarge { .. }
            | KafkaPublishError::InvalidTopic { .. }
            | KafkaPublishError::InvalidHeaders(_)
            | KafkaPublishError::UnknownPartition { .. }
            | KafkaPublishError::Encode(_) => true,
            KafkaPublishError::Broker {
                code, permanent, ..
            } => *permanent && !is_setup_code(*code),
            KafkaPublishError::Connection { .. }
            | KafkaPublishError::TopicUnavailable { .. }
            | KafkaPublishError::BatchTooLarge { .. }
            | KafkaPublishError::Sequence { .. }
            | KafkaPublishError::ProducerId(_)
            | KafkaPublishError::DeliveryTimeout { .. } => false,
        }
    }

    /// Converts to the relay's error for the row `message_id` it happened on: permanent
    /// and blaming the row, a setup problem, or retryable.
    pub(crate) fn into_publish_error(self, message_id: Uuid) -> PublishError {
        let mut error = if !self.is_permanent() {
            PublishError::retryable(self)
        } else if self.blames_row() {
            PublishError::permanent(Some(message_id), self)
        } else {
            PublishError::setup(self)
        };
        // Named for the logs; only a `Permanent` error makes the relay count it.
        error.message_id = Some(message_id);
        error
    }
}

/// What a produce answer's error code means for the batch that was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Appended.
    Appended,
    /// DUPLICATE_SEQUENCE_NUMBER: appended by an earlier attempt of this batch.
    Duplicate,
    /// Definitely not appended; resending the same batch may succeed.
    Rejected {
        /// Whether partition leadership or the topic may have changed.
        refresh_metadata: bool,
    },
    /// Maybe appended (timeout, appended on the leader only, unknown server error):
    /// only resending the same batch with the same sequence is safe.
    Unknown {
        /// Whether partition leadership may have changed.
        refresh_metadata: bool,
    },
    /// The producer's sequence state is broken: re-initialise the producer id.
    Sequence,
    /// The record or the setup is at fault; not appended.
    Permanent,
}

/// Kafka error codes this crate acts on (from the protocol guide).
pub(crate) mod code {
    pub const NONE: i16 = 0;
    pub const UNKNOWN_SERVER_ERROR: i16 = -1;
    pub const CORRUPT_MESSAGE: i16 = 2;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub const LEADER_NOT_AVAILABLE: i16 = 5;
    pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    pub const REQUEST_TIMED_OUT: i16 = 7;
    pub const BROKER_NOT_AVAILABLE: i16 = 8;
    pub const REPLICA_NOT_AVAILABLE: i16 = 9;
    pub const MESSAGE_TOO_LARGE: i16 = 10;
    pub const NETWORK_EXCEPTION: i16 = 13;
    pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const NOT_COORDINATOR: i16 = 16;
    pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
    pub const RECORD_LIST_TOO_LARGE: i16 = 18;
    pub const NOT_ENOUGH_REPLICAS: i16 = 19;
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
    pub const INVALID_REQUIRED_ACKS: i16 = 21;
    pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
    pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
    pub const INVALID_TIMESTAMP: i16 = 32;
    pub const UNSUPPORTED_VERSION: i16 = 35;
    pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = 43;
    pub const POLICY_VIOLATION: i16 = 44;
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
    pub const DUPLICATE_SEQUENCE_NUMBER: i16 = 46;
    pub const INVALID_PRODUCER_EPOCH: i16 = 47;
    pub const CONCURRENT_TRANSACTIONS: i16 = 51;
    pub const KAFKA_STORAGE_ERROR: i16 = 56;
    pub const UNKNOWN_PRODUCER_ID: i16 = 59;
    pub const FENCED_LEADER_EPOCH: i16 = 74;
    pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
    pub const INVALID_RECORD: i16 = 87;
    pub const THROTTLING_QUOTA_EXCEEDED: i16 = 89;
    pub const PRODUCER_FENCED: i16 = 90;
}

/// Classifies a produce answer's error code.
pub(crate) fn classify_produce(error_code: i16) -> Verdict {
    use code::*;
    match error_code {
        NONE => Verdict::Appended,
        DUPLICATE_SEQUENCE_NUMBER => Verdict::Duplicate,
        UNKNOWN_TOPIC_OR_PARTITION
        | LEADER_NOT_AVAILABLE
        | NOT_LEADER_OR_FOLLOWER
        | BROKER_NOT_AVAILABLE
        | REPLICA_NOT_AVAILABLE
        | FENCED_LEADER_EPOCH
        | UNKNOWN_LEADER_EPOCH
        | KAFKA_STORAGE_ERROR => Verdict::Rejected {
            refresh_metadata: true,
        },
        NOT_ENOUGH_REPLICAS | THROTTLING_QUOTA_EXCEEDED => Verdict::Rejected {
            refresh_metadata: false,
        },
        NETWORK_EXCEPTION => Verdict::Unknown {
            refresh_metadata: true,
        },
        // The leader may have appended: only a resend of the same batch is safe.
        REQUEST_TIMED_OUT | NOT_ENOUGH_REPLICAS_AFTER_APPEND | UNKNOWN_SERVER_ERROR => {
            Verdict::Unknown {
                refresh_metadata: false,
            }
        }
        OUT_OF_ORDER_SEQUENCE_NUMBER
        | INVALID_PRODUCER_EPOCH
        | UNKNOWN_PRODUCER_ID
        | PRODUCER_FENCED => Verdict::Sequence,
        CORRUPT_MESSAGE
        | MESSAGE_TOO_LARGE
        | INVALID_TOPIC_EXCEPTION
        | RECORD_LIST_TOO_LARGE
        | INVALID_REQUIRED_ACKS
        | TOPIC_AUTHORIZATION_FAILED
        | CLUSTER_AUTHORIZATION_FAILED
        | INVALID_TIMESTAMP
        | UNSUPPORTED_VERSION
        | UNSUPPORTED_FOR_MESSAGE_FORMAT
        | POLICY_VIOLATION
        | INVALID_RECORD => Verdict::Permanent,
        // A code this client does not know: assume the worst, that it may have been
        // appended, so only the same batch is resent.
        _ => Verdict::Unknown {
            refresh_metadata: true,
        },
    }
}

/// MESSAGE_TOO_LARGE and RECORD_LIST_TOO_LARGE: the batch exceeds the topic's size limit.
pub(crate) fn is_size_code(error_code: i16) -> bool {
    matches!(
        error_code,
        code::MESSAGE_TOO_LARGE | code::RECORD_LIST_TOO_LARGE
    )
}

/// Codes that are permanent but not one record's fault: the cluster refuses this client
/// or this request shape, so every row would fail alike.
pub(crate) fn is_setup_code(error_code: i16) -> bool {
    use code::*;
    matches!(
        error_code,
        CLUSTER_AUTHORIZATION_FAILED
            | INVALID_REQUIRED_ACKS
            | UNSUPPORTED_VERSION
            | UNSUPPORTED_FOR_MESSAGE_FORMAT
    )
}

/// Whether an InitProducerId or metadata error code is worth retrying.
pub(crate) fn is_retryable_setup_code(error_code: i16) -> bool {
    use code::*;
    !matches!(
        error_code,
        CLUSTER_AUTHORIZATION_FAILED
            | TOPIC_AUTHORIZATION_FAILED
            | INVALID_TOPIC_EXCEPTION
            | UNSUPPORTED_VERSION
            | POLICY_VIOLATION
    )
}

/// Codes that say a coordinator or broker is busy, for InitProducerId.
pub(crate) fn is_busy_code(error_code: i16) -> bool {
    use code::*;
    matches!(
        error_code,
        COORDINATOR_LOAD_IN_PROGRESS
            | COORDINATOR_NOT_AVAILABLE
            | NOT_COORDINATOR
            | CONCURRENT_TRANSACTIONS
    )
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
