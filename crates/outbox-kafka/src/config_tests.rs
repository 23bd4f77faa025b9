//! The builder's validation: every rejected setting, the defaults, the schema's header
//! and the codec check.

use super::*;

fn builder() -> KafkaPublisherBuilder {
    KafkaPublisherBuilder::new(vec!["localhost:9092".into()])
}

#[test]
fn a_compiled_out_codec_is_refused_naming_its_feature() {
    let only_gzip = |c: Compression| matches!(c, Compression::None | Compression::Gzip);
    let e = check_codec(Compression::Zstd, only_gzip).unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::CompressionNotEnabled {
                codec: Compression::Zstd,
                feature: "zstd"
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("`zstd` cargo feature"), "{e}");
    assert!(check_codec(Compression::Lz4, only_gzip).is_err());
    assert!(check_codec(Compression::Gzip, only_gzip).is_ok());
    assert!(check_codec(Compression::None, |_| false).is_ok());
}

#[test]
fn the_builder_accepts_exactly_the_compiled_codecs() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let built = builder().compression(codec).build_config();
        assert_eq!(built.is_ok(), codec.is_enabled(), "{codec:?}: {built:?}");
        if let Err(e) = built {
            assert!(
                matches!(e, ConfigError::CompressionNotEnabled { codec: c, .. } if c == codec),
                "{e:?}"
            );
        }
    }
}

#[test]
fn defaults_are_valid() {
    let c = builder().build_config().unwrap();
    assert_eq!(c.max_request_size(), DEFAULT_MAX_REQUEST_SIZE);
    assert_eq!(c.message_id_header(), "x-outbox-message-id");
    assert_eq!(c.compression(), Compression::None);
}

#[test]
fn the_header_comes_from_the_schema() {
    let schema = OutboxSchema::builder()
        .message_id_header("x-order-event-id")
        .build()
        .unwrap();
    let c = builder().schema(&schema).build_config().unwrap();
    assert_eq!(c.message_id_header(), "x-order-event-id");
}

#[test]
fn rejects_bad_settings() {
    let e = |b: KafkaPublisherBuilder| b.build_config().unwrap_err();
    assert_eq!(
        e(KafkaPublisherBuilder::new(vec![])),
        ConfigError::NoBootstrapServers
    );
    for bad in [
        "localhost",
        "localhost:0",
        ":9092",
        "host:port",
        "a b:1",
        "h:70000",
    ] {
        assert_eq!(
            e(KafkaPublisherBuilder::new(vec![bad.into()])),
            ConfigError::InvalidBootstrapServer(bad.into()),
            "{bad}"
        );
    }
    assert!(
        KafkaPublisherBuilder::new(vec!["[::1]:9092".into()])
            .build_config()
            .is_ok()
    );
    assert!(matches!(
        e(builder().request_timeout(Duration::ZERO)),
        ConfigError::InvalidDuration {
            name: "request_timeout",
            ..
        }
    ));
    assert!(matches!(
        e(builder().delivery_timeout(Duration::ZERO)),
        ConfigError::InvalidDuration {
            name: "delivery_timeout",
            ..
        }
    ));
    assert!(matches!(
        e(builder()
            .request_timeout(Duration::from_secs(10))
            .delivery_timeout(Duration::from_secs(5))),
        ConfigError::DeliveryShorterThanRequest { .. }
    ));
    assert!(matches!(
        e(builder().retry_backoff(Duration::from_secs(2), Duration::from_secs(1))),
        ConfigError::BackoffOrder { .. }
    ));
    assert!(
        matches!(
            e(builder().client_id("é".repeat(200))),
            ConfigError::InvalidClientId(_)
        ),
        "200 characters but 400 bytes: beyond what the writers' size check allows for"
    );
    assert!(matches!(
        e(builder().client_id(" ")),
        ConfigError::InvalidClientId(_)
    ));
    assert_eq!(
        e(builder().sasl(Sasl::Plain {
            username: String::new(),
            password: "p".into()
        })),
        ConfigError::EmptySaslUsername
    );
}

#[test]
fn sasl_debug_hides_the_password() {
    let s = Sasl::ScramSha512 {
        username: "u".into(),
        password: "hunter2".into(),
    };
    let shown = format!("{s:?}");
    assert!(
        shown.contains("SCRAM-SHA-512") && !shown.contains("hunter2"),
        "{shown}"
    );
    assert!(matches!(
        s.to_rskafka(),
        rskafka::client::SaslConfig::ScramSha512(_)
    ));
}
