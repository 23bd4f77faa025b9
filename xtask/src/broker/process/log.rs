//! Reading a broker's log for a failure report: its first errors and their causes
//! ([`Broker::log_errors`]) and its last lines ([`Broker::log_tail`]).

use super::handle::Broker;
use std::fs;

impl Broker {
    /// The first `lines` ERROR or FATAL lines of the broker log, each with the exception
    /// line after it, and the first causes, as ` with these errors:\n…` (empty when there
    /// are none): a JVM that fails logs its reason well before the shutdown chatter the
    /// tail shows.
    pub fn log_errors(&self, lines: usize) -> String {
        errors_in(
            &fs::read_to_string(self.log_path()).unwrap_or_default(),
            lines,
        )
    }

    /// The last `lines` lines of the broker log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// What [`Broker::log_errors`] picks out of a broker log's `text`.
fn errors_in(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let mut errors = Vec::new();
    for (i, line) in all.iter().enumerate() {
        if line.contains("] ERROR ") || line.contains("] FATAL ") {
            errors.push(*line);
            // The exception's message follows on a line of its own.
            if let Some(next) = all.get(i + 1).filter(|l| !l.starts_with('[')) {
                errors.push(next);
            }
        } else if line.starts_with("Caused by:") {
            errors.push(*line);
        }
    }
    errors.dedup();
    errors.truncate(lines);
    if errors.is_empty() {
        String::new()
    } else {
        format!(" with these errors:\n{}\n", errors.join("\n"))
    }
}

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
