use super::*;

#[test]
fn conventional_name() {
    let channel = ChannelName::for_outbox("orders_outbox", "prod").unwrap();
    assert_eq!(channel.as_str(), "outbox_orders_outbox_prod");
    assert_eq!(channel.to_string(), "outbox_orders_outbox_prod");
}

#[test]
fn rejects_bad_names() {
    assert_eq!(
        ChannelName::for_outbox("", "prod"),
        Err(ChannelError::Empty("table"))
    );
    assert_eq!(
        ChannelName::for_outbox("orders", ""),
        Err(ChannelError::Empty("environment"))
    );
    for bad in ["Orders", "or-ders", "or\"ders", "orders;", "ö", "a b"] {
        assert!(
            matches!(
                ChannelName::for_outbox(bad, "prod"),
                Err(ChannelError::InvalidCharacter { part: "table", .. })
            ),
            "{bad:?}"
        );
        assert!(ChannelName::new(bad).is_err(), "{bad:?}");
    }
    let long = "a".repeat(MAX_CHANNEL_LEN + 1);
    assert!(matches!(
        ChannelName::new(&long),
        Err(ChannelError::TooLong { len: 64, .. })
    ));
    assert!(ChannelName::new(&long[1..]).is_ok(), "63 bytes fit");
    assert!(matches!(
        ChannelName::for_outbox(&"t".repeat(50), "production"),
        Err(ChannelError::TooLong { .. })
    ));
}
