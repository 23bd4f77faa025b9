//! The machine's inputs besides the clock's deadlines: the passing of time, commit
//! hints, the shutdown request, and each command's [`Outcome`], which is
//! checked against what the machine awaits and passed to its handler.

use super::hint::Hint;
use super::lane::StoreCall;
use super::machine::{Control, Life, RelayMachine};
use super::outcome::Outcome;
use crate::time::Now;

impl RelayMachine {
    /// Time has passed; lease expiry is noticed here even while calls are in flight.
    pub fn handle_timeout(&mut self, now: Now) {
        self.check_expiry(now);
    }

    /// A commit notification arrived. Hints only ever add work for buckets this relay
    /// validly owns; they never cut a backoff short or touch the discovery deadline.
    pub fn handle_hint(&mut self, now: Now, hint: Hint) {
        if self.life != Life::Running {
            return;
        }
        let bucket_count = i64::from(self.options.bucket_count().get());
        match hint {
            Hint::Unknown => {
                if self.leases.owns_any() {
                    self.discovery.force();
                }
            }
            Hint::Bucket(b) if i64::from(b) >= bucket_count => {
                // A bucket we cannot even own: let discovery look (and report a
                // misconfigured writer if rows are really there).
                if self.leases.owns_any() {
                    self.discovery.force();
                }
            }
            Hint::Bucket(b) => {
                if self.leases.is_valid(b, now)
                    && let Some(lane) = self.lanes.get_mut(&b)
                    && lane.owned
                {
                    lane.ready = true;
                    lane.stalled = false;
                    if matches!(lane.store_call, Some(StoreCall::Fetching { .. })) {
                        lane.hinted_since_fetch = true;
                    }
                }
            }
        }
    }

    /// Shutdown was requested: start nothing new. Publishes in flight are awaited (or
    /// cancelled by the caller); their acknowledged prefixes are still deleted while
    /// the lease holds. The machine reports
    /// [`RelayEvent::Stopped`](super::RelayEvent::Stopped) once nothing is in flight.
    pub fn handle_shutdown(&mut self) {
        if self.life != Life::Running {
            return;
        }
        self.life = Life::Stopping;
        for lane in self.lanes.values_mut() {
            lane.next = None;
            lane.ready = false;
        }
    }

    /// The result of a command this machine handed out. An outcome the machine did not
    /// ask for is a caller bug: it trips a debug assertion, and release builds ignore it.
    pub fn handle(&mut self, now: Now, outcome: Outcome) {
        debug_assert!(
            self.awaits(&outcome),
            "the relay machine did not ask for {outcome:?} (control: {:?}, renewing: {})",
            self.control,
            self.renewing.is_some()
        );
        match outcome {
            Outcome::Acquired(result) => self.on_acquired(now, result),
            Outcome::Probed(result) => self.on_probed(now, result),
            Outcome::Fetched { bucket, result } => self.on_fetched(now, bucket, result),
            Outcome::Published { bucket, outcome } => self.on_published(now, bucket, outcome),
            Outcome::PublishCancelled { bucket } => self.on_publish_cancelled(bucket),
            Outcome::Deleted { bucket, result } => self.on_deleted(now, bucket, result),
            Outcome::Renewed(result) => self.on_renewed(now, result),
            Outcome::Released(result) => self.on_released(result),
            Outcome::HoldsLoaded { bucket, result } => self.on_holds_loaded(now, bucket, result),
            Outcome::Parked { bucket, result } => self.on_parked(now, bucket, result),
        }
        self.remove_finished_lanes();
        // A surplus lane that went quiet is handed over by the next acquisition, at once.
        if self
            .lanes
            .values()
            .any(|l| l.owned && l.surplus && !l.is_active())
        {
            self.leases.acquire_now(now.mono);
        }
    }

    /// Whether `outcome` answers a command this machine handed out and awaits.
    pub fn awaits(&self, outcome: &Outcome) -> bool {
        let lane = |bucket: &i32| self.lanes.get(bucket);
        match outcome {
            Outcome::Renewed(_) => self.renewing.is_some(),
            Outcome::Acquired(_) => matches!(self.control, Control::Acquiring { .. }),
            Outcome::Probed(_) => self.probing.is_some(),
            Outcome::Fetched { bucket, .. } => lane(bucket)
                .is_some_and(|l| matches!(l.store_call, Some(StoreCall::Fetching { .. }))),
            Outcome::Published { bucket, .. } | Outcome::PublishCancelled { bucket } => {
                lane(bucket).is_some_and(|l| l.publishing.is_some())
            }
            Outcome::Deleted { bucket, .. } => lane(bucket)
                .is_some_and(|l| matches!(l.store_call, Some(StoreCall::Deleting { .. }))),
            Outcome::Released(_) => matches!(self.control, Control::Releasing { .. }),
            Outcome::HoldsLoaded { bucket, .. } => {
                lane(bucket).is_some_and(|l| matches!(l.store_call, Some(StoreCall::LoadingHolds)))
            }
            Outcome::Parked { bucket, .. } => lane(bucket)
                .is_some_and(|l| matches!(l.store_call, Some(StoreCall::Parking { .. }))),
        }
    }

    /// Lanes of lost buckets are forgotten once nothing of theirs is in flight.
    pub(super) fn remove_finished_lanes(&mut self) {
        self.lanes.retain(|_, l| l.owned || l.in_flight());
    }
}
