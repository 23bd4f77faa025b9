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
mod tests {
    use super::*;

    /// Options that have no default: required ones, and those whose absence means something
    /// (described in their help).
    pub const WITHOUT_DEFAULT: [&str; 11] = [
        "config",
        "database-url",
        "schema",
        "brokers",
        "tls-ca-file",
        "sasl-mechanism",
        "sasl-username",
        "sasl-password",
        "relay-id",
        "max-publish-duration",
        "notify-url",
    ];

    #[test]
    fn every_option_has_a_default_or_is_listed_without_one() {
        let command = command();
        let defaults = defaults();
        let mut seen = Vec::new();
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if long == "help" || long == "version" {
                continue;
            }
            seen.push(long.to_owned());
            let has_default = defaults.iter().any(|(id, _)| *id == long);
            assert_ne!(
                has_default,
                WITHOUT_DEFAULT.contains(&long),
                "--{long}: give it a default in help::defaults or list it in WITHOUT_DEFAULT"
            );
            if has_default {
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                assert!(help.contains("[default: "), "--{long}: {help}");
            }
        }
        for (id, _) in &defaults {
            assert!(seen.iter().any(|s| s == id), "no option --{id}");
        }
        for id in WITHOUT_DEFAULT {
            assert!(seen.iter().any(|s| s == id), "no option --{id}");
        }
    }

    #[test]
    fn defaults_come_from_the_library() {
        let defaults = defaults();
        let get = |id: &str| {
            defaults
                .iter()
                .find(|(i, _)| *i == id)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get("batch-size"), "500");
        assert_eq!(get("poll-interval"), "1s");
        assert_eq!(get("lease-duration"), "30s");
        assert_eq!(get("bucket-count"), "8");
        assert_eq!(get("max-publish-attempts"), "3");
        assert_eq!(get("park-policy"), "hold-key");
        assert_eq!(get("listen"), "127.0.0.1:9464");
        assert_eq!(get("messages-table"), "outbox_messages");
        assert_eq!(get("max-request-size"), "1048576");
    }
}
