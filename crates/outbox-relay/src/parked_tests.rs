use std::time::Duration;

use outbox_core::testing::MemoryStore;
use outbox_core::{
    LeaseRequest, OutboxMessage, OutboxStore, ParkRequest, ParkRow, ParkedFailure, ParkedSelection,
    Uuid,
};

use super::*;
use crate::cli::parked::Selection;

const NOW: Timestamp = Timestamp::from_millis(1_765_000_200_000);

fn message(id: i64, key: &[u8]) -> OutboxMessage {
    OutboxMessage {
        id,
        message_id: Uuid::from_u128(id as u128),
        bucket: 0,
        topic: "orders".into(),
        key: Some(key.to_vec()),
        value: Some(b"{}".to_vec()),
        headers: Some(vec![0xff, 0, 0]),
        partition: None,
        created_at: Timestamp::from_millis(1_765_000_000_000),
        store_ref: None,
    }
}

fn parked(id: i64, key: &[u8], reason: ParkReason) -> ParkedRow {
    ParkedRow {
        message: message(id, key),
        reason,
        parked_at: Timestamp::from_millis(1_765_000_008_000),
    }
}

fn failed() -> ParkReason {
    ParkReason::Failed(ParkedFailure {
        error: "the row's headers cannot be decoded".into(),
        attempts: 3,
        first_failed_at: Timestamp::from_millis(1_765_000_001_000),
        last_failed_at: Timestamp::from_millis(1_765_000_007_000),
    })
}

#[test]
fn the_table_aligns_and_shows_keys_as_text_or_hex() {
    let rows = [
        parked(7, b"K", failed()),
        parked(9, &[0, 159], ParkReason::HeldBehind { blocking_id: 7 }),
    ];
    let table = render_table(&rows, NOW);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(lines[0].starts_with("ID  BUCKET  KEY"), "{table}");
    assert!(
        lines[1].contains(" K ") && lines[1].contains("3m12s"),
        "{table}"
    );
    assert!(
        lines[1].contains("headers cannot be decoded (failed 3 times)"),
        "{table}"
    );
    assert!(lines[2].contains("0x009f") && lines[2].contains("held behind parked row 7"));
    let column = |line: &str| line.find("orders").unwrap();
    assert_eq!(column(lines[1]), column(lines[2]), "aligned:\n{table}");
    assert_eq!(render_table(&[], NOW), "no parked rows");
}

#[test]
fn json_carries_every_field() {
    let v = row_json(&parked(7, b"K", failed()), NOW);
    assert_eq!(v["id"], 7);
    assert_eq!(v["key"], "K");
    assert_eq!(v["reason"], "failed");
    assert_eq!(v["attempts"], 3);
    assert_eq!(v["age_ms"], 192_000);
    assert_eq!(v["headers"], "0xff0000");
    let held = row_json(
        &parked(9, b"K", ParkReason::HeldBehind { blocking_id: 7 }),
        NOW,
    );
    assert_eq!(held["held_behind"], 7);
    assert!(held["error"].is_null());
    let shown = render_row(&parked(7, b"K", failed()), NOW);
    assert!(shown.contains("undecodable"), "{shown}");
}

#[test]
fn a_key_that_is_not_text_is_selected_in_hex_as_the_table_shows_it() {
    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        command: ParkedCommand,
    }
    let selection = |args: &[&str]| -> Result<ParkedSelection, clap::Error> {
        let argv = ["parked", "requeue"].iter().chain(args);
        match <Cli as clap::Parser>::try_parse_from(argv)?.command {
            ParkedCommand::Requeue { selection, .. } => Ok(selection.to_core()),
            other => panic!("{other:?}"),
        }
    };
    // The table's rendering of the key, fed back, selects the same bytes.
    let shown = bytes_text(Some(&[0, 159]));
    assert_eq!(
        selection(&["--key-hex", &shown]).unwrap(),
        ParkedSelection::Key(vec![0, 159])
    );
    assert_eq!(
        selection(&["--key-hex", "ff"]).unwrap(),
        ParkedSelection::Key(vec![255])
    );
    assert!(selection(&["--key-hex", "0xf"]).is_err(), "odd digit count");
    assert!(selection(&["--key-hex", "zz"]).is_err(), "not hex");
    assert!(
        selection(&["--key-hex", "ff", "--key", "K"]).is_err(),
        "one selection only"
    );
}

#[tokio::test]
async fn commands_run_on_the_operator_api() {
    let store = MemoryStore::new();
    let id = store.enqueue(message(0, b"K"));
    let request = LeaseRequest {
        relay_id: "r",
        bucket_count: 8,
        lease_duration: Duration::from_secs(30),
        now: NOW,
        busy: &[],
    };
    store.acquire_leases(&request).await.unwrap();
    let row = ParkRow {
        message: OutboxMessage {
            id,
            ..message(0, b"K")
        },
        reason: failed(),
    };
    let rows = [row];
    let park = ParkRequest {
        relay_id: "r",
        now: NOW,
        bucket: 0,
        rows: &rows,
    };
    store.park_rows(&park).await.unwrap();
    let list = run(
        &store,
        &ParkedCommand::List {
            limit: 10,
            json: true,
        },
        NOW,
    )
    .await
    .unwrap();
    let parsed: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 1);
    let everything = || Selection {
        key: None,
        key_hex: None,
        id: None,
        all: true,
    };
    let refused = run(
        &store,
        &ParkedCommand::Discard {
            selection: everything(),
            yes: false,
            json: false,
        },
        NOW,
    )
    .await;
    assert!(matches!(refused, Err(CommandError::NotConfirmed)));
    assert_eq!(store.parked().len(), 1, "nothing discarded without --yes");
    let requeued = run(
        &store,
        &ParkedCommand::Requeue {
            selection: Selection {
                key: Some("K".into()),
                key_hex: None,
                id: None,
                all: false,
            },
            json: true,
        },
        NOW,
    )
    .await
    .unwrap();
    assert_eq!(requeued, format!(r#"{{"requeued":[{id}]}}"#));
    assert_eq!(store.pending_count(), 1);
}
