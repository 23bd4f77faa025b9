//! The gathering rules: one batch per partition, arrival order within a partition, the
//! size limit, the in-flight limit; by example and by property.

use proptest::prelude::*;

use super::*;

fn limit(max_request_size: usize) -> RequestLimit {
    RequestLimit {
        max_request_size,
        client_id_len: 4,
        max_batches: usize::MAX,
        max_in_flight: 1,
    }
}

fn waiting(topic: &str, partition: i32, bytes: usize, item: u32) -> Waiting<u32> {
    Waiting {
        topic: topic.to_owned(),
        partition,
        bytes,
        item,
    }
}

fn items(request: &[Waiting<u32>]) -> Vec<u32> {
    request.iter().map(|w| w.item).collect()
}

#[test]
fn batches_of_different_partitions_share_a_request_in_arrival_order() {
    let chosen = gather(&[("a", 0, 10), ("b", 3, 10), ("a", 1, 10)], &limit(1 << 20));
    assert_eq!(chosen, [0, 1, 2]);
}

#[test]
fn a_partition_appears_once_per_request() {
    let chosen = gather(
        &[("a", 0, 10), ("a", 0, 10), ("a", 1, 10), ("a", 0, 10)],
        &limit(1 << 20),
    );
    assert_eq!(chosen, [0, 2]);
}

#[test]
fn a_batch_that_does_not_fit_waits_and_so_does_the_rest_of_its_partition() {
    let one = request_size(4, [("a", 100)]);
    // Room for the first batch and a small second one, not for the large one.
    let max = one + PARTITION_FIELDS + 10;
    let chosen = gather(
        &[("a", 0, 100), ("a", 1, 500), ("a", 2, 10), ("a", 1, 1)],
        &limit(max),
    );
    assert_eq!(
        chosen,
        [0, 2],
        "partition 1's small later batch must not overtake"
    );
}

#[test]
fn the_oldest_batch_goes_even_when_it_alone_exceeds_the_estimate() {
    let chosen = gather(&[("a", 0, 5_000), ("a", 1, 1)], &limit(1024));
    assert_eq!(chosen, [0]);
}

#[test]
fn the_size_estimate_counts_each_topic_name_once() {
    let a = request_size(4, [("topic", 10)]);
    assert_eq!(a, REQUEST_OVERHEAD + 4 + 5 + 10);
    let ab = request_size(4, [("topic", 10), ("topic", 20)]);
    assert_eq!(ab, a + 20 + PARTITION_FIELDS);
    let abc = request_size(4, [("topic", 10), ("topic", 20), ("other", 1)]);
    assert_eq!(abc, ab + 1 + 5 + PARTITION_FIELDS + TOPIC_FIELDS);
}

#[test]
fn one_batch_per_request_when_asked() {
    let mut l = limit(1 << 20);
    l.max_batches = 1;
    assert_eq!(gather(&[("a", 0, 1), ("a", 1, 1)], &l), [0]);
}

#[test]
fn a_request_goes_at_once_and_later_batches_gather_behind_it() {
    let mut c = Coalescer::new(limit(1 << 20));
    c.push(waiting("t", 0, 10, 1));
    let first = c.next_request().unwrap();
    assert_eq!(items(&first), [1], "no linger: the first batch goes alone");
    c.push(waiting("t", 1, 10, 2));
    c.push(waiting("t", 2, 10, 3));
    c.push(waiting("t", 1, 10, 4));
    assert!(
        c.next_request().is_none(),
        "one request in flight at a time"
    );
    c.answered();
    let second = c.next_request().unwrap();
    assert_eq!(items(&second), [2, 3]);
    assert!(c.next_request().is_none());
    c.answered();
    assert_eq!(items(&c.next_request().unwrap()), [4]);
    c.answered();
    assert!(c.next_request().is_none(), "nothing waits");
}

#[test]
fn more_requests_in_flight_when_the_limit_allows() {
    let mut l = limit(1 << 20);
    l.max_in_flight = 2;
    l.max_batches = 1;
    let mut c = Coalescer::new(l);
    for i in 0..3 {
        c.push(waiting("t", i32::try_from(i).unwrap(), 1, i));
    }
    assert_eq!(items(&c.next_request().unwrap()), [0]);
    assert_eq!(items(&c.next_request().unwrap()), [1]);
    assert!(c.next_request().is_none());
    c.answered();
    assert_eq!(items(&c.next_request().unwrap()), [2]);
}

#[test]
fn cancelled_batches_are_never_sent() {
    let mut c = Coalescer::new(limit(1 << 20));
    c.push(waiting("t", 0, 1, 1));
    c.push(waiting("t", 1, 1, 2));
    c.retain(|item| *item != 1);
    assert_eq!(c.waiting(), 1);
    assert_eq!(items(&c.next_request().unwrap()), [2]);
}

/// Batches of a few partitions of two topics, with sizes around the limit.
fn arrivals() -> impl Strategy<Value = Vec<(usize, i32, usize)>> {
    prop::collection::vec((0usize..2, 0i32..4, 1usize..700), 0..40)
}

proptest! {
    /// Draining a queue through the coalescer sends every batch exactly once, each
    /// request within the limit (or a lone batch), no partition twice in a request, and
    /// each partition's batches in arrival order.
    #[test]
    fn draining_keeps_every_rule(arrivals in arrivals(), max in 1024usize..3000) {
        let topics = ["orders", "payments-long-topic-name"];
        let mut c = Coalescer::new(limit(max));
        for (i, &(t, p, bytes)) in arrivals.iter().enumerate() {
            c.push(waiting(topics[t], p, bytes, u32::try_from(i).unwrap()));
        }
        let mut sent: Vec<u32> = Vec::new();
        let mut requests = 0;
        while let Some(request) = c.next_request() {
            requests += 1;
            prop_assert!(!request.is_empty());
            let mut seen = HashSet::new();
            for w in &request {
                prop_assert!(seen.insert((w.topic.clone(), w.partition)), "partition twice");
            }
            let size = request_size(4, request.iter().map(|w| (w.topic.as_str(), w.bytes)));
            prop_assert!(request.len() == 1 || size <= max, "{size} > {max}");
            prop_assert!(items(&request).is_sorted(), "arrival order within a request");
            sent.extend(items(&request));
            c.answered();
        }
        let mut all = sent.clone();
        all.sort_unstable();
        let expected: Vec<u32> = (0..u32::try_from(arrivals.len()).unwrap()).collect();
        prop_assert_eq!(all, expected, "every batch once");
        prop_assert!(requests <= arrivals.len());
        // Per partition, the send order is the arrival order.
        for t in 0..2 {
            for p in 0..4 {
                let order: Vec<u32> = sent
                    .iter()
                    .copied()
                    .filter(|&i| arrivals[i as usize].0 == t && arrivals[i as usize].1 == p)
                    .collect();
                prop_assert!(order.is_sorted(), "partition {t}/{p} reordered: {order:?}");
            }
        }
    }

    /// Batches that all fit and belong to distinct partitions leave in one request.
    #[test]
    fn distinct_partitions_that_fit_leave_together(n in 1i32..16) {
        let mut c = Coalescer::new(limit(1 << 20));
        for p in 0..n {
            c.push(waiting("t", p, 100, u32::try_from(p).unwrap()));
        }
        let request = c.next_request().unwrap();
        prop_assert_eq!(request.len(), usize::try_from(n).unwrap());
        c.answered();
        prop_assert!(c.next_request().is_none());
    }
}
