//! Sending one partition's chunks: idempotent, in order, stopping at the first failure.

use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, warn};

use crate::cluster::{Cluster, connection_error};
use crate::compression::Compression;
use crate::error::{
    KafkaPublishError, Verdict, classify_produce, is_busy_code, is_retryable_setup_code,
};
use crate::plan::{Chunk, Group};
use crate::record_batch::{ProducerStamp, encode_batch};
use crate::session::{InFlight, Sequences, Session, SessionCell};
use crate::wire::error_name;

/// What the send loops need from the publisher.
#[derive(Debug)]
pub(crate) struct Sender {
    pub cluster: Cluster,
    pub session: SessionCell,
    pub sequences: Sequences,
    pub compression: Compression,
    pub delivery_timeout: Duration,
    pub retry_backoff: Duration,
    pub max_retry_backoff: Duration,
}

/// How far one partition got.
#[derive(Debug)]
pub(crate) struct GroupOutcome {
    /// Chunks appended, from the front.
    pub acknowledged_chunks: usize,
    /// Why the next chunk was not.
    pub error: Option<KafkaPublishError>,
}

/// Doubling backoff, capped.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Self {
        Backoff { next: initial, max }
    }

    /// Sleeps for the next pause; `false` (without sleeping) when that would pass the
    /// deadline.
    pub(crate) async fn wait(&mut self, deadline: Instant) -> bool {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        if Instant::now() + pause >= deadline {
            return false;
        }
        tokio::time::sleep(pause).await;
        true
    }
}

impl Sender {
    /// The current producer session, asking the cluster for a new producer id when
    /// there is none (first use, or after an invalidation) or when a broker connection
    /// was lost since it was issued: the broker may have restarted without its producer
    /// state (Tansu's memory engine does) and handed our id to another producer, and then
    /// a matching sequence would make the broker answer for *that* producer's batch.
    pub(crate) async fn session(&self, deadline: Instant) -> Result<Session, KafkaPublishError> {
        if let Some(s) = self.fresh_session() {
            return Ok(s);
        }
        let _init = self.session.init_lock.lock().await;
        if let Some(s) = self.fresh_session() {
            return Ok(s);
        }
        let losses = self.cluster.connection_losses();
        let mut backoff = Backoff::new(self.retry_backoff, self.max_retry_backoff);
        loop {
            let last = match self.cluster.any_connection().await {
                Err(e) if e.is_permanent() => return Err(connection_error(e)),
                Err(e) => connection_error(e),
                Ok(conn) => match conn.init_producer_id().await {
                    Ok(answer) if answer.error_code == 0 && answer.producer_id >= 0 => {
                        return Ok(self.session.install(
                            answer.producer_id,
                            answer.producer_epoch,
                            losses,
                        ));
                    }
                    Ok(answer) => {
                        let e = KafkaPublishError::ProducerId(format!(
                            "InitProducerId answered {} (producer id {})",
                            error_name(answer.error_code),
                            answer.producer_id
                        ));
                        if !is_retryable_setup_code(answer.error_code) {
                            return Err(KafkaPublishError::Broker {
                                code: answer.error_code,
                                name: error_name(answer.error_code),
                                topic: String::new(),
                                partition: -1,
                                permanent: true,
                            });
                        }
                        if !is_busy_code(answer.error_code) {
                            debug!(error = %e, "InitProducerId refused; retrying");
                        }
                        e
                    }
                    Err(e) => {
                        self.cluster.discard(&conn);
                        connection_error(e)
                    }
                },
            };
            if !backoff.wait(deadline).await {
                return Err(last);
            }
        }
    }

    fn encode(
        &self,
        chunk: &Chunk<'_>,
        session: &Session,
        base_sequence: i32,
    ) -> Result<Vec<u8>, KafkaPublishError> {
        let stamp = ProducerStamp {
            producer_id: session.producer_id,
            producer_epoch: session.producer_epoch,
            base_sequence,
        };
        encode_batch(&chunk.records, stamp, self.compression)
            .map_err(|e| KafkaPublishError::Encode(e.to_string()))
    }

    fn fresh_session(&self) -> Option<Session> {
        let session = self.session.current()?;
        if session.losses == self.cluster.connection_losses() {
            return Some(session);
        }
        self.session.invalidate(
            session.generation,
            "a broker connection was lost since this producer id was issued",
        );
        None
    }

    /// Sends `group`'s chunks one after the other. A chunk is sent only after the one
    /// before it was appended, so the partition only ever shows a prefix of its rows.
    pub(crate) async fn send_group(&self, group: &Group<'_>, deadline: Instant) -> GroupOutcome {
        let sequence = self.sequences.partition(group.topic, group.partition);
        let mut sequence = sequence.lock().await;
        for (done, chunk) in group.chunks.iter().enumerate() {
            if let Err(error) = self.send_chunk(group, chunk, &mut sequence, deadline).await {
                return GroupOutcome {
                    acknowledged_chunks: done,
                    error: Some(error),
                };
            }
        }
        GroupOutcome {
            acknowledged_chunks: group.chunks.len(),
            error: None,
        }
    }

    async fn send_chunk(
        &self,
        group: &Group<'_>,
        chunk: &Chunk<'_>,
        sequence: &mut crate::session::PartitionSequence,
        deadline: Instant,
    ) -> Result<(), KafkaPublishError> {
        let (topic, partition) = (group.topic, group.partition);
        let mut session = self.session(deadline).await?;
        let mut base_sequence = sequence.next_for(&session);
        let mut batch = self.encode(chunk, &session, base_sequence)?;
        let count = i32::try_from(chunk.records.len()).unwrap_or(i32::MAX);
        let mut in_flight = InFlight::new(&self.session, session.generation);
        let mut backoff = Backoff::new(self.retry_backoff, self.max_retry_backoff);
        // Whether an earlier attempt of this batch may be in the log unbeknown to us.
        let mut maybe_appended = false;
        // Whether the leader could not be reached after such an attempt. The broker may
        // have restarted in between, and a broker that forgets producer state (Tansu's
        // memory engine) hands producer ids out again from the start: another producer
        // may now hold our id, and DUPLICATE_SEQUENCE_NUMBER may refer to *its* batch.
        let mut lost_contact = false;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            if attempt > 1 {
                let current = self.session(deadline).await?;
                if current.generation != session.generation {
                    // A connection was lost since the id was issued (see `session`): the
                    // same sequence proves nothing any more. Send under the new id; if an
                    // earlier attempt was appended, this copy is a duplicate, never a loss.
                    debug!(
                        topic,
                        partition, attempt, "resending under a new producer id"
                    );
                    in_flight.settle();
                    session = current;
                    base_sequence = sequence.next_for(&session);
                    batch = self.encode(chunk, &session, base_sequence)?;
                    in_flight = InFlight::new(&self.session, session.generation);
                    maybe_appended = false;
                    lost_contact = false;
                }
            }
            let last = match self.cluster.leader(topic, partition).await {
                Err(e) if e.is_permanent() && !maybe_appended => return Err(e),
                Err(e) => {
                    lost_contact |= maybe_appended;
                    e
                }
                Ok(conn) => {
                    in_flight.arm();
                    match conn.produce(topic, partition, &batch).await {
                        Err(e) => {
                            // The request may or may not have reached the log: only the
                            // same batch may be sent again, on a fresh connection. A
                            // resend failing too means the broker may be restarting.
                            lost_contact |= maybe_appended;
                            maybe_appended = true;
                            self.cluster.discard(&conn);
                            self.cluster.mark_stale(topic);
                            debug!(topic, partition, attempt, error = %e, "produce failed in transport");
                            connection_error(e)
                        }
                        Ok(answer) => {
                            let verdict = classify_produce(answer.error_code);
                            let broker_error = |permanent| KafkaPublishError::Broker {
                                code: answer.error_code,
                                name: error_name(answer.error_code),
                                topic: topic.to_owned(),
                                partition,
                                permanent,
                            };
                            match verdict {
                                Verdict::Appended => {
                                    sequence.advance(count);
                                    in_flight.settle();
                                    debug!(
                                        topic,
                                        partition,
                                        base_offset = answer.base_offset,
                                        base_sequence,
                                        records = count,
                                        "batch appended"
                                    );
                                    return Ok(());
                                }
                                Verdict::Duplicate if maybe_appended && !lost_contact => {
                                    // An earlier attempt of this very batch was appended.
                                    sequence.advance(count);
                                    in_flight.settle();
                                    debug!(
                                        topic,
                                        partition,
                                        base_sequence,
                                        "resent batch was a duplicate: appended earlier"
                                    );
                                    return Ok(());
                                }
                                Verdict::Duplicate | Verdict::Sequence => {
                                    if maybe_appended && verdict == Verdict::Duplicate {
                                        // Not provably ours: report the batch as not
                                        // acknowledged. If it was appended, the resend
                                        // under a new producer id is a duplicate; trusting
                                        // the answer could lose it.
                                        warn!(
                                            topic,
                                            partition,
                                            base_sequence,
                                            "duplicate answer after the broker was unreachable; batch not counted as appended"
                                        );
                                    }
                                    in_flight.settle();
                                    self.session.invalidate(
                                        session.generation,
                                        "the broker rejected the producer sequence",
                                    );
                                    return Err(KafkaPublishError::Sequence {
                                        code: answer.error_code,
                                        name: error_name(answer.error_code),
                                        topic: topic.to_owned(),
                                        partition,
                                    });
                                }
                                Verdict::Permanent => {
                                    if maybe_appended {
                                        // An earlier attempt's fate is unknown: this
                                        // sequence can no longer be trusted.
                                        self.session.invalidate(
                                            session.generation,
                                            "permanent error after an unknown outcome",
                                        );
                                    }
                                    in_flight.settle();
                                    return Err(broker_error(true));
                                }
                                Verdict::Rejected { refresh_metadata } => {
                                    if refresh_metadata {
                                        self.cluster.mark_stale(topic);
                                    }
                                    if !maybe_appended {
                                        // No attempt of this batch is anywhere yet.
                                        in_flight.settle();
                                    }
                                    broker_error(false)
                                }
                                Verdict::Unknown { refresh_metadata } => {
                                    maybe_appended = true;
                                    if refresh_metadata {
                                        self.cluster.mark_stale(topic);
                                    }
                                    broker_error(false)
                                }
                            }
                        }
                    }
                }
            };
            if !backoff.wait(deadline).await {
                if in_flight.is_armed() {
                    warn!(
                        topic,
                        partition, base_sequence, "batch outcome unknown at the delivery timeout"
                    );
                }
                // Dropping `in_flight` armed invalidates the session.
                return Err(KafkaPublishError::DeliveryTimeout {
                    topic: topic.to_owned(),
                    partition,
                    timeout: self.delivery_timeout,
                    last: last.to_string(),
                });
            }
        }
    }
}
