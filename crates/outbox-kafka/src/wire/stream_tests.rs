use super::host_of;

#[test]
fn hosts() {
    assert_eq!(host_of("broker-1.example:9093"), "broker-1.example");
    assert_eq!(host_of("127.0.0.1:9092"), "127.0.0.1");
    assert_eq!(host_of("[::1]:9092"), "::1");
}
