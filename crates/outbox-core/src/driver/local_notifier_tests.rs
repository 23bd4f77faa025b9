use super::*;

fn hints(n: &LocalNotifier) -> Vec<Hint> {
    let mut out = Vec::new();
    n.take_hints(&mut out);
    out
}

#[test]
fn coalesces_and_clears() {
    let n = LocalNotifier::new(130);
    for _ in 0..1_000 {
        n.notify_buckets(&[129, 3]);
    }
    assert_eq!(hints(&n), vec![Hint::Bucket(3), Hint::Bucket(129)]);
    assert!(hints(&n).is_empty());
}

#[test]
fn foreign_buckets_are_dropped_once_ownership_is_known() {
    let n = LocalNotifier::new(8);
    n.notify_buckets(&[5]);
    assert_eq!(
        hints(&n),
        vec![Hint::Bucket(5)],
        "before the first acquisition every hint counts"
    );
    n.set_owned([1, 2]);
    n.notify_buckets(&[5, 6]);
    assert!(hints(&n).is_empty());
    n.notify_buckets(&[6, 2]);
    assert_eq!(hints(&n), vec![Hint::Bucket(2)]);
}

#[tokio::test]
async fn outgoing_hints_carry_every_bucket_and_remote_hints_are_not_echoed() {
    let n = LocalNotifier::new(8);
    n.set_owned([1]);
    n.notify_buckets(&[5]);
    let mut out = Vec::new();
    assert!(
        tokio::time::timeout(
            std::time::Duration::from_millis(50),
            n.next_outgoing(&mut out)
        )
        .await
        .is_err(),
        "nothing is queued for broadcast until a transport is attached"
    );
    n.enable_outgoing();
    for _ in 0..100 {
        n.notify_buckets(&[5, 1]);
    }
    n.notify_committed();
    n.next_outgoing(&mut out).await;
    assert_eq!(out, vec![-1, 1, 5], "coalesced, foreign buckets included");
    assert_eq!(
        hints(&n),
        vec![Hint::Unknown, Hint::Bucket(1)],
        "locally only the owned bucket"
    );
    n.receive_remote(1);
    n.receive_remote(6);
    assert_eq!(
        hints(&n),
        vec![Hint::Bucket(1)],
        "a remote hint for a foreign bucket is dropped"
    );
    out.clear();
    assert!(
        tokio::time::timeout(
            std::time::Duration::from_millis(50),
            n.next_outgoing(&mut out)
        )
        .await
        .is_err(),
        "remote hints are never rebroadcast"
    );
}

#[test]
fn unknown_and_out_of_range() {
    let n = LocalNotifier::new(8);
    n.notify_committed();
    n.notify_buckets(&[-1]);
    assert_eq!(hints(&n), vec![Hint::Unknown]);
    n.notify_buckets(&[100]);
    assert_eq!(
        hints(&n),
        vec![Hint::Unknown],
        "before ownership is known an impossible bucket asks for discovery"
    );
}

#[tokio::test]
async fn a_notification_before_waiting_is_not_lost() {
    let n = LocalNotifier::new(8);
    n.notify_committed();
    // The relay only starts waiting now; the stored permit wakes it at once.
    tokio::time::timeout(std::time::Duration::from_secs(5), n.notified())
        .await
        .unwrap();
}
