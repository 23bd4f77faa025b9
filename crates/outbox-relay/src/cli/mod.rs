//! The command line as clap parses it: the relay's options (`options`), the operator
//! subcommands (`command`) and the arguments of `parked ...` (`parked`). Only the shapes
//! of the arguments live here; `config` checks what the values mean, and `status` and
//! `parked` run the commands.

pub mod command;
pub mod options;
pub mod parked;
