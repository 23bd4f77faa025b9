//! Tests of Kafka's install that need no Maven: the pinned POM and the cache layout.

use super::*;

#[test]
fn the_pom_pins_every_artifact() {
    let pom = pom();
    assert!(pom.contains("<artifactId>kafka_2.13</artifactId><version>4.4.0</version>"));
    assert!(pom.contains("<artifactId>kafka-tools</artifactId><version>4.4.0</version>"));
    assert!(pom.contains("<artifactId>log4j-slf4j-impl</artifactId><version>2.25.5"));
    assert_eq!(pom.matches("<version>").count(), 4);
}

#[test]
fn the_install_lives_in_the_cache_under_its_version() {
    assert!(kafka_dir().starts_with(crate::cache_dir()));
    assert!(kafka_dir().ends_with("kafka-4.4.0"));
}
