//! Time as plain values: wall-clock [`Timestamp`]s for what is stored and compared across
//! hosts (lease expiry, heartbeats), [`Monotonic`] instants for local deadlines (poll,
//! backoff, renewal and discovery timers), and [`Now`], both readings at one instant.
//!
//! Every decision in this crate takes time as an input rather than reading a clock, so
//! instants are a small `Copy` value: milliseconds since the Unix epoch, UTC. The same
//! unit is what stores persist for lease expiry and relay heartbeats, which keeps expiry
//! comparisons identical on every database (an integer compare, no time-zone or
//! timestamp-precision rules) and readable in an ad-hoc query
//! (`to_timestamp(expires_at / 1000.0)` on PostgreSQL, `FROM_UNIXTIME(expires_at / 1000)`
//! on MySQL).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An instant in UTC, in whole milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// Wraps a count of milliseconds since the Unix epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Timestamp(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Reads the system clock. Only drivers and writers call this; state machines get
    /// the time as an argument.
    pub fn now() -> Self {
        Self::from_system_time(SystemTime::now())
    }

    /// Converts a `SystemTime`, saturating far outside the representable range.
    pub fn from_system_time(time: SystemTime) -> Self {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => Timestamp(i64::try_from(after.as_millis()).unwrap_or(i64::MAX)),
            Err(before) => {
                Timestamp(i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |m| -m))
            }
        }
    }

    /// Converts to a `SystemTime`.
    pub fn to_system_time(self) -> SystemTime {
        if self.0 >= 0 {
            UNIX_EPOCH + Duration::from_millis(self.0.unsigned_abs())
        } else {
            UNIX_EPOCH - Duration::from_millis(self.0.unsigned_abs())
        }
    }

    /// `self + duration`, saturating at the representable maximum.
    pub fn saturating_add(self, duration: Duration) -> Self {
        Timestamp(self.0.saturating_add(duration_millis(duration)))
    }

    /// `self - duration`, saturating at the representable minimum.
    pub fn saturating_sub(self, duration: Duration) -> Self {
        Timestamp(self.0.saturating_sub(duration_millis(duration)))
    }

    /// Time from `earlier` to `self`, or zero when `earlier` is later (clamped, so a
    /// clock that stepped back never produces a negative age).
    pub fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        let diff = self.0.saturating_sub(earlier.0);
        Duration::from_millis(u64::try_from(diff).unwrap_or(0))
    }
}

/// An instant on a local monotonic clock: the time since an origin the caller fixes (the
/// driver's start). It never steps with the wall clock, so local deadlines measured on it
/// hold even when the system time is adjusted, and a driver can run it on tokio's paused
/// clock. Never stored nor compared across hosts or processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Monotonic(Duration);

impl Monotonic {
    /// The origin.
    pub const ZERO: Monotonic = Monotonic(Duration::ZERO);

    /// The instant `since_origin` after the origin.
    pub const fn from_duration(since_origin: Duration) -> Self {
        Monotonic(since_origin)
    }

    /// The instant `millis` milliseconds after the origin.
    pub const fn from_millis(millis: u64) -> Self {
        Monotonic(Duration::from_millis(millis))
    }

    /// Time since the origin.
    pub const fn since_origin(self) -> Duration {
        self.0
    }

    /// `self + duration`, saturating at the representable maximum.
    pub fn saturating_add(self, duration: Duration) -> Self {
        Monotonic(self.0.saturating_add(duration))
    }

    /// `self - duration`, saturating at the origin.
    pub fn saturating_sub(self, duration: Duration) -> Self {
        Monotonic(self.0.saturating_sub(duration))
    }

    /// Time from `earlier` to `self`, or zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Monotonic) -> Duration {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Monotonic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "+{}ms", self.0.as_millis())
    }
}

/// One instant read on both clocks: what the relay machine takes as "now".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// The wall clock, for stamps that are stored (lease expiry, heartbeats).
    pub wall: Timestamp,
    /// The monotonic clock, for local deadlines.
    pub mono: Monotonic,
}

impl Now {
    /// Both readings at one instant.
    pub const fn new(wall: Timestamp, mono: Monotonic) -> Self {
        Now { wall, mono }
    }

    /// Both clocks `duration` later.
    pub fn saturating_add(self, duration: Duration) -> Self {
        Now {
            wall: self.wall.saturating_add(duration),
            mono: self.mono.saturating_add(duration),
        }
    }
}

/// A `Duration` in whole milliseconds, saturating at `i64::MAX`.
pub(crate) fn duration_millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

#[cfg(test)]
#[path = "time_tests.rs"]
mod tests;
