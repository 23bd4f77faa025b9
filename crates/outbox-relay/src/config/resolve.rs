//! Merging the sources: the flags and environment ([`Cli`], as clap read them) over the
//! `--config` file over the defaults, into a [`Config`] checked as a whole (or, for the
//! operator commands, only the [`DatabaseConfig`]). Nothing starts before this passes.

use outbox_core::{OutboxSchema, RelayOptions};

use super::defaults::{
    DEFAULT_BACKLOG_SAMPLING, DEFAULT_CLIENT_ID, DEFAULT_LISTEN, DEFAULT_MIGRATE,
    DEFAULT_SHUTDOWN_GRACE, DEFAULT_TLS,
};
use super::error::ConfigError;
use super::file::{FileConfig, file_duration, file_value};
use super::settings::{Config, DatabaseConfig, Sasl, SaslMechanism};
use super::values::{database_url, parse_attempts, parse_park_policy, tables};
use crate::cli::options::{Cli, parse_log_format, parse_notify_kind};

impl Cli {
    /// The database, table names, bucket count and lease duration only (for
    /// `outbox-relay parked ...` and `outbox-relay status`, which need no broker).
    pub fn resolve_database(&self) -> Result<DatabaseConfig, ConfigError> {
        let file = FileConfig::read(self.config.as_deref())?;
        let database_url = database_url(self.database_url.clone(), file.database_url.clone())?;
        let tables = tables([
            self.schema.clone().or(file.schema),
            self.messages_table.clone().or(file.messages_table),
            self.leases_table.clone().or(file.leases_table),
            self.relays_table.clone().or(file.relays_table),
            self.parked_table.clone().or(file.parked_table),
        ])?;
        let mut schema = OutboxSchema::builder().tables(tables);
        if let Some(v) = self.bucket_count.or(file.bucket_count) {
            schema = schema.bucket_count(v);
        }
        // The relays' value, so that `status` judges their heartbeats by their own rule;
        // the relays refuse zero, and so does this.
        let lease_duration = self
            .lease_duration
            .or(file_duration("lease-duration", file.lease_duration)?)
            .unwrap_or_else(|| RelayOptions::default().lease_duration());
        if lease_duration.is_zero() {
            return Err(ConfigError::Invalid {
                option: "lease-duration",
                reason: "must be above zero".into(),
            });
        }
        Ok(DatabaseConfig {
            database_url,
            schema: schema.build()?,
            lease_duration,
        })
    }

    /// Merges the file under the flags and environment, and validates everything.
    pub fn resolve(self) -> Result<Config, ConfigError> {
        let file = FileConfig::read(self.config.as_deref())?;
        let database_url = database_url(self.database_url, file.database_url)?;
        let brokers_text = self.brokers.or(file.brokers).ok_or(ConfigError::Missing(
            "the Kafka bootstrap servers",
            "brokers",
            "OUTBOX_BROKERS",
            "brokers",
        ))?;
        let brokers: Vec<String> = brokers_text
            .split(',')
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .map(str::to_owned)
            .collect();
        if brokers.is_empty() {
            return Err(ConfigError::Invalid {
                option: "brokers",
                reason: "lists no server".into(),
            });
        }
        for broker in &brokers {
            let port_ok = broker
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if !port_ok {
                return Err(ConfigError::Invalid {
                    option: "brokers",
                    reason: format!("{broker:?} is not host:port"),
                });
            }
        }
        let sasl = match (
            self.sasl_mechanism.or(file.sasl_mechanism),
            self.sasl_username.or(file.sasl_username),
            self.sasl_password.or(file.sasl_password),
        ) {
            (None, None, None) => None,
            (Some(mechanism), Some(username), Some(password)) => {
                let mechanism = match mechanism.to_ascii_lowercase().as_str() {
                    "plain" => SaslMechanism::Plain,
                    "scram-sha-256" => SaslMechanism::ScramSha256,
                    "scram-sha-512" => SaslMechanism::ScramSha512,
                    other => {
                        return Err(ConfigError::Invalid {
                            option: "sasl-mechanism",
                            reason: format!("{other:?}; use plain, scram-sha-256 or scram-sha-512"),
                        });
                    }
                };
                Some(Sasl {
                    mechanism,
                    username,
                    password,
                })
            }
            _ => {
                return Err(ConfigError::Invalid {
                    option: "sasl-mechanism",
                    reason: "SASL needs a mechanism, a user name and a password together".into(),
                });
            }
        };
        let listen = match self.listen {
            Some(addr) => addr,
            None => match file.listen {
                Some(text) => text.parse().map_err(|e| ConfigError::Invalid {
                    option: "listen",
                    reason: format!("{text:?}: {e}"),
                })?,
                None => DEFAULT_LISTEN,
            },
        };

        let tables = tables([
            self.schema.or(file.schema),
            self.messages_table.or(file.messages_table),
            self.leases_table.or(file.leases_table),
            self.relays_table.or(file.relays_table),
            self.parked_table.or(file.parked_table),
        ])?;
        let mut schema = OutboxSchema::builder().tables(tables);
        if let Some(v) = self.bucket_count.or(file.bucket_count) {
            schema = schema.bucket_count(v);
        }
        if let Some(v) = self.message_id_header.or(file.message_id_header) {
            schema = schema.message_id_header(v);
        }
        if let Some(v) = self.max_request_size.or(file.max_request_size) {
            schema = schema.max_request_size(v);
        }

        let mut b = RelayOptions::builder().schema(schema.build()?);
        if let Some(v) = self.relay_id.or(file.relay_id) {
            b = b.relay_id(v);
        }
        if let Some(v) = self.batch_size.or(file.batch_size) {
            b = b.batch_size(v);
        }
        macro_rules! duration {
            ($cli:expr, $file:expr, $option:literal, $setter:ident) => {
                if let Some(v) = $cli.or(file_duration($option, $file)?) {
                    b = b.$setter(v);
                }
            };
        }
        duration!(
            self.poll_interval,
            file.poll_interval,
            "poll-interval",
            poll_interval
        );
        duration!(
            self.lease_duration,
            file.lease_duration,
            "lease-duration",
            lease_duration
        );
        duration!(
            self.lease_renew_interval,
            file.lease_renew_interval,
            "lease-renew-interval",
            lease_renew_interval
        );
        duration!(
            self.max_publish_duration,
            file.max_publish_duration,
            "max-publish-duration",
            max_publish_duration
        );
        duration!(
            self.metrics_interval,
            file.metrics_interval,
            "metrics-interval",
            metrics_collection_interval
        );
        duration!(
            self.metrics_timeout,
            file.metrics_timeout,
            "metrics-timeout",
            metrics_collection_timeout
        );
        duration!(
            self.error_backoff,
            file.error_backoff,
            "error-backoff",
            error_backoff
        );
        duration!(
            self.max_error_backoff,
            file.max_error_backoff,
            "max-error-backoff",
            max_error_backoff
        );
        if let Some(v) = self.metrics_name.or(file.metrics_name) {
            b = b.metrics_name(v);
        }
        if let Some(v) = self.max_publish_attempts.or(file.max_publish_attempts) {
            b = b.max_publish_attempts(parse_attempts(&v)?);
        }
        if let Some(v) = self.park_policy.or(file.park_policy) {
            b = b.park_policy(parse_park_policy(&v)?);
        }
        b = b.backlog_sampling(
            self.backlog_sampling
                .or(file.backlog_sampling)
                .unwrap_or(DEFAULT_BACKLOG_SAMPLING),
        );
        if let Some(v) = self
            .metrics_bucket_zero_only
            .or(file.metrics_bucket_zero_only)
        {
            b = b.collect_metrics_on_bucket_zero_owner_only(v);
        }
        let relay = b.build()?;
        let shutdown_grace = match self.shutdown_grace {
            Some(d) => d,
            None => file_duration("shutdown-grace", file.shutdown_grace)?
                .unwrap_or(DEFAULT_SHUTDOWN_GRACE),
        };
        let log_format = match self.log_format {
            Some(format) => format,
            None => {
                file_value("log-format", file.log_format, parse_log_format)?.unwrap_or_default()
            }
        };
        let notify_kind = match self.notify {
            Some(kind) => kind,
            None => file_value("notify", file.notify, parse_notify_kind)?.unwrap_or_default(),
        };
        let notify = crate::notify::resolve(
            notify_kind,
            self.notify_url.or(file.notify_url),
            self.notify_channel.or(file.notify_channel),
            &database_url,
            relay.schema().tables(),
        )?;
        Ok(Config {
            database_url,
            migrate: self.migrate.or(file.migrate).unwrap_or(DEFAULT_MIGRATE),
            brokers,
            client_id: self
                .client_id
                .or(file.client_id)
                .unwrap_or_else(|| DEFAULT_CLIENT_ID.to_owned()),
            tls: self.tls.or(file.tls).unwrap_or(DEFAULT_TLS),
            tls_ca_file: self.tls_ca_file.or(file.tls_ca_file),
            sasl,
            relay,
            listen,
            shutdown_grace,
            log_format,
            notify,
        })
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
