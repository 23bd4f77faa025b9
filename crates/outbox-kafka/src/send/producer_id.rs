//! Obtaining the idempotent producer's identity (InitProducerId), shared by every
//! partition's send.

use tokio::time::Instant;
use tracing::debug;

use super::{PartitionSender, RetryPause};
use crate::cluster::connection_error;
use crate::error::{KafkaPublishError, is_busy_code, is_retryable_setup_code};
use crate::session::Session;
use crate::wire::error_name;

impl PartitionSender {
    /// The current producer session, asking the cluster for a new producer id when
    /// there is none (first use, or after an invalidation). A lost connection keeps the
    /// session: Apache Kafka keeps producer state across a reconnect and a restart, so a
    /// resend under the same id and sequence is recognised; only the broker's own answer
    /// (unknown producer id, out-of-order sequence, fenced epoch) retires the id.
    pub(crate) async fn session(&self, deadline: Instant) -> Result<Session, KafkaPublishError> {
        if let Some(s) = self.session.current() {
            return Ok(s);
        }
        let _init = self.session.init_lock.lock().await;
        if let Some(s) = self.session.current() {
            return Ok(s);
        }
        let mut pause = RetryPause::new(self.backoff());
        loop {
            let last = match self.cluster.any_connection().await {
                Err(e) if e.is_permanent() => return Err(connection_error(e)),
                Err(e) => connection_error(e),
                Ok(conn) => match conn.init_producer_id().await {
                    Ok(answer) if answer.error_code == 0 && answer.producer_id >= 0 => {
                        return Ok(self
                            .session
                            .install(answer.producer_id, answer.producer_epoch));
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
            if !pause.wait(deadline).await {
                return Err(last);
            }
        }
    }
}
