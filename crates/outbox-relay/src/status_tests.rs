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
    assert!(b2.contains("relay-gone") && b2.contains("expired 1m35s ago") && b2.contains("3m12s"));
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
