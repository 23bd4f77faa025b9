use std::time::Duration;

use super::*;
use crate::relay_id::default_relay_id;
use crate::validate::LabelError;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn defaults_match_the_documented_table() {
    let o = RelayOptions::builder().build().unwrap();
    assert_eq!(o.bucket_count().get(), 8);
    assert_eq!(o.batch_size(), 500);
    assert_eq!(o.max_concurrent_lanes(), DEFAULT_MAX_CONCURRENT_LANES);
    assert_eq!(o.poll_interval(), secs(1));
    assert_eq!(o.lease_duration(), secs(30));
    assert_eq!(o.lease_renew_interval(), secs(10));
    assert_eq!(o.max_publish_duration(), None);
    assert_eq!(o.message_id_header(), "x-outbox-message-id");
    assert_eq!(o.metrics_name(), "outbox");
    assert_eq!(o.metrics_collection_interval(), secs(30));
    assert_eq!(o.metrics_collection_timeout(), secs(5));
    assert!(!o.collect_metrics_on_bucket_zero_owner_only());
    assert_eq!(o.error_backoff(), secs(1));
    assert_eq!(o.max_error_backoff(), secs(30));
    let expected = HostName::from_environment()
        .and_then(|h| default_relay_id(&h.name, "outbox"))
        .expect("a test machine has a host name");
    assert_eq!(o.relay_id(), expected, "<host>-<metrics_name>");
    assert_eq!(
        o.relay_id(),
        RelayOptions::builder().build().unwrap().relay_id(),
        "stable across restarts"
    );
}

#[test]
fn the_default_relay_id_follows_the_host_and_the_outbox_name() {
    let o = RelayOptions::builder()
        .host_name("orders-relay-0")
        .metrics_name("orders")
        .build()
        .unwrap();
    assert_eq!(o.relay_id(), "orders-relay-0-orders");
    assert_eq!(o.relay_id_source(), &RelayIdSource::Host("explicit"));
    let o = RelayOptions::builder()
        .metrics_name("orders")
        .relay_id("mine")
        .host_name("ignored")
        .build()
        .unwrap();
    assert_eq!(
        (o.relay_id(), o.relay_id_source()),
        ("mine", &RelayIdSource::Explicit),
        "an explicit id wins"
    );
    let o = RelayOptions::builder().host_name("\u{1}").build().unwrap();
    assert!(o.relay_id().starts_with("relay-"), "{}", o.relay_id());
    assert_eq!(o.relay_id_source(), &RelayIdSource::Generated);
}

#[test]
fn each_rule_rejects_with_its_own_error() {
    let b = RelayOptions::builder;
    assert_eq!(b().batch_size(0).build(), Err(OptionsError::BatchSizeZero));
    assert_eq!(
        b().max_concurrent_lanes(0).build(),
        Err(OptionsError::ConcurrentLanesZero)
    );
    assert_eq!(
        b().poll_interval(Duration::ZERO).build(),
        Err(OptionsError::ZeroDuration("poll_interval"))
    );
    assert_eq!(
        b().max_publish_duration(Duration::ZERO).build(),
        Err(OptionsError::ZeroDuration("max_publish_duration"))
    );
    assert_eq!(
        b().lease_renew_interval(secs(30)).build(),
        Err(OptionsError::RenewNotBelowLease {
            renew: secs(30),
            lease: secs(30)
        })
    );
    assert_eq!(
        b().max_publish_duration(secs(21)).build(),
        Err(OptionsError::PublishBudgetTooLong {
            budget: secs(21),
            renew: secs(10),
            lease: secs(30)
        })
    );
    assert!(b().max_publish_duration(secs(20)).build().is_ok());
    assert_eq!(
        b().error_backoff(secs(60)).build(),
        Err(OptionsError::BackoffOrder {
            initial: secs(60),
            max: secs(30)
        })
    );
    assert_eq!(
        b().metrics_collection_timeout(secs(31)).build(),
        Err(OptionsError::MetricsTimeoutAboveInterval {
            timeout: secs(31),
            interval: secs(30)
        })
    );
    assert_eq!(
        b().metrics_name("  ").build(),
        Err(OptionsError::MetricsName(LabelError::Blank))
    );
    assert_eq!(
        b().metrics_name("x".repeat(65)).build(),
        Err(OptionsError::MetricsName(LabelError::TooLong {
            len: 65,
            max: 64
        }))
    );
    assert!(b().metrics_name("x".repeat(64)).build().is_ok());
    assert_eq!(
        b().relay_id("").build(),
        Err(OptionsError::RelayId(LabelError::Blank))
    );
    assert_eq!(
        b().relay_id("r".repeat(129)).build(),
        Err(OptionsError::RelayId(LabelError::TooLong {
            len: 129,
            max: 128
        }))
    );
}

#[test]
fn errors_name_the_option() {
    let e = RelayOptions::builder()
        .lease_renew_interval(secs(40))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("lease_renew_interval"), "{e}");
    let e = RelayOptions::builder().batch_size(0).build().unwrap_err();
    assert!(e.to_string().contains("batch_size"), "{e}");
}

#[test]
fn backoff_doubles_up_to_the_ceiling() {
    let o = RelayOptions::builder().build().unwrap();
    assert_eq!(o.backoff_after(1), secs(1));
    assert_eq!(o.backoff_after(2), secs(2));
    assert_eq!(o.backoff_after(5), secs(16));
    assert_eq!(o.backoff_after(6), secs(30));
    assert_eq!(o.backoff_after(u32::MAX), secs(30));
}
