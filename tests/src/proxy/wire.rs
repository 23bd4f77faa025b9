//! Kafka wire-format helpers for the few fields the proxy reads and writes: a request's
//! header, a cursor over a frame, and unsigned varints.

/// (api key, api version, correlation id) of a request frame.
pub(super) fn request_header(frame: &[u8]) -> Option<(i16, i16, i32)> {
    let h = frame.get(4..12)?;
    Some((
        i16::from_be_bytes([h[0], h[1]]),
        i16::from_be_bytes([h[2], h[3]]),
        i32::from_be_bytes([h[4], h[5], h[6], h[7]]),
    ))
}

/// A cursor over a frame for the few fields the proxy parses.
pub(super) struct Cursor<'a> {
    pub(super) buf: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(bytes)
    }
    pub(super) fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }
    pub(super) fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(super) fn uvarint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.take(1)?.first()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    /// Classic string or nullable string (i16 length, -1 = null).
    pub(super) fn string(&mut self) -> Option<Option<&'a [u8]>> {
        let len = self.i16()?;
        if len < 0 {
            return Some(None);
        }
        self.take(usize::try_from(len).ok()?).map(Some)
    }
    /// Compact string or nullable string (uvarint length + 1, 0 = null).
    pub(super) fn compact_string(&mut self) -> Option<Option<&'a [u8]>> {
        let len = self.uvarint()?;
        if len == 0 {
            return Some(None);
        }
        self.take(usize::try_from(len - 1).ok()?).map(Some)
    }
    pub(super) fn tagged_fields(&mut self) -> Option<()> {
        for _ in 0..self.uvarint()? {
            self.uvarint()?;
            let size = self.uvarint()?;
            self.take(usize::try_from(size).ok()?)?;
        }
        Some(())
    }
}

/// Appends `value` as an unsigned varint (the flexible encodings' lengths).
pub(super) fn put_uvarint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
