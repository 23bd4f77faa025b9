//! `outbox-relay status`: one outbox at a glance, as a table or as JSON.
//!
//! The store reads the rows and the core judges them ([`outbox_core::status`], with the
//! relays' own liveness and expiry rules); this module only renders the
//! [`OutboxStatus`], in pure functions tested without a database.

use std::fmt::Write as _;
use std::time::Duration;

use outbox_core::{LeaseState, OutboxStatus, StoreError, Timestamp};
use outbox_seaorm::SeaOrmStore;
use serde_json::{Value, json};

use crate::cli::command::StatusArgs;
use crate::connect::StartError;
use crate::format::{age, millis, short_duration};
use crate::table::aligned;

/// Why no status was printed.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The database could not be reached.
    #[error("cannot reach the database: {0}")]
    Connect(String),
    /// The outbox's tables could not be read (a missing table names the fix).
    #[error("cannot read the outbox tables: {0}")]
    Read(#[from] StoreError),
}

impl From<StartError> for StatusError {
    fn from(e: StartError) -> Self {
        match e {
            // The message already says "database" once.
            StartError::Database(reason) => StatusError::Connect(reason),
            other => StatusError::Connect(other.to_string()),
        }
    }
}

/// Reads the status from `store` at `now` and renders it.
pub async fn run(
    store: &SeaOrmStore,
    args: &StatusArgs,
    lease_duration: Duration,
    now: Timestamp,
) -> Result<String, StatusError> {
    let status = store.status(now, lease_duration).await?;
    let messages = store.tables().messages().to_owned();
    Ok(if args.json {
        to_json(&status, &messages).to_string()
    } else {
        render(&status, &messages)
    })
}

/// `0-3, 5, 7-8`: ascending buckets as ranges.
fn ranges(buckets: &[i32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = buckets.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&end.saturating_add(1)) {
            end = iter.next().unwrap_or(end);
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(", ")
    }
}

fn lease_text(lease: &LeaseState) -> (String, String) {
    match lease {
        LeaseState::Missing => ("-".into(), "no lease row yet".into()),
        LeaseState::Free => ("-".into(), "free".into()),
        LeaseState::Held {
            owner,
            left,
            owner_alive,
            ..
        } => {
            let mut text = format!("{} left", short_duration(*left));
            if !owner_alive {
                text.push_str(" (owner stale)");
            }
            (owner.clone(), text)
        }
        LeaseState::Expired { owner, ago, .. } => (
            owner.clone(),
            format!("expired {} ago", short_duration(*ago)),
        ),
    }
}

/// The warnings an operator should act on, one line each.
pub fn warnings(status: &OutboxStatus) -> Vec<String> {
    let mut out = Vec::new();
    if status.out_of_range_rows() > 0 {
        let which: Vec<String> = status
            .out_of_range
            .iter()
            .map(|o| {
                format!(
                    "bucket {}: {} pending, {} parked",
                    o.bucket, o.pending, o.parked
                )
            })
            .collect();
        out.push(format!(
            "{} rows lie outside buckets 0..{} ({}): a writer uses another bucket count, and \
             no relay of this outbox publishes them",
            status.out_of_range_rows(),
            status.bucket_count,
            which.join("; ")
        ));
    }
    if status.alive_relays().next().is_none() {
        out.push("no relay is alive: nothing is published".into());
    }
    let unowned: Vec<i32> = status.unowned_with_pending().map(|b| b.bucket).collect();
    if !unowned.is_empty() {
        out.push(format!(
            "pending rows in buckets no relay holds: {}",
            ranges(&unowned)
        ));
    }
    out
}

/// The status as text: a summary, a line per relay, a line per bucket, the warnings.
pub fn render(status: &OutboxStatus, messages_table: &str) -> String {
    let mut out = String::new();
    let alive = status.alive_relays().count();
    let _ = writeln!(
        out,
        "outbox {messages_table}: {} buckets, lease {}; {} pending{}, {} parked",
        status.bucket_count,
        short_duration(status.lease_duration),
        status.pending(),
        status
            .oldest_pending_age()
            .map(|a| format!(" (oldest {})", short_duration(a)))
            .unwrap_or_default(),
        status.parked(),
    );
    let _ = writeln!(
        out,
        "\nrelays: {alive} alive, {} stale",
        status.relays.len() - alive
    );
    if status.relays.is_empty() {
        let _ = writeln!(out, "  no heartbeat row");
    } else {
        let rows: Vec<[String; 5]> = status
            .relays
            .iter()
            .map(|r| {
                [
                    r.relay_id.clone(),
                    if r.alive { "alive" } else { "stale" }.into(),
                    format!("{} ago", age(r.last_seen, status.now)),
                    r.fair_share.map_or_else(|| "-".into(), |s| s.to_string()),
                    format!("{}: {}", r.owned.len(), ranges(&r.owned)),
                ]
            })
            .collect();
        let _ = writeln!(
            out,
            "{}",
            aligned(
                "  ",
                ["RELAY", "STATE", "HEARTBEAT", "SHARE", "OWNS"],
                &rows
            )
        );
    }
    let _ = writeln!(out, "\nbuckets:");
    let rows: Vec<[String; 6]> = status
        .buckets
        .iter()
        .map(|b| {
            let (owner, lease) = lease_text(&b.lease);
            [
                b.bucket.to_string(),
                owner,
                lease,
                b.pending.to_string(),
                b.oldest_pending_age
                    .map_or_else(|| "-".into(), short_duration),
                b.parked.to_string(),
            ]
        })
        .collect();
    let _ = writeln!(
        out,
        "{}",
        aligned(
            "  ",
            ["BUCKET", "OWNER", "LEASE", "PENDING", "OLDEST", "PARKED"],
            &rows
        )
    );
    let warnings = warnings(status);
    if !warnings.is_empty() {
        let _ = writeln!(out);
        for w in warnings {
            let _ = writeln!(out, "warning: {w}");
        }
    }
    out.trim_end().to_owned()
}

/// The status as one JSON object; instants in milliseconds since the Unix epoch,
/// durations in milliseconds.
pub fn to_json(status: &OutboxStatus, messages_table: &str) -> Value {
    let relays: Vec<Value> = status
        .relays
        .iter()
        .map(|r| {
            json!({
                "relay_id": r.relay_id,
                "alive": r.alive,
                "last_seen_at_ms": r.last_seen.as_millis(),
                "age_ms": millis(r.age),
                "fair_share": r.fair_share,
                "owned_buckets": r.owned,
            })
        })
        .collect();
    let buckets: Vec<Value> = status
        .buckets
        .iter()
        .map(|b| {
            let mut v = json!({
                "bucket": b.bucket,
                "pending": b.pending,
                "oldest_pending_created_at_ms": b.oldest_pending.map(Timestamp::as_millis),
                "oldest_pending_age_ms": b.oldest_pending_age.map(millis),
                "parked": b.parked,
            });
            let lease = match &b.lease {
                LeaseState::Missing => json!({ "lease": "missing", "owner": null }),
                LeaseState::Free => json!({ "lease": "free", "owner": null }),
                LeaseState::Held {
                    owner,
                    expires_at,
                    left,
                    owner_alive,
                } => json!({
                    "lease": "held",
                    "owner": owner,
                    "owner_alive": owner_alive,
                    "expires_at_ms": expires_at.as_millis(),
                    "lease_left_ms": millis(*left),
                }),
                LeaseState::Expired {
                    owner,
                    expired_at,
                    ago,
                } => json!({
                    "lease": "expired",
                    "owner": owner,
                    "expires_at_ms": expired_at.as_millis(),
                    "expired_ago_ms": millis(*ago),
                }),
            };
            if let (Value::Object(v), Value::Object(lease)) = (&mut v, lease) {
                v.extend(lease);
            }
            v
        })
        .collect();
    let out_of_range: Vec<Value> = status
        .out_of_range
        .iter()
        .map(|o| json!({ "bucket": o.bucket, "pending": o.pending, "parked": o.parked }))
        .collect();
    json!({
        "messages_table": messages_table,
        "now_ms": status.now.as_millis(),
        "bucket_count": status.bucket_count,
        "lease_duration_ms": millis(status.lease_duration),
        "pending": status.pending(),
        "oldest_pending_age_ms": status.oldest_pending_age().map(millis),
        "parked": status.parked(),
        "relays": relays,
        "buckets": buckets,
        "out_of_range": out_of_range,
        "out_of_range_rows": status.out_of_range_rows(),
        "warnings": warnings(status),
    })
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
