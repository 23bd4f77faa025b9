//! The operator subcommands (`status`, `parked ...`): without one, the binary runs the
//! relay. Their flags are here; `status` and `parked` run them.

use clap::{Args, Subcommand};

use super::parked::ParkedCommand;

/// Operator commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One outbox at a glance: live relays, bucket owners, pending and parked rows.
    ///
    /// Which relays are alive (heartbeat age), who holds which bucket and until when,
    /// pending rows and their oldest age per bucket, parked rows, and rows a writer put
    /// beyond the bucket count. Judged with --lease-duration and --bucket-count, which must
    /// be the relays' own: a relay is alive, and a lease expired, by the rule the relays
    /// use to split the buckets. Exits 0 when the tables could be read, 1 when the
    /// database does not answer or the tables are missing.
    Status(StatusArgs),
    /// Rows set aside because they failed for good, and the rows of their keys held
    /// behind them: list, show, requeue, discard.
    #[command(subcommand)]
    Parked(ParkedCommand),
}

/// `outbox-relay status` flags.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}
