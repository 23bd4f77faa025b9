use super::*;

#[test]
fn classification() {
    assert_eq!(classify_produce(0), Verdict::Appended);
    assert_eq!(classify_produce(46), Verdict::Duplicate);
    assert_eq!(
        classify_produce(6),
        Verdict::Rejected {
            refresh_metadata: true
        }
    );
    assert_eq!(
        classify_produce(7),
        Verdict::Unknown {
            refresh_metadata: false
        }
    );
    for seq in [45, 47, 59, 90] {
        assert_eq!(classify_produce(seq), Verdict::Sequence);
    }
    for permanent in [10, 87, 29, 31, 18] {
        assert_eq!(classify_produce(permanent), Verdict::Permanent);
    }
    assert!(matches!(classify_produce(12345), Verdict::Unknown { .. }));
}

#[test]
fn permanence() {
    let too_large = KafkaPublishError::RecordTooLarge { size: 2, max: 1 };
    assert!(too_large.is_permanent());
    let id = Uuid::nil();
    let e = too_large.into_publish_error(id);
    assert!(e.is_permanent());
    assert_eq!(e.message_id, Some(id));
    // Setup problems blame no row: the relay never parks for them.
    for setup in [31, 21, 35, 43] {
        let e = KafkaPublishError::Broker {
            code: setup,
            name: "x".into(),
            topic: "t".into(),
            partition: 0,
            permanent: true,
        };
        assert!(!e.blames_row(), "{setup}");
        let e = e.into_publish_error(id);
        assert!(e.is_permanent() && e.blamed_message().is_none(), "{setup}");
    }
    for row_fault in [10, 18, 2, 87, 32, 44, 17] {
        let e = KafkaPublishError::Broker {
            code: row_fault,
            name: "x".into(),
            topic: "t".into(),
            partition: 0,
            permanent: true,
        };
        assert_eq!(
            e.into_publish_error(id).blamed_message(),
            Some(id),
            "{row_fault}"
        );
    }
    // A topic this client may not write is waited out, never parked.
    let denied = KafkaPublishError::from_code("t", 0, code::TOPIC_AUTHORIZATION_FAILED, true);
    assert_eq!(
        denied.topic_unavailable(),
        Some(("t", TopicUnavailableReason::NotAuthorized))
    );
    assert!(denied.is_permanent() && !denied.blames_row());
    let denied = denied.into_publish_error(id);
    assert!(denied.is_permanent() && denied.blamed_message().is_none());
    let refused = KafkaPublishError::Connection {
        message: "authentication refused".into(),
        permanent: true,
    }
    .into_publish_error(id);
    assert!(refused.is_permanent() && refused.blamed_message().is_none());
    let headers =
        KafkaPublishError::InvalidHeaders(outbox_core::HeaderDecodeError::UnknownVersion(0xff));
    assert_eq!(headers.into_publish_error(id).blamed_message(), Some(id));
    let timeout = KafkaPublishError::DeliveryTimeout {
        topic: "t".into(),
        partition: 0,
        timeout: Duration::from_secs(1),
        last: "x".into(),
    };
    assert!(!timeout.into_publish_error(id).is_permanent());
}
