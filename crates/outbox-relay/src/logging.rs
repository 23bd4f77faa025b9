//! Logs on standard output: quiet by default, text or one JSON object per line.
//!
//! * **Filter**: `RUST_LOG`, when set and not empty, replaces the default entirely.
//!   The default shows this project's crates ([`OUR_CRATES`]) at INFO and everything
//!   else at WARN: sqlx's statements, sea-orm's and rskafka's connection chatter stay
//!   out of a normal run, their warnings and errors do not.
//! * **Format**: `--log-format text` (default) or `json` (tracing-subscriber's JSON
//!   lines: `timestamp`, `level`, `fields` with the `message`, `target`, and the spans).
//! * **Colour**: ANSI escapes only when standard output is a terminal and `NO_COLOR` is
//!   not set to a non-empty value (<https://no-color.org>), so a pipe, a file or a log
//!   collector never receives escape codes.

use std::fmt;
use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::EnvFilter;

/// The crates whose INFO events a default run shows.
pub const OUR_CRATES: [&str; 5] = [
    "outbox_core",
    "outbox_kafka",
    "outbox_seaorm",
    "outbox_notify",
    "outbox_relay",
];

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(format!("{text:?} is neither text nor json")),
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        })
    }
}

/// The default filter: `warn` for everything, `info` for [`OUR_CRATES`].
pub fn default_directives() -> String {
    let mut directives = String::from("warn");
    for krate in OUR_CRATES {
        directives.push(',');
        directives.push_str(krate);
        directives.push_str("=info");
    }
    directives
}

/// The filter for a `RUST_LOG` value: the value itself when set and not blank, else the
/// default. An invalid value is an error naming it.
pub fn filter(rust_log: Option<&str>) -> Result<EnvFilter, String> {
    match rust_log.map(str::trim).filter(|v| !v.is_empty()) {
        Some(directives) => {
            EnvFilter::try_new(directives).map_err(|e| format!("RUST_LOG={directives:?}: {e}"))
        }
        None => EnvFilter::try_new(default_directives()).map_err(|e| e.to_string()),
    }
}

/// Whether to colour: only on a terminal, and never when `NO_COLOR` is set (non-empty).
pub fn use_colour(is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Installs the global subscriber. An invalid `RUST_LOG` is reported on standard error
/// and the default filter is used instead, so a typo never silences the relay.
pub fn init(format: LogFormat) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = filter(rust_log.as_deref()).unwrap_or_else(|e| {
        eprintln!("outbox-relay: ignoring an invalid RUST_LOG ({e}); using the default filter");
        EnvFilter::new(default_directives())
    });
    let colour = use_colour(
        std::io::stdout().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

#[cfg(test)]
#[path = "logging_tests.rs"]
mod tests;
