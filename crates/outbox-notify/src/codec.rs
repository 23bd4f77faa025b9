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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decoded(payloads: &[String]) -> Vec<i32> {
        let mut out = Vec::new();
        for payload in payloads {
            assert!(decode(payload, |b| out.push(b)), "{payload:?}");
        }
        out
    }

    #[test]
    fn compact_forms() {
        assert_eq!(encode(&[], 100), Vec::<String>::new());
        assert_eq!(encode(&[-1], 100), vec!["-1"]);
        assert_eq!(encode(&[-1, 3], 100), vec!["-1,3"]);
        assert_eq!(encode(&[1, 2], 100), vec!["1,2"]);
        assert_eq!(encode(&[0, 1, 2, 3, 7, 9, 10, 11], 100), vec!["0-3,7,9-11"]);
        assert_eq!(encode(&[5, 5, 5], 100), vec!["5"]);
        assert_eq!(
            encode(&[3, -7, 1], 100),
            vec!["-1,3,1"],
            "any order works, negatives collapse"
        );
        let all: Vec<i32> = (0..65_536).collect();
        assert_eq!(encode(&all, 7_999), vec!["0-65535"]);
    }

    #[test]
    fn splits_at_the_limit() {
        let sparse: Vec<i32> = (0..3_000).map(|i| i * 2).collect();
        let payloads = encode(&sparse, 7_999);
        assert!(payloads.len() > 1);
        assert!(payloads.iter().all(|p| p.len() <= 7_999));
        assert_eq!(decoded(&payloads), sparse);
        let tiny = encode(&[1_000_000_000, 1_000_000_002, 1_000_000_004], 1);
        assert_eq!(
            tiny,
            vec!["1000000000,1000000002", "1000000004"],
            "the limit is raised to the minimum"
        );
    }

    #[test]
    fn lenient_decoding() {
        let mut got = Vec::new();
        assert!(decode("", |b| got.push(b)));
        assert!(decode("  ", |b| got.push(b)));
        assert_eq!(got, vec![-1, -1], "an empty NOTIFY asks for discovery");
        for bad in ["x", "1,,2", "3-1", "1-2-3", "0-70000", "-x", "2.5", "1-"] {
            let mut got = Vec::new();
            assert!(!decode(bad, |b| got.push(b)), "{bad:?}");
            assert_eq!(got.last(), Some(&-1), "{bad:?}");
        }
        let mut got = Vec::new();
        assert!(decode(" 4 , -5 ,6-8", |b| got.push(b)));
        assert_eq!(got, vec![4, -1, 6, 7, 8]);
        assert_eq!(excerpt("short"), "short");
        assert_eq!(excerpt(&"é".repeat(100)).chars().count(), 64);
    }

    proptest! {
        #[test]
        fn round_trip(ids in proptest::collection::vec(-3i32..70_000, 0..400), limit in 21usize..200) {
            let payloads = encode(&ids, limit);
            prop_assert!(payloads.iter().all(|p| p.len() <= limit && !p.is_empty()));
            let mut expected: Vec<i32> = Vec::new();
            if ids.iter().any(|&b| b < 0) {
                expected.push(-1);
            }
            for &id in ids.iter().filter(|&&b| b >= 0) {
                if expected.last() != Some(&id) {
                    expected.push(id);
                }
            }
            prop_assert_eq!(decoded(&payloads), expected);
        }
    }
}
