//! Parking in the simulation: the park mode of a run, the operator who requeues and
//! discards parked rows (also while writers keep committing the same keys), and the
//! check that only a bucket's valid owner parks.

use outbox_core::{ParkOutcome, ParkPolicy, ParkRow, ParkedRows, ParkedSelection};

use super::{World, ready};
use crate::rng::Rng;

/// Whether and how a run parks rows that fail permanently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParkMode {
    /// `max_publish_attempts(None)`: a poisoned row stalls its bucket forever.
    Off,
    /// The default policy: a parked row holds its key.
    HoldKey,
    /// Only the failing row is parked; its key flows on.
    SkipRow,
}

impl ParkMode {
    pub fn generate(rng: &mut Rng) -> ParkMode {
        match rng.range(0, 9) {
            0..=2 => ParkMode::Off,
            3..=7 => ParkMode::HoldKey,
            _ => ParkMode::SkipRow,
        }
    }

    pub fn policy(self) -> ParkPolicy {
        match self {
            ParkMode::SkipRow => ParkPolicy::SkipRow,
            _ => ParkPolicy::HoldKey,
        }
    }
}

impl World {
    /// A park reached the store. With synchronized clocks, the parking relay must be the
    /// one relay that may act on the bucket right now, whatever the store decided.
    pub(super) fn note_parked(
        &mut self,
        relay: usize,
        bucket: i32,
        rows: &[ParkRow],
        outcome: &ParkOutcome,
    ) -> Result<(), String> {
        if outcome.parked.is_empty() {
            return Ok(());
        }
        if self.sc.skews.iter().all(|s| *s == 0) {
            let others: Vec<usize> = (0..self.relays.len())
                .filter(|r| {
                    *r != relay
                        && self.relays[*r]
                            .machine
                            .as_ref()
                            .is_some_and(|m| m.may_act_on(bucket, self.local(*r)))
                })
                .collect();
            if !others.is_empty() {
                return Err(format!(
                    "at {} ms relay {relay} parked rows {:?} of bucket {bucket} while relays {others:?} hold it",
                    self.now, outcome.parked
                ));
            }
        }
        for row in rows
            .iter()
            .filter(|r| outcome.parked.contains(&r.message.id))
        {
            if let Some(key) = self.key_of.get(&row.message.message_id) {
                self.keys_parked.insert(*key);
            }
        }
        Ok(())
    }

    /// One look at the parked rows: sometimes repair a key and requeue it (by key, or by
    /// one row, which takes the key's earlier parked rows along), sometimes requeue
    /// without repairing (the row fails again and is parked again), rarely discard.
    pub(super) fn operator_tick(&mut self) {
        let parked = self.store.parked();
        if parked.is_empty() {
            return;
        }
        let pick = &parked[self.rng.range(0, parked.len() as u64 - 1) as usize];
        let key = pick.message.key.clone().unwrap_or_default();
        let selection = if self.rng.chance(0.3) {
            ParkedSelection::Id(pick.message.id)
        } else {
            ParkedSelection::Key(key.clone())
        };
        if self.rng.chance(0.05) {
            let ids = ready(self.store.discard_parked(&selection)).unwrap_or_default();
            if self.verbose {
                println!("{:>7} operator discards {ids:?}", self.now);
            }
            for row in parked.iter().filter(|r| ids.contains(&r.message.id)) {
                self.discarded.insert(row.message.message_id);
            }
            self.stats.discards += ids.len() as u64;
            return;
        }
        if self.rng.chance(0.7) {
            // Repaired: every parked or pending row of the key is accepted from now on.
            let key_rows: Vec<_> = self
                .key_of
                .iter()
                .filter(|(_, k)| format!("key-{k}").into_bytes() == key)
                .map(|(m, _)| *m)
                .collect();
            for m in key_rows {
                self.poisoned.remove(&m);
            }
        }
        let ids = ready(self.store.requeue_parked(&selection)).unwrap_or_default();
        if self.verbose {
            println!("{:>7} operator requeues {ids:?}", self.now);
        }
        self.stats.requeues += ids.len() as u64;
        if self.now < self.sc.write_ms {
            self.stats.requeues_during_writes += ids.len() as u64;
        }
    }

    /// After the writes: once the relays drained every row they could, repair and
    /// requeue everything still parked. Returns whether there was anything to requeue.
    pub(super) fn final_requeue(&mut self) -> bool {
        if self.sc.park == ParkMode::Off || self.final_requeue_done {
            return false;
        }
        self.final_requeue_done = true;
        self.poisoned.clear();
        let ids = ready(self.store.requeue_parked(&ParkedSelection::All)).unwrap_or_default();
        if self.verbose {
            println!("{:>7} operator requeues everything: {ids:?}", self.now);
        }
        self.stats.requeues += ids.len() as u64;
        // Nudge the relays as a commit notification would.
        for relay in 0..self.relays.len() {
            self.push(
                self.now + 1,
                super::Happening::Hint {
                    relay,
                    hint: outbox_core::Hint::Unknown,
                },
            );
        }
        !ids.is_empty()
    }
}
