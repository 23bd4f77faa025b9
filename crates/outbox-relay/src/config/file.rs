//! The `--config` TOML file: the same options as the flags (`-` becomes `_`), below the
//! flags and the environment in precedence. Durations and the other parsed values stay
//! text here and are parsed by the helpers below, so a bad value names its key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::error::ConfigError;
use crate::duration::parse_duration;

/// The same options as a TOML file; unknown keys are an error. Each field is the
/// option of the same name, as text where the value is parsed later.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub(super) database_url: Option<String>,
    pub(super) migrate: Option<bool>,
    pub(super) schema: Option<String>,
    pub(super) messages_table: Option<String>,
    pub(super) leases_table: Option<String>,
    pub(super) relays_table: Option<String>,
    pub(super) parked_table: Option<String>,
    pub(super) brokers: Option<String>,
    pub(super) client_id: Option<String>,
    pub(super) tls: Option<bool>,
    pub(super) tls_ca_file: Option<PathBuf>,
    pub(super) sasl_mechanism: Option<String>,
    pub(super) sasl_username: Option<String>,
    pub(super) sasl_password: Option<String>,
    pub(super) relay_id: Option<String>,
    pub(super) bucket_count: Option<u32>,
    pub(super) batch_size: Option<usize>,
    pub(super) poll_interval: Option<String>,
    pub(super) lease_duration: Option<String>,
    pub(super) lease_renew_interval: Option<String>,
    pub(super) max_publish_duration: Option<String>,
    pub(super) message_id_header: Option<String>,
    pub(super) max_request_size: Option<usize>,
    pub(super) metrics_name: Option<String>,
    pub(super) backlog_sampling: Option<bool>,
    pub(super) metrics_interval: Option<String>,
    pub(super) metrics_timeout: Option<String>,
    pub(super) metrics_bucket_zero_only: Option<bool>,
    pub(super) max_publish_attempts: Option<String>,
    pub(super) park_policy: Option<String>,
    pub(super) error_backoff: Option<String>,
    pub(super) max_error_backoff: Option<String>,
    pub(super) listen: Option<String>,
    pub(super) shutdown_grace: Option<String>,
    pub(super) log_format: Option<String>,
    pub(super) notify: Option<String>,
    pub(super) notify_url: Option<String>,
    pub(super) notify_channel: Option<String>,
}

impl FileConfig {
    /// The file at `path`, or an empty one (every key unset) without `--config`.
    pub(super) fn read(path: Option<&Path>) -> Result<Self, ConfigError> {
        match path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
                toml::from_str::<FileConfig>(&text).map_err(|e| ConfigError::File {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })
            }
            None => Ok(FileConfig::default()),
        }
    }
}

/// A config-file value through `parse`; a refusal names the option.
pub(super) fn file_value<T>(
    option: &'static str,
    value: Option<String>,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, ConfigError> {
    value
        .map(|v| parse(&v).map_err(|reason| ConfigError::Invalid { option, reason }))
        .transpose()
}

/// A config-file duration (`500ms`, `30s`); a refusal names the option.
pub(super) fn file_duration(
    option: &'static str,
    value: Option<String>,
) -> Result<Option<Duration>, ConfigError> {
    file_value(option, value, parse_duration)
}
