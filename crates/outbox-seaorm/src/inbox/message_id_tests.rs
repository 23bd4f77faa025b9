use std::collections::BTreeMap;

use outbox_core::SchemaError;

use super::*;

#[test]
fn reads_what_the_relay_writes() {
    let id = Uuid::now_v7();
    // The relay writes `hyphenated()`, as outbox-kafka's record plan does.
    let value = id.hyphenated().to_string().into_bytes();
    let mut headers = BTreeMap::new();
    headers.insert("trace".to_owned(), b"t".to_vec());
    headers.insert(DEFAULT_MESSAGE_ID_HEADER.to_owned(), value.clone());
    assert_eq!(MessageIdHeader::default().find(&headers), Ok(id));
    assert_eq!(MessageIdHeader::default().parse(&value), Ok(id));
    // The same id twice (a header copied by a forwarding hop) is fine.
    let twice = [
        ("x-outbox-message-id", &value),
        ("x-outbox-message-id", &value),
    ];
    assert_eq!(MessageIdHeader::default().find(twice), Ok(id));
}

#[test]
fn typed_refusals() {
    let schema = OutboxSchema::builder()
        .message_id_header("mid")
        .build()
        .unwrap();
    let h = MessageIdHeader::new(&schema);
    assert_eq!(MessageIdHeader::from(&schema), h);
    assert_eq!(h.name(), "mid");
    let id = Uuid::now_v7().to_string();
    assert_eq!(
        h.find([("x-outbox-message-id", id.as_bytes())]),
        Err(MessageIdError::Missing {
            header: "mid".into()
        })
    );
    assert_eq!(
        h.find(Vec::<(String, Vec<u8>)>::new()),
        Err(MessageIdError::Missing {
            header: "mid".into()
        })
    );
    let long = vec![b'z'; 100];
    match h.find([("mid", long.as_slice())]) {
        Err(MessageIdError::NotAUuid { header, value }) => {
            assert_eq!(header, "mid");
            assert_eq!(value.len(), 64, "quoted value is cut");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        h.find([("mid", &[0xff_u8, 0xfe][..])]),
        Err(MessageIdError::NotAUuid { .. })
    ));
    // 16 raw bytes are not the text form the relay writes.
    assert!(matches!(
        h.find([("mid", Uuid::now_v7().as_bytes().as_slice())]),
        Err(MessageIdError::NotAUuid { .. })
    ));
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    assert_eq!(
        h.find([("mid", a.to_string()), ("mid", b.to_string())]),
        Err(MessageIdError::Conflicting {
            header: "mid".into(),
            first: a,
            second: b
        })
    );
    // Names no relay accepts cannot reach a reader either: the schema refuses them.
    let named = |n: String| OutboxSchema::builder().message_id_header(n).build();
    for bad in ["", "  ", "a\nb"] {
        assert!(
            matches!(named(bad.into()), Err(SchemaError::MessageIdHeader(_))),
            "{bad:?}"
        );
    }
    assert!(named("m".repeat(256)).is_err());
    assert!(named("m".repeat(255)).is_ok());
}
