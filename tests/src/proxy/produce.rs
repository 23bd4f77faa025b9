//! Reading a Produce request (v3..=8) for the partitions it writes to, and answering one
//! with an error code without forwarding it.

use super::fault::PRODUCE;
use super::wire::{Cursor, request_header};

/// A cursor at the topic array of a Produce request (v3..=8): past the request header's
/// client id and the transactional id, acks and timeout. `None` for another version.
fn topics_of(request: &[u8], version: i16) -> Option<Cursor<'_>> {
    if !(3..=8).contains(&version) {
        return None;
    }
    let mut c = Cursor {
        buf: request,
        pos: 12,
    };
    c.string()?; // client id
    c.string()?; // transactional id
    c.i16()?; // acks
    c.i32()?; // timeout
    Some(c)
}

/// The topic-partitions a Produce request (v3..=8) writes to.
pub(super) fn produce_targets(request: &[u8], version: i16) -> Option<Vec<(String, i32)>> {
    let mut c = topics_of(request, version)?;
    let mut out = Vec::new();
    for _ in 0..c.i32()? {
        let name = String::from_utf8_lossy(c.string()??).into_owned();
        for _ in 0..c.i32()? {
            let index = c.i32()?;
            let records = c.i32()?;
            c.take(usize::try_from(records.max(0)).ok()?)?;
            out.push((name.clone(), index));
        }
    }
    Some(out)
}

/// A Produce response answering `request` with `code` for each of its partitions.
pub(super) fn produce_error_response(
    request: &[u8],
    version: i16,
    correlation: i32,
    code: i16,
) -> Option<Vec<u8>> {
    let (api_key, ..) = request_header(request)?;
    if api_key != PRODUCE {
        return None;
    }
    let mut c = topics_of(request, version)?;
    let mut body = Vec::new();
    let topics = c.i32()?;
    body.extend_from_slice(&topics.to_be_bytes());
    for _ in 0..topics {
        let name = c.string()??;
        body.extend_from_slice(&i16::try_from(name.len()).ok()?.to_be_bytes());
        body.extend_from_slice(name);
        let partitions = c.i32()?;
        body.extend_from_slice(&partitions.to_be_bytes());
        for _ in 0..partitions {
            let index = c.i32()?;
            let records = c.i32()?;
            c.take(usize::try_from(records.max(0)).ok()?)?;
            body.extend_from_slice(&index.to_be_bytes());
            body.extend_from_slice(&code.to_be_bytes());
            body.extend_from_slice(&(-1i64).to_be_bytes()); // base offset
            body.extend_from_slice(&(-1i64).to_be_bytes()); // log append time
            if version >= 5 {
                body.extend_from_slice(&(-1i64).to_be_bytes()); // log start offset
            }
            if version >= 8 {
                body.extend_from_slice(&0i32.to_be_bytes()); // no record errors
                body.extend_from_slice(&(-1i16).to_be_bytes()); // null error message
            }
        }
    }
    body.extend_from_slice(&0i32.to_be_bytes()); // throttle time
    let mut out = Vec::with_capacity(body.len() + 8);
    out.extend_from_slice(&i32::try_from(body.len() + 4).ok()?.to_be_bytes());
    out.extend_from_slice(&correlation.to_be_bytes());
    out.extend_from_slice(&body);
    Some(out)
}

#[cfg(test)]
#[path = "produce_tests.rs"]
mod tests;
