//! The simulated world: relays, a shared store, a topic, writers and a fault injector,
//! driven by one event queue on one simulated clock.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use outbox_core::testing::{MemoryStore, MemoryTransaction};
use outbox_core::{
    Command, EnqueueConfig, Hint, LeaseRequest, Misconfiguration, Monotonic, Now, OutboxMessage,
    OutboxStore, Outcome, PublishError, PublishOutcome, RelayEvent, RelayMachine, RelayOptions,
    StoreCapabilities, StoreError, Timestamp, Uuid,
};

use crate::rng::Rng;

mod operator;

pub use operator::ParkMode;

const LEASE_MS: u64 = 30_000;
const RENEW_MS: u64 = 10_000;
const BUDGET_MS: u64 = 15_000;
const KEYS: u64 = 12;
/// Simulated time starts here (a realistic epoch offset, so timestamps look real).
const EPOCH_MS: i64 = 1_765_000_000_000;

/// Counters summed over runs, to show the simulation exercised what it claims.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub committed: u64,
    pub published: u64,
    pub duplicates: u64,
    pub crashes: u64,
    pub graceful_stops: u64,
    pub releases: u64,
    pub long_pauses: u64,
    pub takeovers: u64,
    pub lost_acks: u64,
    pub store_errors: u64,
    pub clean_runs: u64,
    pub skewed_runs: u64,
    pub late_commits: u64,
    pub hints_delivered: u64,
    pub budget_faults: u64,
    pub poisoned_runs: u64,
    pub slow_lease_runs: u64,
    pub lane_backoffs: u64,
    pub max_in_flight_publishes: u64,
    pub park_runs: u64,
    pub poisoned_rows: u64,
    pub parked_failed: u64,
    pub parked_behind: u64,
    pub holds_released: u64,
    pub requeues: u64,
    pub requeues_during_writes: u64,
    pub discards: u64,
    /// Runs whose clocks and slow store calls make leases unkeepable: the backlog need
    /// not drain (see `World::liveness_promised`); safety is still checked.
    pub liveness_unpromised_runs: u64,
    /// Runs in all.
    pub runs: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.committed += o.committed;
        self.published += o.published;
        self.duplicates += o.duplicates;
        self.crashes += o.crashes;
        self.graceful_stops += o.graceful_stops;
        self.releases += o.releases;
        self.long_pauses += o.long_pauses;
        self.takeovers += o.takeovers;
        self.lost_acks += o.lost_acks;
        self.store_errors += o.store_errors;
        self.clean_runs += o.clean_runs;
        self.skewed_runs += o.skewed_runs;
        self.late_commits += o.late_commits;
        self.hints_delivered += o.hints_delivered;
        self.budget_faults += o.budget_faults;
        self.poisoned_runs += o.poisoned_runs;
        self.slow_lease_runs += o.slow_lease_runs;
        self.lane_backoffs += o.lane_backoffs;
        self.park_runs += o.park_runs;
        self.poisoned_rows += o.poisoned_rows;
        self.parked_failed += o.parked_failed;
        self.parked_behind += o.parked_behind;
        self.holds_released += o.holds_released;
        self.requeues += o.requeues;
        self.requeues_during_writes += o.requeues_during_writes;
        self.discards += o.discards;
        self.liveness_unpromised_runs += o.liveness_unpromised_runs;
        self.runs += o.runs;
        self.max_in_flight_publishes = self.max_in_flight_publishes.max(o.max_in_flight_publishes);
    }
}

/// Fault probabilities of one run; all zero in a clean run.
#[derive(Debug, Clone, Default)]
struct Faults {
    crash: f64,
    /// A graceful stop (SIGTERM): in-flight work finishes, leases are handed back.
    stop: f64,
    pause: f64,
    long_pause: f64,
    store_error: f64,
    store_error_after: f64,
    partial: f64,
    lost_ack: f64,
    permanent: f64,
    slow_publish: f64,
    hint_loss: f64,
    hint_dup: f64,
}

#[derive(Debug)]
struct Scenario {
    relays: usize,
    bucket_count: u32,
    batch_size: usize,
    renewal: bool,
    skews: Vec<i64>,
    write_ms: u64,
    faults: Faults,
    /// Lanes allowed to hold work at once.
    max_lanes: usize,
    /// One bucket gets a row the broker rejects forever (when there are at least two).
    poison: bool,
    /// A slow database: every store call takes up to 1.5 × the renew interval to answer
    /// (lease calls at least one interval).
    slow_leases: bool,
    /// The renew interval: `RENEW_MS`, or in half the slow-store runs twice that, where
    /// only a renewal started against the deadline (not on the interval) lands in time.
    renew_ms: u64,
    /// Whether and how rows that fail permanently are parked. With parking, poisoned
    /// rows appear anywhere and an operator requeues and discards them.
    park: ParkMode,
    /// `max_publish_attempts` when parking.
    max_attempts: u32,
}

impl Scenario {
    fn generate(rng: &mut Rng) -> Scenario {
        let relays = rng.range(1, 4) as usize;
        let clean = rng.chance(0.15);
        let skew_class = rng.range(0, 9);
        // Within the renewal slack (lease - renew = 20 s) most of the time, sometimes
        // beyond it (documented: duplicates, never loss).
        let max_skew: i64 = match skew_class {
            0..=4 => 0,
            5..=7 => 5_000,
            _ => 25_000,
        };
        let skews = (0..relays)
            .map(|_| {
                if max_skew == 0 {
                    0
                } else {
                    rng.range(0, 2 * max_skew as u64) as i64 - max_skew
                }
            })
            .collect();
        let faults = if clean {
            Faults::default()
        } else {
            Faults {
                crash: 0.25,
                stop: 0.3,
                pause: 0.25,
                long_pause: 0.4,
                store_error: 0.03,
                store_error_after: 0.02,
                partial: 0.04,
                lost_ack: 0.04,
                permanent: 0.01,
                slow_publish: 0.02,
                hint_loss: 0.2,
                hint_dup: 0.1,
            }
        };
        let mut sc = Scenario {
            relays,
            bucket_count: rng.range(1, 8) as u32,
            batch_size: rng.range(1, 6) as usize,
            renewal: rng.chance(0.75),
            skews: if clean { vec![0; relays] } else { skews },
            write_ms: rng.range(20_000, 90_000),
            faults,
            max_lanes: rng.range(1, 8) as usize,
            poison: rng.chance(0.2),
            slow_leases: rng.chance(0.15),
            renew_ms: RENEW_MS,
            park: ParkMode::generate(rng),
            max_attempts: rng.range(1, 4) as u32,
        };
        // Without renewal, acquisitions are what extends a lease and a publish needs the
        // whole budget left on it: lease calls slower than the renew interval cannot
        // work there (documented), so slow lease calls are simulated with renewal only.
        sc.slow_leases &= sc.renewal;
        // Derived from draws already made, so that every earlier seed keeps its scenario.
        if sc.slow_leases && sc.max_lanes % 2 == 1 {
            sc.renew_ms = 2 * RENEW_MS;
        }
        sc
    }

    fn clean(&self) -> bool {
        self.faults.crash == 0.0 && self.skews.iter().all(|s| *s == 0) && !self.slow_leases
    }
}

#[derive(Debug)]
enum Slot {
    Main,
    Renew,
}

/// Something scheduled to happen in the simulated world at a given instant.
enum Happening {
    Wake {
        relay: usize,
    },
    Exec {
        relay: usize,
        generation: u32,
        slot: Slot,
        command: Command,
    },
    Done {
        relay: usize,
        generation: u32,
        result: Outcome,
    },
    Hint {
        relay: usize,
        hint: Hint,
    },
    WriterTick,
    /// An operator looks at the parked rows and requeues or discards some.
    OperatorTick,
    Commit {
        tx: usize,
    },
    FaultTick,
    Restart {
        relay: usize,
    },
}

struct RelaySim {
    machine: Option<RelayMachine>,
    generation: u32,
    skew: i64,
    paused_until: u64,
    wake_at: Option<u64>,
    restart_pending: bool,
    /// Published batches not yet deleted and how much of each was reported acknowledged.
    acked: Vec<(Arc<[OutboxMessage]>, usize)>,
    /// Per bucket: the last lane backoff's failure count, while nothing since could
    /// have reset it (no success of that lane, no change of its ownership).
    lane_failures: HashMap<i32, u32>,
    owned_before: BTreeSet<i32>,
    /// When the current process started: the origin of its monotonic clock.
    mono_origin: u64,
    /// This process's own store value (shared rows, its own cursor bookkeeping).
    view: MemoryStore,
}

struct Record {
    message_id: Uuid,
    key: u64,
}

struct OpenTx {
    tx: MemoryTransaction,
    key: u64,
    message_id: Uuid,
    id: i64,
}

struct World {
    rng: Rng,
    sc: Scenario,
    verbose: bool,
    now: u64,
    seq: u64,
    queue: BinaryHeap<(Reverse<u64>, Reverse<u64>, usize)>,
    events: HashMap<usize, Happening>,
    next_event: usize,
    store: MemoryStore,
    relays: Vec<RelaySim>,
    config: EnqueueConfig,
    topic: Vec<Record>,
    acked: HashSet<i64>,
    committed: Vec<(Uuid, u64, i64)>,
    key_of: HashMap<Uuid, u64>,
    open: Vec<Option<OpenTx>>,
    key_busy: BTreeSet<u64>,
    max_committed_id: i64,
    message_seq: u128,
    stats: Stats,
    /// The bucket that gets a poisoned row, and that row's message id once written.
    poison_bucket: Option<i32>,
    poison_row: Option<(Uuid, i64)>,
    poison_committed: bool,
    /// Rows of the poisoned bucket above the poisoned row that committed after it: every
    /// read sees the poisoned row before them, so none may ever be published.
    behind_poison: HashSet<Uuid>,
    /// With parking: rows the broker rejects until an operator repairs them.
    poisoned: HashSet<Uuid>,
    /// Rows an operator discarded: not lost, and outside the per-key order (a copy sent
    /// before the discard, by an attempt whose answer was lost or by a request still in
    /// flight from a relay that died, may land anywhere).
    discarded: HashSet<Uuid>,
    /// Keys that ever had a parked row (their order is not promised under `SkipRow`).
    keys_parked: HashSet<u64>,
    /// The operator's last move: everything repaired and requeued once the relays had
    /// drained every row they could.
    final_requeue_done: bool,
    /// A guarantee broken inside a broker append, reported by the final checks.
    violation: Option<String>,
    /// The most failed attempts each row has had reported (`RowFailing`).
    row_attempts: HashMap<Uuid, u32>,
    /// When a row last got closer to being parked: a failed attempt above the most it
    /// had (bounded by `max_attempts` per row, so it cannot hide a livelock), or a park.
    parking_progress_at: u64,
}

/// Runs one seeded scenario and checks every guarantee.
pub fn run(seed: u64, verbose: bool) -> Result<Stats, String> {
    let mut rng = Rng::new(seed);
    let sc = Scenario::generate(&mut rng);
    if verbose {
        println!("scenario: {sc:?}");
    }
    let caps = StoreCapabilities {
        lease_renewal: sc.renewal,
        backlog_metrics: true,
        lease_release: true,
        parking: true,
    };
    let store = MemoryStore::new().with_capabilities(caps);
    let schema = outbox_core::OutboxSchema::builder()
        .bucket_count(sc.bucket_count)
        .build()
        .map_err(|e| e.to_string())?;
    let config = EnqueueConfig::from(schema);
    let mut world = World {
        rng,
        verbose,
        now: 0,
        seq: 0,
        queue: BinaryHeap::new(),
        events: HashMap::new(),
        next_event: 0,
        store,
        relays: Vec::new(),
        config,
        topic: Vec::new(),
        acked: HashSet::new(),
        committed: Vec::new(),
        key_of: HashMap::new(),
        open: Vec::new(),
        key_busy: BTreeSet::new(),
        max_committed_id: 0,
        message_seq: 0,
        stats: Stats::default(),
        poison_bucket: None,
        poison_row: None,
        poison_committed: false,
        behind_poison: HashSet::new(),
        poisoned: HashSet::new(),
        discarded: HashSet::new(),
        keys_parked: HashSet::new(),
        final_requeue_done: false,
        violation: None,
        row_attempts: HashMap::new(),
        parking_progress_at: 0,
        sc,
    };
    if world.sc.park != ParkMode::Off {
        world.stats.park_runs = 1;
        let first = world.rng.range(2_000, 8_000);
        world.push(first, Happening::OperatorTick);
    } else if world.sc.poison && world.sc.bucket_count >= 2 {
        world.poison_bucket = Some(world.rng.range(0, u64::from(world.sc.bucket_count) - 1) as i32);
        world.stats.poisoned_runs = 1;
    }
    if world.sc.slow_leases {
        world.stats.slow_lease_runs = 1;
    }
    if world.sc.clean() {
        world.stats.clean_runs = 1;
    }
    if world.sc.skews.iter().any(|s| *s != 0) {
        world.stats.skewed_runs = 1;
    }
    for r in 0..world.sc.relays {
        let skew = world.sc.skews[r];
        world.relays.push(RelaySim {
            machine: None,
            generation: 0,
            skew,
            paused_until: 0,
            wake_at: None,
            restart_pending: false,
            acked: Vec::new(),
            lane_failures: HashMap::new(),
            owned_before: BTreeSet::new(),
            mono_origin: 0,
            view: world.store.clone(),
        });
        let start = world.rng.range(0, 2_000);
        world.push(start, Happening::Restart { relay: r });
        world.relays[r].restart_pending = true;
    }
    world.push(0, Happening::WriterTick);
    world.push(world.sc.write_ms / 10, Happening::FaultTick);
    world.run_loop()?;
    world.final_checks()?;
    Ok(world.stats)
}

/// Store futures of the in-memory store never wait; poll them once.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("in-memory store futures complete immediately"),
    }
}

impl World {
    fn push(&mut self, at: u64, ev: Happening) {
        let id = self.next_event;
        self.next_event += 1;
        self.seq += 1;
        self.events.insert(id, ev);
        self.queue.push((Reverse(at), Reverse(self.seq), id));
    }

    fn faults_on(&self) -> bool {
        self.now < self.sc.write_ms
    }

    /// Relay `relay`'s clocks: its wall clock is skewed; its monotonic clock counts from
    /// the start of its current process.
    fn local(&self, relay: usize) -> Now {
        let rs = &self.relays[relay];
        Now::new(
            Timestamp::from_millis(EPOCH_MS + self.now as i64 + rs.skew),
            Monotonic::from_millis(self.now - rs.mono_origin),
        )
    }

    fn options(&self, relay: usize) -> RelayOptions {
        let mut b = RelayOptions::builder()
            .relay_id(relay_id(relay))
            .schema(self.config.schema().clone())
            .batch_size(self.sc.batch_size)
            .poll_interval(Duration::from_secs(1))
            .lease_duration(Duration::from_millis(LEASE_MS))
            .lease_renew_interval(Duration::from_millis(self.sc.renew_ms))
            .error_backoff(Duration::from_millis(200))
            .max_error_backoff(Duration::from_secs(3))
            .max_concurrent_lanes(self.sc.max_lanes)
            .max_publish_attempts(match self.sc.park {
                ParkMode::Off => None,
                _ => std::num::NonZeroU32::new(self.sc.max_attempts),
            })
            .park_policy(self.sc.park.policy());
        if !self.sc.renewal {
            b = b.max_publish_duration(Duration::from_millis(BUDGET_MS));
        }
        b.build()
            .unwrap_or_else(|e| panic!("simulation options invalid: {e}"))
    }

    fn run_loop(&mut self) -> Result<(), String> {
        // Liveness: once faults stop, the backlog must keep shrinking. Give up (and fail)
        // only when nothing was deleted for several lease periods.
        // With slow store calls a failing row's attempts (one fetch each) and a bucket's
        // hand-over to its fair-share owner (an acquisition and a hold read, after
        // which the attempts start again) take several slowest calls each.
        let slow_work = if self.sc.slow_leases {
            (u64::from(self.sc.max_attempts) + 2) * 3 * self.slowest_store_call_ms()
        } else {
            0
        };
        let stall_limit = 4 * LEASE_MS + 60_000 + slow_work;
        let mut last_pending = usize::MAX;
        let mut last_progress = 0;
        while let Some((Reverse(at), _, id)) = self.queue.pop() {
            let Some(ev) = self.events.remove(&id) else {
                continue;
            };
            self.now = at;
            let pending = self.unblocked_pending();
            // A failing row that moves towards being parked is progress too: with slow
            // store calls its `max_attempts` attempts alone can outlast the limit.
            if pending < last_pending || self.now <= self.sc.write_ms {
                last_progress = self.now;
            }
            last_progress = last_progress.max(self.parking_progress_at);
            last_pending = pending;
            if self.now > self.sc.write_ms && self.now - last_progress > stall_limit {
                break;
            }
            self.handle(ev)?;
            self.check_single_holder()?;
            if self.now > self.sc.write_ms
                && self.open.iter().all(Option::is_none)
                && self.unblocked_pending() == 0
                && self.relays.iter().all(|r| r.machine.is_some())
            {
                // Every row the relays could publish is out: healthy keys drained while
                // rows were parked. The operator now repairs and requeues the rest.
                if self.final_requeue() {
                    last_progress = self.now;
                    continue;
                }
                break;
            }
        }
        Ok(())
    }

    fn handle(&mut self, ev: Happening) -> Result<(), String> {
        match ev {
            Happening::Wake { relay } => {
                if self.relays[relay].wake_at.is_some_and(|w| w <= self.now) {
                    self.relays[relay].wake_at = None;
                }
                self.drive(relay)
            }
            Happening::Exec {
                relay,
                generation,
                slot,
                command,
            } => self.exec(relay, generation, slot, command),
            Happening::Done {
                relay,
                generation,
                result,
            } => {
                if self.relays[relay].generation != generation
                    || self.relays[relay].machine.is_none()
                {
                    return Ok(()); // the process that asked is gone
                }
                if self.now < self.relays[relay].paused_until {
                    let resume = self.relays[relay].paused_until;
                    self.push(
                        resume,
                        Happening::Done {
                            relay,
                            generation,
                            result,
                        },
                    );
                    return Ok(());
                }
                let local = self.local(relay);
                let Some(m) = self.relays[relay].machine.as_mut() else {
                    return Ok(());
                };
                m.handle(local, result);
                self.drive(relay)
            }
            Happening::Hint { relay, hint } => {
                if self.relays[relay].machine.is_none() {
                    return Ok(());
                }
                if self.now < self.relays[relay].paused_until {
                    let resume = self.relays[relay].paused_until;
                    self.push(resume, Happening::Hint { relay, hint });
                    return Ok(());
                }
                let local = self.local(relay);
                if let Some(m) = self.relays[relay].machine.as_mut() {
                    m.handle_hint(local, hint);
                    self.stats.hints_delivered += 1;
                }
                self.drive(relay)
            }
            Happening::WriterTick => {
                self.write();
                if self.now < self.sc.write_ms {
                    let next = self.now + self.rng.range(10, 300);
                    self.push(next, Happening::WriterTick);
                }
                Ok(())
            }
            Happening::OperatorTick => {
                self.operator_tick();
                if self.now < self.sc.write_ms {
                    let next = self.now + self.rng.range(2_000, 10_000);
                    self.push(next, Happening::OperatorTick);
                }
                Ok(())
            }
            Happening::Commit { tx } => {
                self.commit(tx);
                Ok(())
            }
            Happening::FaultTick => {
                self.inject_fault()?;
                if self.now < self.sc.write_ms {
                    let next = self.now + self.rng.range(1_000, 8_000);
                    self.push(next, Happening::FaultTick);
                } else {
                    self.restart_everything();
                }
                Ok(())
            }
            Happening::Restart { relay } => {
                let rs = &mut self.relays[relay];
                rs.restart_pending = false;
                if rs.machine.is_some() {
                    return Ok(());
                }
                rs.generation += 1;
                rs.paused_until = 0;
                rs.wake_at = None;
                rs.acked.clear();
                rs.lane_failures.clear();
                rs.owned_before.clear();
                rs.mono_origin = self.now;
                rs.view = self.store.clone();
                let options = self.options(relay);
                let caps = StoreCapabilities {
                    lease_renewal: self.sc.renewal,
                    backlog_metrics: true,
                    lease_release: true,
                    parking: true,
                };
                let machine = RelayMachine::new(options, caps, self.local(relay))
                    .map_err(|e| e.to_string())?;
                self.relays[relay].machine = Some(machine);
                self.drive(relay)
            }
        }
    }

    /// Lets relay `relay` act at the current instant and schedules its next wake-up.
    fn drive(&mut self, relay: usize) -> Result<(), String> {
        if self.now < self.relays[relay].paused_until || self.relays[relay].machine.is_none() {
            return Ok(());
        }
        let local = self.local(relay);
        let generation = self.relays[relay].generation;
        let mut issued = Vec::new();
        let mut fatal = None;
        {
            let rs = &mut self.relays[relay];
            let Some(m) = rs.machine.as_mut() else {
                return Ok(());
            };
            m.handle_timeout(local);
            while let Some(command) = m.poll_command(local) {
                match &command {
                    Command::Publish { bucket, .. }
                    | Command::FetchBatch { bucket, .. }
                    | Command::ParkRows { bucket, .. }
                        if !m.owns_valid(*bucket, local) =>
                    {
                        return Err(format!(
                            "relay {relay} acts on bucket {bucket} without a valid lease"
                        ));
                    }
                    Command::DeletePublished { batch, count, .. } => {
                        let position = rs.acked.iter().position(|(b, _)| Arc::ptr_eq(b, batch));
                        let acked = position.map_or(0, |i| rs.acked.remove(i).1);
                        if *count > acked || *count == 0 {
                            return Err(format!(
                                "relay {relay} deletes {count} rows of a batch acknowledged up to {acked}"
                            ));
                        }
                    }
                    _ => {}
                }
                issued.push(command);
            }
            let publishes = issued
                .iter()
                .filter(|c| matches!(c, Command::Publish { .. }))
                .count() as u64;
            let in_flight = m.publishing_buckets().len() as u64;
            self.stats.max_in_flight_publishes = self
                .stats
                .max_in_flight_publishes
                .max(in_flight.max(publishes));
            if m.active_lanes() > self.sc.max_lanes {
                return Err(format!(
                    "relay {relay} has {} lanes busy, above its limit of {}",
                    m.active_lanes(),
                    self.sc.max_lanes
                ));
            }
            let mut poison_failure = None;
            while let Some(event) = m.poll_event() {
                if self.verbose
                    && !matches!(
                        event,
                        RelayEvent::CycleCompleted { .. } | RelayEvent::Published { .. }
                    )
                {
                    println!("{:>7} relay {relay}.{generation} event {event:?}", self.now);
                }
                match event {
                    RelayEvent::Fatal(error) => fatal = Some(error),
                    RelayEvent::RowFailing {
                        message_id,
                        attempts,
                        ..
                    } => {
                        let most = self.row_attempts.entry(message_id).or_insert(0);
                        if attempts > *most {
                            *most = attempts;
                            self.parking_progress_at = self.now;
                        }
                    }
                    RelayEvent::Parked {
                        failed,
                        held_behind,
                        ..
                    } => {
                        self.parking_progress_at = self.now;
                        self.stats.parked_failed += failed.len() as u64;
                        self.stats.parked_behind += held_behind as u64;
                    }
                    RelayEvent::HoldReleased { .. } => self.stats.holds_released += 1,
                    RelayEvent::OwnershipChanged { owned } => {
                        rs.owned_before = owned.into_iter().collect();
                        let owned_now = &rs.owned_before;
                        rs.lane_failures.retain(|b, _| owned_now.contains(b));
                    }
                    RelayEvent::Published {
                        bucket,
                        failed: false,
                        ..
                    } => {
                        // A batch of rows before the poisoned one (a late commit) went
                        // out: a success of the lane's own.
                        rs.lane_failures.remove(&bucket);
                    }
                    RelayEvent::PublishFailed { bucket, error } => {
                        poison_failure = (error.message_id.is_some()
                            && error.message_id == self.poison_row.map(|(m, _)| m))
                        .then_some(bucket);
                    }
                    RelayEvent::BackingOff {
                        bucket: Some(bucket),
                        consecutive_failures,
                        ..
                    } => {
                        self.stats.lane_backoffs += 1;
                        // Between two failures on the poisoned row the lane cannot have
                        // succeeded (the row stays at the front of its reads), so its
                        // count must have grown, whatever the other lanes did.
                        if poison_failure.take() == Some(bucket) {
                            if let Some(last) = rs.lane_failures.get(&bucket)
                                && consecutive_failures <= *last
                            {
                                return Err(format!(
                                    "relay {relay}'s lane {bucket} went from {last} to {consecutive_failures} failures in a row without a success of its own"
                                ));
                            }
                            rs.lane_failures.insert(bucket, consecutive_failures);
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(error) = fatal {
            match error {
                Misconfiguration::PublishBudgetExceeded { .. } => {
                    // Documented: the relay faults; an orchestrator restarts the process.
                    self.stats.budget_faults += 1;
                    self.kill(relay);
                    let at = self.now + self.rng.range(1_000, 5_000);
                    self.relays[relay].restart_pending = true;
                    self.push(at, Happening::Restart { relay });
                    return Ok(());
                }
                other => {
                    return Err(format!(
                        "relay {relay} stopped with an unexpected fatal error: {other}"
                    ));
                }
            }
        }
        if self.relays[relay]
            .machine
            .as_ref()
            .is_some_and(RelayMachine::is_finished)
        {
            // Stopped gracefully: the process exits; an orchestrator starts a new one.
            self.kill(relay);
            let at = self.now + self.rng.range(100, 10_000);
            self.relays[relay].restart_pending = true;
            self.push(at, Happening::Restart { relay });
            return Ok(());
        }
        for command in issued {
            let (slot, latency) = match &command {
                Command::RenewLeases { .. } => (Slot::Renew, self.rng.range(1, 30)),
                Command::AcquireLeases { .. } => (Slot::Main, self.rng.range(1, 30)),
                Command::Publish { .. } => (Slot::Main, self.publish_latency()),
                _ => (Slot::Main, self.rng.range(1, 30)),
            };
            if self.verbose {
                println!(
                    "{:>7} relay {relay}.{generation} issues {}",
                    self.now,
                    describe(&command)
                );
            }
            self.push(
                self.now + latency,
                Happening::Exec {
                    relay,
                    generation,
                    slot,
                    command,
                },
            );
        }
        let deadline = self.relays[relay]
            .machine
            .as_ref()
            .and_then(RelayMachine::poll_timeout);
        if let Some(deadline) = deadline {
            let since_start =
                u64::try_from(deadline.since_origin().as_millis()).unwrap_or(u64::MAX);
            let at = self.relays[relay]
                .mono_origin
                .saturating_add(since_start)
                .max(self.now + 1);
            let rs = &mut self.relays[relay];
            if rs.wake_at.is_none_or(|w| at < w || w <= self.now) {
                rs.wake_at = Some(at);
                self.push(at, Happening::Wake { relay });
            }
        }
        Ok(())
    }

    fn publish_latency(&mut self) -> u64 {
        if self.faults_on() && self.rng.chance(self.sc.faults.slow_publish) {
            if self.sc.renewal {
                self.rng.range(5_000, 45_000)
            } else {
                self.rng.range(2_000, 12_000)
            }
        } else {
            self.rng.range(1, 60)
        }
    }

    /// A request reaches the store or the broker.
    fn exec(
        &mut self,
        relay: usize,
        generation: u32,
        slot: Slot,
        command: Command,
    ) -> Result<(), String> {
        let alive =
            self.relays[relay].generation == generation && self.relays[relay].machine.is_some();
        if !alive && self.rng.chance(0.5) {
            return Ok(()); // the process died before the request left it
        }
        if alive
            && self.now < self.relays[relay].paused_until
            && matches!(command, Command::Publish { .. })
            && self.rng.chance(0.5)
        {
            // Paused before the request was sent: it goes out when the process resumes.
            // This is the stale-publish window the docs describe.
            let resume = self.relays[relay].paused_until + self.rng.range(0, 20);
            self.push(
                resume,
                Happening::Exec {
                    relay,
                    generation,
                    slot,
                    command,
                },
            );
            return Ok(());
        }
        let faults = self.faults_on();
        let fail_before = faults && self.rng.chance(self.sc.faults.store_error);
        let fail_after = faults && self.rng.chance(self.sc.faults.store_error_after);
        let is_store = !matches!(command, Command::Publish { .. });
        let is_lease_call = matches!(
            command,
            Command::AcquireLeases { .. } | Command::RenewLeases { .. }
        );
        if is_store && (fail_before || fail_after) {
            self.stats.store_errors += 1;
        }
        let relay_id = relay_id(relay);
        let bucket_count = self.sc.bucket_count;
        let lease_duration = Duration::from_millis(LEASE_MS);
        let unavailable = || StoreError::unavailable("injected store fault");
        let result = match command {
            Command::AcquireLeases { now, busy } => {
                let request = LeaseRequest {
                    relay_id: &relay_id,
                    bucket_count,
                    lease_duration,
                    now,
                    busy: &busy,
                };
                if is_store && fail_before {
                    Outcome::Acquired(Err(unavailable()))
                } else {
                    let r = ready(self.store.acquire_leases(&request));
                    self.note_takeovers(relay, generation);
                    Outcome::Acquired(if fail_after { Err(unavailable()) } else { r })
                }
            }
            Command::ProbePending { buckets } => Outcome::Probed(if fail_before {
                Err(unavailable())
            } else {
                let r = ready(self.store.buckets_with_pending(&buckets, bucket_count));
                if fail_after { Err(unavailable()) } else { r }
            }),
            Command::FetchBatch {
                bucket,
                after,
                limit,
            } => Outcome::Fetched {
                bucket,
                result: if fail_before {
                    Err(unavailable())
                } else {
                    // A request of a process that is gone reaches the store through a
                    // view that knows nothing: it reads from the head.
                    let r = if self.relays[relay].generation == generation {
                        ready(self.relays[relay].view.next_batch(bucket, after, limit))
                    } else {
                        ready(self.store.clone().next_batch(bucket, after, limit))
                    };
                    if self.verbose
                        && let Ok(rows) = &r
                    {
                        println!(
                            "{:>7} relay {relay}.{generation} read b{bucket} after {after:?}: {:?}",
                            self.now,
                            rows.iter().map(|m| m.id).collect::<Vec<_>>()
                        );
                    }
                    if fail_after { Err(unavailable()) } else { r }
                },
            },
            Command::DeletePublished {
                bucket,
                batch,
                count,
            } => {
                let rows = &batch[..count];
                if let Some(row) = rows.iter().find(|m| !self.acked.contains(&m.id)) {
                    return Err(format!(
                        "row {} deleted before the broker acknowledged it",
                        row.id
                    ));
                }
                Outcome::Deleted {
                    bucket,
                    result: if fail_before {
                        Err(unavailable())
                    } else {
                        let r = ready(self.store.delete_published(bucket, rows));
                        if fail_after { Err(unavailable()) } else { r }
                    },
                }
            }
            Command::RenewLeases { now, buckets } => {
                let request = LeaseRequest {
                    relay_id: &relay_id,
                    bucket_count,
                    lease_duration,
                    now,
                    busy: &[],
                };
                Outcome::Renewed(if fail_before {
                    Err(unavailable())
                } else {
                    let r = ready(self.store.renew_leases(&request, &buckets));
                    if fail_after { Err(unavailable()) } else { r }
                })
            }
            Command::Publish { bucket, batch } => Outcome::Published {
                bucket,
                outcome: self.broker_append(relay, generation, &batch),
            },
            Command::LoadHolds { bucket } => Outcome::HoldsLoaded {
                bucket,
                result: if fail_before {
                    Err(unavailable())
                } else {
                    let r = ready(self.store.parked_holds(bucket));
                    if fail_after { Err(unavailable()) } else { r }
                },
            },
            Command::ParkRows { bucket, now, rows } => Outcome::Parked {
                bucket,
                result: if fail_before {
                    Err(unavailable())
                } else {
                    let request = outbox_core::ParkRequest {
                        relay_id: &relay_id,
                        now,
                        bucket,
                        rows: &rows,
                    };
                    let r = ready(self.store.park_rows(&request));
                    if let Ok(outcome) = &r {
                        self.note_parked(relay, bucket, &rows, outcome)?;
                    }
                    if fail_after { Err(unavailable()) } else { r }
                },
            },
            Command::ReleaseLeases => Outcome::Released(if fail_before {
                Err(unavailable())
            } else {
                let r = ready(self.store.release_leases(&relay_id));
                if r.is_ok() {
                    self.stats.releases += 1;
                }
                if fail_after { Err(unavailable()) } else { r }
            }),
        };
        let _ = slot;
        let latency = if self.sc.slow_leases {
            // Up to 1.5 × the renew interval and under half the lease (a lease call of
            // half the lease cannot keep one: one lease call runs at a time). Lease calls
            // take at least one renew interval, or under half the lease when that is less.
            let most = (self.sc.renew_ms * 3 / 2).min(LEASE_MS / 2 - 1);
            let least = if is_lease_call {
                self.sc.renew_ms.min(most - 2_000)
            } else {
                1
            };
            self.rng.range(least, most)
        } else {
            self.rng.range(1, 30)
        };
        self.push(
            self.now + latency,
            Happening::Done {
                relay,
                generation,
                result,
            },
        );
        Ok(())
    }

    /// The broker appends (part of) a batch and answers; faults decide how much of the
    /// answer reaches the relay.
    fn broker_append(
        &mut self,
        relay: usize,
        generation: u32,
        batch: &Arc<[OutboxMessage]>,
    ) -> PublishOutcome {
        let n = batch.len();
        let f = self.sc.faults.clone();
        let faults = self.faults_on();
        let poisoned_at = self
            .poison_row
            .and_then(|(id, _)| batch.iter().position(|m| m.message_id == id));
        let poisoned_at = poisoned_at.or_else(|| {
            batch
                .iter()
                .position(|m| self.poisoned.contains(&m.message_id))
        });
        let (appended, acked, error) = if let Some(k) = poisoned_at {
            // Rejected forever; like the real publisher, nothing from it on is sent.
            (
                k,
                k,
                Some(PublishError::permanent(
                    Some(batch[k].message_id),
                    "injected poisoned row",
                )),
            )
        } else if faults && n > 0 && self.rng.chance(f.permanent) {
            let k = self.rng.range(0, n as u64 - 1) as usize;
            (
                k,
                k,
                Some(PublishError::permanent(
                    Some(batch[k].message_id),
                    "injected permanent rejection",
                )),
            )
        } else if faults && n > 0 && self.rng.chance(f.partial) {
            let k = self.rng.range(0, n as u64 - 1) as usize;
            (
                k,
                k,
                Some(PublishError::retryable("injected partial failure")),
            )
        } else if faults && n > 0 && self.rng.chance(f.lost_ack) {
            self.stats.lost_acks += 1;
            let appended = self.rng.range(1, n as u64) as usize;
            let acked = self.rng.range(0, appended as u64 - 1) as usize;
            (
                appended,
                acked,
                Some(PublishError::retryable("injected lost acknowledgement")),
            )
        } else {
            (n, n, None)
        };
        for m in &batch[..appended] {
            // Once the poisoned row is visible, nothing after it in its bucket may go out
            // for the first time: the lane stops there.
            if self.behind_poison.contains(&m.message_id) && self.violation.is_none() {
                self.violation = Some(format!(
                    "row {} of the poisoned bucket {}, committed after the poisoned row, was published",
                    m.id, m.bucket
                ));
            }
            let key = self.key_of.get(&m.message_id).copied().unwrap_or(u64::MAX);
            self.topic.push(Record {
                message_id: m.message_id,
                key,
            });
        }
        for m in &batch[..acked] {
            self.acked.insert(m.id);
        }
        if self.relays[relay].generation == generation && acked > 0 {
            self.relays[relay].acked.push((Arc::clone(batch), acked));
        }
        PublishOutcome {
            acknowledged: acked,
            error,
        }
    }

    fn note_takeovers(&mut self, relay: usize, generation: u32) {
        let _ = generation;
        let me = relay_id(relay);
        let now_owned: BTreeSet<i32> = self
            .store
            .leases()
            .into_iter()
            .filter(|l| l.1.as_deref() == Some(me.as_str()))
            .map(|l| l.0)
            .collect();
        let before = &self.relays[relay].owned_before;
        // A bucket this relay did not own a moment ago, that someone else had last held.
        if now_owned.iter().any(|b| !before.contains(b))
            && self.relays.len() > 1
            && self.now > 5_000
        {
            self.stats.takeovers += 1;
        }
    }

    fn write(&mut self) {
        let key = self.rng.range(0, KEYS - 1);
        if self.key_busy.contains(&key) {
            return; // writers serialize per key, so commit order defines key order
        }
        self.message_seq += 1;
        let message_id = Uuid::from_u128(self.message_seq);
        let built = OutboxMessage::builder("sim")
            .key(format!("key-{key}"))
            .value(vec![0u8; 8])
            .message_id(message_id)
            .created_at(Timestamp::from_millis(EPOCH_MS + self.now as i64))
            .build(&self.config);
        let Ok(message) = built else { return };
        let bucket = message.bucket;
        let mut tx = self.store.begin();
        let id = tx.insert(message);
        if self.poison_bucket == Some(bucket) && self.poison_row.is_none() && self.rng.chance(0.2) {
            self.poison_row = Some((message_id, id));
        }
        if self.sc.park != ParkMode::Off
            && self.sc.poison
            && self.faults_on()
            && self.rng.chance(0.03)
        {
            self.poisoned.insert(message_id);
            self.stats.poisoned_rows += 1;
        }
        self.key_busy.insert(key);
        self.key_of.insert(message_id, key);
        let delay = if self.rng.chance(0.1) {
            self.rng.range(300, 3_000)
        } else {
            self.rng.range(0, 20)
        };
        self.open.push(Some(OpenTx {
            tx,
            key,
            message_id,
            id,
        }));
        let tx_index = self.open.len() - 1;
        self.push(self.now + delay, Happening::Commit { tx: tx_index });
    }

    fn commit(&mut self, tx_index: usize) {
        let Some(open) = self.open[tx_index].take() else {
            return;
        };
        let bucket = self.store_bucket(open.message_id);
        if self.verbose {
            println!("{:>7} commit b{bucket} id {}", self.now, open.id);
        }
        open.tx.commit();
        if self.poison_committed
            && Some(bucket) == self.poison_bucket
            && self.poison_row.is_some_and(|(_, poison)| open.id > poison)
        {
            self.behind_poison.insert(open.message_id);
        }
        if self.poison_row.is_some_and(|(m, _)| m == open.message_id) {
            self.poison_committed = true;
        }
        if open.id < self.max_committed_id {
            self.stats.late_commits += 1;
        }
        self.max_committed_id = self.max_committed_id.max(open.id);
        self.key_busy.remove(&open.key);
        self.committed.push((open.message_id, open.key, open.id));
        self.stats.committed += 1;
        let f = self.sc.faults.clone();
        for relay in 0..self.relays.len() {
            if self.rng.chance(f.hint_loss) {
                continue;
            }
            let hint = if self.rng.chance(0.1) {
                Hint::Unknown
            } else {
                Hint::Bucket(bucket)
            };
            let delay = self.rng.range(0, 40);
            self.push(self.now + delay, Happening::Hint { relay, hint });
            if self.rng.chance(f.hint_dup) {
                let delay = self.rng.range(0, 200);
                self.push(self.now + delay, Happening::Hint { relay, hint });
            }
        }
    }

    fn store_bucket(&self, message_id: Uuid) -> i32 {
        let key = self.key_of.get(&message_id).copied().unwrap_or(0);
        outbox_core::bucket::bucket_for(
            Some(format!("key-{key}").as_bytes()),
            None,
            &message_id,
            self.config.bucket_count(),
        )
    }

    fn kill(&mut self, relay: usize) {
        let rs = &mut self.relays[relay];
        rs.machine = None;
        rs.wake_at = None;
        rs.paused_until = 0;
    }

    fn inject_fault(&mut self) -> Result<(), String> {
        if !self.faults_on() || self.relays.is_empty() {
            return Ok(());
        }
        let f = self.sc.faults.clone();
        let relay = self.rng.range(0, self.relays.len() as u64 - 1) as usize;
        if self.relays[relay].machine.is_none() || self.now < self.relays[relay].paused_until {
            return Ok(());
        }
        if self.rng.chance(f.crash) {
            self.stats.crashes += 1;
            self.kill(relay);
            let at = self.now + self.rng.range(100, 20_000);
            self.relays[relay].restart_pending = true;
            self.push(at, Happening::Restart { relay });
        } else if self.rng.chance(f.stop) {
            // SIGTERM: the machine finishes what is in flight, hands its leases back and
            // stops; the process then exits and an orchestrator starts a new one.
            self.stats.graceful_stops += 1;
            if let Some(m) = self.relays[relay].machine.as_mut() {
                m.handle_shutdown();
            }
            self.drive(relay)?;
        } else if self.rng.chance(f.pause) {
            let long = self.rng.chance(f.long_pause);
            let ms = if long {
                self.rng.range(LEASE_MS + 1, 2 * LEASE_MS)
            } else {
                self.rng.range(100, 5_000)
            };
            if long {
                self.stats.long_pauses += 1;
            }
            self.relays[relay].paused_until = self.now + ms;
            self.push(self.now + ms, Happening::Wake { relay });
        }
        Ok(())
    }

    fn restart_everything(&mut self) {
        for relay in 0..self.relays.len() {
            if self.relays[relay].machine.is_none() && !self.relays[relay].restart_pending {
                self.relays[relay].restart_pending = true;
                self.push(self.now + 1, Happening::Restart { relay });
            }
        }
    }

    /// With synchronized clocks, no two relays may act on one bucket at one instant.
    fn check_single_holder(&self) -> Result<(), String> {
        if self.sc.skews.iter().any(|s| *s != 0) {
            return Ok(()); // skew opens the documented overlap window
        }
        for bucket in 0..self.sc.bucket_count as i32 {
            let holders: Vec<usize> = (0..self.relays.len())
                .filter(|r| {
                    self.relays[*r]
                        .machine
                        .as_ref()
                        .is_some_and(|m| m.may_act_on(bucket, self.local(*r)))
                })
                .collect();
            if holders.len() > 1 {
                return Err(format!(
                    "at {} ms relays {holders:?} both hold bucket {bucket} with valid leases",
                    self.now
                ));
            }
        }
        Ok(())
    }

    /// Whether a row can never be published: the poisoned row and every later row of
    /// its bucket (the lane stops at the poisoned row; nothing overtakes it).
    fn blocked(&self, bucket: i32, id: i64) -> bool {
        self.poison_row
            .is_some_and(|(_, poison)| Some(bucket) == self.poison_bucket && id >= poison)
    }

    fn unblocked_pending(&self) -> usize {
        let all = self.store.pending_count();
        match (self.poison_row, self.poison_bucket) {
            (Some((_, poison)), Some(bucket)) => {
                all - self.store.pending_count_from(bucket, poison)
            }
            _ => all,
        }
    }

    /// The slowest store call this run draws, in ms.
    fn slowest_store_call_ms(&self) -> u64 {
        if self.sc.slow_leases {
            (self.sc.renew_ms * 3 / 2).min(LEASE_MS / 2 - 1)
        } else {
            30
        }
    }

    /// Whether the run's clocks and store let a lease holder keep its leases, so that
    /// the backlog must drain once faults stop. A renewal starts at most `renew` after
    /// the previous one (or earlier, `1.5 ×` the slowest lease call before the deadline)
    /// and lands up to one slowest call later; a relay whose clock runs `spread` ahead
    /// sees the lease expire `spread` early. With slow store calls and `spread + renewal
    /// gap + slowest call` at or above the lease, relays may take a bucket from each
    /// other on every term, before any term gets to publish (documented in the options:
    /// the tolerated skew shrinks by the slowest lease call). Safety is checked either
    /// way.
    fn liveness_promised(&self) -> bool {
        let spread = self.sc.skews.iter().max().copied().unwrap_or(0)
            - self.sc.skews.iter().min().copied().unwrap_or(0);
        let slowest = self.slowest_store_call_ms();
        let gap = self
            .sc
            .renew_ms
            .min(LEASE_MS.saturating_sub(slowest * 3 / 2));
        // Fast store calls leave every term time to publish, even when relays take
        // buckets from each other (clocks beyond the tolerated skew): those runs must
        // drain, as they always had to.
        !self.sc.slow_leases || spread.unsigned_abs() + gap + slowest < LEASE_MS
    }

    fn final_checks(&mut self) -> Result<(), String> {
        self.stats.runs = 1;
        if !self.liveness_promised() {
            self.stats.liveness_unpromised_runs = 1;
        }
        let pending = self.unblocked_pending();
        if let Some(violation) = self.violation.take() {
            return Err(violation);
        }
        if (pending > 0 || self.open.iter().any(Option::is_some)) && self.verbose {
            for (i, r) in self.relays.iter().enumerate() {
                println!("relay {i}: {:#?}", r.machine);
            }
            for m in self.store.pending() {
                println!("pending: bucket {} id {}", m.bucket, m.id);
            }
        }
        // Where the backlog need not drain, the operator's final requeue (which waits
        // for the drain) may never have come.
        if !self.store.parked().is_empty() && self.liveness_promised() {
            return Err(format!(
                "{} rows still parked after the operator requeued everything",
                self.store.parked().len()
            ));
        }
        if (pending > 0 || self.open.iter().any(Option::is_some)) && self.liveness_promised() {
            return Err(format!(
                "{pending} rows still pending {} ms after faults stopped (sim ended at {} ms)",
                self.now.saturating_sub(self.sc.write_ms),
                self.now
            ));
        }
        let delivered: HashSet<Uuid> = self.topic.iter().map(|r| r.message_id).collect();
        // Where the backlog need not drain, a row still in the store is late, not lost.
        let still_stored: HashSet<Uuid> = if self.liveness_promised() {
            HashSet::new()
        } else {
            let pending = self.store.pending().into_iter().map(|m| m.message_id);
            let parked = self
                .store
                .parked()
                .into_iter()
                .map(|p| p.message.message_id);
            pending.chain(parked).collect()
        };
        if let Some((missing, _, id)) = self.committed.iter().find(|(m, _, id)| {
            !delivered.contains(m)
                && !still_stored.contains(m)
                && !self.discarded.contains(m)
                && !self.blocked(self.store_bucket(*m), *id)
        }) {
            return Err(format!(
                "committed row {id} ({missing}) never reached the topic: lost"
            ));
        }
        // Per key, first deliveries follow commit order (ids ascend per key because
        // writers serialize per key).
        let id_of: HashMap<Uuid, i64> = self.committed.iter().map(|(m, _, id)| (*m, *id)).collect();
        let spread = self.sc.skews.iter().max().copied().unwrap_or(0)
            - self.sc.skews.iter().min().copied().unwrap_or(0);
        let beyond_tolerated_skew = spread >= (LEASE_MS - self.sc.renew_ms) as i64;
        let mut seen = HashSet::new();
        let mut last_per_key: BTreeMap<u64, i64> = BTreeMap::new();
        let mut duplicates = 0u64;
        for record in &self.topic {
            if !seen.insert(record.message_id) {
                duplicates += 1;
                continue;
            }
            let id = id_of.get(&record.message_id).copied().unwrap_or(i64::MAX);
            if self.discarded.contains(&record.message_id) {
                // The operator took the row out of its key's sequence; a copy of it that
                // was already on its way (a slow request of a crashed relay) may still
                // land after the key's later rows. Documented with `parked discard`.
                continue;
            }
            if (self.sc.park == ParkMode::SkipRow || beyond_tolerated_skew)
                && self.keys_parked.contains(&record.key)
            {
                // Documented: under SkipRow a parked row arrives after its key's later
                // rows; and with clocks further apart than the tolerated skew two relays
                // may act on one bucket, the lagging one unaware of a fresh park.
                continue;
            }
            if let Some(last) = last_per_key.insert(record.key, id)
                && last > id
            {
                return Err(format!(
                    "key {} first delivered row {last} before row {id}",
                    record.key
                ));
            }
        }
        self.stats.duplicates = duplicates;
        self.stats.published = self.topic.len() as u64;
        if self.sc.clean() && self.sc.faults.lost_ack == 0.0 && duplicates > 0 {
            return Err(format!(
                "{duplicates} duplicates in a run without any fault"
            ));
        }
        Ok(())
    }
}

fn describe(command: &Command) -> String {
    match command {
        Command::Publish { bucket, batch } => {
            format!(
                "publish b{bucket} ids {:?}",
                batch.iter().map(|m| m.id).collect::<Vec<_>>()
            )
        }
        Command::DeletePublished {
            bucket,
            batch,
            count,
        } => {
            format!(
                "delete b{bucket} ids {:?}",
                batch[..*count].iter().map(|m| m.id).collect::<Vec<_>>()
            )
        }
        other => format!("{other:?}"),
    }
}

/// A relay's id: the same for every process (generation) in its slot, as the default id
/// is for a process restarted on the same host, so that restarts after a crash take the
/// leases back at once and exercise the duplicate-id check (a false positive would stop a
/// relay with an unexpected fatal error).
fn relay_id(relay: usize) -> String {
    format!("relay-{relay}")
}
