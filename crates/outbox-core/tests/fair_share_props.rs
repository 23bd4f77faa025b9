//! Fair-share properties: shares add up, stay within one of each other, and every live
//! relay (including a newcomer) is owed its share.
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use outbox_core::{fair_share, fair_shares};
use proptest::prelude::*;

fn relay_ids() -> impl Strategy<Value = BTreeSet<String>> {
    prop::collection::btree_set("[a-z0-9-]{1,12}", 1..40)
}

proptest! {
    #[test]
    fn shares_sum_to_the_bucket_count(ids in relay_ids(), buckets in 1u32..=1024) {
        let shares = fair_shares(ids.iter().map(String::as_str), buckets);
        prop_assert_eq!(shares.len(), ids.len());
        prop_assert_eq!(shares.iter().map(|(_, s)| u64::from(*s)).sum::<u64>(), u64::from(buckets));
    }

    #[test]
    fn shares_differ_by_at_most_one(ids in relay_ids(), buckets in 1u32..=1024) {
        let shares = fair_shares(ids.iter().map(String::as_str), buckets);
        let min = shares.iter().map(|(_, s)| *s).min().unwrap_or(0);
        let max = shares.iter().map(|(_, s)| *s).max().unwrap_or(0);
        prop_assert!(max - min <= 1, "{shares:?}");
    }

    #[test]
    fn each_relay_computes_the_same_share_the_table_gives_it(ids in relay_ids(), buckets in 1u32..=1024) {
        let table = fair_shares(ids.iter().map(String::as_str), buckets);
        for (id, share) in &table {
            prop_assert_eq!(fair_share(ids.iter().map(String::as_str), id, buckets), *share);
        }
    }

    #[test]
    fn a_newcomer_is_owed_a_share_whenever_buckets_suffice(ids in relay_ids(), newcomer in "[a-z0-9-]{1,12}", buckets in 1u32..=1024) {
        prop_assume!(!ids.contains(&newcomer));
        let relays = u32::try_from(ids.len() + 1).unwrap();
        let share = fair_share(ids.iter().map(String::as_str), &newcomer, buckets);
        prop_assert!(share >= buckets / relays, "newcomer share {share} below floor");
        if buckets >= relays {
            prop_assert!(share >= 1, "a newcomer is never starved when there are enough buckets");
        }
    }
}
