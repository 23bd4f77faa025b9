//! [`BatchCaps`]: how large a record batch each topic accepts, learned from the broker.
//!
//! The publisher cuts a partition's rows into batches that fit `max_request_size`, but a
//! topic's `max.message.bytes` (or the broker's `message.max.bytes`) may be smaller, and
//! the broker then refuses the *whole batch* with MESSAGE_TOO_LARGE or
//! RECORD_LIST_TOO_LARGE. Blaming the batch's first row for that would park a row that
//! is fine on its own. So a refused batch of several records caps that topic's batches
//! at half the refused size (the Java producer splits such batches the same way), the
//! rows are retried, and only a batch of one record that is still refused blames its row.
//! The caps only shrink: a topic whose limit was raised keeps smaller batches until the
//! publisher is rebuilt, which costs throughput, never a row.

use std::collections::HashMap;

/// Per-topic caps on a record batch's encoded size (an upper bound, as the plan
/// estimates it), in bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct BatchCaps {
    caps: HashMap<String, usize>,
}

impl BatchCaps {
    /// The cap for `topic`, if the broker refused one of its batches.
    pub(crate) fn cap(&self, topic: &str) -> Option<usize> {
        self.caps.get(topic).copied()
    }

    /// A batch of `records` records and `bytes` estimated bytes for `topic` was refused
    /// as too large: its later batches stay at or below half of it. Returns the cap. A
    /// refused single record teaches nothing (it is that row's fault) and changes no cap.
    pub(crate) fn refused(&mut self, topic: &str, records: usize, bytes: usize) -> Option<usize> {
        if records < 2 {
            return self.cap(topic);
        }
        let half = (bytes / 2).max(1);
        let cap = self.caps.entry(topic.to_owned()).or_insert(half);
        *cap = (*cap).min(half);
        Some(*cap)
    }
}

#[cfg(test)]
#[path = "batch_cap_tests.rs"]
mod tests;
