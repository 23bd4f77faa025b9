//! Rewriting a Metadata response so that every broker is advertised at the proxy's own
//! address (classic and flexible versions).

use super::wire::{Cursor, put_uvarint};

/// The Metadata response `frame` with every broker's host and port replaced, or `None`
/// if it cannot be parsed (it is then forwarded as is).
pub(super) fn rewrite_metadata(
    frame: &[u8],
    version: i16,
    host: &str,
    port: i32,
) -> Option<Vec<u8>> {
    let flexible = version >= 9;
    let mut c = Cursor { buf: frame, pos: 8 }; // size and correlation id
    if flexible {
        c.tagged_fields()?; // response header v1
    }
    if version >= 3 {
        c.i32()?; // throttle time
    }
    let brokers_start = c.pos;
    let count = if flexible {
        usize::try_from(c.uvarint()?.checked_sub(1)?).ok()?
    } else {
        usize::try_from(c.i32()?).ok()?
    };
    let mut brokers = Vec::new();
    if flexible {
        put_uvarint(&mut brokers, count as u64 + 1);
    } else {
        brokers.extend_from_slice(&i32::try_from(count).ok()?.to_be_bytes());
    }
    for _ in 0..count {
        let node_id = c.i32()?;
        brokers.extend_from_slice(&node_id.to_be_bytes());
        if flexible {
            c.compact_string()?;
            put_uvarint(&mut brokers, host.len() as u64 + 1);
        } else {
            c.string()?;
            brokers.extend_from_slice(&i16::try_from(host.len()).ok()?.to_be_bytes());
        }
        brokers.extend_from_slice(host.as_bytes());
        c.i32()?;
        brokers.extend_from_slice(&port.to_be_bytes());
        let rest_start = c.pos;
        if version >= 1 {
            if flexible {
                c.compact_string()?; // rack
                c.tagged_fields()?;
            } else {
                c.string()?;
            }
        }
        brokers.extend_from_slice(&frame[rest_start..c.pos]);
    }
    let mut out = Vec::with_capacity(frame.len() + brokers.len());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&frame[4..brokers_start]);
    out.extend_from_slice(&brokers);
    out.extend_from_slice(&frame[c.pos..]);
    let size = i32::try_from(out.len() - 4).ok()?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Some(out)
}

#[cfg(test)]
#[path = "metadata_tests.rs"]
mod tests;
