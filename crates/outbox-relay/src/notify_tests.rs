use super::*;

fn tables() -> OutboxTables {
    OutboxTables::default()
}

#[test]
fn kinds_parse_and_print() {
    for kind in [NotifyKind::None, NotifyKind::Postgres, NotifyKind::Redis] {
        assert_eq!(kind.to_string().parse(), Ok(kind));
    }
    assert!("kafka".parse::<NotifyKind>().is_err());
}

#[test]
fn none_takes_no_url_or_channel() {
    let db = "postgres://u@h/db";
    assert!(
        resolve(NotifyKind::None, None, None, db, &tables())
            .unwrap()
            .is_none()
    );
    let e = resolve(
        NotifyKind::None,
        Some("redis://h/".into()),
        None,
        db,
        &tables(),
    );
    assert!(e.unwrap_err().to_string().contains("notify-url"));
    let e = resolve(NotifyKind::None, None, Some("c".into()), db, &tables());
    assert!(e.unwrap_err().to_string().contains("notify-channel"));
}

#[test]
fn postgres_defaults_to_the_database_and_the_default_channel() {
    let c = resolve(
        NotifyKind::Postgres,
        None,
        None,
        "postgres://u:pw@h/db",
        &tables(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(c.url, "postgres://u:pw@h/db");
    assert_eq!(c.channel.as_str(), "outbox_outbox_messages_default");
    assert_eq!(c.channel, default_channel(&tables()).unwrap());
    // A MySQL database cannot carry the hints: the error says what to set, and hides
    // the password.
    let e = resolve(
        NotifyKind::Postgres,
        None,
        None,
        "mysql://root:secret@h/db",
        &tables(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--notify-url") && !e.contains("secret"), "{e}");
}

#[test]
fn redis_needs_a_url_and_channels_are_validated() {
    let db = "sqlite://x.db";
    let e = resolve(NotifyKind::Redis, None, None, db, &tables()).unwrap_err();
    assert!(e.to_string().contains("OUTBOX_NOTIFY_URL"), "{e}");
    let c = resolve(
        NotifyKind::Redis,
        Some("redis://127.0.0.1:6379/".into()),
        Some("orders_prod".into()),
        db,
        &tables(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(c.channel.as_str(), "orders_prod");
    let e = resolve(
        NotifyKind::Redis,
        Some("redis://h/".into()),
        Some("Bad-Name".into()),
        db,
        &tables(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("notify-channel"), "{e}");
    let e = resolve(
        NotifyKind::Redis,
        Some("http://not-redis".into()),
        None,
        db,
        &tables(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("notify-url"), "{e}");
}
