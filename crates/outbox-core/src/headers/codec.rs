//! The binary codec: [`Headers::encode`] / [`Headers::try_encode`] write the current
//! format version, [`Headers::decode`] reads untrusted bytes back (the format and the
//! decoder's guarantees are in the `headers` module docs).

use super::error::{HeaderDecodeError, HeaderEncodeError};
use super::format::{
    HEADER_CODEC_VERSION, MAX_ALLOCATION, MIN_ENCODED_HEADER_LEN, NULL_VALUE_LEN, PREAMBLE_LEN,
    count_prefix, header_encoded_len, name_len_prefix, value_len_prefix,
};
use super::list::{Header, Headers};
use super::reader::Reader;

impl Headers {
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

#[cfg(test)]
#[path = "codec_tests.rs"]
pub(crate) mod tests;
