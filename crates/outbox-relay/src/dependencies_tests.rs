use super::*;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

fn options() -> RelayOptions {
    RelayOptions::builder()
        .error_backoff(Duration::from_millis(500))
        .max_error_backoff(Duration::from_secs(2))
        .lease_duration(Duration::from_secs(30))
        .lease_renew_interval(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn readiness() -> Readiness {
    Readiness::new("db".into(), "k:9092".into())
}

#[tokio::test(start_paused = true)]
async fn start_up_tries_at_once_then_backs_off_and_reports_the_last_error() {
    let options = options();
    let readiness = readiness();
    let start = Instant::now();
    let attempts = Mutex::new(Vec::new());
    let value = until_connected(Dependency::Broker, &readiness, &options, || {
        let n = {
            let mut a = attempts.lock().unwrap();
            a.push(start.elapsed());
            a.len()
        };
        let check = readiness.check();
        async move {
            if n == 1 {
                // Nothing known before the first attempt.
                assert!(check.unwrap_err().contains("broker k:9092 connecting"));
            } else {
                let body = check.unwrap_err();
                assert!(
                    body.contains(&format!("broker k:9092 failure {} (retrying)", n - 1)),
                    "{body}"
                );
            }
            if n < 5 {
                Err(format!("failure {n}"))
            } else {
                Ok(n)
            }
        }
    })
    .await;
    assert_eq!(value, 5);
    let ms = |n| Duration::from_millis(n);
    // 0, then +500 ms, +1 s, +2 s, +2 s (the ceiling).
    assert_eq!(
        *attempts.lock().unwrap(),
        [ms(0), ms(500), ms(1_500), ms(3_500), ms(5_500)]
    );
    assert!(
        !readiness.check().unwrap_err().contains("broker"),
        "the broker is up"
    );
}

#[tokio::test(start_paused = true)]
async fn the_watch_makes_the_relay_unready_while_a_check_fails_and_ready_again() {
    let options = options();
    let readiness = Arc::new(readiness());
    readiness.set(Dependency::Database, Status::Up);
    readiness.set(Dependency::Broker, Status::Up);
    readiness.set_relay_ready(true);
    let script: Arc<Mutex<VecDeque<Result<(), String>>>> = Arc::new(Mutex::new(
        [
            Ok(()),
            Err("unreachable: connection refused".to_owned()),
            Err("unreachable: connection refused".to_owned()),
            Ok(()),
        ]
        .into(),
    ));
    let checks = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let task = {
        let (readiness, script, checks) = (
            Arc::clone(&readiness),
            Arc::clone(&script),
            Arc::clone(&checks),
        );
        tokio::spawn(async move {
            watch(Dependency::Database, &readiness, &options, || {
                checks.lock().unwrap().push(start.elapsed());
                let next = script.lock().unwrap().pop_front().unwrap_or(Ok(()));
                async move { next }
            })
            .await;
        })
    };
    let secs = |s: f64| Duration::from_secs_f64(s);
    tokio::time::sleep(secs(10.1)).await;
    assert_eq!(readiness.check(), Ok(()), "first check passed");
    tokio::time::sleep(secs(10.0)).await; // t = 20.1: the second check failed at 20
    assert_eq!(
        readiness.check().unwrap_err(),
        "not ready: database db unreachable: connection refused (retrying)"
    );
    tokio::time::sleep(secs(1.5)).await; // t = 21.6: retried at 20.5 (failed), 21.5 (ok)
    assert_eq!(readiness.check(), Ok(()), "ready again");
    assert_eq!(
        *checks.lock().unwrap(),
        [secs(10.0), secs(20.0), secs(20.5), secs(21.5)]
    );
    task.abort();
}
