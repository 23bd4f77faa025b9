//! Tests of the `server.properties` a [`KafkaSettings`] writes, and of the ports file
//! and cluster ids.

use super::*;

const PORTS: KafkaPorts = KafkaPorts {
    client: 9092,
    internal: 9093,
    controller: 9094,
};

fn lines(p: &str) -> Vec<&str> {
    p.lines().collect()
}

#[test]
fn a_default_node_is_plaintext_with_auto_creation() {
    let p = KafkaSettings::default().properties(PORTS, Path::new("/d"));
    let l = lines(&p);
    assert!(l.contains(&"process.roles=broker,controller"));
    assert!(l.contains(&"advertised.listeners=CLIENT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093"));
    assert!(l.contains(
        &"listener.security.protocol.map=CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
    ));
    assert!(l.contains(&"controller.quorum.bootstrap.servers=127.0.0.1:9094"));
    assert!(l.contains(&"auto.create.topics.enable=true"));
    assert!(l.contains(&"log.dirs=/d"));
    assert!(!p.contains("sasl") && !p.contains("authorizer") && !p.contains("producer.id"));
}

#[test]
fn sasl_authorizer_and_expiry_are_options() {
    let s = KafkaSettings::default()
        .auto_create_topics(false)
        .scram_user("relay", "s3cret")
        .authorizer(true)
        .producer_id_expiration(Duration::from_secs(5))
        .property("message.max.bytes", "2000000");
    let p = s.properties(PORTS, Path::new("/d"));
    let l = lines(&p);
    assert!(l.contains(&"auto.create.topics.enable=false"));
    assert!(l.contains(&"listener.security.protocol.map=CLIENT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"));
    assert!(l.contains(&"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512"));
    assert!(l.contains(&"super.users=User:ANONYMOUS"));
    assert!(l.contains(&"producer.id.expiration.ms=5000"));
    assert!(l.contains(&"message.max.bytes=2000000"));
    assert_eq!(
        s.scram_format_args(),
        [
            "--add-scram",
            "SCRAM-SHA-256=[name=relay,password=s3cret]",
            "--add-scram",
            "SCRAM-SHA-512=[name=relay,password=s3cret]"
        ]
    );
}

#[test]
fn ports_round_trip_through_their_file_line() {
    assert_eq!(KafkaPorts::parse(&PORTS.to_line()), Some(PORTS));
    assert_eq!(KafkaPorts::parse("1 2"), None);
    assert_eq!(KafkaPorts::parse("1 2 3 4"), None);
    assert_eq!(KafkaPorts::parse("1 x 3"), None);
}

#[test]
fn cluster_ids_look_like_kafka_uuids() {
    assert_eq!(base64_url(&[0xff; 16]), "_____________________w");
    assert_eq!(base64_url(b"abc"), "YWJj");
    for i in 0..2_000 {
        let id = new_cluster_id(&format!("seed-{i}"));
        assert!(id.starts_with(|c: char| c.is_ascii_alphabetic()), "{id}");
    }
    let (a, b) = (new_cluster_id("x"), new_cluster_id("x"));
    assert_eq!(a.len(), 22);
    assert_ne!(a, b);
}
