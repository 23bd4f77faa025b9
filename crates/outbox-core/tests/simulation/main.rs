//! Deterministic simulation of several relays sharing one in-memory store and one
//! in-memory "topic", with injected crashes, pauses past the lease, clock skew, store
//! errors (before and after the write), partial and lost publish acknowledgements,
//! slow publishes, and lost, duplicated and reordered notifications.
//!
//! Everything runs on a simulated clock from one seed. After each run the checker
//! verifies the guarantees in the crate docs; a failure prints the seed and the one
//! command that replays it:
//!
//! ```text
//! SIM_SEED=<seed> cargo test -p outbox-core --test simulation -- --nocapture
//! ```
//!
//! `SIM_SEEDS=<n>` changes how many seeds the default run covers.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod rng;
mod world;

use std::panic::{AssertUnwindSafe, catch_unwind};

use world::{Stats, run};

const DEFAULT_SEEDS: u64 = 2_000;
const SEED_BASE: u64 = 0x5eed_0000;

fn replay_hint(seed: u64) -> String {
    format!(
        "reproduce with: SIM_SEED={seed} cargo test -p outbox-core --test simulation -- --nocapture"
    )
}

fn run_seed(seed: u64, verbose: bool) -> Stats {
    match catch_unwind(AssertUnwindSafe(|| run(seed, verbose))) {
        Ok(Ok(stats)) => stats,
        Ok(Err(violation)) => panic!(
            "simulation seed {seed} broke a guarantee: {violation}\n{}",
            replay_hint(seed)
        ),
        Err(_) => panic!(
            "simulation seed {seed} panicked (see above)\n{}",
            replay_hint(seed)
        ),
    }
}

#[test]
fn relays_lose_nothing_under_injected_faults() {
    if let Ok(seed) = std::env::var("SIM_SEED") {
        let seed: u64 = seed.parse().expect("SIM_SEED must be a number");
        let stats = run_seed(seed, true);
        println!("seed {seed}: {stats:?}");
        return;
    }
    let seeds: u64 = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEEDS);
    let mut total = Stats::default();
    for seed in SEED_BASE..SEED_BASE + seeds {
        total.add(&run_seed(seed, false));
    }
    println!("{seeds} seeds: {total:?}");
    // The simulation must actually exercise what it claims to: a run of this size that
    // never crashed a relay, never paused one past its lease, never lost an ack or
    // never produced a duplicate would prove nothing.
    if seeds >= 200 {
        assert!(total.clean_runs > 0, "no fault-free runs: {total:?}");
        assert!(total.crashes > 0, "no crashes injected: {total:?}");
        assert!(total.graceful_stops > 0, "no graceful stops: {total:?}");
        assert!(total.releases > 0, "no lease handed back: {total:?}");
        assert!(total.long_pauses > 0, "no pause past the lease: {total:?}");
        assert!(total.takeovers > 0, "no lease takeover happened: {total:?}");
        assert!(total.lost_acks > 0, "no lost acknowledgement: {total:?}");
        assert!(total.store_errors > 0, "no store error: {total:?}");
        assert!(
            total.duplicates > 0,
            "faults never produced a duplicate: {total:?}"
        );
        assert!(total.skewed_runs > 0, "no clock skew: {total:?}");
        assert!(
            total.late_commits > 0,
            "no late commit of a lower id: {total:?}"
        );
        assert!(
            total.published > seeds * 100,
            "too little traffic: {total:?}"
        );
    }
}
