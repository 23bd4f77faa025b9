//! Section 2: the loop most services write by hand, on the same data: in a transaction,
//! select a batch (`FOR UPDATE SKIP LOCKED` where the database has it), produce each row
//! and await its acknowledgement, delete the rows one by one, commit.
//!
//! It is slow, so it runs for a bounded time and its rate is rows done / time taken.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use outbox_core::OutboxMessage;
use outbox_core::bucket::partition_for_key;
use outbox_seaorm::SqlNames;
use outbox_seaorm::entity::message::{COLUMNS, Column as C, Model};
use rskafka::client::partition::{Compression, UnknownTopicHandling};
use rskafka::record::Record;
use sea_orm::prelude::DateTimeUtc;
use sea_orm::sea_query::{ExprTrait, LockBehavior, LockType, Order, Query};
use sea_orm::{ConnectionTrait, FromQueryResult, TransactionTrait};
use std::num::NonZeroU32;

use crate::args::DbKind;
use crate::env::{BATCH, Env, PARTITIONS};
use crate::report::{Report, int};
use crate::{Shared, data};

const SECTION: &str = "2 naive";

pub async fn run(env: &Env, shared: &mut Shared, report: &mut Report) {
    let budget = Duration::from_secs(env.args.pick(30, 3));
    println!(
        "\n== {SECTION}: hand-written loop on the same rows, for at most {budget:?} (select {BATCH} {}; per row: produce + await ack, delete)",
        if env.kind() == DbKind::Sqlite {
            "(SQLite: no row locks)"
        } else {
            "FOR UPDATE SKIP LOCKED"
        }
    );
    let db = env.db().await;
    let source = shared.source(env, &db, report).await;
    let tables = env.tables(&db).await;
    let topic = env.topic().await;
    data::copy(&db, &source, &tables, &topic, None).await;

    let mut clients = Vec::new();
    for p in 0..PARTITIONS {
        clients.push(
            env.kafka
                .partition_client(&topic, p, UnknownTopicHandling::Retry)
                .await
                .unwrap(),
        );
    }
    let partitions = NonZeroU32::new(PARTITIONS as u32).unwrap();
    let started = Instant::now();
    let mut done = 0u64;
    'outer: while started.elapsed() < budget {
        let txn = db.begin().await.unwrap();
        let mut select = Query::select();
        select
            .columns(COLUMNS)
            .from(tables.messages_ref())
            .order_by(C::Id, Order::Asc)
            .limit(BATCH as u64);
        if env.kind() != DbKind::Sqlite {
            select.lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
        }
        let rows = txn.query_all(&select).await.unwrap();
        if rows.is_empty() {
            txn.commit().await.unwrap();
            break;
        }
        for row in rows {
            let m: OutboxMessage = Model::from_query_result(&row, "").unwrap().into();
            let key = m.key.clone().unwrap_or_default();
            let partition = partition_for_key(&key, partitions) as usize;
            let mut headers = BTreeMap::new();
            headers.insert(
                "x-outbox-message-id".to_owned(),
                m.message_id.to_string().into_bytes(),
            );
            let record = Record {
                key: m.key.clone(),
                value: m.value.clone(),
                headers,
                timestamp: DateTimeUtc::from(SystemTime::now()),
            };
            clients[partition]
                .produce(vec![record], Compression::NoCompression)
                .await
                .unwrap();
            let delete = Query::delete()
                .from_table(tables.messages_ref())
                .and_where(sea_orm::sea_query::Expr::col(C::Id).eq(m.id))
                .to_owned();
            txn.execute(&delete).await.unwrap();
            done += 1;
            if started.elapsed() >= budget {
                txn.commit().await.unwrap();
                break 'outer;
            }
        }
        txn.commit().await.unwrap();
    }
    let elapsed = started.elapsed();
    assert_eq!(env.topic_count(&topic).await, done);
    assert_eq!(data::count(&db, &tables).await, env.args.rows - done);
    env.drop_tables(&db, &tables).await;
    let naive = done as f64 / elapsed.as_secs_f64();
    report.line(
        SECTION,
        &format!(
            "naive loop (msgs/s; {done} rows in {:.1} s)",
            elapsed.as_secs_f64()
        ),
        int(naive),
    );
    report.set(SECTION, "rows_done", done);
    report.set(SECTION, "seconds", elapsed.as_secs_f64());
    report.set(SECTION, "naive_msgs_per_s", naive);
    match shared.relay_rate {
        Some(relay) => {
            let ratio = relay / naive;
            report.line(SECTION, "relay / naive", format!("{ratio:.1}"));
            report.set(SECTION, "relay_over_naive", ratio);
            report.target(
                "relay / naive",
                ">= 10",
                format!("{ratio:.1}"),
                Some(ratio >= 10.0),
            );
        }
        None => report.target("relay / naive", ">= 10", "(section 1 not run)".into(), None),
    }
}
