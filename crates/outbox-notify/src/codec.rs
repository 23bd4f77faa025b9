//! The text payload of one broadcast, shared by the bundled transports.
//!
//! A payload is comma-separated tokens: `-1` (unknown bucket: run discovery), a bucket id
//! such as `5`, or an inclusive run such as `8-15`. The encoder writes `-1` first, then
//! the ids in the order given, folding ascending runs of three or more into one token, so
//! the usual ascending input of a hundred consecutive buckets costs a few bytes. Payloads
//! are split at a byte limit (PostgreSQL refuses `NOTIFY` payloads of 8000 bytes or more).
//!
//! Decoding is lenient because anything may arrive on a channel (a hand-written `NOTIFY`,
//! a trigger, a newer writer): an empty payload and any token that cannot be read count as
//! one `-1`, which is always a safe answer (the receiver looks for work in the buckets it
//! owns). Hints never carry payloads or message ids, only bucket numbers.

use std::fmt::Write as _;

use outbox_core::options::MAX_BUCKET_COUNT;

/// The wire form of the unknown-bucket hint.
pub const UNKNOWN: i32 = -1;

/// The smallest byte limit [`encode`] accepts: the longest token (`a-b` with two 10-digit
/// ids) must fit alone.
pub const MIN_PAYLOAD_LIMIT: usize = 21;

/// Encodes `buckets` (wire form) into payloads of at most `limit` bytes each (raised to
/// [`MIN_PAYLOAD_LIMIT`] if smaller). Any negative id becomes one leading `-1`; an empty
/// slice gives no payload.
pub fn encode(buckets: &[i32], limit: usize) -> Vec<String> {
    let mut payloads = Payloads {
        limit: limit.max(MIN_PAYLOAD_LIMIT),
        done: Vec::new(),
        current: String::new(),
        token: String::new(),
    };
    if buckets.iter().any(|&b| b < 0) {
        payloads.push_token(format_args!("{UNKNOWN}"));
    }
    let mut run: Option<(i32, i32)> = None;
    for &bucket in buckets.iter().filter(|&&b| b >= 0) {
        run = match run {
            Some((start, end)) if end.checked_add(1) == Some(bucket) => Some((start, bucket)),
            Some((start, end)) if end == bucket => Some((start, end)),
            Some(previous) => {
                payloads.push_run(previous);
                Some((bucket, bucket))
            }
            None => Some((bucket, bucket)),
        };
    }
    if let Some(last) = run {
        payloads.push_run(last);
    }
    payloads.finish()
}

/// Payloads being filled, token by token.
struct Payloads {
    limit: usize,
    done: Vec<String>,
    current: String,
    token: String,
}

impl Payloads {
    fn push_run(&mut self, (start, end): (i32, i32)) {
        // Runs of three or more become one token, unless they reach past the largest
        // possible bucket (the decoder refuses those to bound its work).
        let fits = u32::try_from(end).is_ok_and(|end| end < MAX_BUCKET_COUNT);
        if end - start >= 2 && fits {
            self.push_token(format_args!("{start}-{end}"));
        } else {
            for bucket in start..=end {
                self.push_token(format_args!("{bucket}"));
            }
        }
    }

    fn push_token(&mut self, token: std::fmt::Arguments<'_>) {
        self.token.clear();
        // Writing to a String cannot fail.
        let _ = self.token.write_fmt(token);
        let separator = usize::from(!self.current.is_empty());
        if self.current.len() + separator + self.token.len() > self.limit {
            self.done.push(std::mem::take(&mut self.current));
        }
        if !self.current.is_empty() {
            self.current.push(',');
        }
        self.current.push_str(&self.token);
    }

    fn finish(mut self) -> Vec<String> {
        if !self.current.is_empty() {
            self.done.push(self.current);
        }
        self.done
    }
}

/// Calls `on_bucket` for every id in `payload`, in payload order (duplicates included).
/// An empty payload, or any token that cannot be read, produces one `-1` instead; the
/// return value is `false` in the second case, so that the caller can log it.
pub fn decode(payload: &str, mut on_bucket: impl FnMut(i32)) -> bool {
    if payload.trim().is_empty() {
        on_bucket(UNKNOWN);
        return true;
    }
    let mut malformed = false;
    for token in payload.split(',').map(str::trim) {
        match parse_token(token) {
            Some(Token::One(bucket)) => on_bucket(bucket),
            Some(Token::Run(start, end)) => (start..=end).for_each(&mut on_bucket),
            None => malformed = true,
        }
    }
    if malformed {
        on_bucket(UNKNOWN);
    }
    !malformed
}

/// At most the first 64 characters of `payload`, for logs: an unreadable payload may be
/// kilobytes long.
#[cfg_attr(not(any(feature = "postgres", feature = "redis")), allow(dead_code))]
pub(crate) fn excerpt(payload: &str) -> &str {
    match payload.char_indices().nth(64) {
        Some((end, _)) => &payload[..end],
        None => payload,
    }
}

enum Token {
    One(i32),
    Run(i32, i32),
}

fn parse_token(token: &str) -> Option<Token> {
    if let Some(rest) = token.strip_prefix('-') {
        // Negative: only "unknown" is meaningful, any negative number reads as it.
        return rest.parse::<u32>().ok().map(|_| Token::One(UNKNOWN));
    }
    match token.split_once('-') {
        None => token.parse::<i32>().ok().map(Token::One),
        Some((start, end)) => {
            let start = start.parse::<i32>().ok()?;
            let end = end.parse::<i32>().ok()?;
            // A run can never name more buckets than an outbox may have: this bounds
            // the work one payload can cause.
            let in_range = u32::try_from(end).is_ok_and(|end| end < MAX_BUCKET_COUNT);
            (start >= 0 && start <= end && in_range).then_some(Token::Run(start, end))
        }
    }
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
