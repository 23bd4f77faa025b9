//! Why headers could not be encoded or decoded: the codec's two error types.

use super::format::HEADER_CODEC_VERSION;

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
