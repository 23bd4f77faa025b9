//! How the operator commands (`status`, `parked`) write ages and durations: short and
//! coarser as they grow in the tables, whole milliseconds in JSON.

use std::time::Duration;

use outbox_core::Timestamp;

/// `3m12s`, `2h05m`, `4d03h`: how long ago `at` was.
pub fn age(at: Timestamp, now: Timestamp) -> String {
    short_duration(now.saturating_duration_since(at))
}

/// `3m12s`, `2h05m`, `4d03h`: a duration, coarser as it grows.
pub fn short_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3_600 => format!("{}m{:02}s", secs / 60, secs % 60),
        3_600..86_400 => format!("{}h{:02}m", secs / 3_600, secs % 3_600 / 60),
        _ => format!("{}d{:02}h", secs / 86_400, secs % 86_400 / 3_600),
    }
}

/// A duration in whole milliseconds for JSON, saturating rather than wrapping.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
