use super::*;

#[test]
fn consumer_rules() {
    assert_eq!(check_consumer(""), Err(ConsumerNameError::Empty));
    assert!(check_consumer("billing").is_ok());
    assert!(check_consumer("billing service/v2 (eu-west)").is_ok());
    // The limit counts characters, as the column does, not bytes.
    assert!(check_consumer(&"é".repeat(128)).is_ok());
    assert_eq!(
        check_consumer(&"é".repeat(129)),
        Err(ConsumerNameError::TooLong { len: 129 })
    );
    for bad in ["billing ", " billing", "billing\n", "\tbilling"] {
        assert!(check_consumer(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        check_consumer("bill\0ing"),
        Err(ConsumerNameError::ControlChar("bill\0ing".into()))
    );
    assert_eq!(
        check_consumer("billing "),
        Err(ConsumerNameError::Whitespace("billing ".into()))
    );
}

#[test]
fn handler_error_is_the_source() {
    use std::error::Error as _;
    let e: InboxError<std::io::Error> = InboxError::Handler(std::io::Error::other("boom"));
    assert_eq!(e.to_string(), "the inbox handler failed: boom");
    assert_eq!(e.source().unwrap().to_string(), "boom");
    let widened: InboxError<std::io::Error> =
        InboxError::<Infallible>::from(ConsumerNameError::Empty).widen();
    assert!(matches!(widened, InboxError::InvalidConsumer(_)));
}
