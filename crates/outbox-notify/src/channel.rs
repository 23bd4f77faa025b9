//! The broadcast channel name shared by every writer and relay of one outbox table.

use std::fmt;

/// Longest channel name: PostgreSQL truncates identifiers (and so `LISTEN` channels) to
/// 63 bytes, which would silently merge channels that differ only after that.
pub const MAX_CHANNEL_LEN: usize = 63;

/// Why a channel name was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// A name or name part was empty.
    #[error("the channel {0} must not be empty")]
    Empty(&'static str),
    /// A character outside `a-z`, `0-9` and `_`.
    #[error("the channel {part} {value:?} may only contain a-z, 0-9 and _")]
    InvalidCharacter {
        /// Which part: `name`, `table` or `environment`.
        part: &'static str,
        /// The rejected value.
        value: String,
    },
    /// Longer than [`MAX_CHANNEL_LEN`] bytes.
    #[error("the channel name {name:?} is {len} bytes long; at most {MAX_CHANNEL_LEN} are allowed")]
    TooLong {
        /// The full name.
        name: String,
        /// Its length in bytes.
        len: usize,
    },
}

/// A validated channel name: 1 to 63 bytes of `a-z`, `0-9` and `_`.
///
/// The restricted alphabet makes the name the same identifier on PostgreSQL (quoted or
/// not, no case folding surprises) and on Redis, and leaves nothing to escape.
///
/// Use one channel per outbox table and environment: relays of different tables must
/// not wake each other, and neither must staging and production sharing a server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChannelName(String);

impl ChannelName {
    /// The conventional name `outbox_<table>_<environment>`, for example
    /// `outbox_orders_outbox_prod`.
    pub fn for_outbox(table: &str, environment: &str) -> Result<Self, ChannelError> {
        check_part("table", table)?;
        check_part("environment", environment)?;
        Self::new(&format!("outbox_{table}_{environment}"))
    }

    /// A name chosen freely, within the same rules.
    pub fn new(name: &str) -> Result<Self, ChannelError> {
        check_part("name", name)?;
        if name.len() > MAX_CHANNEL_LEN {
            return Err(ChannelError::TooLong {
                name: name.to_owned(),
                len: name.len(),
            });
        }
        Ok(ChannelName(name.to_owned()))
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChannelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn check_part(part: &'static str, value: &str) -> Result<(), ChannelError> {
    if value.is_empty() {
        return Err(ChannelError::Empty(part));
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(ChannelError::InvalidCharacter {
            part,
            value: value.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "channel_tests.rs"]
mod tests;
