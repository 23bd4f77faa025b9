//! Reading the message id that the relay stamps on every record.
//!
//! The publisher writes the row's `message_id` as a header (default
//! [`DEFAULT_MESSAGE_ID_HEADER`], `x-outbox-message-id`) whose value is the UUID in its
//! 36-character hyphenated text form. Redeliveries of a record carry the same id, so it
//! is the key a consumer deduplicates on.

use outbox_core::options::DEFAULT_MESSAGE_ID_HEADER;
use outbox_core::{OutboxSchema, Uuid};

/// How much of an unparsable value an error quotes.
const QUOTED_VALUE_LEN: usize = 64;

/// Why no message id could be read from a record's headers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageIdError {
    /// The record has no header of that name (not published by an outbox relay, or the
    /// relay was configured with another header name).
    #[error("the record has no {header:?} header")]
    Missing {
        /// The header looked for.
        header: String,
    },
    /// The header's value is not a UUID.
    #[error("the {header:?} header holds {value:?}, which is not a UUID")]
    NotAUuid {
        /// The header.
        header: String,
        /// The value, lossily decoded and cut to 64 characters.
        value: String,
    },
    /// The header appears more than once with different ids: which delivery this is
    /// cannot be told, so none is assumed.
    #[error("the {header:?} header appears twice with different ids ({first} and {second})")]
    Conflicting {
        /// The header.
        header: String,
        /// The first id found.
        first: Uuid,
        /// A different id found later.
        second: Uuid,
    },
}

/// Reads message ids from consumed records' headers.
///
/// ```
/// use outbox_seaorm::MessageIdHeader;
///
/// let id = "0193a3a4-5f6e-7c2d-9b1a-1234567890ab";
/// // Headers as (name, value) pairs, e.g. rskafka's `BTreeMap<String, Vec<u8>>`.
/// let headers = [("trace", "t-1".as_bytes()), ("x-outbox-message-id", id.as_bytes())];
/// let message_id = MessageIdHeader::default().find(headers)?;
/// assert_eq!(message_id.to_string(), id);
/// # Ok::<(), outbox_seaorm::MessageIdError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageIdHeader {
    name: String,
}

impl Default for MessageIdHeader {
    /// The relay's default header, `x-outbox-message-id`.
    fn default() -> Self {
        MessageIdHeader {
            name: DEFAULT_MESSAGE_ID_HEADER.to_owned(),
        }
    }
}

impl From<&OutboxSchema> for MessageIdHeader {
    fn from(schema: &OutboxSchema) -> Self {
        MessageIdHeader::new(schema)
    }
}

impl MessageIdHeader {
    /// Reads the `message_id_header` of `schema`, the schema the relays were built
    /// from (its name was validated there, by the rule every relay applies).
    pub fn new(schema: &OutboxSchema) -> Self {
        MessageIdHeader {
            name: schema.message_id_header().to_owned(),
        }
    }

    /// The header name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The message id in `headers`, given as `(name, value)` pairs in any form
    /// (`&BTreeMap<String, Vec<u8>>`, a slice of tuples...). A header repeated with the
    /// same id is accepted; with different ids it is refused. Clients whose header
    /// values can be null should pass only the non-null ones.
    pub fn find<I, N, V>(&self, headers: I) -> Result<Uuid, MessageIdError>
    where
        I: IntoIterator<Item = (N, V)>,
        N: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let mut found: Option<Uuid> = None;
        for (name, value) in headers {
            if name.as_ref() != self.name {
                continue;
            }
            let id = self.parse(value.as_ref())?;
            match found {
                Some(first) if first != id => {
                    return Err(MessageIdError::Conflicting {
                        header: self.name.clone(),
                        first,
                        second: id,
                    });
                }
                _ => found = Some(id),
            }
        }
        found.ok_or_else(|| MessageIdError::Missing {
            header: self.name.clone(),
        })
    }

    /// Parses one header value: a UUID as text (the hyphenated form the relay writes;
    /// the simple, braced and URN forms are accepted too).
    pub fn parse(&self, value: &[u8]) -> Result<Uuid, MessageIdError> {
        Uuid::try_parse_ascii(value).map_err(|_| MessageIdError::NotAUuid {
            header: self.name.clone(),
            value: String::from_utf8_lossy(value)
                .chars()
                .take(QUOTED_VALUE_LEN)
                .collect(),
        })
    }
}

#[cfg(test)]
#[path = "message_id_tests.rs"]
mod tests;
