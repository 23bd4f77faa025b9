//! Turning relay events into instrument updates, and combining the relays that share
//! one metrics name in a process (owned buckets summed, backlog and age as maximum).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use metrics::{
    Label, Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

use super::names;
use super::sampler::BacklogSnapshot;
use crate::relay::RelayEvent;
use crate::time::Timestamp;

/// Per-name state of every live relay in this process.
#[derive(Default)]
struct NameState {
    owned: HashMap<String, usize>,
    backlog: HashMap<String, BacklogSnapshot>,
}

fn registry() -> MutexGuard<'static, HashMap<String, NameState>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, NameState>>> = OnceLock::new();
    REGISTRY
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn describe_once() {
    static DESCRIBED: OnceLock<()> = OnceLock::new();
    DESCRIBED.get_or_init(|| {
        describe_gauge!(
            names::OWNED_BUCKETS,
            Unit::Count,
            "Buckets in the relay's local lease set."
        );
        describe_counter!(
            names::PUBLISH_ACKNOWLEDGED,
            Unit::Count,
            "Messages in acknowledged prefixes, retries included."
        );
        describe_counter!(
            names::PUBLISH_FAILURES,
            Unit::Count,
            "Publish calls that failed."
        );
        describe_counter!(
            names::LEASE_EXPIRATIONS,
            Unit::Count,
            "Nonempty owned lease sets that were invalidated."
        );
        describe_counter!(
            names::LEASE_SLOW_CALLS,
            Unit::Count,
            "Lease calls that took half the lease or more."
        );
        describe_histogram!(
            names::PUBLISH_DURATION,
            Unit::Seconds,
            "Duration of whole publish calls."
        );
        describe_histogram!(
            names::CYCLE_DURATION,
            Unit::Seconds,
            "Duration of relay cycles, idle and backoff excluded."
        );
        describe_gauge!(
            names::PENDING_MESSAGES,
            Unit::Count,
            "Pending messages in the whole store (latest sample)."
        );
        describe_gauge!(
            names::PENDING_OLDEST_AGE,
            Unit::Seconds,
            "Age of the oldest pending message (latest sample)."
        );
        describe_counter!(
            names::PARKED,
            Unit::Count,
            "Rows moved into the parked table."
        );
        describe_gauge!(
            names::PARKED_MESSAGES,
            Unit::Count,
            "Parked rows in the whole store (latest sample)."
        );
        describe_gauge!(
            names::PARKED_OLDEST_AGE,
            Unit::Seconds,
            "Time since the oldest parked row was parked (latest sample)."
        );
        describe_gauge!(
            names::PENDING_AVAILABLE,
            Unit::Count,
            "1 while a backlog sample is available."
        );
    });
}

/// One relay's view of the instruments. Dropping it withdraws the relay's observations.
#[derive(Debug)]
pub struct RelayMetrics {
    name: String,
    relay_id: String,
}

impl RelayMetrics {
    /// Registers a relay under `name` (the validated metrics name).
    pub fn new(name: &str, relay_id: &str) -> Self {
        describe_once();
        let metrics = RelayMetrics {
            name: name.to_owned(),
            relay_id: relay_id.to_owned(),
        };
        // Counters exist from the start, so `rate` and `increase` have a series to work on
        // before the first failure or expiry.
        for counter in [
            names::PUBLISH_ACKNOWLEDGED,
            names::PUBLISH_FAILURES,
            names::LEASE_EXPIRATIONS,
            names::LEASE_SLOW_CALLS,
            names::PARKED,
        ] {
            counter!(
                counter,
                vec![Label::new(names::LABEL, metrics.name.clone())]
            )
            .increment(0);
        }
        {
            let mut reg = registry();
            let state = reg.entry(metrics.name.clone()).or_default();
            state.owned.insert(metrics.relay_id.clone(), 0);
            state
                .backlog
                .insert(metrics.relay_id.clone(), BacklogSnapshot::Unavailable);
            publish_gauges(&metrics.name, state, None);
        }
        metrics
    }

    /// Records what an event means for the instruments.
    pub fn on_event(&self, event: &RelayEvent) {
        let label = vec![Label::new(names::LABEL, self.name.clone())];
        match event {
            RelayEvent::OwnershipChanged { owned } => {
                let mut reg = registry();
                let state = reg.entry(self.name.clone()).or_default();
                state.owned.insert(self.relay_id.clone(), owned.len());
                let total: usize = state.owned.values().sum();
                gauge!(names::OWNED_BUCKETS, label).set(total as f64);
            }
            RelayEvent::Published {
                acknowledged,
                elapsed,
                failed,
                ..
            } => {
                counter!(names::PUBLISH_ACKNOWLEDGED, label.clone())
                    .increment(*acknowledged as u64);
                histogram!(names::PUBLISH_DURATION, label.clone()).record(elapsed.as_secs_f64());
                if *failed {
                    counter!(names::PUBLISH_FAILURES, label).increment(1);
                }
            }
            RelayEvent::LeaseExpired { .. } => {
                counter!(names::LEASE_EXPIRATIONS, label).increment(1)
            }
            RelayEvent::LeaseCallSlow { .. } => {
                counter!(names::LEASE_SLOW_CALLS, label).increment(1)
            }
            RelayEvent::CycleCompleted { elapsed } => {
                histogram!(names::CYCLE_DURATION, label).record(elapsed.as_secs_f64());
            }
            RelayEvent::Parked {
                failed,
                held_behind,
                ..
            } => {
                counter!(names::PARKED, label).increment((failed.len() + held_behind) as u64);
            }
            _ => {}
        }
    }

    /// Stores this relay's latest backlog snapshot and republishes the combined gauges.
    pub fn set_backlog(&self, snapshot: BacklogSnapshot, now: Timestamp) {
        let mut reg = registry();
        let state = reg.entry(self.name.clone()).or_default();
        state.backlog.insert(self.relay_id.clone(), snapshot);
        publish_gauges(&self.name, state, Some(now));
    }

    /// Refreshes the age gauge so it grows between samples.
    pub fn refresh_age(&self, now: Timestamp) {
        let mut reg = registry();
        let state = reg.entry(self.name.clone()).or_default();
        publish_gauges(&self.name, state, Some(now));
    }
}

impl Drop for RelayMetrics {
    fn drop(&mut self) {
        let mut reg = registry();
        let Some(state) = reg.get_mut(&self.name) else {
            return;
        };
        state.owned.remove(&self.relay_id);
        state.backlog.remove(&self.relay_id);
        let label = vec![Label::new(names::LABEL, self.name.clone())];
        let total: usize = state.owned.values().sum();
        gauge!(names::OWNED_BUCKETS, label).set(total as f64);
        publish_gauges(&self.name, state, None);
        if state.owned.is_empty() {
            reg.remove(&self.name);
        }
    }
}

/// Backlog gauges for one name: the maximum over available samples, NaN when none is.
fn publish_gauges(name: &str, state: &NameState, now: Option<Timestamp>) {
    let label = vec![Label::new(names::LABEL, name.to_owned())];
    let samples = state.backlog.values().filter_map(|s| match s {
        BacklogSnapshot::Available(m) => Some(*m),
        BacklogSnapshot::Unavailable => None,
    });
    let mut count: Option<u64> = None;
    let mut oldest: Option<Timestamp> = None;
    let mut parked: Option<u64> = None;
    let mut oldest_parked: Option<Timestamp> = None;
    let mut any = false;
    for sample in samples {
        any = true;
        count = Some(count.map_or(sample.count, |c| c.max(sample.count)));
        if let Some(at) = sample.oldest_created_at {
            oldest = Some(oldest.map_or(at, |o: Timestamp| o.min(at)));
        }
        if let Some(n) = sample.parked_count {
            parked = Some(parked.map_or(n, |p| p.max(n)));
        }
        if let Some(at) = sample.oldest_parked_at {
            oldest_parked = Some(oldest_parked.map_or(at, |o: Timestamp| o.min(at)));
        }
    }
    gauge!(names::PARKED_MESSAGES, label.clone()).set(parked.map_or(f64::NAN, |c| c as f64));
    let parked_age = match (parked, oldest_parked, now) {
        (Some(0), _, _) => 0.0,
        (Some(_), Some(at), Some(now)) => now.saturating_duration_since(at).as_secs_f64(),
        _ => f64::NAN,
    };
    gauge!(names::PARKED_OLDEST_AGE, label.clone()).set(parked_age);
    gauge!(names::PENDING_AVAILABLE, label.clone()).set(if any { 1.0 } else { 0.0 });
    gauge!(names::PENDING_MESSAGES, label.clone()).set(count.map_or(f64::NAN, |c| c as f64));
    let age = match (count, oldest, now) {
        (Some(0), _, _) => 0.0,
        (Some(_), Some(at), Some(now)) => now.saturating_duration_since(at).as_secs_f64(),
        _ => f64::NAN,
    };
    gauge!(names::PENDING_OLDEST_AGE, label).set(age);
    let total: usize = state.owned.values().sum();
    gauge!(
        names::OWNED_BUCKETS,
        vec![Label::new(names::LABEL, name.to_owned())]
    )
    .set(total as f64);
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
