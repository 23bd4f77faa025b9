use super::*;

const LEASE: Duration = Duration::from_secs(30);

fn at(s: i64) -> Timestamp {
    Timestamp::from_millis(1_000_000 + s * 1000)
}

fn row(owner: &str, expires: Timestamp) -> LeaseRow {
    LeaseRow {
        owner: Some(owner.to_owned()),
        expires_at: expires,
    }
}

#[test]
fn empty_tables_create_every_row_and_claim_them_all() {
    let mut s = LeaseSnapshot::default();
    s.heartbeat("a", at(0));
    let plan = plan_acquisition(&s, "a", at(0), LEASE, 4);
    assert_eq!(plan.create, vec![0, 1, 2, 3]);
    assert_eq!(plan.claim, vec![0, 1, 2, 3]);
    assert_eq!(s.apply("a", &plan), vec![0, 1, 2, 3]);
}

#[test]
fn owner_above_share_releases_from_the_top_and_extends_the_rest() {
    let mut s = LeaseSnapshot::default();
    for b in 0..4 {
        s.leases.insert(b, row("a", at(30)));
    }
    s.heartbeat("b", at(1));
    s.heartbeat("a", at(2));
    let plan = plan_acquisition(&s, "a", at(2), LEASE, 4);
    assert_eq!(
        (plan.extend.clone(), plan.release.clone()),
        (vec![0, 1], vec![2, 3])
    );
    assert!(plan.claim.is_empty());
    assert_eq!(plan.expires_at, at(32));
}

#[test]
fn live_leases_of_others_are_not_claimed_expired_ones_are() {
    let mut s = LeaseSnapshot::default();
    s.leases.insert(0, row("b", at(10)));
    s.leases.insert(1, row("b", at(5)));
    s.leases.insert(2, row("a", at(5)));
    s.heartbeat("a", at(5));
    // b is silent (not live), so a's share is all three.
    let plan = plan_acquisition(&s, "a", at(5), LEASE, 3);
    assert_eq!(plan.claim, vec![1, 2], "expiry at exactly now is expired");
    assert!(
        plan.extend.is_empty(),
        "an expired own lease is claimed again"
    );
}

#[test]
fn a_crashed_holder_is_waited_for_until_its_leases_expire() {
    let mut s = LeaseSnapshot::default();
    // "old" crashed at 0 holding everything (with a longer lease than ours); "new"
    // starts at 5 under another id.
    for b in 0..4 {
        s.leases.insert(b, row("old", at(40)));
    }
    s.heartbeat("old", at(0));
    s.heartbeat("new", at(5));
    let plan = plan_acquisition(&s, "new", at(5), LEASE, 4);
    assert_eq!(plan.share, 2, "old's heartbeat is still live");
    assert!(plan.claim.is_empty());
    assert_eq!(
        plan.waiting
            .iter()
            .map(|w| (w.bucket, w.holder.as_str(), w.until, w.holder_live))
            .collect::<Vec<_>>(),
        [(0, "old", at(40), true), (1, "old", at(40), true)],
        "old holds four, above its share of two"
    );
    // Once old's heartbeat is silent, new's share is all four, and it waits for all.
    let plan = plan_acquisition(&s, "new", at(31), LEASE, 4);
    assert_eq!(plan.share, 4);
    assert_eq!(plan.waiting.len(), 4);
    assert!(plan.waiting.iter().all(|w| !w.holder_live));
    // The same restart under old's own id extends them at once: nothing to wait for.
    s.relays.remove("new");
    let plan = plan_acquisition(&s, "old", at(5), LEASE, 4);
    assert_eq!(plan.extend, vec![0, 1, 2, 3]);
    assert!(plan.waiting.is_empty());
}

#[test]
fn a_live_holder_within_its_share_is_not_waited_for() {
    let mut s = LeaseSnapshot::default();
    s.leases.insert(0, row("a", at(30)));
    s.leases.insert(1, row("b", at(30)));
    s.heartbeat("a", at(1));
    s.heartbeat("b", at(1));
    // Three live relays, two buckets: c's share is 0 or 1, but nobody is above share.
    s.heartbeat("c", at(2));
    let plan = plan_acquisition(&s, "c", at(2), LEASE, 2);
    assert!(plan.waiting.is_empty(), "{plan:?}");
}

#[test]
fn rows_beyond_the_bucket_count_are_ignored() {
    let mut s = LeaseSnapshot::default();
    s.leases.insert(5, row("a", at(30)));
    s.leases.insert(-1, row("a", at(30)));
    let plan = plan_acquisition(&s, "a", at(0), LEASE, 2);
    assert_eq!(plan.claim, vec![0, 1]);
    assert!(plan.release.is_empty() && plan.extend.is_empty());
    assert_eq!(s.apply("a", &plan), vec![0, 1]);
}

#[test]
fn long_silent_heartbeats_are_forgotten() {
    let mut s = LeaseSnapshot::default();
    let now = at(200_000);
    s.heartbeat("gone", at(0));
    s.heartbeat("a", now);
    let plan = plan_acquisition(&s, "a", now, LEASE, 1);
    assert_eq!(
        plan.forget_relays_seen_before,
        Some(now.saturating_sub(RELAY_ROW_RETENTION))
    );
    s.apply("a", &plan);
    assert_eq!(s.relays.keys().collect::<Vec<_>>(), ["a"]);
}

#[test]
fn a_stale_plan_is_refused_by_the_guards() {
    let mut s = LeaseSnapshot::default();
    s.heartbeat("a", at(0));
    let plan = plan_acquisition(&s, "a", at(0), LEASE, 2);
    // b creates and takes bucket 1 between a's snapshot and a's writes.
    s.leases.insert(1, row("b", at(30)));
    assert_eq!(s.apply("a", &plan), vec![0]);
    assert_eq!(s.leases[&1].owner.as_deref(), Some("b"));
}
