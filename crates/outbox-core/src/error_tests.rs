use super::*;

#[test]
fn only_misconfiguration_is_fatal() {
    assert!(StoreError::from(Misconfiguration::MissingPublishBudget).is_fatal());
    let setup = StoreError::from(Misconfiguration::DatabaseSetup {
        problem: "no such table: outbox_messages".into(),
        fix: "run the outbox migrations".into(),
    });
    assert!(setup.is_fatal());
    assert!(
        setup.to_string().contains("run the outbox migrations"),
        "{setup}"
    );
    assert!(!StoreError::unavailable("connection reset").is_fatal());
    assert!(!StoreError::Unsupported("lease renewal").is_fatal());
}

#[test]
fn publish_error_names_the_message() {
    let id = Uuid::nil();
    let e = PublishError::permanent(Some(id), "record too large");
    assert!(e.is_permanent());
    assert!(e.to_string().contains(&id.to_string()), "{e}");
    assert!(!PublishError::retryable("timeout").is_permanent());
    assert_eq!(e.blamed_message(), Some(id));
    assert_eq!(PublishError::permanent(None, "x").blamed_message(), None);
    let setup = PublishError::setup("authentication refused");
    assert!(setup.is_permanent());
    assert_eq!(setup.blamed_message(), None);
}
