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
//!
//! One job per file: `list` is the in-memory list, `format` the layout's numbers,
//! `codec` encodes and decodes, `reader` is the decoder's bounds-checked cursor, and
//! `error` says why encoding or decoding failed.

mod codec;
mod error;
mod format;
mod list;
mod reader;

pub use error::{HeaderDecodeError, HeaderEncodeError};
pub use format::HEADER_CODEC_VERSION;
pub use list::{Header, Headers};
