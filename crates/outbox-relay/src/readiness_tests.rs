use super::*;

#[test]
fn ready_only_with_both_dependencies_up_and_the_leases_acquired() {
    let r = Readiness::new("postgres://u:***@db/x".into(), "k1:9092,k2:9092".into());
    assert!(r.is_live());
    assert_eq!(
        r.check().unwrap_err(),
        "not ready: database postgres://u:***@db/x connecting; broker k1:9092,k2:9092 connecting"
    );
    r.set(Dependency::Database, Status::Up);
    r.set(
        Dependency::Broker,
        Status::Down("unreachable: connection refused".into()),
    );
    assert_eq!(
        r.check().unwrap_err(),
        "not ready: broker k1:9092,k2:9092 unreachable: connection refused (retrying)"
    );
    r.set(Dependency::Broker, Status::Up);
    assert_eq!(r.check().unwrap_err(), "not ready: acquiring leases");
    r.set_relay_ready(true);
    assert_eq!(r.check(), Ok(()));
    // A dependency lost while running: not ready again, naming it.
    r.set(
        Dependency::Database,
        Status::Down("error: pool timed out".into()),
    );
    assert!(
        r.check()
            .unwrap_err()
            .contains("database postgres://u:***@db/x error")
    );
    r.set(Dependency::Database, Status::Up);
    assert_eq!(r.check(), Ok(()));
    assert_eq!(r.address(Dependency::Broker), "k1:9092,k2:9092");
    r.set_dead();
    assert!(!r.is_live());
}
