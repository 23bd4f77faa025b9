//! Relay identity: the stable default id, and the rule that tells a restarted relay from
//! two live processes sharing one id.
//!
//! # Why a stable id by default
//!
//! A relay's leases are rows owned by its id. A relay that exits without handing them
//! back (a crash, `kill -9`, an OOM kill) leaves them owned until they expire, a whole
//! `lease_duration` (30 s by default). A restarted relay with the *same* id recognises them
//! as its own and extends them at once; one with a new id has to wait them out. So the
//! default id is derived from where the relay runs and which outbox it serves:
//! `<host>-<metrics_name>` ([`default_relay_id`]), with the host read from `POD_NAME`, then
//! `HOSTNAME`, then the kernel host name ([`HostName::from_environment`]). When none is
//! found the id is generated (`relay-<uuid v7>`), and restarts wait for the leases again.
//!
//! # Two live processes with one id
//!
//! Two processes running with one id would both believe they hold that id's buckets and
//! publish them concurrently, breaking per-key order. A stable default makes that easy to
//! do by accident (two relays of one outbox in one pod, a copied config file), so it is
//! detected: every acquisition reports the heartbeat it found under the relay's id before
//! writing its own ([`Acquired::heartbeat_before`](crate::Acquired::heartbeat_before)), and
//! [`judge_heartbeat`] compares it with the heartbeats this relay has written. After the
//! relay's first successful acquisition, the row can only hold a value it wrote itself;
//! any other value stamped after that acquisition was written by another live process
//! under the same id (an older one is a late write of the crashed predecessor), and the
//! relay stops
//! with [`Misconfiguration::DuplicateRelayId`](crate::Misconfiguration::DuplicateRelayId).
//! Both processes see the other's value at their next acquisition, so both stop: neither
//! can tell which one was meant to run.
//!
//! Before that first acquisition, a foreign value is the predecessor's: a restart after a
//! crash finds the dead process's last heartbeat and takes over its leases at once. If that
//! heartbeat is still fresh the relay warns (it cannot tell a crashed predecessor from a
//! live twin yet); a live twin is caught one acquisition later.
//!
//! The check is a comparison, not a guarded write, because a relay writes its heartbeat
//! from two calls that may run at once (an acquisition and a renewal): a guard on "the
//! value I wrote last" would refuse one of them whenever the other landed first. The
//! machine knows every value it sent, whatever order they land in.

use std::time::Duration;

use crate::time::Timestamp;
use crate::validate::MAX_RELAY_ID_LEN;

/// The variables read for the host part of the default relay id, in order.
pub const HOST_VARIABLES: [&str; 2] = ["POD_NAME", "HOSTNAME"];

/// Where the kernel keeps the host name on Linux; read when no variable is set.
pub const KERNEL_HOSTNAME_PATH: &str = "/proc/sys/kernel/hostname";

/// The host part of the default relay id, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostName {
    /// The name, as found (sanitized only when the id is built).
    pub name: String,
    /// `POD_NAME`, `HOSTNAME`, [`KERNEL_HOSTNAME_PATH`], or `explicit` for one given to
    /// the builder.
    pub source: &'static str,
}

impl HostName {
    /// Reads `POD_NAME`, then `HOSTNAME`, then the kernel host name; the first that is set
    /// and not blank wins. This is the only I/O of the options, done once when a builder
    /// is created.
    pub fn from_environment() -> Option<HostName> {
        let var = |name: &'static str| {
            std::env::var(name).ok().map(|value| HostName {
                name: value,
                source: name,
            })
        };
        let kernel = || {
            std::fs::read_to_string(KERNEL_HOSTNAME_PATH)
                .ok()
                .map(|value| HostName {
                    name: value,
                    source: KERNEL_HOSTNAME_PATH,
                })
        };
        HOST_VARIABLES
            .into_iter()
            .filter_map(var)
            .chain(std::iter::from_fn(kernel).take(1))
            .find(|host| !sanitize(&host.name).is_empty())
    }
}

/// Keeps ASCII letters, digits, `.`, `_` and `-`, turns anything else into `-`, and trims
/// `-` and `.` from both ends, so an id built from it reads the same in logs, lease rows
/// and metric labels.
fn sanitize(raw: &str) -> String {
    let mapped: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    mapped.trim_matches(['-', '.']).to_owned()
}

/// `<host>-<metrics_name>`, sanitized, and cut to [`MAX_RELAY_ID_LEN`] by shortening the
/// host part (the outbox name stays whole, so relays of two outboxes on one host never
/// share an id). `None` when the host has no usable character.
pub fn default_relay_id(host: &str, metrics_name: &str) -> Option<String> {
    let host = sanitize(host);
    if host.is_empty() {
        return None;
    }
    let name = sanitize(metrics_name);
    if name.is_empty() {
        return Some(host.chars().take(MAX_RELAY_ID_LEN).collect());
    }
    let room = MAX_RELAY_ID_LEN.saturating_sub(name.len() + 1).max(1);
    let host: String = host.chars().take(room).collect();
    let id: String = format!("{host}-{name}")
        .chars()
        .take(MAX_RELAY_ID_LEN)
        .collect();
    Some(id)
}

/// `relay-<uuid v7>`: unique across processes, and sortable by start time so that log
/// lines and lease rows read in a useful order. The fallback when no host name is found.
pub fn generated_relay_id() -> String {
    format!("relay-{}", uuid::Uuid::now_v7())
}

/// What the heartbeat found under a relay's id says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeartbeatVerdict {
    /// Nothing, a value this relay wrote, or an old one: nothing to report.
    Own,
    /// Before the relay's first successful acquisition, a heartbeat younger than a lease:
    /// most likely this id's crashed predecessor, whose leases are now taken over; a live
    /// twin would be caught at the next acquisition.
    RecentPredecessor {
        /// The heartbeat found.
        last_seen: Timestamp,
    },
    /// After the relay's first successful acquisition, a value it never wrote: another
    /// live process writes heartbeats under the same id.
    Duplicate {
        /// The heartbeat found.
        found: Timestamp,
    },
}

/// Judges the heartbeat an acquisition found under the relay's id before writing its own.
///
/// `found` is that value (`None`: no row, or a store that cannot tell); `written`, every
/// heartbeat this relay sent since the oldest that may still be the row's value;
/// `joined_at`, the heartbeat of this relay's first successful acquisition, if any (from
/// then on the row holds one of its values, unless someone else wrote since). Pure: the
/// machine calls it, the stores only report `found`.
///
/// A foreign value at or before `joined_at` is no duplicate: it is a write of the crashed
/// predecessor that reached the database late (a statement in flight when the process
/// died), stamped before this relay started. A live twin stamps the present.
pub fn judge_heartbeat(
    found: Option<Timestamp>,
    written: &[Timestamp],
    joined_at: Option<Timestamp>,
    now: Timestamp,
    lease_duration: Duration,
) -> HeartbeatVerdict {
    let Some(found) = found else {
        return HeartbeatVerdict::Own;
    };
    if written.contains(&found) {
        return HeartbeatVerdict::Own;
    }
    if let Some(joined_at) = joined_at {
        return if found > joined_at {
            HeartbeatVerdict::Duplicate { found }
        } else {
            HeartbeatVerdict::Own
        };
    }
    if found > now.saturating_sub(lease_duration) {
        HeartbeatVerdict::RecentPredecessor { last_seen: found }
    } else {
        HeartbeatVerdict::Own
    }
}

#[cfg(test)]
#[path = "relay_id_tests.rs"]
mod tests;
