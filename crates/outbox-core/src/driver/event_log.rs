//! Event logging: the machine's events become log lines, metrics, readiness and the
//! notifier's owned set.

use std::sync::atomic::Ordering;

use tracing::{debug, error, info, warn};

use super::run_loop::Driver;
use super::state::RelayState;
use crate::relay::RelayEvent;

impl<S, P> Driver<S, P> {
    pub(super) fn report_events(&mut self) {
        while let Some(event) = self.machine.poll_event() {
            self.metrics.on_event(&event);
            if matches!(event, RelayEvent::CycleCompleted { .. }) {
                self.cycle_span = None;
            }
            match event {
                RelayEvent::Joined => {
                    self.ready.store(true, Ordering::Release);
                    self.state.send_if_modified(|state| {
                        let first = matches!(state, RelayState::Starting);
                        if first {
                            *state = RelayState::Ready;
                        }
                        first
                    });
                    info!("joined: heartbeat recorded, share of the buckets known");
                }
                RelayEvent::OwnershipChanged { owned } => {
                    self.notifier.set_owned(owned.iter().copied());
                    info!(?owned, "owned buckets changed");
                }
                RelayEvent::LeaseExpired { buckets } => {
                    warn!(buckets, "leases expired or were lost")
                }
                RelayEvent::LeaseCallSlow { operation, call } => {
                    warn!(
                        operation,
                        took_ms = call.took.as_millis() as u64,
                        lease_ms = call.lease_duration.as_millis() as u64,
                        outlasted_lease = call.outlasted_lease,
                        "a lease call took half the lease or more: leases cannot be kept at this store latency; \
                         speed the database link up or lengthen lease_duration"
                    )
                }
                RelayEvent::Published {
                    bucket,
                    attempted,
                    acknowledged,
                    elapsed,
                    ..
                } => {
                    debug!(
                        bucket,
                        attempted,
                        acknowledged,
                        elapsed_ms = elapsed.as_millis() as u64,
                        "published"
                    )
                }
                RelayEvent::PublishFailed { bucket, error } => {
                    if error.blamed_message().is_some() {
                        warn!(bucket, message_id = ?error.message_id, %error, "the broker or client refuses this row; it is parked after max_publish_attempts");
                    } else if error.is_permanent() {
                        warn!(bucket, %error, "publish refused by the setup (no row is blamed); an operator has to act, retrying after backoff");
                    } else {
                        warn!(bucket, %error, "publish failed; retrying after backoff");
                    }
                }
                RelayEvent::RowFailing {
                    bucket,
                    id,
                    message_id,
                    attempts,
                } => {
                    debug!(bucket, id, %message_id, attempts, "row failed permanently")
                }
                RelayEvent::Parked {
                    bucket,
                    failed,
                    held_behind,
                } => {
                    for (id, message_id, error) in &failed {
                        warn!(bucket, id, %message_id, error = %error, "row parked: it cannot be published; see `outbox-relay parked list`");
                    }
                    if held_behind > 0 {
                        info!(
                            bucket,
                            rows = held_behind,
                            "rows parked behind a parked row of their key, keeping the key's order"
                        );
                    }
                }
                RelayEvent::HoldReleased { bucket, rows } => {
                    info!(
                        bucket,
                        rows, "held rows released: their key is no longer parked"
                    )
                }
                RelayEvent::PublishCancelled { bucket } => {
                    info!(bucket, "publish cancelled by shutdown")
                }
                RelayEvent::StoreFailed {
                    operation,
                    bucket,
                    error,
                } => match bucket {
                    Some(bucket) => warn!(operation, bucket, %error, "store call failed"),
                    None => warn!(operation, %error, "store call failed"),
                },
                RelayEvent::LeaseTooShortForPublish { remaining, needed } => error!(
                    remaining_ms = remaining.as_millis() as u64,
                    needed_ms = needed.as_millis() as u64,
                    "lease too short for max_publish_duration plus lease_renew_interval; rows stay pending"
                ),
                RelayEvent::BackingOff {
                    bucket,
                    delay,
                    consecutive_failures,
                    ..
                } => {
                    let backoff_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                    match bucket {
                        Some(bucket) => {
                            warn!(bucket, consecutive_failures, backoff_ms, "lane backing off")
                        }
                        None => warn!(
                            consecutive_failures,
                            backoff_ms, "lease and discovery calls backing off"
                        ),
                    }
                }
                RelayEvent::Fatal(error) => error!(%error, "relay stopped by a misconfiguration"),
                RelayEvent::LeasesReleased { buckets } => {
                    info!(buckets, "leases handed back for the other relays");
                }
                RelayEvent::Stopped => info!("relay stopped"),
                RelayEvent::RelayIdRecentlyUsed {
                    relay_id,
                    last_seen,
                } => warn!(
                    %relay_id,
                    last_seen_ms = last_seen.as_millis(),
                    "a heartbeat younger than a lease was found under this relay id: taking over its leases, assuming it is this relay's crashed predecessor; if another process runs with this id, both stop at the next acquisition with a duplicate relay id error"
                ),
                RelayEvent::WaitingForLeases { waiting } if waiting.is_empty() => {
                    info!("no longer waiting for leases held by other relays")
                }
                RelayEvent::WaitingForLeases { waiting } => {
                    let held: Vec<String> = waiting
                        .iter()
                        .map(|w| {
                            format!(
                                "bucket {} held by {}{} until {} (epoch)",
                                w.bucket,
                                w.holder,
                                if w.holder_live { "" } else { " (silent)" },
                                w.until
                            )
                        })
                        .collect();
                    info!(
                        buckets = waiting.len(),
                        held = %held.join(", "),
                        "waiting for leases held by other relays: a silent holder's lease must expire, a live one hands the bucket over at its next acquisition"
                    )
                }
                RelayEvent::CycleCompleted { elapsed } => {
                    debug!(elapsed_ms = elapsed.as_millis() as u64, "cycle completed")
                }
            }
        }
    }
}
