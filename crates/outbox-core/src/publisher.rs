//! The contract between the relay and whatever delivers records.

use std::future::Future;

use crate::error::PublishError;
use crate::message::OutboxMessage;

/// What a publish call achieved.
#[derive(Debug, Default)]
pub struct PublishOutcome {
    /// How many rows, counted from the front of the batch, the broker durably
    /// acknowledged. Only these are deleted; everything after stays pending.
    pub acknowledged: usize,
    /// The first failure, if the whole batch was not acknowledged.
    pub error: Option<PublishError>,
}

impl PublishOutcome {
    /// Every one of `len` rows acknowledged.
    pub fn all(len: usize) -> Self {
        PublishOutcome {
            acknowledged: len,
            error: None,
        }
    }

    /// A prefix acknowledged, then a failure.
    pub fn partial(acknowledged: usize, error: PublishError) -> Self {
        PublishOutcome {
            acknowledged,
            error: Some(error),
        }
    }
}

/// Delivers a batch of one bucket's rows, in order.
///
/// The contract, which the relay's guarantees rest on:
/// - `acknowledged` counts a contiguous prefix that the broker has durably stored
///   (acks=all); claiming a row that is not stored loses it when the row is deleted.
/// - A publisher must state its own ordering promise. Returning a correct prefix is not
///   enough by itself: if a later record of a key becomes visible before an earlier one
///   fails, consumers see them out of order once the earlier one is retried.
/// - Dropping the returned future cancels the call; records already handed to the
///   broker may still appear, which message-id deduplication absorbs.
pub trait Publisher: Send + Sync + 'static {
    /// Publishes `batch`, stamping each record with the message-id header.
    fn publish(&self, batch: &[OutboxMessage]) -> impl Future<Output = PublishOutcome> + Send;
}
