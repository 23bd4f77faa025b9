//! The outbox row as the relay sees it.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use uuid::Uuid;

use crate::headers::{HeaderDecodeError, Headers};
use crate::time::Timestamp;

/// One pending outbox record: already serialized, already bucketed.
///
/// Writers create it with [`OutboxMessage::builder`], which validates and serializes
/// once; stores hand it back from [`OutboxStore::next_batch`](crate::OutboxStore::next_batch)
/// and get the very same values back in
/// [`OutboxStore::delete_published`](crate::OutboxStore::delete_published).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// The store's sequence: submission order within a bucket. 0 until a relational
    /// store assigns it, and 0 forever in stores that order rows some other way.
    pub id: i64,
    /// Stable identity, stamped on the Kafka record as the message-id header so that
    /// consumers can drop duplicates. A time-ordered UUIDv7 unless the writer set one.
    pub message_id: Uuid,
    /// The ordering bucket, computed once at enqueue time.
    pub bucket: i32,
    /// Destination topic, validated at enqueue time.
    pub topic: String,
    /// Serialized key; `None` is a keyless record (an empty key is a real key).
    pub key: Option<Vec<u8>>,
    /// Serialized value; `None` is a tombstone.
    pub value: Option<Vec<u8>>,
    /// Headers in the versioned encoding of [`Headers::encode`]; `None` when there are none.
    pub headers: Option<Vec<u8>>,
    /// Explicit partition, bypassing the key partitioner.
    pub partition: Option<i32>,
    /// When the writer created the message (UTC).
    pub created_at: Timestamp,
    /// The store's own handle on the row, for stores whose identity is not `id`.
    pub store_ref: Option<StoreRef>,
}

impl OutboxMessage {
    /// Decodes the stored headers (empty when there are none).
    pub fn decoded_headers(&self) -> Result<Headers, HeaderDecodeError> {
        match &self.headers {
            Some(bytes) => Headers::decode(bytes),
            None => Ok(Headers::new()),
        }
    }
}

/// A store's native identifier for a row, carried through the relay untouched.
///
/// The relay only ever passes back the messages a store returned, so a store whose rows
/// are identified by something other than an `i64` sequence (a document id, a composite
/// key) puts that value here when reading a batch and downcasts it when deleting. This
/// keeps the store, publisher and relay free of a message type parameter: a generic
/// `OutboxStore<Message = M>` would thread `M` through every relay, publisher and
/// helper signature for the benefit of the few stores that need it.
#[derive(Clone)]
pub struct StoreRef(Arc<dyn Any + Send + Sync>);

impl StoreRef {
    /// Wraps a store's native row identifier.
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        StoreRef(Arc::new(value))
    }

    /// The identifier, if it is a `T`.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Debug for StoreRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StoreRef(..)")
    }
}

/// Two handles are equal when they share the same allocation: the relay hands back the
/// exact values a store produced, so identity is what matters.
impl PartialEq for StoreRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for StoreRef {}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
