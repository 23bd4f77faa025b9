//! Where a drain's time goes, sampled while it runs (section 1): what the database's
//! sessions are doing (PostgreSQL's `pg_stat_activity`, every 20 ms: on CPU, waiting on
//! a lock, on WAL I/O, or idle waiting for their client), how busy the pool of the
//! drain's own connection is, the work the server did (`pg_stat_database`: transactions,
//! rows scanned and fetched, buffers; the WAL position: WAL bytes), and the CPU each
//! program on the machine used (from `/proc`: PostgreSQL's processes, the broker's JVM,
//! this process, the rest).
//!
//! The sessions are found by the database name and exclude the sampler's own; on
//! SQLite and MariaDB only the CPU figures are taken.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use tokio::task::JoinHandle;

use crate::args::DbKind;
use crate::env::Env;
use crate::report::Report;

const EVERY: Duration = Duration::from_millis(20);

/// A running sampler; [`Sampler::finish`] stops it and reports.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    task: Option<JoinHandle<BTreeMap<String, u64>>>,
    /// The sampler's connection and the database's counters when sampling started.
    counters: Option<(DatabaseConnection, DatabaseCounters)>,
    pool: Option<JoinHandle<(u64, u64)>>,
    cpu: Option<CpuTicks>,
    started: Instant,
}

impl Sampler {
    /// Starts sampling; `pool` is the drain's connection pool, watched for how often it
    /// has no idle connection left.
    pub async fn start(env: &Env, pool: Option<&DatabaseConnection>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let (task, counters) = if env.kind() == DbKind::Postgres {
            let db = env.db_single().await;
            let counters = DatabaseCounters::read(&db)
                .await
                .map(|before| (db.clone(), before));
            let stop = Arc::clone(&stop);
            (
                Some(tokio::spawn(async move { sample_sessions(db, stop).await })),
                counters,
            )
        } else {
            (None, None)
        };
        let pool = match pool {
            Some(db) if env.kind() == DbKind::Postgres => {
                let pg = db.get_postgres_connection_pool().clone();
                let stop = Arc::clone(&stop);
                Some(tokio::spawn(async move {
                    let (mut samples, mut exhausted) = (0_u64, 0_u64);
                    while !stop.load(Ordering::Relaxed) {
                        samples += 1;
                        if pg.num_idle() == 0 && pg.size() >= pg.options().get_max_connections() {
                            exhausted += 1;
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    (samples, exhausted)
                }))
            }
            _ => None,
        };
        Sampler {
            stop,
            task,
            counters,
            pool,
            cpu: CpuTicks::read(),
            started: Instant::now(),
        }
    }

    /// Stops sampling and reports under `section` / `who`.
    pub async fn finish(mut self, report: &mut Report, section: &str, who: &str) {
        self.stop.store(true, Ordering::Relaxed);
        let seconds = self.started.elapsed().as_secs_f64();
        if let (Some(before), Some(after)) = (self.cpu.take(), CpuTicks::read()) {
            let cores = |a: u64, b: u64| (b.saturating_sub(a)) as f64 / TICKS_PER_SECOND / seconds;
            let figures = [
                ("postgres", cores(before.postgres, after.postgres)),
                ("broker_jvm", cores(before.java, after.java)),
                ("bench_process", cores(before.this, after.this)),
                ("other", cores(before.other, after.other)),
                ("machine_idle", cores(before.idle, after.idle)),
            ];
            report.line(
                section,
                &format!("{who}: cores used by postgres / broker JVM / this process / rest; idle"),
                format!(
                    "{:.2} / {:.2} / {:.2} / {:.2}; {:.2} idle (over {seconds:.1} s)",
                    figures[0].1, figures[1].1, figures[2].1, figures[3].1, figures[4].1
                ),
            );
            for (name, value) in figures {
                report.set(section, &format!("{who}_cores_{name}"), value);
            }
            report.set(section, &format!("{who}_sampled_seconds"), seconds);
        }
        if let Some(pool) = self.pool.take() {
            let (samples, exhausted) = pool.await.unwrap();
            let share = exhausted as f64 / samples.max(1) as f64;
            report.line(
                section,
                &format!("{who}: samples with every pool connection checked out"),
                format!("{:.0}% of {samples}", share * 100.0),
            );
            report.set(section, &format!("{who}_pool_exhausted_share"), share);
        }
        if let Some((db, before)) = self.counters.take() {
            // Backends publish their counters about once a second (PostgreSQL 15): wait
            // for the last ones before reading.
            tokio::time::sleep(Duration::from_millis(1_200)).await;
            if let Some(after) = DatabaseCounters::read(&db).await {
                let d = after.minus(&before);
                report.line(
                    section,
                    &format!("{who}: database work (transactions, rows scanned, rows fetched, rows deleted, buffer hits + reads, WAL bytes)"),
                    format!(
                        "{}, {}, {}, {}, {}, {}",
                        d.transactions, d.rows_scanned, d.rows_fetched, d.rows_deleted, d.buffers, d.wal_bytes
                    ),
                );
                for (name, value) in [
                    ("transactions", d.transactions),
                    ("rows_scanned", d.rows_scanned),
                    ("rows_fetched", d.rows_fetched),
                    ("rows_deleted", d.rows_deleted),
                    ("buffers", d.buffers),
                    ("wal_bytes", d.wal_bytes),
                ] {
                    report.set(section, &format!("{who}_db_{name}"), value);
                }
            }
        }
        if let Some(task) = self.task.take() {
            let states = task.await.unwrap();
            let total: u64 = states.values().sum();
            let mut ranked: Vec<_> = states.into_iter().collect();
            ranked.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
            let shown: Vec<String> = ranked
                .iter()
                .take(6)
                .map(|(state, n)| {
                    format!("{state} {:.0}%", *n as f64 * 100.0 / total.max(1) as f64)
                })
                .collect();
            report.line(
                section,
                &format!(
                    "{who}: database sessions by state (pg_stat_activity, {total} session samples)"
                ),
                shown.join(", "),
            );
            for (state, n) in ranked {
                report.set(
                    section,
                    &format!("{who}_sessions_{state}"),
                    n as f64 / total.max(1) as f64,
                );
            }
        }
    }
}

/// Counts, per state, the sessions of this database other than the sampler's own, every
/// [`EVERY`] until `stop`.
async fn sample_sessions(db: DatabaseConnection, stop: Arc<AtomicBool>) -> BTreeMap<String, u64> {
    // Autovacuum workers count as one state of their own: their CPU is PostgreSQL's too.
    let sql = "SELECT CASE \
          WHEN backend_type = 'autovacuum worker' THEN 'autovacuum' \
          WHEN state = 'active' AND wait_event IS NULL THEN 'active:on-cpu' \
          WHEN state = 'active' THEN 'active:' || wait_event_type || '/' || wait_event \
          ELSE coalesce(state, 'unknown') END AS s, count(*)::bigint AS n \
        FROM pg_stat_activity \
        WHERE datname = current_database() AND pid <> pg_backend_pid() \
          AND backend_type IN ('client backend', 'autovacuum worker') \
        GROUP BY 1";
    let mut states = BTreeMap::new();
    while !stop.load(Ordering::Relaxed) {
        let stmt = Statement::from_string(db.get_database_backend(), sql);
        if let Ok(rows) = db.query_all_raw(stmt).await {
            for row in rows {
                let state: String = row.try_get("", "s").unwrap_or_default();
                let n: i64 = row.try_get("", "n").unwrap_or(0);
                *states.entry(state).or_insert(0) += n as u64;
            }
        }
        tokio::time::sleep(EVERY).await;
    }
    states
}

/// PostgreSQL's cumulative counters for this database (`pg_stat_database`) and the WAL
/// written (the insert position, exact at once; `pg_stat_wal` counts a session's WAL only
/// when it reports, up to a second later, and once billed a table copy's 130 MB to the
/// drain after it): what a drain made the server do, whatever its sessions.
#[derive(Debug, Clone, Copy)]
struct DatabaseCounters {
    transactions: i64,
    rows_scanned: i64,
    rows_fetched: i64,
    rows_deleted: i64,
    buffers: i64,
    wal_bytes: i64,
}

impl DatabaseCounters {
    async fn read(db: &DatabaseConnection) -> Option<DatabaseCounters> {
        let sql = "SELECT (xact_commit + xact_rollback)::bigint AS t, tup_returned::bigint AS s, \
              tup_fetched::bigint AS f, tup_deleted::bigint AS d, (blks_hit + blks_read)::bigint AS b, \
              pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS w \
            FROM pg_stat_database WHERE datname = current_database()";
        let row = db
            .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
            .await
            .ok()??;
        Some(DatabaseCounters {
            transactions: row.try_get("", "t").ok()?,
            rows_scanned: row.try_get("", "s").ok()?,
            rows_fetched: row.try_get("", "f").ok()?,
            rows_deleted: row.try_get("", "d").ok()?,
            buffers: row.try_get("", "b").ok()?,
            wal_bytes: row.try_get("", "w").ok()?,
        })
    }

    fn minus(&self, before: &DatabaseCounters) -> DatabaseCounters {
        DatabaseCounters {
            transactions: self.transactions - before.transactions,
            rows_scanned: self.rows_scanned - before.rows_scanned,
            rows_fetched: self.rows_fetched - before.rows_fetched,
            rows_deleted: self.rows_deleted - before.rows_deleted,
            buffers: self.buffers - before.buffers,
            wal_bytes: self.wal_bytes - before.wal_bytes,
        }
    }
}

/// Linux's clock ticks per second for `/proc` CPU times (`USER_HZ`, 100 on every
/// platform Linux supports today).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU time so far (user + system, in clock ticks) by program, and the machine's idle time.
struct CpuTicks {
    postgres: u64,
    java: u64,
    this: u64,
    other: u64,
    idle: u64,
}

impl CpuTicks {
    fn read() -> Option<CpuTicks> {
        let me = std::process::id();
        let mut t = CpuTicks {
            postgres: 0,
            java: 0,
            this: 0,
            other: 0,
            idle: 0,
        };
        for entry in std::fs::read_dir("/proc").ok()? {
            let Ok(entry) = entry else { continue };
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`: comm may hold spaces, so split at the last ')'.
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let comm = head.split_once('(').map_or("", |(_, c)| c);
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime are fields 14 and 15 of the line, 11 and 12 after comm;
            // cutime and cstime (13, 14 after comm) hold the children it reaped. A
            // session's backend exits when the drain drops its connection, before the
            // second reading: its time is then only in the postmaster's cutime/cstime,
            // so those count for PostgreSQL (nowhere else: a shell's children would be
            // counted twice).
            let field = |i: usize| {
                fields
                    .get(i)
                    .and_then(|f| f.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let own = field(11) + field(12);
            let reaped = field(13) + field(14);
            let ticks = if comm == "postgres" {
                own + reaped
            } else {
                own
            };
            match comm {
                _ if pid == me => t.this += ticks,
                "postgres" => t.postgres += ticks,
                "java" => t.java += ticks,
                _ => t.other += ticks,
            }
        }
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        // idle + iowait
        t.idle = cpu.get(3).copied().unwrap_or(0) + cpu.get(4).copied().unwrap_or(0);
        Some(t)
    }
}

/// PostgreSQL: the scans that ran on `table` since it was created, by access path: its
/// sequential scans (rows read) and each index's scans (entries read, dead ones
/// included). Reported under `section` / `who`; nothing on other databases. Call it after
/// [`Sampler::finish`], which waits for the backends to publish their counters.
pub async fn report_table_scans(
    env: &Env,
    db: &DatabaseConnection,
    table: &str,
    report: &mut Report,
    section: &str,
    who: &str,
) {
    if env.kind() != DbKind::Postgres {
        return;
    }
    let sql = format!(
        "SELECT 'seq' AS path, seq_scan::bigint AS scans, seq_tup_read::bigint AS rows \
           FROM pg_stat_user_tables WHERE relname = '{table}' \
         UNION ALL \
         SELECT CASE WHEN indexrelname LIKE '%pkey' THEN 'pkey' ELSE 'bucket_id' END, \
                idx_scan::bigint, idx_tup_read::bigint \
           FROM pg_stat_user_indexes WHERE relname = '{table}' \
         ORDER BY 1"
    );
    let Ok(rows) = db
        .query_all_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
    else {
        return;
    };
    let mut shown = Vec::new();
    for row in rows {
        let path: String = row.try_get("", "path").unwrap_or_default();
        let scans: i64 = row.try_get("", "scans").unwrap_or(0);
        let read: i64 = row.try_get("", "rows").unwrap_or(0);
        shown.push(format!("{path}: {scans} scans, {read} read"));
        report.set(section, &format!("{who}_scans_{path}"), scans);
        report.set(section, &format!("{who}_scan_rows_{path}"), read);
    }
    report.line(
        section,
        &format!("{who}: scans of the drained table by path (rows or index entries read)"),
        shown.join("; "),
    );
}
