//! The version-1 layout in numbers: the version byte, the null marker, the fixed field
//! sizes, and which lengths fit the format's length prefixes. Shared by the encoder, the
//! decoder and the error messages.

use super::list::Header;

/// Version byte that [`Headers::encode`](super::Headers::encode) writes and
/// [`Headers::decode`](super::Headers::decode) accepts.
pub const HEADER_CODEC_VERSION: u8 = 1;

/// The value-length marker of a null value.
pub(super) const NULL_VALUE_LEN: i32 = -1;

/// The fewest bytes one header can occupy: its two 4-byte length fields, with an empty
/// name and an empty or null value. Bounds how many headers an input can hold.
pub(super) const MIN_ENCODED_HEADER_LEN: usize = 8;

/// Version byte plus header count.
pub(super) const PREAMBLE_LEN: usize = 5;

/// The largest byte vector Rust can allocate.
pub(super) const MAX_ALLOCATION: usize = isize::MAX as usize;

/// Bytes one header takes in the encoding, saturating rather than overflowing.
pub(super) fn header_encoded_len(header: &Header) -> usize {
    MIN_ENCODED_HEADER_LEN
        .saturating_add(header.name.len())
        .saturating_add(header.value.as_ref().map_or(0, Vec::len))
}

/// The header-count field for `count` headers, if it fits the format.
pub(super) fn count_prefix(count: usize) -> Option<u32> {
    u32::try_from(count).ok()
}

/// The name-length field for a name of `len` bytes, if it fits the format.
pub(super) fn name_len_prefix(len: usize) -> Option<u32> {
    u32::try_from(len).ok()
}

/// The value-length field for a value of `len` bytes, if it fits the format. The
/// field is signed so that `-1` can mark null, which halves the range.
pub(super) fn value_len_prefix(len: usize) -> Option<i32> {
    i32::try_from(len).ok()
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
