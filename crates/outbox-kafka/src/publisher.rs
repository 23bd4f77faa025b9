//! [`KafkaPublisher`]: the [`Publisher`] the relay drives.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::join_all;
use outbox_core::{OutboxMessage, PublishOutcome, Publisher, Uuid};
use tokio::time::Instant;
use tracing::{Instrument, debug, info_span, warn};

use crate::batch_cap::BatchCaps;
use crate::cluster::{Cluster, topic_error};
use crate::coalesce::queue::{ProduceCounters, ProduceSettings};
use crate::coalesce::{MAX_IN_FLIGHT_PER_CONNECTION, RequestLimit};
use crate::config::{ConfigError, KafkaPublisherBuilder, KafkaPublisherConfig};
use crate::error::{KafkaPublishError, TopicUnavailableReason, code};
use crate::plan::{Decoded, Limits, plan};
use crate::send::{GroupOutcome, PartitionSender, RetryPause};
use crate::session::{Sequences, SessionCell};
use crate::wire::ConnectOptions;

/// The counter of rows that failed permanently (each row counted once), exported
/// through the `metrics` facade.
pub const PERMANENT_FAILURES_METRIC: &str = "outbox.kafka.permanent_failures";

/// The counter of publish calls that met a topic they cannot write (missing, or no
/// WRITE ACL), labelled `topic` and `reason` (`missing`, `not_authorized`); each call
/// counts, so a topic that stays unavailable keeps the counter rising with the relay's
/// retries.
pub const TOPIC_UNAVAILABLE_METRIC: &str = "outbox.kafka.topic_unavailable";

/// How many message ids the once-per-row log remembers before it starts over.
const REMEMBERED_FAILURES: usize = 10_000;

/// Receive limit for one response frame; produce, metadata and InitProducerId answers
/// are small.
const MAX_RESPONSE_SIZE: usize = 16 * 1024 * 1024;

/// An idempotent, order-preserving Kafka publisher (see the crate docs for its
/// contract). Cheap to clone: clones share connections and the producer identity.
#[derive(Debug, Clone)]
pub struct KafkaPublisher {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: KafkaPublisherConfig,
    sender: PartitionSender,
    permanent_seen: Mutex<HashSet<Uuid>>,
    permanent_count: AtomicU64,
    topic_unavailable_count: AtomicU64,
    batch_caps: Mutex<BatchCaps>,
    produce_counters: Arc<ProduceCounters>,
}

impl KafkaPublisher {
    /// Starts a builder for the given bootstrap servers (`host:port` each).
    pub fn builder<I, S>(bootstrap_servers: I) -> KafkaPublisherBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        KafkaPublisherBuilder::new(bootstrap_servers.into_iter().map(Into::into).collect())
    }

    pub(crate) fn from_config(config: KafkaPublisherConfig) -> Self {
        let limit = RequestLimit {
            max_request_size: config.max_request_size,
            client_id_len: config.client_id.len(),
            max_batches: usize::MAX,
            max_in_flight: MAX_IN_FLIGHT_PER_CONNECTION,
        };
        Self::with_request_limit(config, limit)
    }

    /// A publisher whose connections gather produce requests within `limit` (tests
    /// compare against one request per partition batch through this).
    pub(crate) fn with_request_limit(config: KafkaPublisherConfig, limit: RequestLimit) -> Self {
        let produce_counters = Arc::new(ProduceCounters::default());
        let options = ConnectOptions {
            client_id: Arc::from(config.client_id.as_str()),
            tls: config.tls.clone(),
            sasl: config.sasl.as_ref().map(crate::config::Sasl::to_rskafka),
            max_response_size: MAX_RESPONSE_SIZE,
            timeout: config.request_timeout,
            produce: ProduceSettings {
                limit,
                counters: Arc::clone(&produce_counters),
            },
        };
        let sender = PartitionSender {
            cluster: Cluster::new(
                options,
                config.bootstrap_servers.clone(),
                config.metadata_max_age,
            ),
            session: SessionCell::default(),
            sequences: Sequences::default(),
            compression: config.compression,
            delivery_timeout: config.delivery_timeout,
            retry_backoff: config.retry_backoff,
            max_retry_backoff: config.max_retry_backoff,
        };
        KafkaPublisher {
            inner: Arc::new(Inner {
                config,
                sender,
                permanent_seen: Mutex::new(HashSet::new()),
                permanent_count: AtomicU64::new(0),
                topic_unavailable_count: AtomicU64::new(0),
                batch_caps: Mutex::new(BatchCaps::default()),
                produce_counters,
            }),
        }
    }

    /// The validated configuration.
    pub fn config(&self) -> &KafkaPublisherConfig {
        &self.inner.config
    }

    /// Connects to the cluster and obtains a producer id now instead of on the first
    /// publish, so that a wrong address or credentials show at startup. Retries within
    /// the delivery timeout.
    pub async fn connect(&self) -> Result<(), KafkaPublishError> {
        let deadline = Instant::now() + self.inner.config.delivery_timeout;
        self.inner.sender.session(deadline).await.map(|_| ())
    }

    /// The producer id currently in use, if one was obtained (for diagnostics).
    pub fn producer_id(&self) -> Option<i64> {
        self.inner.sender.session.current().map(|s| s.producer_id)
    }

    /// Rows that failed permanently so far, each counted once.
    pub fn permanent_failures(&self) -> u64 {
        self.inner.permanent_count.load(Ordering::Relaxed)
    }

    /// Publish calls so far that met a topic they cannot write (the rows of that topic
    /// wait); also exported as [`TOPIC_UNAVAILABLE_METRIC`].
    pub fn topic_unavailable(&self) -> u64 {
        self.inner.topic_unavailable_count.load(Ordering::Relaxed)
    }

    /// Changes of a topic's partition count this publisher noticed in metadata (each is
    /// also a WARN and counted in [`PARTITION_CHANGES_METRIC`](crate::PARTITION_CHANGES_METRIC)).
    pub fn partition_changes(&self) -> u64 {
        self.inner.sender.cluster.partition_changes()
    }

    /// Produce requests this publisher (and its clones) sent so far, each counted once
    /// however many partitions it carried; also exported as
    /// [`PRODUCE_REQUESTS_METRIC`](crate::PRODUCE_REQUESTS_METRIC). Compared with
    /// [`KafkaPublisher::produce_batches`] it shows how much concurrent publish calls
    /// shared requests.
    pub fn produce_requests(&self) -> u64 {
        self.inner.produce_counters.requests()
    }

    /// Partition record batches carried by those requests (a resent batch counts each
    /// time); also exported as [`PRODUCE_BATCHES_METRIC`](crate::PRODUCE_BATCHES_METRIC).
    pub fn produce_batches(&self) -> u64 {
        self.inner.produce_counters.batches()
    }

    fn batch_caps(&self) -> std::sync::MutexGuard<'_, BatchCaps> {
        self.inner
            .batch_caps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Partition counts for the topics of `batch`, from the cache or one metadata
    /// request; topics that could not be resolved map to their error.
    async fn partition_counts(
        &self,
        batch: &[OutboxMessage],
        rows: usize,
        deadline: Instant,
    ) -> HashMap<String, Result<NonZeroU32, KafkaPublishError>> {
        let cluster = &self.inner.sender.cluster;
        let mut counts = HashMap::new();
        let mut missing = Vec::new();
        for m in &batch[..rows] {
            if counts.contains_key(&m.topic) || missing.contains(&m.topic) {
                continue;
            }
            match cluster
                .topic(&m.topic)
                .and_then(|v| NonZeroU32::new(u32::try_from(v.partition_count()).unwrap_or(0)))
            {
                Some(n) => {
                    counts.insert(m.topic.clone(), Ok(n));
                }
                None => missing.push(m.topic.clone()),
            }
        }
        if missing.is_empty() {
            return counts;
        }
        // A broker that cannot be reached is retried (reconnecting) until the deadline;
        // an error about a topic itself goes back to the relay at once.
        let sender = &self.inner.sender;
        let mut pause = RetryPause::new(sender.backoff());
        let refreshed = loop {
            match cluster.refresh(&missing).await {
                Err(e) if !e.is_permanent() && pause.wait(deadline).await => {
                    debug!(error = %e, "metadata unavailable; retrying");
                }
                other => break other,
            }
        };
        match refreshed {
            Ok(mut errors) => {
                for topic in missing {
                    let result = match errors.remove(&topic) {
                        Some(e) => Err(missing_after_refresh(e)),
                        None => cluster
                            .topic(&topic)
                            .and_then(|v| {
                                NonZeroU32::new(u32::try_from(v.partition_count()).unwrap_or(0))
                            })
                            .ok_or_else(|| {
                                missing_after_refresh(topic_error(
                                    &topic,
                                    -1,
                                    code::UNKNOWN_TOPIC_OR_PARTITION,
                                ))
                            }),
                    };
                    counts.insert(topic, result);
                }
            }
            Err(e) => {
                // The first topic without metadata carries the error; planning stops there.
                if let Some(first) = missing.into_iter().next() {
                    counts.insert(first, Err(e));
                }
            }
        }
        counts
    }

    async fn publish_inner(&self, batch: &[OutboxMessage]) -> PublishOutcome {
        if batch.is_empty() {
            return PublishOutcome::all(0);
        }
        let config = &self.inner.config;
        let sender = &self.inner.sender;
        let deadline = Instant::now() + config.delivery_timeout;

        let mut decoded = Decoded::new(batch);
        let mut counts = self.partition_counts(batch, decoded.rows(), deadline).await;
        // A copy for this call: the plan must not hold the lock across the sends.
        let caps = self.batch_caps().clone();
        let limits = Limits {
            max_request_size: config.max_request_size,
            client_id_len: config.client_id.len(),
            message_id_header: &config.message_id_header,
            batch_caps: Some(&caps),
        };
        let plan = plan(batch, &mut decoded, limits, |topic| {
            match counts.get(topic) {
                Some(Ok(n)) => Ok(*n),
                Some(Err(_)) => match counts.remove(topic) {
                    Some(Err(e)) => Err(e),
                    _ => Err(topic_error(topic, -1, code::UNKNOWN_TOPIC_OR_PARTITION)),
                },
                // Only reachable when the metadata request itself failed for an earlier topic.
                None => Err(topic_error(topic, -1, code::LEADER_NOT_AVAILABLE)),
            }
        });
        debug!(
            rows = batch.len(),
            planned = plan.planned,
            partitions = plan.groups.len(),
            "publish planned"
        );

        // One producer id for the whole call, before anything is sent.
        let outcomes: Vec<GroupOutcome> = if plan.groups.is_empty() {
            Vec::new()
        } else if let Err(e) = sender.session(deadline).await {
            return self.outcome(batch, 0, e);
        } else {
            join_all(plan.groups.iter().map(|g| sender.send_group(g, deadline))).await
        };

        // Which rows were appended, and the error of each failed partition's first
        // unappended row.
        let mut acked = vec![false; batch.len()];
        let mut errors: HashMap<usize, KafkaPublishError> = HashMap::new();
        for (group, outcome) in plan.groups.iter().zip(outcomes) {
            for chunk in &group.chunks[..outcome.acknowledged_chunks] {
                for &row in &chunk.rows {
                    acked[row] = true;
                }
            }
            if let Some(error) = outcome.error {
                let failed_chunk = group.chunks.get(outcome.acknowledged_chunks);
                if let (KafkaPublishError::BatchTooLarge { topic, .. }, Some(chunk)) =
                    (&error, failed_chunk)
                {
                    let cap = self
                        .batch_caps()
                        .refused(topic, chunk.rows.len(), chunk.size());
                    warn!(
                        %topic,
                        records = chunk.rows.len(),
                        estimated_bytes = chunk.size(),
                        cap_bytes = cap,
                        "the broker refused a record batch as too large for the topic; its batches are capped and the rows retried"
                    );
                }
                let first_row = failed_chunk.and_then(|c| c.rows.first().copied());
                if let Some(row) = first_row {
                    self.note_permanent(&batch[row], &error);
                    errors.insert(row, error);
                }
            }
        }
        let prefix = acked.iter().take_while(|a| **a).count();
        if prefix == batch.len() {
            return PublishOutcome::all(prefix);
        }
        let error = match errors.remove(&prefix) {
            Some(e) => e,
            None => match plan.failure {
                Some(e) if prefix == plan.planned => {
                    self.note_permanent(&batch[prefix], &e);
                    e
                }
                // Unreachable by construction: the first unacknowledged planned row is
                // always the first row of its partition's failed chunk.
                _ => KafkaPublishError::Encode(format!(
                    "row {prefix} was neither acknowledged nor failed"
                )),
            },
        };
        self.outcome(batch, prefix, error)
    }

    fn outcome(
        &self,
        batch: &[OutboxMessage],
        prefix: usize,
        error: KafkaPublishError,
    ) -> PublishOutcome {
        let message_id = batch[prefix].message_id;
        PublishOutcome::partial(prefix, error.into_publish_error(message_id))
    }

    /// Logs a permanent failure once per row, with its message id, and counts it.
    fn note_permanent(&self, row: &OutboxMessage, error: &KafkaPublishError) {
        if !error.is_permanent() {
            return;
        }
        if let Some((topic, reason)) = error.topic_unavailable() {
            self.inner
                .topic_unavailable_count
                .fetch_add(1, Ordering::Relaxed);
            metrics::counter!(
                TOPIC_UNAVAILABLE_METRIC,
                "topic" => topic.to_owned(),
                "reason" => reason.label()
            )
            .increment(1);
        }
        let first_time = {
            let mut seen = self
                .inner
                .permanent_seen
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if seen.len() >= REMEMBERED_FAILURES {
                seen.clear();
            }
            seen.insert(row.message_id)
        };
        if first_time {
            self.inner.permanent_count.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(PERMANENT_FAILURES_METRIC).increment(1);
            // WARN, not ERROR: the relay handles it (parks the row, or retries a setup
            // problem); an operator is told through the relay's own log and metrics.
            if error.blames_row() {
                warn!(
                    message_id = %row.message_id,
                    topic = %row.topic,
                    %error,
                    "the record is refused for good; the relay parks the row after max_publish_attempts"
                );
            } else {
                warn!(
                    message_id = %row.message_id,
                    topic = %row.topic,
                    %error,
                    "publishing is refused by the setup (not this row); its rows wait, retried with backoff, until an operator fixes it"
                );
            }
        }
    }
}

/// The builder's last step lives with what it builds, so the configuration knows nothing
/// of the publisher.
impl KafkaPublisherBuilder {
    /// Validates the settings and creates the publisher. No connection is opened
    /// until the first publish (or [`KafkaPublisher::connect`]).
    pub fn build(self) -> Result<KafkaPublisher, ConfigError> {
        Ok(KafkaPublisher::from_config(self.build_config()?))
    }
}

impl Publisher for KafkaPublisher {
    async fn publish(&self, batch: &[OutboxMessage]) -> PublishOutcome {
        let span = info_span!("kafka_publish", rows = batch.len());
        #[cfg(feature = "otel")]
        let producer_spans = span.in_scope(|| crate::producer_span::ProducerSpans::open(batch));
        let outcome = self.publish_inner(batch).instrument(span).await;
        #[cfg(feature = "otel")]
        producer_spans.close(&outcome);
        outcome
    }
}

/// A topic the brokers still do not know after a fresh metadata request does not exist
/// (or is not visible to this client): its rows wait until it is created, without being
/// parked (a broker-side configuration fault, not the rows'). A produce answer with the
/// same code stays retryable at once (a leader moving, a topic being created).
fn missing_after_refresh(error: KafkaPublishError) -> KafkaPublishError {
    match error {
        KafkaPublishError::Broker {
            code: code::UNKNOWN_TOPIC_OR_PARTITION,
            topic,
            ..
        } => KafkaPublishError::TopicUnavailable {
            topic,
            reason: TopicUnavailableReason::Missing,
        },
        other => other,
    }
}

#[cfg(test)]
#[path = "publisher_tests.rs"]
mod missing_topic_tests;
