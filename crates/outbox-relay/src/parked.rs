//! `outbox-relay parked ...`: the operator's view of rows that can never be published as
//! they are, and the commands that put them back or delete them.
//!
//! The commands run on [`ParkedRows`] (the store's operator API) and only print: the
//! rendering is pure functions over the rows, tested without a database.

use std::fmt::Write as _;

use outbox_core::{ParkReason, ParkedRow, ParkedRows, Timestamp};
use serde_json::{Value, json};

use crate::cli::parked::ParkedCommand;
use crate::format::{age, millis};
use crate::table::aligned;

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
    aligned("", header, &cells)
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
#[path = "parked_tests.rs"]
mod tests;
