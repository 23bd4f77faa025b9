//! Configuration from flags, environment variables and an optional TOML file, in that
//! order of precedence, validated completely before anything starts.
//!
//! The flags and variables are parsed by clap (`crate::cli`); here are the file
//! (`file`), the defaults this binary sets (`defaults`), the checks of single values
//! (`values`), the merge of all sources into a checked configuration (`resolve`), what
//! that configuration holds (`settings`) and how it can fail (`error`).

mod defaults;
mod error;
mod file;
mod resolve;
mod settings;
mod values;

pub use defaults::{
    DEFAULT_BACKLOG_SAMPLING, DEFAULT_CLIENT_ID, DEFAULT_LISTEN, DEFAULT_MIGRATE,
    DEFAULT_SHUTDOWN_GRACE, DEFAULT_TLS,
};
pub use error::ConfigError;
pub use settings::{Config, DatabaseConfig, SaslMechanism};
pub use values::park_policy_name;
