//! The relay as a pure state machine, in the style of `quinn-proto`.
//!
//! [`RelayMachine`] owns every decision: when to heartbeat and rebalance leases, when
//! to probe for pending rows, which bucket to fetch next, when to publish, what to
//! delete, when to renew and how long to back off. It performs no I/O and reads no
//! clock: each input carries [`Now`](crate::time::Now), the wall clock for stamps the
//! store keeps (lease expiry, heartbeats) and a monotonic clock for local deadlines.
//! The caller (the async [`driver`](crate::driver) or a simulation) executes the
//! [`Command`]s it hands out from [`RelayMachine::poll_command`], reports each one's
//! [`Outcome`] through [`RelayMachine::handle`] with the current time, sleeps until
//! [`RelayMachine::poll_timeout`], and reads [`RelayEvent`]s for logs and metrics from
//! [`RelayMachine::poll_event`].
//!
//! # Lanes
//!
//! Every owned bucket is a lane with its own pipeline and its own backoff (see
//! `lane.rs`): a lane fetches its next batch while the previous one is being published,
//! publishes its batches strictly one after the other, and deletes each acknowledged
//! prefix while the next batch is being published. A failing lane backs off alone, for
//! longer with each failure in a row; the other lanes keep going. At most
//! [`max_concurrent_lanes`](crate::RelayOptions::max_concurrent_lanes) lanes hold work at
//! once; when more lanes are ready than slots, a lane gives its slot up after each batch
//! so that every ready bucket is served in turn.
//!
//! Lease work runs at relay level, beside the lanes. An acquisition (which rebalances, and
//! so may hand buckets to other relays) names every lane it keeps working on as busy; the
//! store keeps those even above the relay's share and reports them as surplus. While the
//! acquisition runs only the busy lanes act; afterwards a surplus lane starts nothing
//! new, finishes what it has, and the next acquisition (due as soon as it is quiet) hands
//! it over. So no bucket changes hands while this relay may still publish or delete in
//! it, and no lease call, however slow, stops the lanes. With a store
//! that renews, the next acquisition is due one renew interval after the previous one
//! *finished*, and the next renewal one renew interval after the previous lease call
//! *started*, or earlier when recent lease calls were slow: it starts at the deadline
//! minus 1.5 × the slowest recent call, so that it lands before the leases run out (see
//! `lease_timing.rs`). Calls of half a lease or more are reported
//! ([`RelayEvent::LeaseCallSlow`]).
//!
//! Concurrency rules the machine enforces: one lease call (acquisition, renewal or
//! release) at a time, one probe beside it, and per lane at most one store call and one
//! publish.
//!
//! # Files
//!
//! `command.rs`, `outcome.rs`, `hint.rs` and `event.rs` hold what the caller and the
//! machine exchange. `machine.rs` holds the machine's state; its behaviour is spread
//! over one `impl` block per concern: `schedule.rs` and `lane_schedule.rs` (what to do
//! next), `inputs.rs` (hints, timeouts, shutdown, outcomes), `lease_control.rs` (the
//! relay-level calls), `lane_outcomes.rs` (the lanes' results) and `parking.rs`. The
//! parts it is built from (`lane.rs`, `lease.rs`, `lease_timing.rs`, `discovery.rs`)
//! know nothing of the machine.

mod command;
mod discovery;
mod event;
mod hint;
mod inputs;
mod lane;
mod lane_outcomes;
mod lane_schedule;
mod lease;
mod lease_control;
mod lease_timing;
mod machine;
mod outcome;
mod parking;
mod schedule;
#[cfg(test)]
mod tests;

pub use command::Command;
pub use event::RelayEvent;
pub use hint::Hint;
pub use lease_timing::SlowLeaseCall;
pub use machine::RelayMachine;
pub use outcome::Outcome;
