//! The one error a configuration can fail with; every variant names the option, so the
//! operator knows which flag, variable or file key to fix.

use std::path::PathBuf;

use outbox_core::{OptionsError, SchemaError};

/// A configuration problem, naming the option.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required option is missing.
    #[error("{0} is required (flag --{1}, environment {2}, or `{3}` in the config file)")]
    Missing(&'static str, &'static str, &'static str, &'static str),
    /// The file could not be read or parsed.
    #[error("config file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A value is invalid.
    #[error("{option}: {reason}")]
    Invalid {
        /// The option.
        option: &'static str,
        /// Why.
        reason: String,
    },
    /// The relay options broke a rule.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The table names, bucket count or message-id header broke a rule.
    #[error(transparent)]
    Schema(#[from] SchemaError),
}
