//! Which waiting partition batches go out together: every decision of the produce
//! coalescer, with no I/O. The shell ([`super`]) pushes batches as their partitions'
//! send machines ask for them and sends what [`Coalescer::next_request`] hands out.
//!
//! The rules:
//! - A request carries at most one batch per partition. Kafka rejects a request that
//!   names a partition twice, and a partition's second batch must wait for the answer
//!   to its first anyway.
//! - Within a partition, batches leave in the order they arrived: once a partition's
//!   first waiting batch is passed over (it is already in this request, or it does not
//!   fit), every later batch of that partition waits too.
//! - A request stays within `max_request_size` by the estimate of [`RequestLimit`]; a
//!   batch that does not fit waits for the next request. The oldest waiting batch always
//!   goes, so nothing waits forever: the plan already sized it to fit a request alone.
//! - No linger: a request is handed out as soon as something waits and fewer than
//!   `max_in_flight` requests are out. Batches that arrive while the limit is reached
//!   gather until an answer frees a slot.

use std::collections::{HashSet, VecDeque};

/// Bytes of a produce request besides its record batches and topic names (one
/// definition, in `outbox-core`, shared with the planner and the writers' size check).
pub(crate) use outbox_core::wire_size::REQUEST_OVERHEAD;

/// Bytes each further topic adds besides its name: the name's length and the
/// partition count.
const TOPIC_FIELDS: usize = 2 + 4;

/// Bytes each further partition adds besides its batch: index and batch length.
const PARTITION_FIELDS: usize = 4 + 4;

/// How large and how many requests may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestLimit {
    /// The configured `max_request_size`.
    pub max_request_size: usize,
    /// Length of the client id, which every request header carries.
    pub client_id_len: usize,
    /// At most this many partition batches in one request (`usize::MAX` in production;
    /// 1 reproduces one request per partition batch, for comparison in tests).
    pub max_batches: usize,
    /// Produce requests on one connection awaiting their answer at once.
    pub max_in_flight: usize,
}

/// One partition batch waiting for a request.
#[derive(Debug)]
pub(crate) struct Waiting<T> {
    pub topic: String,
    pub partition: i32,
    /// Encoded size of the record batch.
    pub bytes: usize,
    /// What the shell needs to send it and deliver the answer.
    pub item: T,
}

/// The estimated size of a request carrying `batches` (topic, batch bytes), in order.
/// For one batch it is what the planner allowed for; each further topic and partition
/// adds its fields. ([`gather`] keeps the same sum incrementally.)
#[cfg(test)]
pub(crate) fn request_size<'a>(
    client_id_len: usize,
    batches: impl IntoIterator<Item = (&'a str, usize)>,
) -> usize {
    let mut topics: HashSet<&str> = HashSet::new();
    let mut size = REQUEST_OVERHEAD + client_id_len;
    let mut first = true;
    for (topic, bytes) in batches {
        size += bytes;
        if topics.insert(topic) {
            size += topic.len();
            if !first {
                size += TOPIC_FIELDS;
            }
        }
        if !first {
            size += PARTITION_FIELDS;
        }
        first = false;
    }
    size
}

/// Picks the batches of the next request from `waiting` (in arrival order: topic,
/// partition, batch bytes) and returns their indexes, ascending. See the module docs for
/// the rules; empty only when `waiting` is.
pub(crate) fn gather(waiting: &[(&str, i32, usize)], limit: &RequestLimit) -> Vec<usize> {
    let mut chosen = Vec::new();
    // Partitions whose first waiting batch was taken or passed over: the rest of that
    // partition waits.
    let mut closed: HashSet<(&str, i32)> = HashSet::new();
    let mut topics: HashSet<&str> = HashSet::new();
    let mut size = REQUEST_OVERHEAD + limit.client_id_len;
    for (index, &(topic, partition, bytes)) in waiting.iter().enumerate() {
        if chosen.len() >= limit.max_batches.max(1) {
            break;
        }
        if !closed.insert((topic, partition)) {
            continue;
        }
        let mut added = bytes;
        let new_topic = !topics.contains(topic);
        if new_topic {
            added += topic.len();
        }
        if !chosen.is_empty() {
            added += PARTITION_FIELDS;
            if new_topic {
                added += TOPIC_FIELDS;
            }
        }
        if !chosen.is_empty() && size.saturating_add(added) > limit.max_request_size {
            continue;
        }
        size = size.saturating_add(added);
        topics.insert(topic);
        chosen.push(index);
    }
    chosen
}

/// The waiting batches and requests in flight of one connection.
#[derive(Debug)]
pub(crate) struct Coalescer<T> {
    limit: RequestLimit,
    waiting: VecDeque<Waiting<T>>,
    in_flight: usize,
}

impl<T> Coalescer<T> {
    /// An idle coalescer.
    pub(crate) fn new(limit: RequestLimit) -> Self {
        Coalescer {
            limit,
            waiting: VecDeque::new(),
            in_flight: 0,
        }
    }

    /// A batch is ready to go.
    pub(crate) fn push(&mut self, waiting: Waiting<T>) {
        self.waiting.push_back(waiting);
    }

    /// Forgets waiting batches nobody waits for any more (their publish call was
    /// cancelled): they are never sent.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.waiting.retain(|w| keep(&w.item));
    }

    /// The batches of the next request, in arrival order, if one may go now; the
    /// request then counts as in flight until [`Coalescer::answered`].
    pub(crate) fn next_request(&mut self) -> Option<Vec<Waiting<T>>> {
        if self.waiting.is_empty() || self.in_flight >= self.limit.max_in_flight.max(1) {
            return None;
        }
        let index: Vec<(&str, i32, usize)> = self
            .waiting
            .iter()
            .map(|w| (w.topic.as_str(), w.partition, w.bytes))
            .collect();
        let chosen = gather(&index, &self.limit);
        let mut request = Vec::with_capacity(chosen.len());
        // Remove from the back so earlier indexes stay valid, then restore the order.
        for &i in chosen.iter().rev() {
            if let Some(w) = self.waiting.remove(i) {
                request.push(w);
            }
        }
        request.reverse();
        self.in_flight += 1;
        Some(request)
    }

    /// A request handed out by [`Coalescer::next_request`] was answered or failed.
    pub(crate) fn answered(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Batches waiting.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
