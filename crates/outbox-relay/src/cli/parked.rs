//! `outbox-relay parked ...`: the subcommands and which rows they act on, as clap parses
//! them, and the selection in the store's terms.

use clap::{Args, Subcommand};
use outbox_core::ParkedSelection;

/// What to do with parked rows.
#[derive(Debug, Subcommand)]
pub enum ParkedCommand {
    /// Lists parked rows, oldest id first: bucket, key, topic, error, attempts, age.
    List {
        /// At most this many rows.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Shows one parked row in full (headers and value included).
    Show {
        /// The row's id.
        id: i64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Puts parked rows back under their original ids, in one transaction; a row's
    /// earlier parked rows of the same key go along, so the key keeps its order.
    Requeue {
        #[command(flatten)]
        selection: Selection,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Deletes parked rows for good (they are never published). Needs --yes.
    Discard {
        #[command(flatten)]
        selection: Selection,
        /// Confirms the deletion.
        #[arg(long)]
        yes: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Which parked rows: exactly one of `--key`, `--key-hex`, `--id`, `--all`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct Selection {
    /// Every parked row with this key (UTF-8 text), pinned rows excluded.
    #[arg(long)]
    pub key: Option<String>,
    /// Like --key, for keys that are not text: the bytes in hex, as `list` shows them
    /// (`0x009f`; the `0x` is optional).
    #[arg(long, value_name = "HEX", value_parser = parse_hex_key)]
    pub key_hex: Option<HexKey>,
    /// The row with this id.
    #[arg(long)]
    pub id: Option<i64>,
    /// Every parked row.
    #[arg(long)]
    pub all: bool,
}

/// A key given in hex (`--key-hex`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexKey(Vec<u8>);

/// `0x009f` or `009f` as bytes; an odd digit count or a non-hex digit is refused.
fn parse_hex_key(text: &str) -> Result<HexKey, String> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if !digits.len().is_multiple_of(2) {
        return Err(format!("{text:?} has an odd number of hex digits"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("{text:?} is not hex"))
        })
        .collect::<Result<Vec<u8>, String>>()
        .map(HexKey)
}

impl Selection {
    /// The rows in the store's terms; clap's group guarantees at most one is given, and
    /// `--all` is what is left.
    pub fn to_core(&self) -> ParkedSelection {
        match (&self.key, &self.key_hex, self.id) {
            (Some(key), _, _) => ParkedSelection::Key(key.as_bytes().to_vec()),
            (None, Some(HexKey(key)), _) => ParkedSelection::Key(key.clone()),
            (None, None, Some(id)) => ParkedSelection::Id(id),
            (None, None, None) => ParkedSelection::All,
        }
    }
}
