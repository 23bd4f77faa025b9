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
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration(" 1h "), Ok(Duration::from_secs(3_600)));
        assert!(parse_duration("30").unwrap_err().contains("unit"));
        assert!(parse_duration("3d").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("99999999999999999999h").is_err());
    }

    #[test]
    fn formats_in_the_largest_exact_unit_and_parses_back() {
        for (millis, text) in [
            (0, "0ms"),
            (250, "250ms"),
            (1_000, "1s"),
            (1_500, "1500ms"),
            (30_000, "30s"),
            (120_000, "2m"),
            (90_000, "90s"),
            (3_600_000, "1h"),
            (5_400_000, "90m"),
        ] {
            let d = Duration::from_millis(millis);
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text), Ok(d));
        }
    }
}
