//! `cargo xtask`: developer tasks for the outbox workspace. Run `cargo xtask --help`.

//!
//! One file per job: [`cli`] parses the command line, [`help`] holds the help texts,
//! [`broker_cmd`] runs `cargo xtask broker ...`, [`services`] makes sure the databases run,
//! [`tools`] runs cargo and friends, [`pipeline`] strings the steps of `test`, `bench` and
//! `demo` together, [`arch`] checks the workspace's shape (no import circles, small
//! production files), [`workspace`] says where the workspace is. The broker itself
//! (install, probe, process) is the `xtask` library.

mod arch;
mod broker_cmd;
mod cli;
mod help;
mod pipeline;
mod services;
mod tools;
mod workspace;

use anyhow::{Result, bail};
use cli::parse_args;
use help::{BENCH_HELP, BROKER_HELP, DEMO_HELP, HELP, TEST_HELP};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<ExitCode> {
    let args = parse_args(std::env::args().skip(1))?;
    let positional: Vec<&str> = args.positional.iter().map(String::as_str).collect();
    match positional.as_slice() {
        [] | ["help"] => {
            print!("{HELP}");
            Ok(if args.help || !positional.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            })
        }
        ["help", "test"] => help(TEST_HELP),
        ["help", "broker", ..] => help(BROKER_HELP),
        ["help", "demo"] => help(DEMO_HELP),
        ["help", "bench"] => help(BENCH_HELP),
        ["test", ..] if args.help => help(TEST_HELP),
        ["broker", ..] if args.help => help(BROKER_HELP),
        ["demo", ..] if args.help => help(DEMO_HELP),
        ["bench", ..] if args.help => help(BENCH_HELP),
        ["test"] => {
            reject(args.port.is_some(), "--port")?;
            reject(args.kind.is_some(), "--kind")?;
            reject(args.fresh, "--fresh")?;
            reject(!args.bench.is_empty(), "a bench option")?;
            pipeline::cmd_test(&args)
        }
        ["broker", sub] => {
            reject(args.no_lint, "--no-lint")?;
            reject(!args.bench.is_empty(), "a bench option")?;
            reject(!args.passthrough.is_empty(), "arguments after --")?;
            match *sub {
                "install" => broker_cmd::install(&args),
                "start" => broker_cmd::start(&args),
                "restart" => broker_cmd::restart(&args),
                "stop" => broker_cmd::stop(&args),
                "status" => broker_cmd::status(&args),
                other => {
                    bail!("unknown broker subcommand {other:?} (see cargo xtask broker --help)")
                }
            }
        }
        ["broker"] => {
            print!("{BROKER_HELP}");
            Ok(ExitCode::from(2))
        }
        ["demo"] => {
            reject(args.port.is_some(), "--port")?;
            reject(args.fresh, "--fresh")?;
            reject(args.no_lint, "--no-lint")?;
            reject(!args.bench.is_empty(), "a bench option")?;
            pipeline::cmd_demo(&args)
        }
        ["arch"] => {
            reject(args.port.is_some(), "--port")?;
            reject(args.kind.is_some(), "--kind")?;
            reject(args.fresh, "--fresh")?;
            reject(args.no_lint, "--no-lint")?;
            reject(!args.bench.is_empty(), "a bench option")?;
            arch::check(&workspace::root())?;
            Ok(ExitCode::SUCCESS)
        }
        ["bench"] => {
            reject(args.port.is_some(), "--port")?;
            reject(args.fresh, "--fresh")?;
            reject(args.no_lint, "--no-lint")?;
            pipeline::cmd_bench(&args)
        }
        other => bail!(
            "unknown command {:?} (see cargo xtask --help)",
            other.join(" ")
        ),
    }
}

fn help(text: &str) -> Result<ExitCode> {
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn reject(present: bool, what: &str) -> Result<()> {
    if present {
        bail!("{what} does not apply to this command (see --help)");
    }
    Ok(())
}
