//! Every limit and name rule shared by writers, relays, stores and publishers, in one
//! place, so that two components can never accept different names for the same thing.
//!
//! | rule | limit | used by |
//! |---|---|---|
//! | [`validate_topic`] | Kafka's topic rules, at most [`MAX_TOPIC_LEN`] | message builder |
//! | [`validate_header_name`] | 1–[`MAX_HEADER_NAME_LEN`] characters, not blank, no control characters | schema (message-id header), inbox |
//! | [`validate_identifier`] | a plain SQL identifier of at most [`MAX_IDENTIFIER_LEN`] bytes | table and schema names |
//! | [`validate_bucket_count`] | `1..=`[`MAX_BUCKET_COUNT`] | schema |
//! | [`validate_label`] | 1–`max` characters, not blank, no control characters | relay id ([`MAX_RELAY_ID_LEN`]), metrics name ([`MAX_METRICS_NAME_LEN`]) |

use std::num::NonZeroU32;

/// The largest bucket count accepted: every bucket is a lease row, and relays scan them.
pub const MAX_BUCKET_COUNT: u32 = 65_536;
/// Longest relay id, matching the lease tables' owner column.
pub const MAX_RELAY_ID_LEN: usize = 128;
/// Longest metrics name.
pub const MAX_METRICS_NAME_LEN: usize = 64;
/// Longest header name, in characters.
pub const MAX_HEADER_NAME_LEN: usize = 255;
/// Longest accepted table or schema name, in bytes: PostgreSQL truncates names beyond
/// 63 bytes (MySQL allows 64), so anything longer would silently name a different
/// object there.
pub const MAX_IDENTIFIER_LEN: usize = 63;

/// Why a topic name is not one Kafka accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopicNameError {
    /// Empty string.
    #[error("is empty")]
    Empty,
    /// More than 249 characters.
    #[error("is {0} characters long; Kafka allows at most 249")]
    TooLong(usize),
    /// `.` or `..`, which Kafka reserves.
    #[error("`.` and `..` are reserved")]
    Reserved,
    /// A character outside `[A-Za-z0-9._-]`.
    #[error("contains {0:?}; only ASCII letters, digits, `.`, `_` and `-` are allowed")]
    InvalidChar(char),
}

/// The longest topic name Kafka accepts.
pub const MAX_TOPIC_LEN: usize = 249;

/// Checks a topic name against Kafka's rules, so a bad name fails at enqueue time
/// instead of sitting in the table until the broker rejects it.
pub fn validate_topic(topic: &str) -> Result<(), TopicNameError> {
    if topic.is_empty() {
        return Err(TopicNameError::Empty);
    }
    if topic == "." || topic == ".." {
        return Err(TopicNameError::Reserved);
    }
    if let Some(c) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(TopicNameError::InvalidChar(c));
    }
    // All characters are ASCII here, so bytes == characters.
    if topic.len() > MAX_TOPIC_LEN {
        return Err(TopicNameError::TooLong(topic.len()));
    }
    Ok(())
}

/// Why a label (relay id, metrics name, header name) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LabelError {
    /// Empty or only white space.
    #[error("must contain a non-blank character")]
    Blank,
    /// Longer than allowed.
    #[error("is {len} characters long; at most {max} allowed")]
    TooLong {
        /// Its length in characters.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Holds a control character.
    #[error("must not contain control characters")]
    ControlChar,
}

/// Checks a short identifier (relay id, metrics name): `1..=max` characters, not only
/// white space, no control characters.
pub fn validate_label(value: &str, max: usize) -> Result<(), LabelError> {
    if value.trim().is_empty() {
        return Err(LabelError::Blank);
    }
    let len = value.chars().count();
    if len > max {
        return Err(LabelError::TooLong { len, max });
    }
    if value.chars().any(char::is_control) {
        return Err(LabelError::ControlChar);
    }
    Ok(())
}

/// Checks a record header name: the rule of the message-id header, for the relays that
/// stamp it and the consumers that read it alike.
pub fn validate_header_name(name: &str) -> Result<(), LabelError> {
    validate_label(name, MAX_HEADER_NAME_LEN)
}

/// `1..=MAX_BUCKET_COUNT` buckets, or the refused number back.
pub fn validate_bucket_count(count: u32) -> Result<NonZeroU32, u32> {
    match NonZeroU32::new(count) {
        Some(n) if count <= MAX_BUCKET_COUNT => Ok(n),
        _ => Err(count),
    }
}

/// Which name a [`TableNameError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRole {
    /// The schema (PostgreSQL schema, MySQL database, SQLite attached database).
    Schema,
    /// The pending-messages table.
    Messages,
    /// The bucket-lease table.
    Leases,
    /// The relay-heartbeat table.
    Relays,
    /// The table of parked rows (rows set aside after permanent publish failures).
    Parked,
    /// The `(bucket, id)` index, derived from the messages table name.
    Index,
    /// A consumer-side inbox table.
    Inbox,
    /// The inbox's `processed_at` index, derived from the inbox table name.
    InboxIndex,
}

impl std::fmt::Display for NameRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameRole::Schema => "schema",
            NameRole::Messages => "messages table",
            NameRole::Leases => "leases table",
            NameRole::Relays => "relays table",
            NameRole::Parked => "parked table",
            NameRole::Index => "messages index",
            NameRole::Inbox => "inbox table",
            NameRole::InboxIndex => "inbox index",
        })
    }
}

/// Why a schema or table name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableNameError {
    /// The name is empty.
    #[error("the {role} name is empty")]
    Empty {
        /// Which name.
        role: NameRole,
    },
    /// The name is longer than [`MAX_IDENTIFIER_LEN`] bytes.
    #[error(
        "the {role} name {name:?} is {len} bytes, longer than {MAX_IDENTIFIER_LEN} (PostgreSQL would truncate it)"
    )]
    TooLong {
        /// Which name.
        role: NameRole,
        /// The name as given (or derived, for an index).
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The name does not start with an ASCII letter or `_`.
    #[error("the {role} name {name:?} must start with an ASCII letter or '_'")]
    BadStart {
        /// Which name.
        role: NameRole,
        /// The name as given.
        name: String,
    },
    /// The name contains something other than ASCII letters, digits and `_`.
    #[error(
        "the {role} name {name:?} contains {ch:?}; only ASCII letters, digits and '_' are allowed"
    )]
    InvalidChar {
        /// Which name.
        role: NameRole,
        /// The name as given.
        name: String,
        /// The first offending character.
        ch: char,
    },
    /// Two of the three tables got the same name.
    #[error("the {first} and the {second} are both named {name:?}")]
    Duplicate {
        /// The first role with that name.
        first: NameRole,
        /// The second role with that name.
        second: NameRole,
        /// The shared name.
        name: String,
    },
}

/// A plain SQL identifier: `[A-Za-z_][A-Za-z0-9_]*`, at most [`MAX_IDENTIFIER_LEN`]
/// bytes. Names are quoted in SQL anyway; this is a second wall, so an odd or hostile
/// name is refused at construction instead of being quoted into something surprising.
pub fn validate_identifier(role: NameRole, name: &str) -> Result<(), TableNameError> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Err(TableNameError::Empty { role });
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err(TableNameError::BadStart {
            role,
            name: name.to_owned(),
        });
    }
    if let Some(ch) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(TableNameError::InvalidChar {
            role,
            name: name.to_owned(),
            ch,
        });
    }
    if name.len() > MAX_IDENTIFIER_LEN {
        return Err(TableNameError::TooLong {
            role,
            name: name.to_owned(),
            len: name.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
