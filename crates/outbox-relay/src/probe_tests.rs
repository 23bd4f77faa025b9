use super::*;

#[test]
fn passwords_are_redacted() {
    assert_eq!(
        redact_url("postgres://app:s3cret@db:5432/orders?sslmode=require"),
        "postgres://app:***@db:5432/orders?sslmode=require"
    );
    assert_eq!(
        redact_url("postgres://app@db/orders"),
        "postgres://app@db/orders"
    );
    assert_eq!(
        redact_url("mysql://u@h/db?password=pw&ssl-mode=disabled"),
        "mysql://u@h/db?password=***&ssl-mode=disabled"
    );
    assert_eq!(
        redact_url("redis://:token@cache:6379/0"),
        "redis://:***@cache:6379/0"
    );
    assert_eq!(
        redact_url("sqlite://x.db?mode=rwc"),
        "sqlite://x.db?mode=rwc"
    );
    assert_eq!(redact_url("not a url"), "not a url");
}

#[test]
fn database_addresses() {
    let cases = [
        ("postgres://u:p@db:6543/x", Some("db:6543")),
        ("postgresql://db/x", Some("db:5432")),
        ("mysql://root@127.0.0.1/test", Some("127.0.0.1:3306")),
        ("mariadb://root@[::1]:3307/t", Some("[::1]:3307")),
        ("postgres://u@[::1]/t", Some("[::1]:5432")),
        ("postgres://%2Fvar%2Frun%2Fpostgresql/db", None),
        ("postgres:///db?host=/run/pg", None),
        ("sqlite://x.db?mode=rwc", None),
        ("sqlite::memory:", None),
    ];
    for (url, expected) in cases {
        assert_eq!(database_address(url).as_deref(), expected, "{url}");
    }
}

#[tokio::test]
async fn a_closed_port_is_named_refused_and_an_open_one_passes() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let open = listener.local_addr().unwrap().to_string();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let e = tcp_reachable(std::slice::from_ref(&closed), PROBE_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(e, "unreachable: connection refused");
    let both = [closed.clone(), closed.clone()];
    let e = tcp_reachable(&both, PROBE_TIMEOUT).await.unwrap_err();
    assert_eq!(
        e,
        format!("unreachable: {closed} connection refused; {closed} connection refused")
    );
    assert_eq!(tcp_reachable(&[closed, open], PROBE_TIMEOUT).await, Ok(()));
}
