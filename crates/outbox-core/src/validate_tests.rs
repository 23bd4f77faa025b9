use super::*;

#[test]
fn topic_rules() {
    assert_eq!(validate_topic("orders.v1_eu-west"), Ok(()));
    assert_eq!(validate_topic(""), Err(TopicNameError::Empty));
    assert_eq!(validate_topic("."), Err(TopicNameError::Reserved));
    assert_eq!(validate_topic(".."), Err(TopicNameError::Reserved));
    assert_eq!(validate_topic("..."), Ok(()));
    assert_eq!(validate_topic("a b"), Err(TopicNameError::InvalidChar(' ')));
    assert_eq!(
        validate_topic("tópico"),
        Err(TopicNameError::InvalidChar('ó'))
    );
    assert_eq!(validate_topic(&"a".repeat(249)), Ok(()));
    assert_eq!(
        validate_topic(&"a".repeat(250)),
        Err(TopicNameError::TooLong(250))
    );
}

#[test]
fn label_rules() {
    assert!(validate_label("outbox", 64).is_ok());
    assert_eq!(validate_label("", 64), Err(LabelError::Blank));
    assert_eq!(validate_label("   ", 64), Err(LabelError::Blank));
    assert_eq!(
        validate_label(&"x".repeat(65), 64),
        Err(LabelError::TooLong { len: 65, max: 64 })
    );
    assert!(validate_label(&"é".repeat(64), 64).is_ok());
    assert_eq!(validate_label("a\nb", 64), Err(LabelError::ControlChar));
}

#[test]
fn header_name_rule() {
    assert_eq!(validate_header_name("x-outbox-message-id"), Ok(()));
    assert_eq!(validate_header_name(" "), Err(LabelError::Blank));
    assert_eq!(validate_header_name(&"h".repeat(255)), Ok(()));
    assert_eq!(
        validate_header_name(&"h".repeat(256)),
        Err(LabelError::TooLong { len: 256, max: 255 })
    );
    assert_eq!(validate_header_name("a\tb"), Err(LabelError::ControlChar));
}

#[test]
fn bucket_count_bounds() {
    assert_eq!(validate_bucket_count(0), Err(0));
    assert_eq!(validate_bucket_count(1).map(NonZeroU32::get), Ok(1));
    assert_eq!(
        validate_bucket_count(65_536).map(NonZeroU32::get),
        Ok(65_536)
    );
    assert_eq!(validate_bucket_count(65_537), Err(65_537));
}

#[test]
fn identifier_rules() {
    let role = NameRole::Leases;
    assert_eq!(validate_identifier(role, "_outbox_1"), Ok(()));
    assert_eq!(
        validate_identifier(role, ""),
        Err(TableNameError::Empty { role })
    );
    assert!(matches!(
        validate_identifier(role, "1abc"),
        Err(TableNameError::BadStart { .. })
    ));
    assert!(matches!(
        validate_identifier(role, "a-b"),
        Err(TableNameError::InvalidChar { ch: '-', .. })
    ));
    assert_eq!(validate_identifier(role, &"a".repeat(63)), Ok(()));
    assert!(matches!(
        validate_identifier(role, &"a".repeat(64)),
        Err(TableNameError::TooLong { len: 64, .. })
    ));
}
