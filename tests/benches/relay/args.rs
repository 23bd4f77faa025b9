//! Command-line options of the benchmark (after `--` of `cargo bench`).

use std::path::PathBuf;

/// Which database the benchmark runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    Postgres,
    MariaDb,
    Sqlite,
}

impl DbKind {
    pub fn name(self) -> &'static str {
        match self {
            DbKind::Postgres => "postgres",
            DbKind::MariaDb => "mariadb",
            DbKind::Sqlite => "sqlite",
        }
    }
}

/// The sections, in run order; `--only` takes these names (comma separated).
pub const SECTIONS: [&str; 11] = [
    "drain",
    "naive",
    "latency",
    "poisoned",
    "snapshot",
    "enqueue",
    "scaling",
    "growth",
    "slow-db",
    "sustained",
    "sqlite-demo",
];

#[derive(Debug, Clone)]
pub struct Args {
    pub quick: bool,
    pub database: DbKind,
    /// Rows drained in sections 1 and 2.
    pub rows: u64,
    /// Writer rate of sections 3 and 8, messages per second; `None`: their defaults.
    pub rate: Option<u64>,
    pub only: Option<Vec<String>>,
    pub brokers: Option<String>,
    pub json: PathBuf,
}

impl Args {
    pub fn parse() -> Result<Args, String> {
        // `cargo bench` appends `--bench`; ignore it.
        let raw: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| a != "--bench")
            .collect();
        Args::from(raw)
    }

    pub fn from(raw: Vec<String>) -> Result<Args, String> {
        let mut quick = false;
        let mut database = DbKind::Postgres;
        let mut rows = None;
        let mut rate = None;
        let mut only = None;
        let mut brokers = None;
        let mut json = None;
        let mut it = raw.into_iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
                _ => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next())
                    .ok_or(format!("{flag} needs a value"))
            };
            match flag.as_str() {
                "--quick" => quick = true,
                "--database" => {
                    database = match value()?.as_str() {
                        "postgres" | "postgresql" | "pg" => DbKind::Postgres,
                        "mariadb" | "mysql" => DbKind::MariaDb,
                        "sqlite" => DbKind::Sqlite,
                        other => {
                            return Err(format!("--database {other}: postgres|sqlite|mariadb"));
                        }
                    }
                }
                "--rows" => rows = Some(number(&value()?, "--rows")?),
                "--rate" => rate = Some(number(&value()?, "--rate")?.max(1)),
                "--only" => {
                    let list: Vec<String> = value()?.split(',').map(str::to_owned).collect();
                    if let Some(bad) = list.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
                        return Err(format!("--only {bad}: one of {}", SECTIONS.join(", ")));
                    }
                    only = Some(list);
                }
                "--brokers" => brokers = Some(value()?),
                "--json" => json = Some(PathBuf::from(value()?)),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(Args {
            quick,
            database,
            rows: rows.unwrap_or(if quick { 5_000 } else { 200_000 }).max(1),
            rate,
            only,
            brokers,
            // This package's own location: the workspace's `target/bench/`.
            json: json.unwrap_or_else(|| {
                PathBuf::from(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../target/bench/latest.json"
                ))
            }),
        })
    }

    pub fn runs(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|list| list.iter().any(|s| s == section))
    }

    /// `full` in a default run, `quick` with `--quick`.
    pub fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick { quick } else { full }
    }
}

fn number(text: &str, flag: &str) -> Result<u64, String> {
    text.replace('_', "")
        .parse()
        .map_err(|_| format!("{flag} {text}: not a number"))
}
