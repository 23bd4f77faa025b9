//! Brokers, partition leaders and connections: the metadata cache and the connection
//! pool. A connection that failed is dropped and the next request reconnects;
//! partition leaders are re-resolved whenever an error points at stale metadata.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

use crate::error::{KafkaPublishError, code};
use crate::wire::{ConnectOptions, Connection, MetadataInfo, WireError};

/// What the cache knows about one topic.
#[derive(Debug, Clone)]
pub(crate) struct TopicView {
    /// Leader node of each partition, by partition index; -1 when unknown.
    pub leaders: Vec<i32>,
}

impl TopicView {
    /// Number of partitions.
    pub fn partition_count(&self) -> usize {
        self.leaders.len()
    }
}

#[derive(Debug)]
struct CachedTopic {
    view: TopicView,
    fetched: Instant,
    stale: bool,
}

#[derive(Debug, Default)]
struct State {
    brokers: HashMap<i32, String>,
    connections: HashMap<String, Arc<Connection>>,
    topics: HashMap<String, CachedTopic>,
    /// Rotates the first address tried for metadata, so one dead broker is not
    /// always asked first.
    next_bootstrap: usize,
}

/// The cluster as this publisher sees it.
#[derive(Debug)]
pub(crate) struct Cluster {
    options: ConnectOptions,
    bootstrap: Vec<String>,
    metadata_max_age: Duration,
    state: Mutex<State>,
    partition_changes: AtomicU64,
}

/// The counter of partition-count changes the publisher noticed in metadata, labelled
/// `topic`.
pub const PARTITION_CHANGES_METRIC: &str = "outbox.kafka.partition_count_changes";

impl Cluster {
    pub(crate) fn new(
        options: ConnectOptions,
        bootstrap: Vec<String>,
        metadata_max_age: Duration,
    ) -> Self {
        Cluster {
            options,
            bootstrap,
            metadata_max_age,
            state: Mutex::new(State::default()),
            partition_changes: AtomicU64::new(0),
        }
    }

    /// Partition-count changes noticed so far.
    pub(crate) fn partition_changes(&self) -> u64 {
        self.partition_changes.load(Ordering::Relaxed)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An open connection to `addr`, reusing a healthy one.
    pub(crate) async fn connection(&self, addr: &str) -> Result<Arc<Connection>, WireError> {
        if let Some(conn) = self
            .state()
            .connections
            .get(addr)
            .filter(|c| !c.is_broken())
        {
            return Ok(Arc::clone(conn));
        }
        debug!(broker = addr, "connecting");
        let conn = Arc::new(Connection::open(addr, &self.options).await?);
        let mut state = self.state();
        let entry = state
            .connections
            .entry(addr.to_owned())
            .or_insert_with(|| Arc::clone(&conn));
        if entry.is_broken() {
            *entry = Arc::clone(&conn);
        }
        Ok(Arc::clone(entry))
    }

    /// Forgets `conn` (after a failure on it) so the next request reconnects.
    pub(crate) fn discard(&self, conn: &Arc<Connection>) {
        let mut state = self.state();
        if state
            .connections
            .get(conn.addr())
            .is_some_and(|c| Arc::ptr_eq(c, conn))
        {
            state.connections.remove(conn.addr());
            info!(broker = conn.addr(), "dropped a failed broker connection");
        }
    }

    /// A connection to any broker: a healthy pooled one, else the known brokers and the
    /// bootstrap servers in turn.
    pub(crate) async fn any_connection(&self) -> Result<Arc<Connection>, WireError> {
        let candidates = {
            let mut state = self.state();
            if let Some(conn) = state.connections.values().find(|c| !c.is_broken()) {
                return Ok(Arc::clone(conn));
            }
            let mut list: Vec<String> = state.brokers.values().cloned().collect();
            list.sort();
            let start = state.next_bootstrap % self.bootstrap.len().max(1);
            state.next_bootstrap = state.next_bootstrap.wrapping_add(1);
            list.extend(
                self.bootstrap
                    .iter()
                    .cycle()
                    .skip(start)
                    .take(self.bootstrap.len())
                    .cloned(),
            );
            list.dedup();
            list
        };
        let mut last = None;
        for addr in candidates {
            match self.connection(&addr).await {
                Ok(conn) => return Ok(conn),
                Err(e) if e.is_permanent() => return Err(e),
                Err(e) => {
                    debug!(broker = %addr, error = %e, "broker unreachable");
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| WireError::Transport {
            addr: String::new(),
            message: "no broker address known".into(),
        }))
    }

    /// The cached view of `topic` if it is fresh.
    pub(crate) fn topic(&self, topic: &str) -> Option<TopicView> {
        let state = self.state();
        state
            .topics
            .get(topic)
            .filter(|t| !t.stale && t.fetched.elapsed() < self.metadata_max_age)
            .map(|t| t.view.clone())
    }

    /// Marks `topic`'s leaders as suspect: the next lookup fetches metadata.
    pub(crate) fn mark_stale(&self, topic: &str) {
        if let Some(t) = self.state().topics.get_mut(topic) {
            t.stale = true;
        }
    }

    /// Fetches metadata for `topics` and caches what came back. Per-topic errors are
    /// returned in the map; topics answered without error are cached.
    pub(crate) async fn refresh(
        &self,
        topics: &[String],
    ) -> Result<HashMap<String, KafkaPublishError>, KafkaPublishError> {
        let conn = self.any_connection().await.map_err(connection_error)?;
        let info = match conn.metadata(topics).await {
            Ok(info) => info,
            Err(e) => {
                self.discard(&conn);
                return Err(connection_error(e));
            }
        };
        Ok(self.store(info))
    }

    fn store(&self, info: MetadataInfo) -> HashMap<String, KafkaPublishError> {
        let mut errors = HashMap::new();
        let mut state = self.state();
        if !info.brokers.is_empty() {
            state.brokers = info
                .brokers
                .into_iter()
                .map(|b| (b.node_id, b.addr))
                .collect();
        }
        for topic in info.topics {
            let partition_error = topic
                .partitions
                .iter()
                .find(|p| p.error_code != code::NONE && p.leader < 0);
            if topic.error_code != code::NONE || topic.partitions.is_empty() {
                let code = if topic.partitions.is_empty() && topic.error_code == code::NONE {
                    code::UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    topic.error_code
                };
                errors.insert(topic.name.clone(), topic_error(&topic.name, -1, code));
                state.topics.remove(&topic.name);
                continue;
            }
            if let Some(p) = partition_error {
                debug!(topic = %topic.name, partition = p.index, code = p.error_code, "partition without leader");
            }
            let count = topic
                .partitions
                .iter()
                .map(|p| p.index + 1)
                .max()
                .unwrap_or(0);
            let mut leaders = vec![-1; usize::try_from(count).unwrap_or(0)];
            for p in &topic.partitions {
                if let Some(slot) = usize::try_from(p.index)
                    .ok()
                    .and_then(|i| leaders.get_mut(i))
                {
                    *slot = p.leader;
                }
            }
            let before = state.topics.get(&topic.name).map(|t| t.view.leaders.len());
            if let Some(before) = before.filter(|b| *b != leaders.len()) {
                self.partition_changes.fetch_add(1, Ordering::Relaxed);
                metrics::counter!(PARTITION_CHANGES_METRIC, "topic" => topic.name.clone())
                    .increment(1);
                warn!(
                    topic = %topic.name,
                    before,
                    now = leaders.len(),
                    "the topic's partition count changed: keyed records of some keys now go to another partition, so a consumer may see a key's new records before its older ones on the old partition (see the README, \"Partitions added\")"
                );
            }
            state.topics.insert(
                topic.name,
                CachedTopic {
                    view: TopicView { leaders },
                    fetched: Instant::now(),
                    stale: false,
                },
            );
        }
        errors
    }

    /// The connection to the leader of `topic`/`partition`, refreshing metadata when
    /// the cache is stale or names no leader.
    pub(crate) async fn leader(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Arc<Connection>, KafkaPublishError> {
        let leader_addr = |this: &Self| -> Option<String> {
            let view = this.topic(topic)?;
            let leader = *view.leaders.get(usize::try_from(partition).ok()?)?;
            this.state().brokers.get(&leader).cloned()
        };
        let addr = match leader_addr(self) {
            Some(addr) => addr,
            None => {
                let mut errors = self.refresh(&[topic.to_owned()]).await?;
                if let Some(e) = errors.remove(topic) {
                    return Err(e);
                }
                leader_addr(self)
                    .ok_or_else(|| topic_error(topic, partition, code::LEADER_NOT_AVAILABLE))?
            }
        };
        self.connection(&addr).await.map_err(connection_error)
    }
}

/// A wire failure as a publish error.
pub(crate) fn connection_error(e: WireError) -> KafkaPublishError {
    KafkaPublishError::Connection {
        permanent: e.is_permanent(),
        message: e.to_string(),
    }
}

/// A broker error code about a topic or partition as a publish error.
pub(crate) fn topic_error(topic: &str, partition: i32, code: i16) -> KafkaPublishError {
    KafkaPublishError::from_code(
        topic,
        partition,
        code,
        !crate::error::is_retryable_setup_code(code),
    )
}
