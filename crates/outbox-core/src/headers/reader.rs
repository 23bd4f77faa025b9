//! The decoder's cursor: hands out only bytes it has checked are there, and reports
//! every shortfall as [`HeaderDecodeError::Truncated`] with the offset it happened at.

use super::error::HeaderDecodeError;

/// A cursor over the input that only ever hands out bytes it has checked are there.
#[derive(Debug)]
pub(super) struct Reader<'a> {
    /// The input not consumed yet.
    pub(super) rest: &'a [u8],
    /// Position of `rest` within the whole input, for error reports.
    pub(super) offset: usize,
}

impl<'a> Reader<'a> {
    /// The next `N` bytes as an array, for fixed-width integers.
    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], HeaderDecodeError> {
        let (head, tail) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or_else(|| self.truncated(N))?;
        self.rest = tail;
        self.offset += N;
        Ok(*head)
    }

    /// The next `len` bytes.
    pub(super) fn bytes(&mut self, len: usize) -> Result<&'a [u8], HeaderDecodeError> {
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
    pub(super) fn length(&self, len: u32) -> Result<usize, HeaderDecodeError> {
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
