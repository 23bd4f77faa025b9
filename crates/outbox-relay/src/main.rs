//! `outbox-relay`: the relay as its own process, for deployments where writers and
//! relays run separately. See `outbox-relay --help` for every option and its default.
//!
//! One job per file: `cli` is the command line as clap parses it (flags with their
//! environment variables, and the operator subcommands), `config` merges it with the
//! TOML file and checks everything, `help` puts every default into `--help`, `logging`
//! sets up the log lines, `run` starts and stops the relay, `dependencies` connects the
//! database and the brokers with retries and watches them, `probe` says where they are
//! and whether they accept connections, `readiness` and `http` answer the probes,
//! `connect` builds the store and the publisher, `notify` the commit-notification
//! transport, `parked` runs the operator commands on parked rows, `status` renders the
//! outbox at a glance, `format` and `table` write their ages, durations and aligned
//! columns, and `exit` names the exit statuses.

mod cli;
mod config;
mod connect;
mod dependencies;
mod duration;
mod exit;
mod format;
mod help;
mod http;
mod logging;
mod notify;
mod parked;
mod probe;
mod readiness;
mod run;
mod status;
mod table;

use std::process::ExitCode;

use clap::FromArgMatches;

use crate::exit::EXIT_CONFIG;

fn main() -> ExitCode {
    let matches = help::command().get_matches();
    let mut cli = match cli::options::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Some(command) = cli.command.take() {
        return run_operator(&cli, &command);
    }
    let config = match cli.resolve() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("outbox-relay: invalid configuration: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    logging::init(config.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("outbox-relay: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run::run(config))
}

/// `outbox-relay parked ...` or `status`: one operator command against the database, no
/// broker.
fn run_operator(cli: &cli::options::Cli, command: &cli::command::Command) -> ExitCode {
    let database = match cli.resolve_database() {
        Ok(database) => database,
        Err(e) => {
            eprintln!("outbox-relay: invalid configuration: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("outbox-relay: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let store = match connect::operator_store(&database).await {
            Ok(store) => store,
            Err(e) => {
                let e = match command {
                    cli::command::Command::Status(_) => status::StatusError::from(e).to_string(),
                    cli::command::Command::Parked(_) => e.to_string(),
                };
                eprintln!("outbox-relay: {e}");
                return ExitCode::FAILURE;
            }
        };
        let command = match command {
            cli::command::Command::Parked(command) => command,
            cli::command::Command::Status(args) => {
                let now = outbox_core::Timestamp::now();
                return match status::run(&store, args, database.lease_duration, now).await {
                    Ok(output) => {
                        println!("{output}");
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("outbox-relay: {e}");
                        ExitCode::FAILURE
                    }
                };
            }
        };
        match parked::run(&store, command, outbox_core::Timestamp::now()).await {
            Ok(output) => {
                println!("{output}");
                ExitCode::SUCCESS
            }
            Err(parked::CommandError::NotConfirmed) => {
                eprintln!("outbox-relay: {}", parked::CommandError::NotConfirmed);
                ExitCode::from(EXIT_CONFIG)
            }
            Err(e) => {
                eprintln!("outbox-relay: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
