//! Section 4, bulk writes: the same rows (1 KiB values, keys over 10,000 ids) written in
//! calls of 2,000 by `Outbox::enqueue_all` through a plain connection (validation, then
//! on PostgreSQL a binary COPY in a transaction of its own), by `insert_rows` inside a
//! transaction (the multi-row insert, no validation), and on PostgreSQL by hand-written
//! `COPY ... FROM STDIN` on a sqlx connection, in the text format (`psql`'s) and in the
//! binary one (no project code; the better of the two is the ceiling). One writer; each variant gets fresh tables, and the
//! variants take turns in rounds so that noise hits them alike.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use outbox_core::{MessageBuilder, OutboxMessage};
use outbox_seaorm::{Outbox, OutboxTables, insert_rows};
use sea_orm::prelude::DateTimeUtc;
use sea_orm::{DatabaseConnection, TransactionTrait};

use crate::args::DbKind;
use crate::data;
use crate::env::{Env, VALUE_SIZE};
use crate::report::{Report, int};

const SECTION: &str = "4 enqueue";
/// Rows per call (the benchmark's pre-fill chunk).
const CALL: usize = 2_000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    EnqueueAll,
    InsertRows,
    PlainCopy,
    PlainBinaryCopy,
}

pub async fn run(env: &Env, report: &mut Report) {
    let (rounds, calls) = env.args.pick((3, 10), (1, 2));
    let mut variants = vec![Variant::EnqueueAll, Variant::InsertRows];
    if env.kind() == DbKind::Postgres {
        variants.push(Variant::PlainCopy);
        variants.push(Variant::PlainBinaryCopy);
    }
    println!(
        "\n== {SECTION}, bulk: {rounds} rounds of {calls} calls x {CALL} rows per variant ({VALUE_SIZE} B values)"
    );
    let db = env.db().await;
    let config = env.enqueue_config(8);
    let mut time = vec![Duration::ZERO; variants.len()];
    let mut rows = vec![0u64; variants.len()];
    for _ in 0..rounds {
        for (v, variant) in variants.iter().enumerate() {
            let tables = env.tables(&db).await;
            let outbox = Outbox::new(env.schema(&tables, 8));
            let mut spent = Duration::ZERO;
            for c in 0..calls {
                let from = (c * CALL) as u64;
                let builders: Vec<MessageBuilder> = (from..from + CALL as u64)
                    .map(|i| {
                        OutboxMessage::builder("bulk")
                            .key(data::key(i))
                            .value(data::value(i, VALUE_SIZE))
                    })
                    .collect();
                // The baselines get rows built and checked outside their timing.
                let built: Vec<OutboxMessage> = builders
                    .iter()
                    .map(|b| b.clone().build(&config).unwrap())
                    .collect();
                let started = Instant::now();
                match variant {
                    Variant::EnqueueAll => {
                        outbox.enqueue_all(&db, builders).await.unwrap();
                    }
                    Variant::InsertRows => {
                        let txn = db.begin().await.unwrap();
                        insert_rows(&txn, &tables, &built).await.unwrap();
                        txn.commit().await.unwrap();
                    }
                    Variant::PlainCopy => {
                        plain_copy(&db, &tables, text_stream(&built), "").await;
                    }
                    Variant::PlainBinaryCopy => {
                        let stream = binary_stream(&built);
                        plain_copy(&db, &tables, stream, " (FORMAT binary)").await;
                    }
                }
                spent += started.elapsed();
            }
            assert_eq!(data::count(&db, &tables).await, (calls * CALL) as u64);
            env.drop_tables(&db, &tables).await;
            time[v] += spent;
            rows[v] += (calls * CALL) as u64;
        }
    }
    let rate: Vec<f64> = (0..variants.len())
        .map(|v| rows[v] as f64 / time[v].as_secs_f64())
        .collect();
    for (v, variant) in variants.iter().enumerate() {
        let (label, key) = match variant {
            Variant::EnqueueAll => (
                "bulk: enqueue_all on a connection (rows/s)",
                "bulk_enqueue_all_rows_per_s",
            ),
            Variant::InsertRows => (
                "bulk: insert_rows in a transaction (rows/s)",
                "bulk_insert_rows_rows_per_s",
            ),
            Variant::PlainCopy => (
                "bulk: hand-written COPY, text format (rows/s)",
                "bulk_plain_copy_text_rows_per_s",
            ),
            Variant::PlainBinaryCopy => (
                "bulk: hand-written COPY, binary format (rows/s)",
                "bulk_plain_copy_binary_rows_per_s",
            ),
        };
        report.line(SECTION, label, int(rate[v]));
        report.set(SECTION, key, rate[v]);
    }
    if variants.len() > 2 {
        // The ceiling: the better of the two hand-written formats.
        let copy = rate[2].max(rate[3]);
        let ratio = rate[0] / copy;
        report.line(
            SECTION,
            "bulk: enqueue_all / the better hand-written COPY",
            format!("{ratio:.2}"),
        );
        report.set(SECTION, "bulk_enqueue_all_over_plain_copy", ratio);
        if !env.args.quick {
            report.target(
                "bulk enqueue (enqueue_all on a connection) / plain COPY",
                ">= 0.9",
                format!("{ratio:.2}"),
                Some(ratio >= 0.9),
            );
        }
    }
}

/// `stream` (rows in the COPY format `options` names) into the messages table in one
/// transaction, on a connection of the pool under `db`.
async fn plain_copy(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    stream: Vec<u8>,
    options: &str,
) {
    let pool = db.get_postgres_connection_pool();
    let mut txn = pool.begin().await.unwrap();
    let mut copy = txn
        .copy_in_raw(&format!(
            "COPY \"{}\" (message_id, bucket, topic, key, value, headers, partition, created_at) \
             FROM STDIN{options}",
            tables.messages()
        ))
        .await
        .unwrap();
    // CopyData messages of 1 MiB, as a careful hand-written loader sends them (one
    // message of the whole stream measured half the rate).
    for chunk in stream.chunks(1 << 20) {
        copy.send(chunk).await.unwrap();
    }
    copy.finish().await.unwrap();
    txn.commit().await.unwrap();
}

/// PostgreSQL's text format: tab-separated, bytea as `\\x` hex, `\N` for NULL.
fn text_stream(rows: &[OutboxMessage]) -> Vec<u8> {
    let mut text = String::with_capacity(rows.len() * (2 * VALUE_SIZE + 200));
    for m in rows {
        let _ = write!(text, "{}\t{}\t{}\t", m.message_id, m.bucket, m.topic);
        bytea(&mut text, m.key.as_deref());
        text.push('\t');
        bytea(&mut text, m.value.as_deref());
        text.push('\t');
        bytea(&mut text, m.headers.as_deref());
        text.push('\t');
        match m.partition {
            Some(p) => {
                let _ = write!(text, "{p}");
            }
            None => text.push_str("\\N"),
        }
        let at = DateTimeUtc::from_timestamp_millis(m.created_at.as_millis()).unwrap();
        let _ = writeln!(text, "\t{}", at.to_rfc3339());
    }
    text.into_bytes()
}

fn bytea(out: &mut String, bytes: Option<&[u8]>) {
    match bytes {
        None => out.push_str("\\N"),
        Some(bytes) => {
            out.push_str("\\\\x");
            for b in bytes {
                let _ = write!(out, "{b:02x}");
            }
        }
    }
}

/// PostgreSQL's binary format, as its documentation lays it out: signature, flags and
/// extension length, then per row the field count and each field as length + bytes (-1:
/// NULL), then -1. `timestamptz` is microseconds since 2000-01-01.
fn binary_stream(rows: &[OutboxMessage]) -> Vec<u8> {
    let mut out = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0".to_vec();
    for m in rows {
        let partition = m.partition.map(|p| p.to_be_bytes().to_vec());
        let micros = (m.created_at.as_millis() - 946_684_800_000) * 1_000;
        let fields: [Option<Vec<u8>>; 8] = [
            Some(m.message_id.as_bytes().to_vec()),
            Some(m.bucket.to_be_bytes().to_vec()),
            Some(m.topic.as_bytes().to_vec()),
            m.key.clone(),
            m.value.clone(),
            m.headers.clone(),
            partition,
            Some(micros.to_be_bytes().to_vec()),
        ];
        out.extend_from_slice(&8i16.to_be_bytes());
        for f in &fields {
            match f {
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(bytes) => {
                    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                    out.extend_from_slice(bytes);
                }
            }
        }
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out
}
