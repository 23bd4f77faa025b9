//! The control word the handle sends the relay loop on a `watch` channel: keep running,
//! finish the in-flight work and stop, or abandon it and stop. Shared by the spawner
//! (which opens the channel), the handle (which writes it) and the loop (which reads it).

/// Keep running (the channel's initial value).
pub(super) const RUN: u8 = 0;
/// Finish the in-flight work, then stop.
pub(super) const GRACEFUL: u8 = 1;
/// Abandon the in-flight work and stop at once.
pub(super) const ABANDON: u8 = 2;
