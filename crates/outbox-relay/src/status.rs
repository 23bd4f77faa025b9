//! `outbox-relay status`: one outbox at a glance, as a table or as JSON.
//!
//! The store reads the rows and the core judges them ([`outbox_core::status`], with the
//! relays' own liveness and expiry rules); this module only renders the
//! [`OutboxStatus`], in pure functions tested without a database.

use std::fmt::Write as _;
use std::time::Duration;

use clap::Args;
use outbox_core::{LeaseState, OutboxStatus, StoreError, Timestamp};
use outbox_seaorm::SeaOrmStore;
use serde_json::{Value, json};

use crate::connect::StartError;
use crate::parked::{age, short_duration};
use crate::table::aligned;

/// `outbox-relay status` flags.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

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

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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
mod tests {
    use super::*;
    use outbox_core::{BucketRows, LeaseRow, StatusSnapshot};

    const NOW: Timestamp = Timestamp::from_millis(1_765_000_200_000);
    const LEASE: Duration = Duration::from_secs(30);

    fn at(s: i64) -> Timestamp {
        Timestamp::from_millis(NOW.as_millis() + s * 1000)
    }

    fn status() -> OutboxStatus {
        let mut s = StatusSnapshot::default();
        s.leases.relays.insert("relay-a".into(), at(-2));
        s.leases.relays.insert("relay-gone".into(), at(-125));
        for b in 0..2 {
            s.leases.leases.insert(
                b,
                LeaseRow {
                    owner: Some("relay-a".into()),
                    expires_at: at(28),
                },
            );
        }
        s.leases.leases.insert(
            2,
            LeaseRow {
                owner: Some("relay-gone".into()),
                expires_at: at(-95),
            },
        );
        s.leases.leases.insert(3, LeaseRow::free());
        let rows = |count, s| BucketRows {
            count,
            oldest: Some(at(s)),
        };
        s.pending.insert(0, rows(12, -3));
        s.pending.insert(2, rows(4, -192));
        s.pending.insert(9, rows(1, -1));
        s.parked.insert(1, rows(1, -60));
        OutboxStatus::assemble(&s, 4, LEASE, NOW)
    }

    #[test]
    fn ranges_compress_runs() {
        assert_eq!(ranges(&[0, 1, 2, 3, 5, 7, 8]), "0-3, 5, 7-8");
        assert_eq!(ranges(&[]), "-");
        assert_eq!(ranges(&[4]), "4");
    }

    #[test]
    fn the_table_shows_relays_buckets_and_warnings() {
        let text = render(&status(), "outbox_messages");
        let line = |needle: &str| {
            text.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no line with {needle:?}:\n{text}"))
        };
        assert!(
            line("outbox outbox_messages")
                .contains("4 buckets, lease 30s; 16 pending (oldest 3m12s), 1 parked"),
            "{text}"
        );
        assert!(line("relays:").contains("1 alive, 1 stale"), "{text}");
        let a = line("  relay-a ");
        assert!(
            a.contains("alive") && a.contains("2s ago") && a.contains("2: 0-1"),
            "{text}"
        );
        let gone = line("  relay-gone ");
        assert!(gone.contains("stale") && gone.contains("2m05s ago") && gone.contains("0: -"));
        assert!(line("  0 ").contains("28s left"), "{text}");
        let b2 = line("  2 ");
        assert!(
            b2.contains("relay-gone") && b2.contains("expired 1m35s ago") && b2.contains("3m12s")
        );
        assert!(line("  3 ").contains("free"), "{text}");
        assert!(
            line("outside buckets 0..4")
                .contains("1 rows lie outside buckets 0..4 (bucket 9: 1 pending, 0 parked)"),
            "{text}"
        );
        assert!(line("no relay holds").contains(": 2"), "{text}");
        let column = |l: &str| l.find("PENDING").or_else(|| l.find("12")).unwrap();
        assert_eq!(
            column(line("BUCKET")),
            column(line("  0 ")),
            "aligned:\n{text}"
        );
    }

    #[test]
    fn json_carries_every_figure() {
        let v = to_json(&status(), "outbox_messages");
        assert_eq!(v["bucket_count"], 4);
        assert_eq!(v["pending"], 16);
        assert_eq!(v["parked"], 1);
        assert_eq!(v["relays"][0]["relay_id"], "relay-a");
        assert_eq!(v["relays"][0]["alive"], true);
        assert_eq!(v["relays"][0]["owned_buckets"], json!([0, 1]));
        assert_eq!(v["relays"][1]["alive"], false);
        assert_eq!(v["relays"][1]["age_ms"], 125_000);
        assert_eq!(v["buckets"][0]["lease"], "held");
        assert_eq!(v["buckets"][0]["lease_left_ms"], 28_000);
        assert_eq!(v["buckets"][0]["oldest_pending_age_ms"], 3_000);
        assert_eq!(v["buckets"][1]["parked"], 1);
        assert_eq!(v["buckets"][2]["lease"], "expired");
        assert_eq!(v["buckets"][2]["expired_ago_ms"], 95_000);
        assert_eq!(v["buckets"][3]["lease"], "free");
        assert!(v["buckets"][3]["owner"].is_null());
        assert_eq!(
            v["out_of_range"],
            json!([{ "bucket": 9, "pending": 1, "parked": 0 }])
        );
        assert_eq!(v["warnings"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_quiet_outbox_has_no_warning_but_a_missing_relay() {
        let mut s = StatusSnapshot::default();
        s.leases.leases.insert(0, LeaseRow::free());
        let status = OutboxStatus::assemble(&s, 2, LEASE, NOW);
        let text = render(&status, "m");
        assert!(text.contains("no heartbeat row"), "{text}");
        assert!(text.contains("no lease row yet"), "{text}");
        assert_eq!(
            warnings(&status),
            ["no relay is alive: nothing is published"]
        );
    }

    /// The README's example is this renderer's output for the state it describes.
    #[test]
    fn the_readme_example_is_what_the_renderer_prints() {
        let mut s = StatusSnapshot::default();
        let (r0, r1, r2) = (
            "orders-relay-0-outbox",
            "orders-relay-1-outbox",
            "orders-relay-2-outbox",
        );
        s.leases.relays.insert(r0.into(), at(-3));
        s.leases.relays.insert(r1.into(), at(-1));
        s.leases.relays.insert(r2.into(), at(-754));
        let lease = |owner: &str, until| LeaseRow {
            owner: Some(owner.into()),
            expires_at: at(until),
        };
        for b in 0..4 {
            s.leases.leases.insert(b, lease(r0, 27));
        }
        for b in 4..7 {
            s.leases.leases.insert(b, lease(r1, 29));
        }
        s.leases.leases.insert(7, lease(r2, -724));
        let rows = |count, s| BucketRows {
            count,
            oldest: Some(at(s)),
        };
        s.pending.insert(0, rows(12, -1));
        s.pending.insert(3, rows(2, 0));
        s.pending.insert(5, rows(41, -4));
        s.pending.insert(7, rows(318, -733));
        s.pending.insert(11, rows(3, -40));
        s.parked.insert(5, rows(1, -3600));
        let rendered = render(
            &OutboxStatus::assemble(&s, 8, LEASE, NOW),
            "outbox_messages",
        );
        let readme = include_str!("../../../README.md");
        let example = readme
            .split("$ outbox-relay --database-url postgres://... status\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("the README shows a status example");
        let mut shown = 0;
        for line in example.lines().filter(|l| l.trim() != "...") {
            assert!(
                rendered.lines().any(|r| r == line),
                "README line {line:?} is not in the output:\n{rendered}"
            );
            shown += 1;
        }
        assert!(shown > 15, "{example}");
    }
}
