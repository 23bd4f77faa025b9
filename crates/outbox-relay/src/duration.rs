//! Durations on the command line and in TOML: `250ms`, `30s`, `2m`, `1h`; and back, for
//! the defaults `--help` shows.

use std::time::Duration;

/// Parses `<integer><unit>` with unit `ms`, `s`, `m` or `h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 500ms, 30s, 2m or 1h"))?;
    let millis = match unit.trim() {
        "ms" => Some(value),
        "s" => value.checked_mul(1_000),
        "m" => value.checked_mul(60_000),
        "h" => value.checked_mul(3_600_000),
        "" => return Err(format!("{text:?} needs a unit: ms, s, m or h")),
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}; use ms, s, m or h"
            ));
        }
    };
    millis
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long"))
}

/// Writes `duration` the way [`parse_duration`] reads it, in the largest unit that
/// divides it exactly (`1s`, `30s`, `2m`, `250ms`); sub-millisecond parts are dropped.
pub fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    match millis {
        0 => "0ms".to_owned(),
        m if m % 3_600_000 == 0 => format!("{}h", m / 3_600_000),
        m if m % 60_000 == 0 => format!("{}m", m / 60_000),
        m if m % 1_000 == 0 => format!("{}s", m / 1_000),
        m => format!("{m}ms"),
    }
}

#[cfg(test)]
#[path = "duration_tests.rs"]
mod tests;
