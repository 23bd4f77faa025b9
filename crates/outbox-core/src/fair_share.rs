//! How many buckets each live relay should own.
//!
//! Relays are ranked by id (byte order). With `n` buckets and `k` relays every relay
//! gets `n / k`, and the `n % k` lowest-ranked relays one more. The shares always add up
//! to `n` and differ by at most one, and every relay knows its own share from the same
//! list of live relays without talking to the others. Because a relay's share never
//! depends on how many buckets it already holds, a newcomer is owed a share from its
//! first heartbeat: owners above their share release the surplus on their next
//! acquisition, so a joining relay is never starved.

use std::collections::BTreeSet;

/// The share of `me` among `active` relays for `bucket_count` buckets.
///
/// `me` is counted as active whether or not the list contains it: a relay asking is
/// alive by definition.
pub fn fair_share<'a>(
    active: impl IntoIterator<Item = &'a str>,
    me: &str,
    bucket_count: u32,
) -> u32 {
    let mut ids: BTreeSet<&str> = active.into_iter().collect();
    ids.insert(me);
    let rank = ids.iter().position(|id| *id == me).unwrap_or(0);
    share_at_rank(rank, ids.len(), bucket_count)
}

/// Every relay's share, in rank order. Duplicated ids count once.
pub fn fair_shares<'a>(
    active: impl IntoIterator<Item = &'a str>,
    bucket_count: u32,
) -> Vec<(&'a str, u32)> {
    let ids: BTreeSet<&str> = active.into_iter().collect();
    let count = ids.len();
    ids.into_iter()
        .enumerate()
        .map(|(rank, id)| (id, share_at_rank(rank, count, bucket_count)))
        .collect()
}

fn share_at_rank(rank: usize, relays: usize, bucket_count: u32) -> u32 {
    let Ok(relays) = u32::try_from(relays) else {
        // More relays than u32 can count: the first u32::MAX each get at most one.
        return u32::from(u32::try_from(rank).is_ok_and(|r| r < bucket_count));
    };
    if relays == 0 {
        return 0;
    }
    let base = bucket_count / relays;
    let extra = bucket_count % relays;
    let rank = u32::try_from(rank).unwrap_or(u32::MAX);
    base + u32::from(rank < extra)
}

#[cfg(test)]
#[path = "fair_share_tests.rs"]
mod tests;
