//! Command-line parsing: the options every command shares, and `bench` options forwarded
//! as given.

use anyhow::{Context, Result, bail};

#[derive(Debug, Default)]
pub(crate) struct Args {
    pub(crate) positional: Vec<String>,
    pub(crate) brokers: Option<String>,
    pub(crate) port: Option<u16>,
    /// `--kind kafka|tansu` (broker commands); `None` means Apache Kafka.
    pub(crate) kind: Option<String>,
    /// `--fresh`: wipe the broker's data before starting it.
    pub(crate) fresh: bool,
    pub(crate) no_lint: bool,
    pub(crate) help: bool,
    /// `bench` options, forwarded to the benchmark program as given.
    pub(crate) bench: Vec<String>,
    /// Everything after `--`.
    pub(crate) passthrough: Vec<String>,
}

pub(crate) fn parse_args(raw: impl IntoIterator<Item = String>) -> Result<Args> {
    let mut args = Args::default();
    let mut it = raw.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String> {
            match inline.clone().or_else(|| it.next()) {
                Some(v) if !v.is_empty() => Ok(v),
                _ => bail!("{name} needs a value (see --help)"),
            }
        };
        match flag.as_str() {
            "--" => {
                args.passthrough = it.by_ref().collect();
                break;
            }
            "-h" | "--help" => args.help = true,
            "--no-lint" => args.no_lint = true,
            "--fresh" => args.fresh = true,
            // `bench --broker tansu` reads better; both name the broker kind.
            "--kind" | "--broker" => args.kind = Some(value(&flag)?),
            "--quick" => args.bench.push(flag.clone()),
            "--database" | "--rows" | "--rate" | "--only" => {
                let v = value(&flag)?;
                args.bench.extend([flag.clone(), v]);
            }
            "--brokers" => args.brokers = Some(value("--brokers")?),
            "--port" => {
                let v = value("--port")?;
                args.port = Some(
                    v.parse()
                        .with_context(|| format!("--port {v}: not a port number"))?,
                );
            }
            f if f.starts_with('-') => bail!("unknown option {f} (see --help)"),
            _ => args.positional.push(arg),
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &[&str]) -> Args {
        parse_args(s.iter().map(|s| s.to_string())).unwrap()
    }

    #[test]
    fn brokers_anywhere_and_passthrough() {
        let a = parse(&[
            "test",
            "--brokers",
            "k:9092",
            "--no-lint",
            "--",
            "-E",
            "test(x)",
        ]);
        assert_eq!(a.positional, ["test"]);
        assert_eq!(a.brokers.as_deref(), Some("k:9092"));
        assert!(a.no_lint);
        assert_eq!(a.passthrough, ["-E", "test(x)"]);

        let a = parse(&["--brokers=k:1", "broker", "status", "--port=1234"]);
        assert_eq!(a.positional, ["broker", "status"]);
        assert_eq!(a.brokers.as_deref(), Some("k:1"));
        assert_eq!(a.port, Some(1234));
    }

    #[test]
    fn bench_options_are_forwarded_in_order() {
        let a = parse(&[
            "bench",
            "--quick",
            "--database=sqlite",
            "--rows",
            "1000",
            "--only",
            "drain,naive",
            "--brokers",
            "k:1",
        ]);
        assert_eq!(a.positional, ["bench"]);
        assert_eq!(
            a.bench,
            [
                "--quick",
                "--database",
                "sqlite",
                "--rows",
                "1000",
                "--only",
                "drain,naive"
            ]
        );
        assert_eq!(a.brokers.as_deref(), Some("k:1"));
        assert!(parse_args(["bench".to_string(), "--rows".to_string()]).is_err());
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(parse_args(["--port".to_string()]).is_err());
        assert!(parse_args(["--port".to_string(), "x".to_string()]).is_err());
        assert!(parse_args(["--frobnicate".to_string()]).is_err());
        assert!(parse_args(["--brokers=".to_string()]).is_err());
    }
}
