//! The send machine's rules, one input at a time. The matrix test covers lost
//! connection x (appended or not) x each kind of answer; the named tests pin the rules
//! that once lost batches.

use std::time::{Duration, Instant};

use outbox_core::backoff::Backoff;

use super::*;
use crate::error::code;
use crate::session::{PartitionSequence, Session};

const DELIVERY: Duration = Duration::from_secs(10);

fn session(producer_id: i64, generation: u64) -> Session {
    Session {
        producer_id,
        producer_epoch: 0,
        generation,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A machine over chunks of `records` records each, its start and its deadline.
fn machine(records: &[i32]) -> (PartitionSendMachine, Instant) {
    machine_with(records, PartitionSequence::default())
}

fn machine_with(records: &[i32], sequence: PartitionSequence) -> (PartitionSendMachine, Instant) {
    let t0 = Instant::now();
    let backoff = Backoff::new(ms(100), ms(1_000)).unwrap();
    let m = PartitionSendMachine::new(
        "t",
        3,
        records.to_vec(),
        sequence,
        t0 + DELIVERY,
        DELIVERY,
        backoff,
    );
    (m, t0)
}

fn next(m: &mut PartitionSendMachine) -> SendCommand {
    m.poll_command().expect("the machine queued no command")
}

/// Every command queued now.
fn drain(m: &mut PartitionSendMachine) -> Vec<SendCommand> {
    std::iter::from_fn(|| m.poll_command()).collect()
}

/// Polls `ObtainSession`, answers `s`; if the machine stamps anew, polls `Encode`
/// and answers it; then `Connect`, answered; returns the produce stamp.
fn send(m: &mut PartitionSendMachine, now: Instant, s: Session) -> ProducerStamp {
    assert!(matches!(next(m), SendCommand::ObtainSession));
    m.on_session(now, Ok(s));
    let mut command = next(m);
    if let SendCommand::Encode { stamp, .. } = command {
        assert_eq!(stamp.producer_id, s.producer_id);
        m.on_encoded(now, Ok(()));
        command = next(m);
    }
    assert!(matches!(command, SendCommand::Connect), "{command:?}");
    m.on_leader(now, Ok(()));
    match next(m) {
        SendCommand::Produce { stamp, .. } => stamp,
        other => panic!("expected Produce, got {other:?}"),
    }
}

/// Expects a pause (after any side commands, returned), ends it, and returns its end.
fn pause(m: &mut PartitionSendMachine) -> (Instant, Vec<SendCommand>) {
    let mut side = drain(m);
    match side.pop() {
        Some(SendCommand::BackOff { until }) => {
            m.on_backoff_elapsed(until);
            (until, side)
        }
        other => panic!("expected BackOff, got {other:?} after {side:?}"),
    }
}

fn done(commands: &mut Vec<SendCommand>) -> GroupOutcome {
    match commands.pop() {
        Some(SendCommand::Done(outcome)) => outcome,
        other => panic!("expected Done, got {other:?}"),
    }
}

fn invalidated(commands: &[SendCommand]) -> Vec<u64> {
    commands
        .iter()
        .filter_map(|c| match c {
            SendCommand::Invalidate { generation, .. } => Some(*generation),
            _ => None,
        })
        .collect()
}

#[test]
fn an_empty_group_is_done_at_once() {
    let (mut m, _) = machine(&[]);
    let outcome = done(&mut drain(&mut m));
    assert_eq!(outcome.acknowledged_chunks, 0);
    assert!(outcome.error.is_none());
}

#[test]
fn chunks_go_out_one_after_the_other_with_consecutive_sequences() {
    let (mut m, t0) = machine(&[3, 2, 4]);
    let s = session(7, 1);
    let mut bases = Vec::new();
    for _ in 0..3 {
        let stamp = send(&mut m, t0, s);
        bases.push(stamp.base_sequence);
        assert_eq!((stamp.producer_id, stamp.producer_epoch), (7, 0));
        m.on_answer(t0, code::NONE, 0);
    }
    assert_eq!(bases, vec![0, 3, 5]);
    let outcome = done(&mut drain(&mut m));
    assert_eq!(outcome.acknowledged_chunks, 3);
    assert!(outcome.error.is_none());
    // The next group continues where this one ended.
    let mut seq = m.sequence();
    assert_eq!(seq.next_for(&s), 9);
}

#[test]
fn a_group_continues_the_partition_sequence_and_a_new_id_restarts_it() {
    let s = session(7, 1);
    let mut sequence = PartitionSequence::default();
    sequence.next_for(&s);
    sequence.advance(40);
    let (mut m, t0) = machine_with(&[1, 1], sequence);
    assert_eq!(send(&mut m, t0, s).base_sequence, 40);
    m.on_answer(t0, code::NONE, 0);
    // The executor hands out a new id for the second chunk: sequences restart at 0.
    assert_eq!(send(&mut m, t0, session(8, 2)).base_sequence, 0);
}

#[test]
fn a_failed_chunk_stops_the_group_with_the_appended_prefix() {
    let (mut m, t0) = machine(&[1, 1, 1]);
    let s = session(7, 1);
    send(&mut m, t0, s);
    m.on_answer(t0, code::NONE, 0);
    send(&mut m, t0, s);
    m.on_answer(t0, code::MESSAGE_TOO_LARGE, -1);
    let mut commands = drain(&mut m);
    let outcome = done(&mut commands);
    assert_eq!(outcome.acknowledged_chunks, 1);
    assert!(matches!(
        outcome.error,
        Some(KafkaPublishError::Broker {
            permanent: true,
            code: code::MESSAGE_TOO_LARGE,
            ..
        })
    ));
    // Rejected outright on the first attempt: nothing of it is anywhere, the id stays.
    assert!(invalidated(&commands).is_empty(), "{commands:?}");
    assert!(m.poll_command().is_none(), "nothing after Done");
}

#[test]
fn a_batch_of_several_records_refused_as_too_large_blames_no_row() {
    for code in [code::MESSAGE_TOO_LARGE, code::RECORD_LIST_TOO_LARGE] {
        let (mut m, t0) = machine(&[1, 3]);
        let s = session(7, 1);
        send(&mut m, t0, s);
        m.on_answer(t0, code::NONE, 0);
        send(&mut m, t0, s);
        m.on_answer(t0, code, -1);
        let mut commands = drain(&mut m);
        let outcome = done(&mut commands);
        assert_eq!(outcome.acknowledged_chunks, 1);
        let error = outcome.error.expect("the batch failed");
        assert!(
            matches!(
                error,
                KafkaPublishError::BatchTooLarge {
                    records: 3,
                    partition: 3,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(!error.is_permanent() && !error.blames_row(), "{error}");
        assert!(invalidated(&commands).is_empty(), "{commands:?}");
        // The refused batch used no sequence: the next one starts where it would have.
        assert_eq!(m.sequence().next_for(&s), 1);
    }
}

#[test]
fn a_permanent_answer_after_an_unknown_outcome_drops_the_producer_id() {
    let (mut m, t0) = machine(&[1]);
    let s = session(7, 1);
    send(&mut m, t0, s);
    m.on_answer(t0, code::REQUEST_TIMED_OUT, -1);
    let (t1, _) = pause(&mut m);
    send(&mut m, t1, s);
    m.on_answer(t1, code::MESSAGE_TOO_LARGE, -1);
    let mut commands = drain(&mut m);
    let outcome = done(&mut commands);
    assert!(outcome.error.is_some_and(|e| e.is_permanent()));
    assert_eq!(invalidated(&commands), vec![1]);
}

/// How a chunk's first attempts went before the answer under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Before {
    /// The first attempt is answered.
    Clean,
    /// The first request failed in transport (it may have been appended); the resend
    /// goes out under the same producer id on a fresh connection.
    LostOnce,
    /// As `LostOnce`, and then the leader could not be reached either: the broker may
    /// have restarted and forgotten (and reused) our producer id.
    LostContact,
    /// The first request failed in transport and the executor handed out a new
    /// producer id (what it does after any lost connection).
    LostNewId,
}

/// What the machine must do with the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Counted as appended.
    Appended,
    /// Reported unacknowledged as a sequence error, the id invalidated.
    SequenceError,
    /// Retried after a pause; whether a batch's fate is then in doubt.
    Retry { in_doubt: bool },
}

/// Runs `before`, then answers the last attempt with `answer`; returns what happened
/// and the stamps of every attempt.
fn scenario(
    before: Before,
    answer: i16,
) -> (Vec<SendCommand>, Vec<ProducerStamp>, PartitionSendMachine) {
    let (mut m, t0) = machine(&[5]);
    let (s1, s2) = (session(7, 1), session(8, 2));
    let mut stamps = vec![send(&mut m, t0, s1)];
    let mut now = t0;
    if before != Before::Clean {
        m.on_transport_error(now, KafkaPublishError::Encode("connection reset".into()));
        let (t, side) = pause(&mut m);
        assert!(
            matches!(side[..], [SendCommand::DiscardConnection]),
            "{side:?}"
        );
        now = t;
    }
    if before == Before::LostContact {
        assert!(matches!(next(&mut m), SendCommand::ObtainSession));
        m.on_session(now, Ok(s1));
        assert!(matches!(next(&mut m), SendCommand::Connect));
        m.on_leader(
            now,
            Err(KafkaPublishError::Connection {
                message: "refused".into(),
                permanent: false,
            }),
        );
        now = pause(&mut m).0;
    }
    if before != Before::Clean {
        let s = if before == Before::LostNewId { s2 } else { s1 };
        stamps.push(send(&mut m, now, s));
    }
    m.on_answer(now, answer, 0);
    let commands = drain(&mut m);
    (commands, stamps, m)
}

#[test]
fn the_answer_matrix() {
    use Before::*;
    use Expect::*;
    let retry_in_doubt = Retry { in_doubt: true };
    let retry_clear = Retry { in_doubt: false };
    let cases = [
        // Success, whatever came before.
        (Clean, code::NONE, Appended),
        (LostOnce, code::NONE, Appended),
        (LostContact, code::NONE, Appended),
        (LostNewId, code::NONE, Appended),
        // DUPLICATE_SEQUENCE_NUMBER proves an earlier append only when there was an
        // earlier attempt under this id and the leader stayed reachable since.
        (Clean, code::DUPLICATE_SEQUENCE_NUMBER, SequenceError),
        (LostOnce, code::DUPLICATE_SEQUENCE_NUMBER, Appended),
        (LostContact, code::DUPLICATE_SEQUENCE_NUMBER, SequenceError),
        (LostNewId, code::DUPLICATE_SEQUENCE_NUMBER, SequenceError),
        // OUT_OF_ORDER_SEQUENCE_NUMBER always breaks the session.
        (Clean, code::OUT_OF_ORDER_SEQUENCE_NUMBER, SequenceError),
        (LostOnce, code::OUT_OF_ORDER_SEQUENCE_NUMBER, SequenceError),
        (
            LostContact,
            code::OUT_OF_ORDER_SEQUENCE_NUMBER,
            SequenceError,
        ),
        (LostNewId, code::OUT_OF_ORDER_SEQUENCE_NUMBER, SequenceError),
        // NOT_LEADER: this attempt was not appended, but an earlier one under the same
        // id may have been.
        (Clean, code::NOT_LEADER_OR_FOLLOWER, retry_clear),
        (LostOnce, code::NOT_LEADER_OR_FOLLOWER, retry_in_doubt),
        (LostContact, code::NOT_LEADER_OR_FOLLOWER, retry_in_doubt),
        (LostNewId, code::NOT_LEADER_OR_FOLLOWER, retry_clear),
        // REQUEST_TIMED_OUT: maybe appended, always.
        (Clean, code::REQUEST_TIMED_OUT, retry_in_doubt),
        (LostOnce, code::REQUEST_TIMED_OUT, retry_in_doubt),
        (LostContact, code::REQUEST_TIMED_OUT, retry_in_doubt),
        (LostNewId, code::REQUEST_TIMED_OUT, retry_in_doubt),
    ];
    for (before, answer, expect) in cases {
        let cell = format!("{before:?} then {}", crate::wire::error_name(answer));
        let (mut commands, stamps, m) = scenario(before, answer);
        let last = *stamps.last().unwrap();
        let generation = if before == LostNewId { 2 } else { 1 };
        match expect {
            Appended => {
                let outcome = done(&mut commands);
                assert_eq!(outcome.acknowledged_chunks, 1, "{cell}");
                assert!(outcome.error.is_none(), "{cell}: {:?}", outcome.error);
                assert!(invalidated(&commands).is_empty(), "{cell}: {commands:?}");
                let mut seq = m.sequence();
                let s = session(last.producer_id, generation);
                assert_eq!(seq.next_for(&s), last.base_sequence + 5, "{cell}");
            }
            SequenceError => {
                let outcome = done(&mut commands);
                assert_eq!(outcome.acknowledged_chunks, 0, "{cell}");
                assert!(
                    matches!(outcome.error, Some(KafkaPublishError::Sequence { code, .. }) if code == answer),
                    "{cell}: {:?}",
                    outcome.error
                );
                assert_eq!(invalidated(&commands), vec![generation], "{cell}");
                assert_eq!(m.generation_in_doubt(), None, "{cell}");
            }
            Retry { in_doubt } => {
                assert!(
                    matches!(commands.last(), Some(SendCommand::BackOff { .. })),
                    "{cell}: {commands:?}"
                );
                assert!(invalidated(&commands).is_empty(), "{cell}");
                let refresh = commands
                    .iter()
                    .any(|c| matches!(c, SendCommand::RefreshMetadata));
                assert_eq!(refresh, answer == code::NOT_LEADER_OR_FOLLOWER, "{cell}");
                let expected = in_doubt.then_some(generation);
                assert_eq!(m.generation_in_doubt(), expected, "{cell}");
            }
        }
        // A resend under the same id reuses the stamp (the broker deduplicates it);
        // under a new id the batch is stamped from that id's sequence 0.
        match before {
            Clean => assert_eq!(stamps.len(), 1),
            LostOnce | LostContact => assert_eq!(stamps[0], stamps[1], "{cell}"),
            LostNewId => {
                assert_eq!(
                    (stamps[1].producer_id, stamps[1].base_sequence),
                    (8, 0),
                    "{cell}"
                );
            }
        }
    }
}

#[test]
fn a_duplicate_after_lost_contact_is_never_trusted_even_after_more_resends() {
    // Lost contact once, then several timeouts on a reachable leader: the duplicate
    // answer still proves nothing.
    let (mut commands, _, mut m) = scenario(Before::LostContact, code::REQUEST_TIMED_OUT);
    let t = match commands.pop() {
        Some(SendCommand::BackOff { until }) => until,
        other => panic!("{other:?}"),
    };
    m.on_backoff_elapsed(t);
    send(&mut m, t, session(7, 1));
    m.on_answer(t, code::DUPLICATE_SEQUENCE_NUMBER, -1);
    let mut commands = drain(&mut m);
    let outcome = done(&mut commands);
    assert_eq!(outcome.acknowledged_chunks, 0);
    assert!(matches!(
        outcome.error,
        Some(KafkaPublishError::Sequence { .. })
    ));
    assert_eq!(invalidated(&commands), vec![1]);
}

#[test]
fn two_transport_errors_in_a_row_are_lost_contact() {
    let (mut m, t0) = machine(&[1]);
    let s = session(7, 1);
    send(&mut m, t0, s);
    m.on_transport_error(t0, KafkaPublishError::Encode("reset".into()));
    let (t1, _) = pause(&mut m);
    send(&mut m, t1, s);
    m.on_transport_error(t1, KafkaPublishError::Encode("reset".into()));
    let (t2, _) = pause(&mut m);
    send(&mut m, t2, s);
    m.on_answer(t2, code::DUPLICATE_SEQUENCE_NUMBER, -1);
    let outcome = done(&mut drain(&mut m));
    assert!(matches!(
        outcome.error,
        Some(KafkaPublishError::Sequence { .. })
    ));
}

#[test]
fn a_request_in_flight_is_in_doubt_until_answered() {
    let (mut m, t0) = machine(&[1]);
    assert_eq!(m.generation_in_doubt(), None);
    send(&mut m, t0, session(7, 4));
    // Dropped now, the executor must invalidate generation 4.
    assert_eq!(m.generation_in_doubt(), Some(4));
    m.on_answer(t0, code::NOT_ENOUGH_REPLICAS, -1);
    assert_eq!(m.generation_in_doubt(), None, "definitely not appended");
}

#[test]
fn pauses_double_up_to_the_ceiling_and_the_deadline_ends_the_chunk() {
    let (mut m, t0) = machine(&[1]);
    let s = session(7, 1);
    let mut now = t0;
    let mut pauses = Vec::new();
    loop {
        send(&mut m, now, s);
        m.on_answer(now, code::NOT_LEADER_OR_FOLLOWER, -1);
        let mut commands = drain(&mut m);
        match commands.pop() {
            Some(SendCommand::BackOff { until }) => {
                pauses.push(until.duration_since(now).as_millis());
                now = until;
                m.on_backoff_elapsed(now);
            }
            Some(SendCommand::Done(outcome)) => {
                assert_eq!(outcome.acknowledged_chunks, 0);
                match outcome.error {
                    Some(KafkaPublishError::DeliveryTimeout {
                        timeout,
                        last,
                        partition,
                        ..
                    }) => {
                        assert_eq!((timeout, partition), (DELIVERY, 3));
                        assert!(last.contains("NotLeaderOrFollower"), "{last}");
                    }
                    other => panic!("{other:?}"),
                }
                // Nothing was in doubt: the producer id stays.
                assert!(invalidated(&commands).is_empty());
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    // 100+200+400+800+1000*6 = 7,500 ms; the next 1,000 would end at 8,500 < 10,000,
    // and the one after at 9,500; then 10,500 passes the deadline.
    assert_eq!(
        pauses,
        vec![
            100, 200, 400, 800, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000
        ]
    );
    assert_eq!(now.duration_since(t0), ms(9_500));
}

#[test]
fn a_batch_of_unknown_fate_at_the_deadline_drops_the_producer_id() {
    let (mut m, t0) = machine(&[1]);
    let s = session(7, 1);
    send(&mut m, t0, s);
    // A timeout answer close to the deadline: the next pause would pass it.
    let late = t0 + DELIVERY - ms(50);
    m.on_answer(late, code::REQUEST_TIMED_OUT, -1);
    let mut commands = drain(&mut m);
    let outcome = done(&mut commands);
    assert!(matches!(
        outcome.error,
        Some(KafkaPublishError::DeliveryTimeout { .. })
    ));
    assert_eq!(invalidated(&commands), vec![1]);
    assert_eq!(m.generation_in_doubt(), None);
}

#[test]
fn a_permanent_leader_error_ends_the_chunk_unless_an_attempt_may_be_in_the_log() {
    let permanent = || KafkaPublishError::Connection {
        message: "auth".into(),
        permanent: true,
    };
    let (mut m, t0) = machine(&[1]);
    assert!(matches!(next(&mut m), SendCommand::ObtainSession));
    m.on_session(t0, Ok(session(7, 1)));
    assert!(matches!(next(&mut m), SendCommand::Encode { .. }));
    m.on_encoded(t0, Ok(()));
    assert!(matches!(next(&mut m), SendCommand::Connect));
    m.on_leader(t0, Err(permanent()));
    let outcome = done(&mut drain(&mut m));
    assert!(outcome.error.is_some_and(|e| e.is_permanent()));

    // After a transport error the batch may be in the log: keep trying to learn its fate.
    let (mut m, t0) = machine(&[1]);
    send(&mut m, t0, session(7, 1));
    m.on_transport_error(t0, KafkaPublishError::Encode("reset".into()));
    let (t1, _) = pause(&mut m);
    assert!(matches!(next(&mut m), SendCommand::ObtainSession));
    m.on_session(t1, Ok(session(7, 1)));
    assert!(matches!(next(&mut m), SendCommand::Connect));
    m.on_leader(t1, Err(permanent()));
    assert!(matches!(
        drain(&mut m).last(),
        Some(SendCommand::BackOff { .. })
    ));
}

#[test]
fn a_failed_session_while_in_doubt_drops_the_producer_id() {
    let (mut m, t0) = machine(&[1]);
    send(&mut m, t0, session(7, 1));
    m.on_answer(t0, code::REQUEST_TIMED_OUT, -1);
    let (t1, _) = pause(&mut m);
    assert!(matches!(next(&mut m), SendCommand::ObtainSession));
    m.on_session(t1, Err(KafkaPublishError::ProducerId("refused".into())));
    let mut commands = drain(&mut m);
    let outcome = done(&mut commands);
    assert!(matches!(
        outcome.error,
        Some(KafkaPublishError::ProducerId(_))
    ));
    assert_eq!(invalidated(&commands), vec![1]);
}

#[test]
fn an_encoding_failure_sends_nothing() {
    let (mut m, t0) = machine(&[1]);
    assert!(matches!(next(&mut m), SendCommand::ObtainSession));
    m.on_session(t0, Ok(session(7, 1)));
    assert!(matches!(next(&mut m), SendCommand::Encode { chunk: 0, .. }));
    m.on_encoded(t0, Err(KafkaPublishError::Encode("zstd".into())));
    let mut commands = drain(&mut m);
    let outcome = done(&mut commands);
    assert!(commands.is_empty(), "no Connect: {commands:?}");
    assert!(matches!(outcome.error, Some(KafkaPublishError::Encode(_))));
}

#[test]
fn a_network_exception_is_of_unknown_fate_and_refreshes_metadata() {
    let (mut m, t0) = machine(&[1]);
    send(&mut m, t0, session(7, 1));
    m.on_answer(t0, code::NETWORK_EXCEPTION, -1);
    let (_, side) = pause(&mut m);
    assert!(
        matches!(side[..], [SendCommand::RefreshMetadata]),
        "{side:?}"
    );
    assert_eq!(m.generation_in_doubt(), Some(1));
}
