//! What every transport must do, written once; each test file runs these against its
//! service, adding the service-specific parts (killing connections, counting subscribers).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use outbox_core::CommitNotifier;
use outbox_core::testing::{MemoryPublisher, MemoryStore};
use outbox_notify::{NotificationTransport, spawn_relay_with_transport};

use super::{Counting, LONG_POLL, Pair, Received, await_subscribed, options, record, wait_until};

/// How long a hinted row may take: far below [`LONG_POLL`], far above any sane latency.
pub const HINT_DEADLINE: Duration = Duration::from_secs(10);

/// A commit in relay A's process to a bucket that relay B owns wakes B long before its
/// fallback poll. Returns the observed wake-up latencies (for the log, not asserted).
pub async fn commit_in_a_wakes_owner_b<T: NotificationTransport>(
    make: impl Fn() -> T,
) -> Vec<Duration> {
    let pair = Pair::start(make(), make(), LONG_POLL).await;
    let bucket = pair.owned_by_b()[0];
    assert!(!pair.owned_by_a().contains(&bucket));

    // Control: without a hint, B does not find the row before its poll is due.
    let row = pair.enqueue(bucket);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        pair.published_by_b(row),
        0,
        "B found the row without a hint: the causality check below would prove nothing"
    );

    let mut latencies = Vec::new();
    let mut rows = vec![row];
    for round in 0..5 {
        if round > 0 {
            rows.push(pair.enqueue(bucket));
        }
        let row = *rows.last().unwrap();
        let committed = Instant::now();
        // A does not own the bucket: only the broadcast can wake B.
        pair.a.notifier().notify_buckets(&[bucket]);
        let woke = wait_until(HINT_DEADLINE, || pair.published_by_b(row) == 1).await;
        assert!(
            woke,
            "round {round}: B did not publish within {HINT_DEADLINE:?} of the commit in A \
             (its poll interval is {LONG_POLL:?}); pending: {}",
            pair.store.pending_count()
        );
        latencies.push(committed.elapsed());
    }
    assert!(
        pair.ready_at.elapsed() < LONG_POLL,
        "the test ran past B's poll deadline, so polling may have found the rows"
    );
    for row in &rows {
        assert_eq!(
            pair.published_by_a(*row),
            0,
            "A published a row of B's bucket"
        );
        assert_eq!(pair.published_by_b(*row), 1);
    }
    pair.stop().await;
    latencies
}

/// Duplicate hints publish a row once; a hint for another relay's bucket is ignored by B
/// and wakes its owner; `-1` makes every relay look; impossible buckets are harmless.
pub async fn duplicate_foreign_and_unknown_hints<T: NotificationTransport>(make: impl Fn() -> T) {
    let pair = Pair::start(make(), make(), LONG_POLL).await;
    // A third process that only writes, and so only broadcasts.
    let writer = make();
    let (bucket_a, bucket_b) = (pair.owned_by_a()[0], pair.owned_by_b()[0]);

    let duplicated = pair.enqueue(bucket_b);
    writer
        .publish(&[bucket_b, bucket_b, bucket_b])
        .await
        .unwrap();
    for _ in 0..5 {
        writer.publish(&[bucket_b]).await.unwrap();
    }
    assert!(wait_until(HINT_DEADLINE, || pair.published_by_b(duplicated) == 1).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        pair.published_by_b(duplicated),
        1,
        "published once despite 8 hints"
    );
    assert_eq!(pair.published_by_a(duplicated), 0);

    let foreign = pair.enqueue(bucket_a);
    writer.publish(&[bucket_a]).await.unwrap();
    assert!(
        wait_until(HINT_DEADLINE, || pair.published_by_a(foreign) == 1).await,
        "the owner A was not woken"
    );
    assert_eq!(
        pair.published_by_b(foreign),
        0,
        "B acted on a bucket it does not own"
    );

    let (unknown_a, unknown_b) = (pair.enqueue(bucket_a), pair.enqueue(bucket_b));
    writer.publish(&[-1]).await.unwrap();
    assert!(
        wait_until(HINT_DEADLINE, || {
            pair.published_by_a(unknown_a) == 1 && pair.published_by_b(unknown_b) == 1
        })
        .await,
        "an unknown-bucket hint did not make both relays look"
    );

    // Buckets no relay can own (a writer with a larger bucket count) change nothing.
    writer.publish(&[8, 1_000, 65_535]).await.unwrap();
    let after = pair.enqueue(bucket_b);
    writer.publish(&[bucket_b]).await.unwrap();
    assert!(wait_until(HINT_DEADLINE, || pair.published_by_b(after) == 1).await);
    assert!(!pair.a.is_finished() && !pair.b.is_finished());
    assert_eq!(pair.store.pending_count(), 0);
    pair.stop().await;
}

/// Hints received from other processes, and a relay's own hints coming back, are never
/// broadcast again: a relay's transport only ever sends its own commits.
pub async fn received_hints_are_not_rebroadcast<T: NotificationTransport>(make: impl Fn() -> T) {
    let (counted, publishes) = Counting::new(make());
    let store = MemoryStore::new();
    let published = MemoryPublisher::new();
    let relay = spawn_relay_with_transport(
        store.clone(),
        published.clone(),
        options("solo", LONG_POLL),
        counted,
    )
    .unwrap();
    let writer = make();
    let observer = Arc::new(make());
    let (received, observing) = record(Arc::clone(&observer));
    await_subscribed(&writer, &received, 7).await;

    // The relay owns every bucket; a remote hint makes it publish: its listener is live.
    assert!(wait_until(Duration::from_secs(10), || relay.is_ready()).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let message = outbox_core::testing::contract::row(3, 0);
    store.enqueue(message);
    let live = super::wait_until_async(Duration::from_secs(20), async || {
        let _ = writer.publish(&[3]).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        store.pending_count() == 0
    })
    .await;
    assert!(live, "the relay's listener never received a remote hint");
    assert_eq!(
        publishes.load(Ordering::SeqCst),
        0,
        "remote hints were rebroadcast"
    );

    received.clear();
    relay.notifier().notify_buckets(&[2]);
    assert!(wait_until(HINT_DEADLINE, || received.ids().contains(&2)).await);
    // The relay hears its own hint too (self-echo); give a loop time to show up.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        publishes.load(Ordering::SeqCst),
        1,
        "exactly the one local commit was sent"
    );
    assert_eq!(received.ids(), vec![2], "no echo came back on the channel");

    observing.abort();
    relay.stop(Duration::from_secs(5)).await.unwrap();
}

/// 10,000 commit notifications from concurrent committers: every call returns, far fewer
/// sends go out, and every committed bucket reaches the other side.
pub async fn burst_is_coalesced<T: NotificationTransport>(make: impl Fn() -> T) -> usize {
    const COMMITTERS: usize = 8;
    const COMMITS_EACH: usize = 1_250;
    let (counted, publishes) = Counting::new(make());
    let relay = spawn_relay_with_transport(
        MemoryStore::new(),
        MemoryPublisher::new(),
        options("burst", LONG_POLL),
        counted,
    )
    .unwrap();
    let writer = make();
    let (received, observing) = record(Arc::new(make()));
    await_subscribed(&writer, &received, 7).await;
    received.clear();

    let returned = Arc::new(AtomicUsize::new(0));
    let committers: Vec<_> = (0..COMMITTERS)
        .map(|c| {
            let notifier = relay.notifier();
            let returned = Arc::clone(&returned);
            tokio::spawn(async move {
                for i in 0..COMMITS_EACH {
                    let bucket = i32::try_from((c + i) % 8).unwrap();
                    notifier.notify_buckets(&[bucket]);
                    returned.fetch_add(1, Ordering::SeqCst);
                    // Interleave with the sender, as real committers awaiting I/O would.
                    if i % 25 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for committer in committers {
        committer.await.unwrap();
    }
    let commits = COMMITTERS * COMMITS_EACH;
    assert_eq!(
        returned.load(Ordering::SeqCst),
        commits,
        "every commit call returned"
    );

    let everything = wait_until(HINT_DEADLINE, || {
        let ids = received.ids();
        (0..8).all(|b| ids.contains(&b))
    })
    .await;
    assert!(
        everything,
        "not every committed bucket was broadcast: {:?}",
        received.ids()
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sends = publishes.load(Ordering::SeqCst);
    assert!(
        sends >= 1 && sends * 10 <= commits,
        "{sends} sends for {commits} commits: not coalesced"
    );
    observing.abort();
    relay.stop(Duration::from_secs(5)).await.unwrap();
    sends
}

/// Dropping a `listen` future while a callback runs: the task ends only after that
/// callback (and the rest of its payload's callbacks) returned, and none runs afterwards.
///
/// The listener runs on a runtime of its own, because its first callback blocks (until the
/// test has requested cancellation) and would otherwise stall this runtime's I/O driver.
pub async fn cancel_while_callbacks_run<T: NotificationTransport>(make: impl Fn() -> T) {
    let listener = Arc::new(make());
    let writer = make();
    let started = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let (entered_tx, entered) = tokio::sync::oneshot::channel::<()>();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    let side = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let task = {
        let (started, finished) = (Arc::clone(&started), Arc::clone(&finished));
        let entered_tx = std::sync::Mutex::new(Some(entered_tx));
        let go_rx = std::sync::Mutex::new(go_rx);
        side.spawn(async move {
            let on_hint = move |_bucket: i32| {
                started.fetch_add(1, Ordering::SeqCst);
                if let Some(tx) = entered_tx.lock().unwrap().take() {
                    let _ = tx.send(());
                    // Held here until the test has aborted the task.
                    let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(20));
                }
                finished.fetch_add(1, Ordering::SeqCst);
            };
            let _ = listener.listen(&on_hint).await;
        })
    };
    let mut entered = std::pin::pin!(entered);
    let in_callback = super::wait_until_async(Duration::from_secs(20), async || {
        let _ = writer.publish(&[0, 1, 2, 3, 4, 5, 6, 7]).await;
        tokio::time::timeout(Duration::from_millis(100), &mut entered)
            .await
            .is_ok()
    })
    .await;
    assert!(in_callback, "the listener never called back");
    assert_ne!(
        started.load(Ordering::SeqCst),
        finished.load(Ordering::SeqCst),
        "a callback is in progress"
    );
    task.abort();
    go.send(()).unwrap();
    let joined = task.await;
    assert!(
        joined.is_err_and(|e| e.is_cancelled()),
        "the task was cancelled"
    );
    let (s, f) = (
        started.load(Ordering::SeqCst),
        finished.load(Ordering::SeqCst),
    );
    assert_eq!(
        s, f,
        "a callback was still running after the listen future ended"
    );
    writer.publish(&[1]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        started.load(Ordering::SeqCst),
        s,
        "a callback ran after cancellation"
    );
    side.shutdown_background();
}

/// Round trip of the wire encoding through the real service: exact ids, order kept
/// within one publish, big batches split and reassembled; raw payloads from foreign
/// senders (`send_raw`) decoded leniently.
pub async fn payloads_round_trip<T: NotificationTransport>(
    make: impl Fn() -> T,
    send_raw: impl AsyncFn(&str),
) {
    let writer = make();
    let (received, task) = record(Arc::new(make()));
    await_subscribed(&writer, &received, 7).await;

    let cases: Vec<Vec<i32>> = vec![
        vec![-1],
        vec![-1, 0, 1, 2, 3, 9],
        vec![5],
        // Sparse and large: tens of kilobytes, more than one PostgreSQL payload.
        (0..6_000).map(|i| i * 3).collect(),
        (0..65_536).collect(),
    ];
    for ids in cases {
        received.clear();
        writer.publish(&ids).await.unwrap();
        expect(&received, &ids).await;
    }
    for (raw, ids) in [
        ("", vec![-1]),
        ("garbage", vec![-1]),
        ("5-7", vec![5, 6, 7]),
        ("2,x,4", vec![2, 4, -1]),
    ] {
        received.clear();
        send_raw(raw).await;
        expect(&received, &ids).await;
    }
    task.abort();
}

async fn expect(received: &Received, ids: &[i32]) {
    assert!(
        wait_until(HINT_DEADLINE, || received.ids().len() >= ids.len()).await,
        "received {} of {} ids",
        received.ids().len(),
        ids.len()
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(received.ids(), ids);
}

/// Stopping the relay stops its workers: the subscription and the connections go away.
/// `open` counts what the transport holds open (subscriptions or connections), which
/// must reach `expected` while the relay runs.
pub async fn stopping_the_relay_stops_the_workers<T: NotificationTransport>(
    transport: T,
    expected: usize,
    mut open: impl AsyncFnMut() -> usize,
) {
    let relay = spawn_relay_with_transport(
        MemoryStore::new(),
        MemoryPublisher::new(),
        options("stopping", LONG_POLL),
        transport,
    )
    .unwrap();
    // Also opens the sender's connection.
    relay.notifier().notify_buckets(&[1]);
    assert!(
        super::wait_until_async(Duration::from_secs(20), async || open().await == expected).await,
        "the relay's transport never opened its subscription and connection"
    );
    relay.stop(Duration::from_secs(5)).await.unwrap();
    assert!(
        super::wait_until_async(Duration::from_secs(10), async || open().await == 0).await,
        "the subscription or a connection outlived the relay"
    );
}

/// B's listening connection is killed on the server; the listener reconnects and B is
/// woken by hints again, before its fallback poll.
pub async fn hints_resume_after_the_listener_is_killed<T: NotificationTransport, K>(
    transport_a: T,
    transport_b: T,
    mut kill_b: impl AsyncFnMut() -> K,
    mut resubscribed_b: impl AsyncFnMut(&K) -> bool,
) {
    let pair = Pair::start(transport_a, transport_b, LONG_POLL).await;
    let bucket = pair.owned_by_b()[0];
    let killed = kill_b().await;
    assert!(
        super::wait_until_async(Duration::from_secs(15), async || resubscribed_b(&killed)
            .await)
        .await,
        "B's listener did not subscribe again"
    );
    let row = pair.enqueue(bucket);
    pair.a.notifier().notify_buckets(&[bucket]);
    assert!(
        wait_until(HINT_DEADLINE, || pair.published_by_b(row) == 1).await,
        "B was not woken after its listener reconnected"
    );
    assert!(
        pair.ready_at.elapsed() < LONG_POLL,
        "the test ran past B's poll deadline, so polling may have found the row"
    );
    pair.stop().await;
}

/// The service is unreachable for both relays (`cut`): hints are lost (A's sends fail, B
/// cannot receive) and polling publishes the row. After `restore` both subscribe again
/// and hints flow.
pub async fn outage_is_covered_by_polling<T: NotificationTransport>(
    transport_a: T,
    transport_b: T,
    proxy: &super::proxy::Proxy,
    mut subscribers: impl AsyncFnMut() -> usize,
) {
    let poll = Duration::from_secs(4);
    let pair = Pair::start(transport_a, transport_b, poll).await;
    let bucket = pair.owned_by_b()[0];
    assert!(
        super::wait_until_async(Duration::from_secs(10), async || subscribers().await == 2).await
    );

    proxy.cut();
    assert!(
        super::wait_until_async(Duration::from_secs(10), async || subscribers().await == 0).await,
        "the service still sees the subscriptions"
    );
    let lost = pair.enqueue(bucket);
    pair.a.notifier().notify_buckets(&[bucket]);
    assert!(
        wait_until(Duration::from_secs(20), || pair.published_by_b(lost) == 1).await,
        "polling did not publish the row during the outage"
    );

    proxy.restore();
    assert!(
        super::wait_until_async(Duration::from_secs(20), async || subscribers().await == 2).await,
        "the listeners did not subscribe again after the outage"
    );
    let row = pair.enqueue(bucket);
    pair.a.notifier().notify_buckets(&[bucket]);
    assert!(wait_until(Duration::from_secs(20), || pair.published_by_b(row) == 1).await);
    pair.stop().await;
}
