//! What a bench prints when rows it committed were never acknowledged: each such row as
//! the database still holds it (id, bucket) or its absence, and every store and publisher
//! call the relay made about that bucket since the row committed. A row the relay left
//! behind is a correctness failure, not a slow run; this is the evidence to find why.

use std::time::Instant;

use outbox_core::Uuid;
use outbox_seaorm::entity::message::Column as C;
use outbox_seaorm::{OutboxTables, SqlNames};
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection};

use crate::ack::Acks;
use crate::timing::Timings;

/// Prints the evidence for every row of `committed` (message id, commit instant) that
/// `acks` never saw, then panics with `summary`.
pub async fn explain_and_fail(
    db: &DatabaseConnection,
    tables: &OutboxTables,
    timings: &Timings,
    committed: &[(Uuid, Instant)],
    acks: &Acks,
    summary: String,
) -> ! {
    let start = committed.iter().map(|(_, at)| *at).min();
    let since =
        |at: Instant| start.map_or(0.0, |s| at.saturating_duration_since(s).as_secs_f64() * 1e3);
    let missing: Vec<&(Uuid, Instant)> = committed
        .iter()
        .filter(|(id, _)| acks.instant(id).is_none())
        .collect();
    eprintln!(
        "\n{summary}\n{} committed row(s) never acknowledged (times in ms since the first commit):",
        missing.len()
    );
    for (message_id, at) in missing.iter().take(5) {
        let stmt = Query::select()
            .columns([C::Id, C::Bucket])
            .from(tables.messages_ref())
            .and_where(Expr::col(C::MessageId).eq(*message_id))
            .to_owned();
        let row = db.query_one(&stmt).await;
        let (id, bucket) = match &row {
            Ok(Some(r)) => (
                r.try_get::<i64>("", "id").ok(),
                r.try_get::<i32>("", "bucket").ok(),
            ),
            _ => (None, None),
        };
        eprintln!(
            "  message {message_id}: committed at {:.1}; in the table: {}",
            since(*at),
            match (&row, id, bucket) {
                (Ok(Some(_)), Some(id), Some(b)) => format!("id {id}, bucket {b}"),
                (Ok(None), ..) => "no (deleted, never published?)".to_owned(),
                (r, ..) => format!("unreadable: {r:?}"),
            }
        );
        let Some(bucket) = bucket else { continue };
        eprintln!(
            "  calls about bucket {bucket} (and probes/leases) from 50 ms before its commit:"
        );
        for e in timings
            .events_of(bucket)
            .iter()
            .filter(|e| e.at + std::time::Duration::from_millis(50) >= *at)
            .take(400)
        {
            eprintln!("    {:>10.1} {}", since(e.at), e.what);
        }
    }
    panic!("{summary}");
}
