//! `--help` with every option's default, taken from where the default lives (the
//! library's constants and `RelayOptions::default()`, this crate's constants): the help
//! cannot drift from what the relay does.
//!
//! The options stay `Option<T>` without a clap default, because an unset flag must fall
//! through to the environment and then to the config file; the defaults are appended to
//! the help text as `[default: ...]` instead.

use clap::{Arg, Command, CommandFactory};
use outbox_core::{OutboxSchema, RelayOptions};

use crate::cli::options::Cli;
use crate::config::{
    DEFAULT_BACKLOG_SAMPLING, DEFAULT_CLIENT_ID, DEFAULT_LISTEN, DEFAULT_MIGRATE,
    DEFAULT_SHUTDOWN_GRACE, DEFAULT_TLS, park_policy_name,
};
use crate::duration::format_duration;
use crate::logging::LogFormat;
use crate::notify::{DEFAULT_CHANNEL_ENVIRONMENT, NotifyKind};

/// Each option with a default, and that default as `--help` shows it.
pub fn defaults() -> Vec<(&'static str, String)> {
    let relay = RelayOptions::default();
    let schema = OutboxSchema::default();
    let tables = schema.tables();
    let d = format_duration;
    vec![
        ("migrate", DEFAULT_MIGRATE.to_string()),
        ("messages-table", tables.messages().to_owned()),
        ("leases-table", tables.leases().to_owned()),
        ("relays-table", tables.relays().to_owned()),
        ("parked-table", tables.parked().to_owned()),
        ("client-id", DEFAULT_CLIENT_ID.to_owned()),
        ("tls", DEFAULT_TLS.to_string()),
        ("bucket-count", schema.bucket_count().to_string()),
        ("batch-size", relay.batch_size().to_string()),
        ("poll-interval", d(relay.poll_interval())),
        ("lease-duration", d(relay.lease_duration())),
        ("lease-renew-interval", d(relay.lease_renew_interval())),
        ("max-request-size", schema.max_request_size().to_string()),
        ("message-id-header", schema.message_id_header().to_owned()),
        ("metrics-name", relay.metrics_name().to_owned()),
        ("backlog-sampling", DEFAULT_BACKLOG_SAMPLING.to_string()),
        ("metrics-interval", d(relay.metrics_collection_interval())),
        ("metrics-timeout", d(relay.metrics_collection_timeout())),
        (
            "metrics-bucket-zero-only",
            relay
                .collect_metrics_on_bucket_zero_owner_only()
                .to_string(),
        ),
        (
            "max-publish-attempts",
            relay
                .max_publish_attempts()
                .map_or_else(|| "never".to_owned(), |n| n.to_string()),
        ),
        (
            "park-policy",
            park_policy_name(relay.park_policy())
                .unwrap_or("the library's")
                .to_owned(),
        ),
        ("error-backoff", d(relay.error_backoff())),
        ("max-error-backoff", d(relay.max_error_backoff())),
        ("listen", DEFAULT_LISTEN.to_string()),
        ("shutdown-grace", d(DEFAULT_SHUTDOWN_GRACE)),
        ("log-format", LogFormat::default().to_string()),
        ("notify", NotifyKind::default().to_string()),
        (
            "notify-channel",
            format!("outbox_<messages table>_{DEFAULT_CHANNEL_ENVIRONMENT}"),
        ),
    ]
}

fn with_default(arg: Arg, default: &str) -> Arg {
    let suffix = format!("[default: {default}]");
    let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
    let long_help = arg.get_long_help().map(ToString::to_string);
    let arg = arg.help(format!("{help} {suffix}"));
    match long_help {
        Some(long) => arg.long_help(format!("{long}\n\n{suffix}")),
        None => arg,
    }
}

/// The command line with the defaults in its help.
pub fn command() -> Command {
    defaults()
        .into_iter()
        .fold(Cli::command(), |command, (id, default)| {
            // The derive names each argument after its field: `messages_table`.
            command.mut_arg(id.replace('-', "_"), |arg| with_default(arg, &default))
        })
}

#[cfg(test)]
#[path = "help_tests.rs"]
mod tests;
