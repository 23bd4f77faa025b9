//! [`PartitionSendMachine`]: every decision of sending one partition's chunks, with no
//! I/O and no clock. The executor ([`super::PartitionSender`]) performs its commands and
//! feeds back what happened, with the current time.
//!
//! The rules, in the order they matter for not losing a batch:
//! - Chunks go out one after the other; a chunk is sent only after the one before it was
//!   appended, and nothing after a failed chunk is sent, so the partition only ever shows
//!   a prefix of its rows.
//! - An answer that leaves the batch's fate unknown (a timeout, a transport error) makes
//!   the machine resend *the same batch with the same sequence*, which the broker
//!   deduplicates, as long as the producer id stays the same.
//! - The producer id is re-read before every resend, and a lost broker connection keeps
//!   it: the batch goes out again with its original id, epoch and sequence, and a broker
//!   that kept its producer state (Apache Kafka does, across reconnects and restarts)
//!   answers success with the offset it already holds, so the reconnect adds no
//!   duplicate. Only the broker's answer retires the id: UNKNOWN_PRODUCER_ID,
//!   OUT_OF_ORDER_SEQUENCE_NUMBER or an invalid epoch mean its state is gone, the batch
//!   is reported unacknowledged and the next send asks for a new id; the relay's resend
//!   under it is a duplicate if the batch had been appended, never a loss.
//! - DUPLICATE_SEQUENCE_NUMBER proves an earlier attempt of this batch was appended only
//!   when such an attempt exists and the leader stayed reachable since. After lost
//!   contact it may be a broker that restarted without its state (Tansu's memory engine)
//!   answering for another producer's batch under a reused id, so it is never trusted:
//!   the batch is reported unacknowledged and the id retired.
//! - Whenever a batch of unknown fate is abandoned (delivery timeout, permanent answer,
//!   failed resend setup) the producer id is invalidated, since its sequence can no longer
//!   be trusted.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use outbox_core::backoff::Backoff;
use tracing::{debug, warn};

use crate::error::{KafkaPublishError, Verdict, classify_produce, is_size_code};
use crate::record_batch::ProducerStamp;
use crate::session::{PartitionSequence, Session};
use crate::wire::error_name;

/// What the machine asks the executor to do next.
#[derive(Debug)]
pub(crate) enum SendCommand {
    /// Obtain the producer session to send under: the current one if it is still
    /// trusted, else a new producer id. Answer with [`PartitionSendMachine::on_session`].
    ObtainSession,
    /// Encode chunk `chunk` with `stamp` (once per stamp: resends reuse the bytes).
    /// Answer with [`PartitionSendMachine::on_encoded`].
    Encode {
        /// Index of the chunk in the group.
        chunk: usize,
        /// Producer id, epoch and base sequence to stamp the batch with.
        stamp: ProducerStamp,
    },
    /// Look up (and connect to) the partition's leader. Answer with
    /// [`PartitionSendMachine::on_leader`].
    Connect,
    /// Send the batch last encoded on the connection from `Connect`. Answer with
    /// [`PartitionSendMachine::on_answer`] or [`PartitionSendMachine::on_transport_error`].
    Produce {
        /// Index of the chunk in the group.
        chunk: usize,
        /// The stamp the batch carries (the one of the last `Encode`).
        stamp: ProducerStamp,
    },
    /// Drop the connection the produce request failed on and re-resolve the topic's
    /// leaders. Answer nothing.
    DiscardConnection,
    /// Re-resolve the topic's leaders before the next lookup. Answer nothing.
    RefreshMetadata,
    /// Drop the producer session of `generation`: its sequences can no longer be
    /// trusted. Answer nothing.
    Invalidate {
        /// The session generation to drop (ignored if no longer current).
        generation: u64,
        /// Why, for the log.
        reason: &'static str,
    },
    /// Wait until `until`, then call [`PartitionSendMachine::on_backoff_elapsed`].
    BackOff {
        /// End of the pause.
        until: Instant,
    },
    /// Finished: `acknowledged_chunks` chunks from the front were appended; `error`
    /// says why the next one was not. Nothing more follows.
    Done(GroupOutcome),
}

/// How far one partition got.
#[derive(Debug)]
pub(crate) struct GroupOutcome {
    /// Chunks appended, from the front.
    pub acknowledged_chunks: usize,
    /// Why the next chunk was not.
    pub error: Option<KafkaPublishError>,
}

/// The input the machine waits for; an input it did not ask for is a bug in the executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Awaiting {
    Session,
    Encoded,
    Leader,
    Answer,
    BackoffEnd,
    Nothing,
}

/// The state of the chunk being sent.
#[derive(Debug, Clone, Copy, Default)]
struct Attempt {
    /// The producer session the batch is stamped under.
    session: Option<Session>,
    base_sequence: i32,
    /// Whether an earlier attempt of this batch may be in the log unbeknown to us.
    maybe_appended: bool,
    /// Whether the leader could not be reached after such an attempt: the broker may
    /// have restarted in between, and a broker that forgets producer state (Tansu's
    /// memory engine) hands producer ids out again from the start, so another producer
    /// may now hold our id and DUPLICATE_SEQUENCE_NUMBER may refer to *its* batch.
    lost_contact: bool,
    /// Consecutive retryable failures of this chunk, for the backoff.
    failures: u32,
    /// Attempts made (1 = the first send).
    number: u32,
}

/// Sends one partition's chunks idempotently and in order; see the module docs.
#[derive(Debug)]
pub(crate) struct PartitionSendMachine {
    topic: String,
    partition: i32,
    /// Records per chunk, in send order.
    chunk_records: Vec<i32>,
    /// The chunk being sent (== `chunk_records.len()` when all were appended).
    chunk: usize,
    attempt: Attempt,
    sequence: PartitionSequence,
    deadline: Instant,
    delivery_timeout: Duration,
    backoff: Backoff,
    /// The last retryable failure, reported if the deadline passes.
    last_error: Option<String>,
    commands: VecDeque<SendCommand>,
    awaiting: Awaiting,
    /// A produce request was handed to the executor and not answered yet.
    request_outstanding: bool,
}

impl PartitionSendMachine {
    /// A machine for a group of chunks with `chunk_records` records each, continuing
    /// the partition's `sequence`, that gives up at `deadline` (`delivery_timeout` after
    /// the publish call started).
    pub(crate) fn new(
        topic: &str,
        partition: i32,
        chunk_records: Vec<i32>,
        sequence: PartitionSequence,
        deadline: Instant,
        delivery_timeout: Duration,
        backoff: Backoff,
    ) -> Self {
        let mut machine = PartitionSendMachine {
            topic: topic.to_owned(),
            partition,
            chunk_records,
            chunk: 0,
            attempt: Attempt::default(),
            sequence,
            deadline,
            delivery_timeout,
            backoff,
            last_error: None,
            commands: VecDeque::new(),
            awaiting: Awaiting::Nothing,
            request_outstanding: false,
        };
        machine.start_chunk();
        machine
    }

    /// The next command; `None` while the machine waits for the answer to the last one.
    pub(crate) fn poll_command(&mut self) -> Option<SendCommand> {
        self.commands.pop_front()
    }

    /// The partition's sequence state, as it must be kept for the next group: advanced
    /// past every appended chunk.
    pub(crate) fn sequence(&self) -> PartitionSequence {
        self.sequence
    }

    /// The session generation whose sequence would become untrustworthy if the send
    /// were abandoned now (a request is out, or an attempt's fate is unknown): the
    /// executor invalidates it if it is dropped midway.
    pub(crate) fn generation_in_doubt(&self) -> Option<u64> {
        if self.request_outstanding || self.attempt.maybe_appended {
            self.attempt.session.map(|s| s.generation)
        } else {
            None
        }
    }

    /// The answer to [`SendCommand::ObtainSession`].
    pub(crate) fn on_session(&mut self, _now: Instant, result: Result<Session, KafkaPublishError>) {
        self.expect(Awaiting::Session);
        let session = match result {
            Ok(session) => session,
            Err(e) => {
                // No trusted producer id: an attempt of unknown fate stays unknown.
                self.invalidate_if_in_doubt(
                    "a batch's outcome is unknown (cancelled or timed out)",
                );
                return self.finish(Some(e));
            }
        };
        match self.attempt.session {
            Some(current) if current.generation == session.generation => {
                self.connect();
            }
            previous => {
                if previous.is_some() {
                    // The id was invalidated (by the broker's answer, or a batch of
                    // unknown fate elsewhere): the same sequence proves nothing any more.
                    // Send under the new id; if an earlier attempt was appended, this
                    // copy is a duplicate, never a loss.
                    debug!(
                        topic = %self.topic,
                        partition = self.partition,
                        attempt = self.attempt.number,
                        "resending under a new producer id"
                    );
                }
                self.attempt.session = Some(session);
                self.attempt.base_sequence = self.sequence.next_for(&session);
                self.attempt.maybe_appended = false;
                self.attempt.lost_contact = false;
                self.push(
                    SendCommand::Encode {
                        chunk: self.chunk,
                        stamp: self.stamp(session),
                    },
                    Awaiting::Encoded,
                );
            }
        }
    }

    /// The answer to [`SendCommand::Encode`].
    pub(crate) fn on_encoded(&mut self, _now: Instant, result: Result<(), KafkaPublishError>) {
        self.expect(Awaiting::Encoded);
        match result {
            Ok(()) => self.connect(),
            Err(e) => self.finish(Some(e)),
        }
    }

    /// The answer to [`SendCommand::Connect`]: `Ok` when a connection to the leader is
    /// ready.
    pub(crate) fn on_leader(&mut self, now: Instant, result: Result<(), KafkaPublishError>) {
        self.expect(Awaiting::Leader);
        match result {
            Ok(()) => {
                let Some(session) = self.attempt.session else {
                    return self.finish(Some(KafkaPublishError::Encode(
                        "no producer session to stamp the batch with".to_owned(),
                    )));
                };
                self.request_outstanding = true;
                self.push(
                    SendCommand::Produce {
                        chunk: self.chunk,
                        stamp: self.stamp(session),
                    },
                    Awaiting::Answer,
                );
            }
            // Nothing of this batch can be anywhere: a permanent lookup error ends it.
            Err(e) if e.is_permanent() && !self.attempt.maybe_appended => self.finish(Some(e)),
            Err(e) => {
                self.attempt.lost_contact |= self.attempt.maybe_appended;
                self.retry(now, e);
            }
        }
    }

    /// The produce request failed in transport: it may or may not have reached the log.
    pub(crate) fn on_transport_error(&mut self, now: Instant, error: KafkaPublishError) {
        self.expect(Awaiting::Answer);
        self.request_outstanding = false;
        // Only the same batch may be sent again, on a fresh connection. A resend failing
        // too means the broker may be restarting.
        self.attempt.lost_contact |= self.attempt.maybe_appended;
        self.attempt.maybe_appended = true;
        debug!(
            topic = %self.topic,
            partition = self.partition,
            attempt = self.attempt.number,
            %error,
            "produce failed in transport"
        );
        self.commands.push_back(SendCommand::DiscardConnection);
        self.retry(now, error);
    }

    /// The broker's answer to [`SendCommand::Produce`], by error code.
    pub(crate) fn on_answer(&mut self, now: Instant, error_code: i16, base_offset: i64) {
        self.expect(Awaiting::Answer);
        self.request_outstanding = false;
        let attempt = self.attempt;
        let generation = attempt.session.map_or(0, |s| s.generation);
        match classify_produce(error_code) {
            Verdict::Appended => {
                debug!(
                    topic = %self.topic,
                    partition = self.partition,
                    base_offset,
                    base_sequence = attempt.base_sequence,
                    records = self.records(),
                    "batch appended"
                );
                self.appended();
            }
            Verdict::Duplicate if attempt.maybe_appended && !attempt.lost_contact => {
                debug!(
                    topic = %self.topic,
                    partition = self.partition,
                    base_sequence = attempt.base_sequence,
                    "resent batch was a duplicate: appended earlier"
                );
                self.appended();
            }
            verdict @ (Verdict::Duplicate | Verdict::Sequence) => {
                if attempt.maybe_appended && verdict == Verdict::Duplicate {
                    // Not provably ours: report the batch as not acknowledged. If it was
                    // appended, the resend under a new producer id is a duplicate;
                    // trusting the answer could lose it.
                    warn!(
                        topic = %self.topic,
                        partition = self.partition,
                        base_sequence = attempt.base_sequence,
                        "duplicate answer after the broker was unreachable; batch not counted as appended"
                    );
                }
                self.commands.push_back(SendCommand::Invalidate {
                    generation,
                    reason: "the broker rejected the producer sequence",
                });
                self.attempt.maybe_appended = false;
                let error = KafkaPublishError::Sequence {
                    code: error_code,
                    name: error_name(error_code),
                    topic: self.topic.clone(),
                    partition: self.partition,
                };
                self.finish(Some(error));
            }
            Verdict::Permanent => {
                // An earlier attempt's fate is unknown: this sequence can no longer be
                // trusted.
                self.invalidate_if_in_doubt("permanent error after an unknown outcome");
                let error = if is_size_code(error_code) && self.records() > 1 {
                    // The batch, not a row, is too large: the publisher retries the
                    // rows in smaller batches (see `batch_cap`).
                    KafkaPublishError::BatchTooLarge {
                        topic: self.topic.clone(),
                        partition: self.partition,
                        records: self.records(),
                        name: error_name(error_code),
                    }
                } else {
                    self.broker_error(error_code, true)
                };
                self.finish(Some(error));
            }
            Verdict::Rejected { refresh_metadata } => {
                if refresh_metadata {
                    self.commands.push_back(SendCommand::RefreshMetadata);
                }
                let error = self.broker_error(error_code, false);
                self.retry(now, error);
            }
            Verdict::Unknown { refresh_metadata } => {
                self.attempt.maybe_appended = true;
                if refresh_metadata {
                    self.commands.push_back(SendCommand::RefreshMetadata);
                }
                let error = self.broker_error(error_code, false);
                self.retry(now, error);
            }
        }
    }

    /// The pause of [`SendCommand::BackOff`] ended: the next attempt starts by checking
    /// the producer session.
    pub(crate) fn on_backoff_elapsed(&mut self, _now: Instant) {
        self.expect(Awaiting::BackoffEnd);
        self.attempt.number += 1;
        self.push(SendCommand::ObtainSession, Awaiting::Session);
    }

    fn start_chunk(&mut self) {
        if self.chunk >= self.chunk_records.len() {
            return self.finish(None);
        }
        self.attempt = Attempt {
            number: 1,
            ..Attempt::default()
        };
        self.last_error = None;
        self.push(SendCommand::ObtainSession, Awaiting::Session);
    }

    fn connect(&mut self) {
        self.push(SendCommand::Connect, Awaiting::Leader);
    }

    fn appended(&mut self) {
        self.sequence.advance(self.records());
        self.attempt.maybe_appended = false;
        self.chunk += 1;
        self.start_chunk();
    }

    /// A retryable failure: back off, or give up if the pause would pass the deadline.
    fn retry(&mut self, now: Instant, error: KafkaPublishError) {
        self.attempt.failures = self.attempt.failures.saturating_add(1);
        let pause = self.backoff.after(self.attempt.failures);
        self.last_error = Some(error.to_string());
        match now.checked_add(pause) {
            Some(until) if until < self.deadline => {
                self.push(SendCommand::BackOff { until }, Awaiting::BackoffEnd);
            }
            _ => {
                if self.attempt.maybe_appended {
                    warn!(
                        topic = %self.topic,
                        partition = self.partition,
                        base_sequence = self.attempt.base_sequence,
                        "batch outcome unknown at the delivery timeout"
                    );
                }
                self.invalidate_if_in_doubt(
                    "a batch's outcome is unknown (cancelled or timed out)",
                );
                let error = KafkaPublishError::DeliveryTimeout {
                    topic: self.topic.clone(),
                    partition: self.partition,
                    timeout: self.delivery_timeout,
                    last: self.last_error.take().unwrap_or_default(),
                };
                self.finish(Some(error));
            }
        }
    }

    fn invalidate_if_in_doubt(&mut self, reason: &'static str) {
        if let Some(generation) = self.generation_in_doubt() {
            self.commands
                .push_back(SendCommand::Invalidate { generation, reason });
        }
        self.attempt.maybe_appended = false;
    }

    fn finish(&mut self, error: Option<KafkaPublishError>) {
        self.attempt.maybe_appended = false;
        self.request_outstanding = false;
        self.push(
            SendCommand::Done(GroupOutcome {
                acknowledged_chunks: self.chunk,
                error,
            }),
            Awaiting::Nothing,
        );
    }

    fn push(&mut self, command: SendCommand, awaiting: Awaiting) {
        self.commands.push_back(command);
        self.awaiting = awaiting;
    }

    fn expect(&self, input: Awaiting) {
        debug_assert_eq!(
            self.awaiting, input,
            "the send machine got an input it did not ask for"
        );
    }

    fn records(&self) -> i32 {
        self.chunk_records.get(self.chunk).copied().unwrap_or(0)
    }

    fn stamp(&self, session: Session) -> ProducerStamp {
        ProducerStamp {
            producer_id: session.producer_id,
            producer_epoch: session.producer_epoch,
            base_sequence: self.attempt.base_sequence,
        }
    }

    fn broker_error(&self, code: i16, permanent: bool) -> KafkaPublishError {
        KafkaPublishError::from_code(&self.topic, self.partition, code, permanent)
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
