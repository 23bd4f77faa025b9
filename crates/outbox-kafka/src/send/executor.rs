//! The thin async shell around [`PartitionSendMachine`]: it performs each command (a
//! session, an encoding, a leader lookup, a produce request, a pause) and feeds the
//! result back with the current time. It decides nothing itself.

use std::sync::Arc;

use tokio::time::Instant;

use super::PartitionSender;
use super::machine::{GroupOutcome, PartitionSendMachine, SendCommand};
use crate::cluster::connection_error;
use crate::coalesce;
use crate::error::KafkaPublishError;
use crate::plan::Group;
use crate::record_batch::{ProducerStamp, encode_batch};
use crate::session::{InFlight, PartitionSequence};
use crate::wire::Connection;

impl PartitionSender {
    /// Sends `group`'s chunks one after the other. A chunk is sent only after the one
    /// before it was appended, so the partition only ever shows a prefix of its rows.
    pub(crate) async fn send_group(&self, group: &Group<'_>, deadline: Instant) -> GroupOutcome {
        let sequence = self.sequences.partition(group.topic, group.partition);
        let mut sequence = sequence.lock().await;
        let chunk_records = group
            .chunks
            .iter()
            .map(|c| i32::try_from(c.records.len()).unwrap_or(i32::MAX))
            .collect();
        let machine = PartitionSendMachine::new(
            group.topic,
            group.partition,
            chunk_records,
            *sequence,
            deadline.into_std(),
            self.delivery_timeout,
            self.backoff(),
        );
        let mut run = Run {
            sender: self,
            group,
            machine,
            sequence: &mut sequence,
            deadline,
            in_flight: None,
            connection: None,
            batch: None,
        };
        run.drive().await
    }
}

/// One group's send in progress. Dropped midway (the publish future was cancelled), it
/// keeps the sequence the machine reached and invalidates the producer id if a batch's
/// fate is unknown, through [`InFlight`].
struct Run<'s, 'g, 'q> {
    sender: &'s PartitionSender,
    group: &'g Group<'g>,
    machine: PartitionSendMachine,
    sequence: &'q mut PartitionSequence,
    deadline: Instant,
    in_flight: Option<InFlight<'s>>,
    connection: Option<Arc<Connection>>,
    /// The last encoded batch and the chunk and stamp it was encoded for.
    batch: Option<(usize, ProducerStamp, Arc<[u8]>)>,
}

impl Run<'_, '_, '_> {
    async fn drive(&mut self) -> GroupOutcome {
        let (topic, partition) = (self.group.topic, self.group.partition);
        loop {
            let Some(command) = self.machine.poll_command() else {
                // The machine always queues its next step with each input.
                return GroupOutcome {
                    acknowledged_chunks: 0,
                    error: Some(KafkaPublishError::Encode(
                        "the send machine stalled".to_owned(),
                    )),
                };
            };
            match command {
                SendCommand::ObtainSession => {
                    let result = self.sender.session(self.deadline).await;
                    self.machine.on_session(now(), result);
                }
                SendCommand::Encode { chunk, stamp } => {
                    let result = self.encode(chunk, stamp);
                    self.machine.on_encoded(now(), result);
                }
                SendCommand::Connect => {
                    let result = self.sender.cluster.leader(topic, partition).await;
                    let result = result.map(|conn| {
                        self.connection = Some(conn);
                    });
                    self.machine.on_leader(now(), result);
                }
                SendCommand::Produce { chunk, stamp } => {
                    // The guard was armed by the `sync` after `on_leader`: from here on
                    // the request's fate is unknown until it is answered.
                    let produced = match (&self.connection, &self.batch) {
                        (Some(conn), Some((c, s, bytes))) if (*c, *s) == (chunk, stamp) => {
                            Some(coalesce::produce(conn, topic, partition, Arc::clone(bytes)).await)
                        }
                        _ => None,
                    };
                    match produced {
                        Some(Ok(answer)) => {
                            self.machine
                                .on_answer(now(), answer.error_code, answer.base_offset);
                        }
                        Some(Err(e)) => self.machine.on_transport_error(now(), connection_error(e)),
                        None => self.machine.on_transport_error(
                            now(),
                            KafkaPublishError::Encode(
                                "no connection or batch for the produce request".to_owned(),
                            ),
                        ),
                    }
                }
                SendCommand::DiscardConnection => {
                    if let Some(conn) = self.connection.take() {
                        self.sender.cluster.discard(&conn);
                    }
                    self.sender.cluster.mark_stale(topic);
                }
                SendCommand::RefreshMetadata => self.sender.cluster.mark_stale(topic),
                SendCommand::Invalidate { generation, reason } => {
                    self.sender.session.invalidate(generation, reason);
                }
                SendCommand::BackOff { until } => {
                    tokio::time::sleep_until(Instant::from_std(until)).await;
                    self.machine.on_backoff_elapsed(now());
                }
                SendCommand::Done(outcome) => {
                    self.sync();
                    return outcome;
                }
            }
            self.sync();
        }
    }

    fn encode(&mut self, chunk: usize, stamp: ProducerStamp) -> Result<(), KafkaPublishError> {
        let records = match self.group.chunks.get(chunk) {
            Some(c) => &c.records,
            None => {
                return Err(KafkaPublishError::Encode(format!(
                    "chunk {chunk} is not in the group"
                )));
            }
        };
        let bytes = encode_batch(records, stamp, self.sender.compression)
            .map_err(|e| KafkaPublishError::Encode(e.to_string()))?;
        self.batch = Some((chunk, stamp, Arc::from(bytes)));
        Ok(())
    }

    /// Copies the machine's progress out: the partition's sequence, and which session
    /// to invalidate should this run be dropped now.
    fn sync(&mut self) {
        *self.sequence = self.machine.sequence();
        self.track_in_flight();
    }

    fn track_in_flight(&mut self) {
        if let Some(mut settled) = self.in_flight.take() {
            settled.settle();
        }
        if let Some(generation) = self.machine.generation_in_doubt() {
            let mut guard = InFlight::new(&self.sender.session, generation);
            guard.arm();
            self.in_flight = Some(guard);
        }
    }
}

fn now() -> std::time::Instant {
    Instant::now().into_std()
}
