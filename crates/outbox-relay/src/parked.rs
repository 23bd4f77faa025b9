//! `outbox-relay parked ...`: the operator's view of rows that can never be published as
//! they are, and the commands that put them back or delete them.
//!
//! The commands run on [`ParkedRows`] (the store's operator API) and only print: the
//! rendering is pure functions over the rows, tested without a database.

use std::fmt::Write as _;
use std::time::Duration;

use clap::{Args, Subcommand};
use outbox_core::{ParkReason, ParkedRow, ParkedRows, ParkedSelection, Timestamp};
use serde_json::{Value, json};

/// Operator commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One outbox at a glance: live relays, bucket owners, pending and parked rows.
    ///
    /// Which relays are alive (heartbeat age), who holds which bucket and until when,
    /// pending rows and their oldest age per bucket, parked rows, and rows a writer put
    /// beyond the bucket count. Judged with --lease-duration and --bucket-count, which must
    /// be the relays' own: a relay is alive, and a lease expired, by the rule the relays
    /// use to split the buckets. Exits 0 when the tables could be read, 1 when the
    /// database does not answer or the tables are missing.
    Status(crate::status::StatusArgs),
    /// Rows set aside because they failed for good, and the rows of their keys held
    /// behind them: list, show, requeue, discard.
    #[command(subcommand)]
    Parked(ParkedCommand),
}

/// What to do with parked rows.
#[derive(Debug, Subcommand)]
pub enum ParkedCommand {
    /// Lists parked rows, oldest id first: bucket, key, topic, error, attempts, age.
    List {
        /// At most this many rows.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Shows one parked row in full (headers and value included).
    Show {
        /// The row's id.
        id: i64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Puts parked rows back under their original ids, in one transaction; a row's
    /// earlier parked rows of the same key go along, so the key keeps its order.
    Requeue {
        #[command(flatten)]
        selection: Selection,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Deletes parked rows for good (they are never published). Needs --yes.
    Discard {
        #[command(flatten)]
        selection: Selection,
        /// Confirms the deletion.
        #[arg(long)]
        yes: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Which parked rows: exactly one of `--key`, `--key-hex`, `--id`, `--all`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct Selection {
    /// Every parked row with this key (UTF-8 text), pinned rows excluded.
    #[arg(long)]
    key: Option<String>,
    /// Like --key, for keys that are not text: the bytes in hex, as `list` shows them
    /// (`0x009f`; the `0x` is optional).
    #[arg(long, value_name = "HEX", value_parser = parse_hex_key)]
    key_hex: Option<HexKey>,
    /// The row with this id.
    #[arg(long)]
    id: Option<i64>,
    /// Every parked row.
    #[arg(long)]
    all: bool,
}

/// A key given in hex (`--key-hex`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexKey(Vec<u8>);

/// `0x009f` or `009f` as bytes; an odd digit count or a non-hex digit is refused.
fn parse_hex_key(text: &str) -> Result<HexKey, String> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if !digits.len().is_multiple_of(2) {
        return Err(format!("{text:?} has an odd number of hex digits"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("{text:?} is not hex"))
        })
        .collect::<Result<Vec<u8>, String>>()
        .map(HexKey)
}

impl Selection {
    fn to_core(&self) -> ParkedSelection {
        match (&self.key, &self.key_hex, self.id) {
            (Some(key), _, _) => ParkedSelection::Key(key.as_bytes().to_vec()),
            (None, Some(HexKey(key)), _) => ParkedSelection::Key(key.clone()),
            (None, None, Some(id)) => ParkedSelection::Id(id),
            (None, None, None) => ParkedSelection::All,
        }
    }
}

/// Why a command did nothing.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// `discard` without `--yes`.
    #[error("discard deletes parked rows for good; run it again with --yes to confirm")]
    NotConfirmed,
    /// `show` of an id that is not parked.
    #[error("no parked row has id {0}")]
    NotFound(i64),
    /// The store failed.
    #[error("{0}")]
    Store(#[from] outbox_core::StoreError),
}

/// Runs `command` on `store` and returns what to print.
pub async fn run<S: ParkedRows>(
    store: &S,
    command: &ParkedCommand,
    now: Timestamp,
) -> Result<String, CommandError> {
    match command {
        ParkedCommand::List { limit, json } => {
            let rows = store.list_parked(*limit).await?;
            Ok(if *json {
                Value::Array(rows.iter().map(|r| row_json(r, now)).collect()).to_string()
            } else {
                render_table(&rows, now)
            })
        }
        ParkedCommand::Show { id, json } => {
            let row = store
                .show_parked(*id)
                .await?
                .ok_or(CommandError::NotFound(*id))?;
            Ok(if *json {
                row_json(&row, now).to_string()
            } else {
                render_row(&row, now)
            })
        }
        ParkedCommand::Requeue { selection, json } => {
            let ids = store.requeue_parked(&selection.to_core()).await?;
            Ok(done("requeued", &ids, *json))
        }
        ParkedCommand::Discard {
            selection,
            yes,
            json,
        } => {
            if !yes {
                return Err(CommandError::NotConfirmed);
            }
            let ids = store.discard_parked(&selection.to_core()).await?;
            Ok(done("discarded", &ids, *json))
        }
    }
}

fn done(verb: &str, ids: &[i64], json: bool) -> String {
    if json {
        return json!({ verb: ids }).to_string();
    }
    match ids {
        [] => format!("nothing {verb}: no parked row matched"),
        _ => format!(
            "{verb} {} row{}: {}",
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            ids.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Bytes as text when they are UTF-8, else as hex (`0x...`).
fn bytes_text(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "-".to_owned(),
        Some(b) => match std::str::from_utf8(b) {
            Ok(text) if !text.chars().any(char::is_control) => text.to_owned(),
            _ => {
                let mut hex = String::from("0x");
                for byte in b {
                    let _ = write!(hex, "{byte:02x}");
                }
                hex
            }
        },
    }
}

/// `3m12s`, `2h05m`, `4d03h`: how long ago `at` was.
pub(crate) fn age(at: Timestamp, now: Timestamp) -> String {
    short_duration(now.saturating_duration_since(at))
}

/// `3m12s`, `2h05m`, `4d03h`: a duration, coarser as it grows.
pub(crate) fn short_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3_600 => format!("{}m{:02}s", secs / 60, secs % 60),
        3_600..86_400 => format!("{}h{:02}m", secs / 3_600, secs % 3_600 / 60),
        _ => format!("{}d{:02}h", secs / 86_400, secs % 86_400 / 3_600),
    }
}

fn attempts(reason: &ParkReason) -> u32 {
    match reason {
        ParkReason::Failed(f) => f.attempts,
        ParkReason::HeldBehind { .. } => 0,
    }
}

/// Cuts `text` to `max` characters, marking the cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The list as an aligned table, or a sentence when it is empty.
pub fn render_table(rows: &[ParkedRow], now: Timestamp) -> String {
    if rows.is_empty() {
        return "no parked rows".to_owned();
    }
    let header = ["ID", "BUCKET", "KEY", "TOPIC", "ATTEMPTS", "AGE", "REASON"];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            let key = match r.message.partition {
                Some(p) => format!("partition {p}"),
                None => bytes_text(r.message.key.as_deref()),
            };
            [
                r.message.id.to_string(),
                r.message.bucket.to_string(),
                clip(&key, 32),
                clip(&r.message.topic, 32),
                attempts(&r.reason).to_string(),
                age(r.parked_at, now),
                clip(&r.reason.to_string(), 80),
            ]
        })
        .collect();
    crate::table::aligned("", header, &cells)
}

/// One row in full.
pub fn render_row(row: &ParkedRow, now: Timestamp) -> String {
    let m = &row.message;
    let mut out = String::new();
    let _ = writeln!(out, "id:          {}", m.id);
    let _ = writeln!(out, "message id:  {}", m.message_id);
    let _ = writeln!(out, "bucket:      {}", m.bucket);
    let _ = writeln!(out, "topic:       {}", m.topic);
    let _ = writeln!(out, "key:         {}", bytes_text(m.key.as_deref()));
    if let Some(p) = m.partition {
        let _ = writeln!(out, "partition:   {p}");
    }
    let _ = writeln!(out, "value:       {}", bytes_text(m.value.as_deref()));
    let headers = match m.decoded_headers() {
        Ok(h) => h
            .iter()
            .map(|h| format!("{}={}", h.name, bytes_text(h.value.as_deref())))
            .collect::<Vec<_>>()
            .join(", "),
        Err(e) => format!("undecodable ({e}): {}", bytes_text(m.headers.as_deref())),
    };
    let _ = writeln!(out, "headers:     {headers}");
    let _ = writeln!(out, "created:     {} ago", age(m.created_at, now));
    let _ = writeln!(out, "parked:      {} ago", age(row.parked_at, now));
    match &row.reason {
        ParkReason::Failed(f) => {
            let _ = writeln!(out, "attempts:    {}", f.attempts);
            let _ = writeln!(
                out,
                "failing:     since {} ago, last {} ago",
                age(f.first_failed_at, now),
                age(f.last_failed_at, now)
            );
            let _ = writeln!(out, "error:       {}", f.error);
        }
        ParkReason::HeldBehind { blocking_id } => {
            let _ = writeln!(
                out,
                "held:        behind parked row {blocking_id} of the same key"
            );
        }
    }
    out.trim_end().to_owned()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One row as JSON: ids, key and value as text or hex, the reason in fields.
pub fn row_json(row: &ParkedRow, now: Timestamp) -> Value {
    let m = &row.message;
    let (reason, error, attempts, first, last, held_behind) = match &row.reason {
        ParkReason::Failed(f) => (
            "failed",
            Some(f.error.clone()),
            f.attempts,
            Some(f.first_failed_at.as_millis()),
            Some(f.last_failed_at.as_millis()),
            None,
        ),
        ParkReason::HeldBehind { blocking_id } => {
            ("held_behind", None, 0, None, None, Some(*blocking_id))
        }
    };
    json!({
        "id": m.id,
        "message_id": m.message_id.to_string(),
        "bucket": m.bucket,
        "topic": m.topic,
        "key": m.key.as_deref().map(|k| bytes_text(Some(k))),
        "partition": m.partition,
        "value": m.value.as_deref().map(|v| bytes_text(Some(v))),
        "headers": m.headers.as_deref().map(|h| bytes_text(Some(h))),
        "created_at_ms": m.created_at.as_millis(),
        "parked_at_ms": row.parked_at.as_millis(),
        "age_ms": millis(now.saturating_duration_since(row.parked_at)),
        "reason": reason,
        "error": error,
        "attempts": attempts,
        "first_failed_at_ms": first,
        "last_failed_at_ms": last,
        "held_behind": held_behind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_core::testing::MemoryStore;
    use outbox_core::{
        LeaseRequest, OutboxMessage, OutboxStore, ParkRequest, ParkRow, ParkedFailure, Uuid,
    };

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
}
