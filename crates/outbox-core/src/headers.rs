//! Record headers and their versioned binary encoding.
//!
//! Headers are ordered name/value pairs; names may repeat and values may be null,
//! as in Kafka. The encoding is what outbox rows store, so it is a stable format:
//! rows written by one release must decode in every later one. Any change to the
//! layout needs a new version byte, and decoders keep reading the old versions.
//!
//! # Format, version 1
//!
//! All integers are big-endian.
//!
//! | bytes        | field               | contents                                        |
//! |--------------|---------------------|-------------------------------------------------|
//! | 1            | version             | `1` ([`HEADER_CODEC_VERSION`])                  |
//! | 4            | header count, `u32` | number of headers that follow                   |
//! | *per header* |                     |                                                 |
//! | 4            | name length, `u32`  | byte length of the name                         |
//! | name length  | name                | UTF-8, may be empty                             |
//! | 4            | value length, `i32` | `-1` marks a null value; other negatives invalid |
//! | value length | value               | raw bytes; none when the value is null          |
//!
//! Nothing may follow the last header. No headers at all encode as the five bytes
//! `01 00 00 00 00`.
//!
//! # Decoding untrusted bytes
//!
//! [`Headers::decode`] treats its input as untrusted (a row may have been written by
//! anything): it never panics, checks every length against the bytes actually left
//! before reading, and never reserves memory from a declared count beyond what the
//! remaining input could hold, so a forged header count cannot make it allocate more
//! than a small multiple of the input size.

/// Version byte that [`Headers::encode`] writes and [`Headers::decode`] accepts.
pub const HEADER_CODEC_VERSION: u8 = 1;

/// The value-length marker of a null value.
const NULL_VALUE_LEN: i32 = -1;

/// The fewest bytes one header can occupy: its two 4-byte length fields, with an empty
/// name and an empty or null value. Bounds how many headers an input can hold.
const MIN_ENCODED_HEADER_LEN: usize = 8;

/// Version byte plus header count.
const PREAMBLE_LEN: usize = 5;

/// The largest byte vector Rust can allocate.
const MAX_ALLOCATION: usize = isize::MAX as usize;

/// One header: a name and a possibly null value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header name. Need not be unique within a [`Headers`].
    pub name: String,
    /// The value; `None` is a null value, distinct from an empty one.
    pub value: Option<Vec<u8>>,
}

/// An ordered list of headers. Order and duplicate names are kept as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    headers: Vec<Header>,
}

impl Headers {
    /// An empty header list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a header after the existing ones, even if the name is already present.
    pub fn push(&mut self, name: impl Into<String>, value: Option<Vec<u8>>) {
        self.headers.push(Header {
            name: name.into(),
            value,
        });
    }

    /// The headers, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Header> {
        self.headers.iter()
    }

    /// Number of headers, duplicates included.
    pub fn len(&self) -> usize {
        self.headers.len()
    }

    /// Whether there are no headers.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }

    /// The first header called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Header> {
        self.headers.iter().find(|header| header.name == name)
    }

    /// Encodes the headers in the current format version (see the module docs).
    ///
    /// Never panics. The format caps a name at `u32::MAX` bytes, a value at `i32::MAX`
    /// bytes and the count at `u32::MAX` headers; outbox messages are limited far below
    /// that, so real headers always fit. Should a list exceed a limit anyway, this
    /// returns an empty vector, which [`Headers::decode`] rejects with
    /// [`HeaderDecodeError::Empty`]: oversized headers are never silently stored as a
    /// clipped length that would decode as different headers. [`Headers::try_encode`]
    /// reports the reason instead.
    pub fn encode(&self) -> Vec<u8> {
        self.try_encode().unwrap_or_default()
    }

    /// Encodes the headers, or says which one exceeds the format's limits.
    pub fn try_encode(&self) -> Result<Vec<u8>, HeaderEncodeError> {
        let count = count_prefix(self.headers.len()).ok_or(HeaderEncodeError::TooManyHeaders {
            count: self.headers.len(),
        })?;
        // Checking the total first makes the reservation below unable to hit a
        // capacity overflow, and the writes never grow past it.
        let total = self
            .checked_encoded_len()
            .ok_or(HeaderEncodeError::TooLarge)?;
        let mut out = Vec::with_capacity(total);
        out.push(HEADER_CODEC_VERSION);
        out.extend_from_slice(&count.to_be_bytes());
        for (index, header) in self.headers.iter().enumerate() {
            let name_len =
                name_len_prefix(header.name.len()).ok_or(HeaderEncodeError::NameTooLong {
                    index,
                    len: header.name.len(),
                })?;
            out.extend_from_slice(&name_len.to_be_bytes());
            out.extend_from_slice(header.name.as_bytes());
            match &header.value {
                None => out.extend_from_slice(&NULL_VALUE_LEN.to_be_bytes()),
                Some(value) => {
                    let value_len =
                        value_len_prefix(value.len()).ok_or(HeaderEncodeError::ValueTooLong {
                            index,
                            len: value.len(),
                        })?;
                    out.extend_from_slice(&value_len.to_be_bytes());
                    out.extend_from_slice(value);
                }
            }
        }
        Ok(out)
    }

    /// Length in bytes of the encoding, without encoding.
    ///
    /// Equals `self.encode().len()` whenever the headers are within the format's
    /// limits (see [`Headers::encode`]); saturates at `usize::MAX` instead of
    /// overflowing.
    pub fn encoded_len(&self) -> usize {
        self.headers.iter().fold(PREAMBLE_LEN, |total, header| {
            total.saturating_add(header_encoded_len(header))
        })
    }

    /// The encoded length, if one allocation can hold it.
    fn checked_encoded_len(&self) -> Option<usize> {
        self.headers
            .iter()
            .try_fold(PREAMBLE_LEN, |total, header| {
                total.checked_add(header_encoded_len(header))
            })
            .filter(|&total| total <= MAX_ALLOCATION)
    }

    /// Decodes bytes produced by [`Headers::encode`].
    ///
    /// Never panics, whatever the input; see the module docs for the format and for
    /// how untrusted input is handled.
    pub fn decode(bytes: &[u8]) -> Result<Headers, HeaderDecodeError> {
        let (&version, body) = bytes.split_first().ok_or(HeaderDecodeError::Empty)?;
        if version != HEADER_CODEC_VERSION {
            return Err(HeaderDecodeError::UnknownVersion(version));
        }
        let mut reader = Reader {
            rest: body,
            offset: 1,
        };

        let count = u32::from_be_bytes(reader.array()?);
        // Every header takes at least MIN_ENCODED_HEADER_LEN bytes, so a count above
        // this is a lie; rejecting it up front also bounds the allocation below by the
        // input length rather than by the declared count.
        let most = reader.rest.len() / MIN_ENCODED_HEADER_LEN;
        let count = usize::try_from(count)
            .ok()
            .filter(|&count| count <= most)
            .ok_or(HeaderDecodeError::CountExceedsInput {
                count,
                remaining: reader.rest.len(),
            })?;

        let mut headers = Vec::with_capacity(count);
        for index in 0..count {
            let name_len = u32::from_be_bytes(reader.array()?);
            let name_len = reader.length(name_len)?;
            let name_offset = reader.offset;
            let name = std::str::from_utf8(reader.bytes(name_len)?).map_err(|_| {
                HeaderDecodeError::InvalidUtf8 {
                    index,
                    offset: name_offset,
                }
            })?;

            let value_len_offset = reader.offset;
            let value = match i32::from_be_bytes(reader.array()?) {
                NULL_VALUE_LEN => None,
                len if len < 0 => {
                    return Err(HeaderDecodeError::InvalidValueLength {
                        index,
                        offset: value_len_offset,
                        len,
                    });
                }
                len => {
                    let len = reader.length(len.cast_unsigned())?;
                    Some(reader.bytes(len)?.to_vec())
                }
            };

            headers.push(Header {
                name: name.to_owned(),
                value,
            });
        }

        if reader.rest.is_empty() {
            Ok(Headers { headers })
        } else {
            Err(HeaderDecodeError::TrailingBytes {
                offset: reader.offset,
                len: reader.rest.len(),
            })
        }
    }
}

impl FromIterator<Header> for Headers {
    fn from_iter<I: IntoIterator<Item = Header>>(iter: I) -> Self {
        Headers {
            headers: iter.into_iter().collect(),
        }
    }
}

impl From<Vec<Header>> for Headers {
    fn from(headers: Vec<Header>) -> Self {
        Headers { headers }
    }
}

impl IntoIterator for Headers {
    type Item = Header;
    type IntoIter = std::vec::IntoIter<Header>;

    fn into_iter(self) -> Self::IntoIter {
        self.headers.into_iter()
    }
}

impl<'a> IntoIterator for &'a Headers {
    type Item = &'a Header;
    type IntoIter = std::slice::Iter<'a, Header>;

    fn into_iter(self) -> Self::IntoIter {
        self.headers.iter()
    }
}

/// Why stored header bytes could not be decoded.
///
/// Offsets count bytes from the start of the input, the version byte being offset 0.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderDecodeError {
    /// The input has no bytes at all, not even the version byte.
    #[error("header bytes are empty")]
    Empty,
    /// The version byte is not one this build can read.
    #[error("unknown header encoding version {0} (supported: {HEADER_CODEC_VERSION})")]
    UnknownVersion(u8),
    /// A field, or the bytes a length prefix announced, runs past the end of the input.
    #[error("header bytes truncated at offset {offset}: {needed} bytes needed, {remaining} left")]
    Truncated {
        /// Where the field that does not fit starts.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left from `offset` to the end of the input.
        remaining: usize,
    },
    /// The header count is more than the rest of the input could hold, given that
    /// every header takes at least 8 bytes.
    #[error("header count {count} cannot fit in the {remaining} bytes that follow it")]
    CountExceedsInput {
        /// The declared count.
        count: u32,
        /// Bytes after the count.
        remaining: usize,
    },
    /// A value length is negative but not the null marker `-1`.
    #[error("header {index}: invalid value length {len} at offset {offset}")]
    InvalidValueLength {
        /// Position of the header in the list.
        index: usize,
        /// Where the value length starts.
        offset: usize,
        /// The length read.
        len: i32,
    },
    /// A name is not valid UTF-8.
    #[error("header {index}: name at offset {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// Position of the header in the list.
        index: usize,
        /// Where the name's bytes start.
        offset: usize,
    },
    /// Bytes remain after the last header.
    #[error("{len} unexpected bytes after the last header, at offset {offset}")]
    TrailingBytes {
        /// Where the extra bytes start.
        offset: usize,
        /// How many there are.
        len: usize,
    },
}

/// Why headers could not be encoded: something exceeds the format's limits.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderEncodeError {
    /// The whole encoding would be larger than one allocation can be.
    #[error("headers encode to more bytes than one buffer can hold")]
    TooLarge,
    /// More than `u32::MAX` headers.
    #[error("{count} headers exceed the encoding's limit of {max}", max = u32::MAX)]
    TooManyHeaders {
        /// The number of headers.
        count: usize,
    },
    /// A name longer than `u32::MAX` bytes.
    #[error("header {index}: name of {len} bytes exceeds the encoding's limit of {max}", max = u32::MAX)]
    NameTooLong {
        /// Position of the header in the list.
        index: usize,
        /// The name's length in bytes.
        len: usize,
    },
    /// A value longer than `i32::MAX` bytes.
    #[error("header {index}: value of {len} bytes exceeds the encoding's limit of {max}", max = i32::MAX)]
    ValueTooLong {
        /// Position of the header in the list.
        index: usize,
        /// The value's length in bytes.
        len: usize,
    },
}

/// Bytes one header takes in the encoding, saturating rather than overflowing.
fn header_encoded_len(header: &Header) -> usize {
    MIN_ENCODED_HEADER_LEN
        .saturating_add(header.name.len())
        .saturating_add(header.value.as_ref().map_or(0, Vec::len))
}

/// The header-count field for `count` headers, if it fits the format.
fn count_prefix(count: usize) -> Option<u32> {
    u32::try_from(count).ok()
}

/// The name-length field for a name of `len` bytes, if it fits the format.
fn name_len_prefix(len: usize) -> Option<u32> {
    u32::try_from(len).ok()
}

/// The value-length field for a value of `len` bytes, if it fits the format. The
/// field is signed so that `-1` can mark null, which halves the range.
fn value_len_prefix(len: usize) -> Option<i32> {
    i32::try_from(len).ok()
}

/// A cursor over the input that only ever hands out bytes it has checked are there.
#[derive(Debug)]
struct Reader<'a> {
    /// The input not consumed yet.
    rest: &'a [u8],
    /// Position of `rest` within the whole input, for error reports.
    offset: usize,
}

impl<'a> Reader<'a> {
    /// The next `N` bytes as an array, for fixed-width integers.
    fn array<const N: usize>(&mut self) -> Result<[u8; N], HeaderDecodeError> {
        let (head, tail) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or_else(|| self.truncated(N))?;
        self.rest = tail;
        self.offset += N;
        Ok(*head)
    }

    /// The next `len` bytes.
    fn bytes(&mut self, len: usize) -> Result<&'a [u8], HeaderDecodeError> {
        let (head, tail) = self
            .rest
            .split_at_checked(len)
            .ok_or_else(|| self.truncated(len))?;
        self.rest = tail;
        self.offset += len;
        Ok(head)
    }

    /// Converts a decoded length prefix to `usize`, failing as truncation when it is
    /// more than the input has left, so no later step ever sees an impossible length.
    fn length(&self, len: u32) -> Result<usize, HeaderDecodeError> {
        usize::try_from(len)
            .ok()
            .filter(|&len| len <= self.rest.len())
            // A length that does not even fit a `usize` is reported as needing every
            // addressable byte, which is what it amounts to.
            .ok_or_else(|| self.truncated(usize::try_from(len).unwrap_or(usize::MAX)))
    }

    fn truncated(&self, needed: usize) -> HeaderDecodeError {
        HeaderDecodeError::Truncated {
            offset: self.offset,
            needed,
            remaining: self.rest.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoding of `[("a", Some(b"xy")), ("", None)]`, spelled out byte by byte.
    const SAMPLE: &[u8] = &[
        1, // version
        0, 0, 0, 2, // count
        0, 0, 0, 1, b'a', // name "a"
        0, 0, 0, 2, b'x', b'y', // value "xy"
        0, 0, 0, 0, // empty name
        0xff, 0xff, 0xff, 0xff, // null value
    ];

    fn sample() -> Headers {
        let mut headers = Headers::new();
        headers.push("a", Some(b"xy".to_vec()));
        headers.push("", None);
        headers
    }

    #[test]
    fn encodes_the_documented_layout() {
        assert_eq!(sample().encode(), SAMPLE);
        assert_eq!(sample().encoded_len(), SAMPLE.len());
        assert_eq!(Headers::decode(SAMPLE).unwrap(), sample());
    }

    #[test]
    fn empty_list_is_five_bytes() {
        let empty = Headers::new();
        assert_eq!(empty.encode(), [1, 0, 0, 0, 0]);
        assert_eq!(empty.encoded_len(), 5);
        assert_eq!(Headers::decode(&[1, 0, 0, 0, 0]).unwrap(), empty);
    }

    #[test]
    fn null_and_empty_values_stay_distinct() {
        let mut headers = Headers::new();
        headers.push("k", None);
        headers.push("k", Some(Vec::new()));
        let decoded = Headers::decode(&headers.encode()).unwrap();
        assert_eq!(decoded, headers);
        assert_eq!(decoded.get("k").unwrap().value, None);
        assert_eq!(decoded.iter().nth(1).unwrap().value, Some(Vec::new()));
    }

    #[test]
    fn accessors_and_conversions() {
        let headers = sample();
        assert_eq!(headers.len(), 2);
        assert!(!headers.is_empty());
        assert!(Headers::new().is_empty());
        assert_eq!(headers.get("a").unwrap().value.as_deref(), Some(&b"xy"[..]));
        assert!(headers.get("missing").is_none());
        let names: Vec<&str> = (&headers).into_iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["a", ""]);
        let owned: Vec<Header> = headers.clone().into_iter().collect();
        assert_eq!(Headers::from(owned.clone()), headers);
        assert_eq!(owned.into_iter().collect::<Headers>(), headers);
    }

    #[test]
    fn get_returns_the_first_duplicate() {
        let mut headers = Headers::new();
        headers.push("dup", Some(b"1".to_vec()));
        headers.push("dup", Some(b"2".to_vec()));
        assert_eq!(
            headers.get("dup").unwrap().value.as_deref(),
            Some(&b"1"[..])
        );
    }

    #[test]
    fn empty_input() {
        assert_eq!(Headers::decode(&[]), Err(HeaderDecodeError::Empty));
    }

    #[test]
    fn unknown_versions() {
        for version in [0, 2, 0xff] {
            let mut bytes = SAMPLE.to_vec();
            bytes[0] = version;
            assert_eq!(
                Headers::decode(&bytes),
                Err(HeaderDecodeError::UnknownVersion(version))
            );
        }
    }

    /// Start and length of every field after the version byte, in encoding order.
    fn field_layout(headers: &Headers) -> Vec<(usize, usize)> {
        let mut fields = vec![(1, 4)];
        let mut at = 5;
        let mut field = |len: usize| {
            fields.push((at, len));
            at += len;
        };
        for header in headers {
            field(4);
            field(header.name.len());
            field(4);
            field(header.value.as_ref().map_or(0, Vec::len));
        }
        fields
    }

    #[test]
    fn truncated_at_every_point() {
        // A long first header, so that cuts past the count check still land inside
        // its name and value, followed by a null value and an empty one.
        let mut headers = Headers::new();
        headers.push("n".repeat(30), Some(vec![7; 20]));
        headers.push("", None);
        headers.push("n2", Some(Vec::new()));
        let full = headers.encode();
        assert_eq!(full.len(), 81);
        let fields = field_layout(&headers);
        let count_needs = 5 + headers.len() * MIN_ENCODED_HEADER_LEN;

        for cut in 1..full.len() {
            let expected = if (5..count_needs).contains(&cut) {
                // Too short for three headers of the minimum size: rejected before
                // any header is read.
                HeaderDecodeError::CountExceedsInput {
                    count: 3,
                    remaining: cut - 5,
                }
            } else {
                // Otherwise the cut falls inside exactly one non-empty field.
                let &(offset, needed) = fields
                    .iter()
                    .find(|&&(start, len)| start <= cut && cut < start + len)
                    .unwrap();
                HeaderDecodeError::Truncated {
                    offset,
                    needed,
                    remaining: cut - offset,
                }
            };
            assert_eq!(Headers::decode(&full[..cut]), Err(expected), "cut at {cut}");
        }
        assert_eq!(Headers::decode(&full).unwrap(), headers);
    }

    #[test]
    fn lengths_claiming_more_than_is_left() {
        // Name length 9 with only 6 bytes after it.
        let bytes = [1, 0, 0, 0, 1, 0, 0, 0, 9, b'a', b'b', 0, 0, 0, 0];
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::Truncated {
                offset: 9,
                needed: 9,
                remaining: 6,
            })
        );
        // Value length raised from 2 to 3 in the encoding of ("ab", "cd").
        let mut one = Headers::new();
        one.push("ab", Some(b"cd".to_vec()));
        let mut bytes = one.encode();
        assert_eq!(bytes[11..15], [0, 0, 0, 2]);
        bytes[14] = 3;
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::Truncated {
                offset: 15,
                needed: 3,
                remaining: 2,
            })
        );
    }

    #[test]
    fn huge_lengths_fail_without_allocating() {
        // A name length of u32::MAX and a value length of i32::MAX must be caught by
        // the bounds check, not by an allocation failure.
        let bytes = [1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::Truncated {
                offset: 9,
                needed: u32::MAX as usize,
                remaining: 4,
            })
        );
        let bytes = [1, 0, 0, 0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff];
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::Truncated {
                offset: 13,
                needed: i32::MAX as usize,
                remaining: 0,
            })
        );
    }

    #[test]
    fn huge_counts_are_rejected_up_front() {
        let bytes = [1, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::CountExceedsInput {
                count: u32::MAX,
                remaining: 0,
            })
        );
        // 16 bytes after the count hold at most two headers.
        let mut bytes = vec![1, 0, 0, 0, 3];
        bytes.extend([0; 16]);
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::CountExceedsInput {
                count: 3,
                remaining: 16,
            })
        );
        // Exactly enough bytes for two minimal headers (empty names, empty values).
        bytes[4] = 2;
        let decoded = Headers::decode(&bytes).unwrap();
        assert_eq!(decoded.len(), 2);
        assert!(
            decoded
                .iter()
                .all(|h| h.name.is_empty() && h.value == Some(Vec::new()))
        );
    }

    #[test]
    fn negative_value_lengths_other_than_null() {
        for len in [-2_i32, -100, i32::MIN] {
            let mut bytes = SAMPLE.to_vec();
            bytes[10..14].copy_from_slice(&len.to_be_bytes());
            assert_eq!(
                Headers::decode(&bytes),
                Err(HeaderDecodeError::InvalidValueLength {
                    index: 0,
                    offset: 10,
                    len,
                })
            );
        }
    }

    #[test]
    fn invalid_utf8_names() {
        let mut bytes = SAMPLE.to_vec();
        bytes[9] = 0xff;
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::InvalidUtf8 {
                index: 0,
                offset: 9,
            })
        );
        // A multi-byte character cut in half by the name length is invalid too.
        let mut one = Headers::new();
        one.push("é", None);
        let mut bytes = one.encode();
        assert_eq!(
            bytes,
            [
                1, 0, 0, 0, 1, 0, 0, 0, 2, 0xc3, 0xa9, 0xff, 0xff, 0xff, 0xff
            ]
        );
        // Claim a one-byte name, and drop the character's second byte.
        bytes[8] = 1;
        bytes.remove(10);
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::InvalidUtf8 {
                index: 0,
                offset: 9,
            })
        );
    }

    #[test]
    fn trailing_bytes() {
        let mut bytes = SAMPLE.to_vec();
        bytes.push(0);
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::TrailingBytes {
                offset: SAMPLE.len(),
                len: 1,
            })
        );
        let mut bytes = vec![1, 0, 0, 0, 0];
        bytes.extend([7; 9]);
        assert_eq!(
            Headers::decode(&bytes),
            Err(HeaderDecodeError::TrailingBytes { offset: 5, len: 9 })
        );
    }

    #[test]
    fn length_limits_of_the_format() {
        assert_eq!(count_prefix(0), Some(0));
        assert_eq!(count_prefix(u32::MAX as usize), Some(u32::MAX));
        assert_eq!(name_len_prefix(u32::MAX as usize), Some(u32::MAX));
        assert_eq!(value_len_prefix(i32::MAX as usize), Some(i32::MAX));
        assert_eq!(value_len_prefix(i32::MAX as usize + 1), None);
        #[cfg(target_pointer_width = "64")]
        {
            assert_eq!(count_prefix(u32::MAX as usize + 1), None);
            assert_eq!(name_len_prefix(u32::MAX as usize + 1), None);
        }
    }

    #[test]
    fn error_messages_name_the_problem() {
        let err = Headers::decode(&[9]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown header encoding version 9 (supported: 1)"
        );
        let err = Headers::decode(&[1, 0, 0]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "header bytes truncated at offset 1: 4 bytes needed, 2 left"
        );
    }
}
