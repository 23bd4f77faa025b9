//! The only module that touches rskafka's unstable protocol layer.
//!
//! rskafka 0.6 has no idempotent producer in its public API. Its feature
//! `unstable-fuzzing` makes the protocol layer public: the `Messenger` (one broker
//! connection with framing, correlation ids, pipelining, ApiVersions negotiation and
//! SASL), the request and response traits and primitives, and the Metadata types. That
//! layer carries no semver promise, so the version is pinned exactly (`=0.6.0`) and
//! everything that names it lives under this module; the rest of the crate sees only
//! [`Connection`], its failures ([`WireError`], in `error`) and the plain answers it
//! returns (in `answers`).

mod answers;
mod error;
mod init_producer_id;
mod produce;
mod stream;

#[cfg(test)]
mod roundtrip_tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rskafka::client::SaslConfig;
use rskafka::messenger::{Messenger, RequestError};
use rskafka::protocol::messages::{MetadataRequest, MetadataRequestTopic};
use rskafka::protocol::primitives::{Int16, String_};
use tokio::io::BufStream;

pub(crate) use self::answers::{
    BrokerInfo, MetadataInfo, PartitionInfo, ProduceAnswer, ProducerIdAnswer, TopicInfo, error_name,
};
pub(crate) use self::error::WireError;
use self::error::sasl_mechanism;
use self::init_producer_id::InitProducerIdRequest;
pub(crate) use self::produce::PartitionBatch;
use self::produce::ProduceBatchRequest;
use self::stream::Stream;
use crate::coalesce::queue::{ProduceQueue, ProduceSettings};

/// How to open a broker connection.
#[derive(Debug, Clone)]
pub(crate) struct ConnectOptions {
    pub client_id: Arc<str>,
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub sasl: Option<SaslConfig>,
    /// The largest response frame accepted.
    pub max_response_size: usize,
    /// Bound on connecting (TCP, TLS, version sync and SASL together) and on each request.
    pub timeout: Duration,
    /// How produce requests are gathered on each connection.
    pub produce: ProduceSettings,
}

/// One connection to one broker, negotiated and authenticated. Requests on it are
/// pipelined; once a request fails at the transport level or times out, the
/// connection is marked broken and must be replaced. Produce requests go through its
/// [`ProduceQueue`], which gathers concurrent partitions' batches into shared requests.
#[derive(Debug)]
pub(crate) struct Connection {
    addr: String,
    messenger: Messenger<BufStream<Stream>>,
    timeout: Duration,
    broken: AtomicBool,
    produce_queue: ProduceQueue,
}

impl Connection {
    /// Connects to `addr`, negotiates API versions and runs SASL if configured, all
    /// within `options.timeout`.
    pub(crate) async fn open(
        addr: &str,
        options: &ConnectOptions,
    ) -> Result<Connection, WireError> {
        let timeout = options.timeout;
        let timed_out = || WireError::Connect {
            addr: addr.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"),
        };
        tokio::time::timeout(timeout, Self::open_inner(addr, options))
            .await
            .map_err(|_| timed_out())?
    }

    async fn open_inner(addr: &str, options: &ConnectOptions) -> Result<Connection, WireError> {
        let stream = Stream::connect(addr, options.tls.as_ref())
            .await
            .map_err(|source| WireError::Connect {
                addr: addr.to_owned(),
                source,
            })?;
        let mut messenger = Messenger::new(
            BufStream::new(stream),
            options.max_response_size,
            Arc::clone(&options.client_id),
        );
        messenger
            .sync_versions()
            .await
            .map_err(|e| WireError::Handshake {
                addr: addr.to_owned(),
                message: e.to_string(),
            })?;
        if let Some(sasl) = &options.sasl {
            messenger
                .do_sasl(sasl.clone())
                .await
                .map_err(|e| WireError::Sasl {
                    addr: addr.to_owned(),
                    mechanism: sasl_mechanism(sasl),
                    message: e.to_string(),
                })?;
        }
        Ok(Connection {
            addr: addr.to_owned(),
            messenger,
            timeout: options.timeout,
            broken: AtomicBool::new(false),
            produce_queue: ProduceQueue::new(&options.produce),
        })
    }

    /// The address this connection was opened to.
    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    /// The produce coalescer of this connection.
    pub(crate) fn produce_queue(&self) -> &ProduceQueue {
        &self.produce_queue
    }

    /// A transport failure on this connection that did not come from the stream.
    pub(crate) fn transport_error(&self, message: &str) -> WireError {
        WireError::Transport {
            addr: self.addr.clone(),
            message: message.to_owned(),
        }
    }

    /// Whether a request failed at the transport level or timed out: the stream may be
    /// out of step, so the connection must not be reused.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    fn request_failed(&self, api: &'static str, error: RequestError) -> WireError {
        if let RequestError::NoVersionMatch { .. } = error {
            return WireError::Unsupported {
                addr: self.addr.clone(),
                api,
            };
        }
        self.broken.store(true, Ordering::Relaxed);
        WireError::Transport {
            addr: self.addr.clone(),
            message: error.to_string(),
        }
    }

    async fn with_timeout<T>(
        &self,
        fut: impl Future<Output = Result<T, WireError>>,
    ) -> Result<T, WireError> {
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(result) => result,
            Err(_) => {
                // A late answer would arrive out of step with what we wait for next.
                self.broken.store(true, Ordering::Relaxed);
                Err(WireError::Timeout {
                    addr: self.addr.clone(),
                    timeout: self.timeout,
                })
            }
        }
    }

    /// Metadata for `topics` (brokers and partition leaders). Topics the broker does not
    /// know may be created by it if its configuration allows auto-creation, as with
    /// any Kafka producer.
    pub(crate) async fn metadata(&self, topics: &[String]) -> Result<MetadataInfo, WireError> {
        let request = MetadataRequest {
            topics: Some(
                topics
                    .iter()
                    .map(|t| MetadataRequestTopic {
                        name: String_(t.clone()),
                    })
                    .collect(),
            ),
            allow_auto_topic_creation: None,
        };
        let response = self
            .with_timeout(async {
                self.messenger
                    .request(request)
                    .await
                    .map_err(|e| self.request_failed("Metadata", e))
            })
            .await?;
        Ok(MetadataInfo {
            brokers: response
                .brokers
                .into_iter()
                .map(|b| BrokerInfo {
                    node_id: b.node_id.0,
                    addr: format_addr(&b.host.0, b.port.0),
                })
                .collect(),
            topics: response
                .topics
                .into_iter()
                .map(|t| TopicInfo {
                    name: t.name.0,
                    error_code: Int16::from(t.error).0,
                    partitions: t
                        .partitions
                        .into_iter()
                        .map(|p| PartitionInfo {
                            index: p.partition_index.0,
                            leader: p.leader_id.0,
                            error_code: Int16::from(p.error).0,
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    /// Asks for a new producer id and epoch (non-transactional idempotent producer).
    pub(crate) async fn init_producer_id(&self) -> Result<ProducerIdAnswer, WireError> {
        let response = self
            .with_timeout(async {
                self.messenger
                    .request(InitProducerIdRequest)
                    .await
                    .map_err(|e| self.request_failed("InitProducerId", e))
            })
            .await?;
        Ok(ProducerIdAnswer {
            error_code: response.error_code,
            producer_id: response.producer_id,
            producer_epoch: response.producer_epoch,
        })
    }

    /// Sends record batches of distinct partitions in one request with acks=all and
    /// returns the broker's answer for each, in the order given. The outer error is a
    /// failure of the whole request; a partition missing from the answer gets a
    /// transport error of its own (and the connection is no longer trusted).
    pub(crate) async fn produce(
        &self,
        batches: &[PartitionBatch<'_>],
    ) -> Result<Vec<Result<ProduceAnswer, WireError>>, WireError> {
        let request = ProduceBatchRequest {
            batches,
            timeout_ms: i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX),
        };
        let response = self
            .with_timeout(async {
                self.messenger
                    .request(&request)
                    .await
                    .map_err(|e| self.request_failed("Produce", e))
            })
            .await?;
        Ok(batches
            .iter()
            .map(|b| {
                response
                    .responses
                    .iter()
                    .filter(|t| t.name.0 == b.topic)
                    .flat_map(|t| &t.partition_responses)
                    .find(|p| p.index.0 == b.partition)
                    .map(|p| ProduceAnswer {
                        error_code: Int16::from(p.error).0,
                        base_offset: p.base_offset.0,
                    })
                    .ok_or_else(|| {
                        // An answer without this partition: treat like a lost answer.
                        self.broken.store(true, Ordering::Relaxed);
                        WireError::Transport {
                            addr: self.addr.clone(),
                            message: format!("produce answer without {}/{}", b.topic, b.partition),
                        }
                    })
            })
            .collect())
    }
}

/// `host:port`, bracketing IPv6 literals.
fn format_addr(host: &str, port: i32) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
