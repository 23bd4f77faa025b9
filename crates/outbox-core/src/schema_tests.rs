use super::*;

#[test]
fn defaults() {
    let s = OutboxSchema::builder().build().unwrap();
    assert_eq!(s, OutboxSchema::default());
    assert_eq!(s.bucket_count().get(), 8);
    assert_eq!(s.message_id_header(), "x-outbox-message-id");
    assert_eq!(s.max_request_size(), 1_048_576);
    assert_eq!(
        OutboxSchema::builder().max_request_size(1023).build(),
        Err(SchemaError::MaxRequestSize(1023))
    );
    assert!(
        OutboxSchema::builder()
            .max_request_size(1024)
            .build()
            .is_ok()
    );
    assert!(s.tables().is_default());
    let t = OutboxTables::default();
    assert_eq!(OutboxTables::builder().build().unwrap(), t);
    assert_eq!(
        (t.schema(), t.messages(), t.leases(), t.relays()),
        (None, "outbox_messages", "outbox_leases", "outbox_relays")
    );
    assert_eq!(t.messages_index(), "outbox_messages_bucket_id_idx");
}

#[test]
fn each_schema_rule_rejects_with_its_own_error() {
    let b = OutboxSchema::builder;
    assert_eq!(
        b().bucket_count(0).build(),
        Err(SchemaError::BucketCount(0))
    );
    assert_eq!(
        b().bucket_count(65_537).build(),
        Err(SchemaError::BucketCount(65_537))
    );
    assert!(b().bucket_count(65_536).build().is_ok());
    assert_eq!(
        b().message_id_header("").build(),
        Err(SchemaError::MessageIdHeader(LabelError::Blank))
    );
    assert_eq!(
        b().message_id_header("h".repeat(256)).build(),
        Err(SchemaError::MessageIdHeader(LabelError::TooLong {
            len: 256,
            max: 255
        }))
    );
    assert!(b().message_id_header("h".repeat(255)).build().is_ok());
    assert_eq!(
        b().message_id_header("id\r\n").build(),
        Err(SchemaError::MessageIdHeader(LabelError::ControlChar))
    );
    let e = b().bucket_count(0).build().unwrap_err();
    assert!(e.to_string().contains("bucket_count"), "{e}");
    let e = b().message_id_header(" ").build().unwrap_err();
    assert!(e.to_string().contains("message_id_header"), "{e}");
    let from_tables: SchemaError = OutboxTables::builder()
        .messages("")
        .build()
        .unwrap_err()
        .into();
    assert!(
        from_tables.to_string().contains("messages table"),
        "{from_tables}"
    );
}

#[test]
fn table_refusals_name_the_culprit() {
    let err = |b: OutboxTablesBuilder| b.build().unwrap_err();
    assert_eq!(
        err(OutboxTables::builder().messages("")),
        TableNameError::Empty {
            role: NameRole::Messages
        }
    );
    assert_eq!(
        err(OutboxTables::builder().schema("1abc")),
        TableNameError::BadStart {
            role: NameRole::Schema,
            name: "1abc".into()
        }
    );
    for hostile in [
        "t\"; DROP TABLE users; --",
        "t`x",
        "a.b",
        "a b",
        "tünïcode",
        "t\0",
    ] {
        let e = err(OutboxTables::builder().leases(hostile));
        assert!(
            matches!(
                e,
                TableNameError::InvalidChar {
                    role: NameRole::Leases,
                    ..
                }
            ),
            "{hostile:?}: {e:?}"
        );
        assert!(e.to_string().contains("leases table"), "{e}");
    }
    let long = "a".repeat(64);
    assert!(matches!(
        err(OutboxTables::builder().relays(long.clone())),
        TableNameError::TooLong { len: 64, .. }
    ));
    // 63 bytes is fine for the leases table but not for the messages table, whose
    // index name would be longer.
    let max = "b".repeat(63);
    assert!(OutboxTables::builder().leases(max.clone()).build().is_ok());
    assert!(matches!(
        err(OutboxTables::builder().messages(max)),
        TableNameError::TooLong {
            role: NameRole::Index,
            ..
        }
    ));
    assert_eq!(
        err(OutboxTables::builder().leases("x").relays("x")),
        TableNameError::Duplicate {
            first: NameRole::Leases,
            second: NameRole::Relays,
            name: "x".into()
        }
    );
}

#[test]
fn tables_keep_the_other_defaults() {
    let t = OutboxTables::builder().messages("m").build().unwrap();
    let s = OutboxSchema::from(t.clone());
    assert_eq!(s.tables(), &t);
    assert_eq!(s.bucket_count(), DEFAULT_BUCKET_COUNT);
    assert_eq!(s.message_id_header(), DEFAULT_MESSAGE_ID_HEADER);
}
