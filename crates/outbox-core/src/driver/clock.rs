//! The driver's clocks: the system wall clock for stored stamps, tokio's monotonic clock
//! for local deadlines (so the relay runs under tokio's paused clock in tests).

use tokio::time::Instant;

use crate::time::{Monotonic, Now, Timestamp};

/// Reads both clocks; the monotonic one counts from the relay's start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    origin: Instant,
}

impl Clock {
    pub(super) fn start() -> Self {
        Clock {
            origin: Instant::now(),
        }
    }

    pub(super) fn now(&self) -> Now {
        Now::new(
            Timestamp::now(),
            Monotonic::from_duration(Instant::now().saturating_duration_since(self.origin)),
        )
    }

    /// The tokio instant of a machine deadline.
    pub(super) fn instant(&self, deadline: Monotonic) -> Instant {
        self.origin + deadline.since_origin()
    }
}
