//! Honest probes: with the broker or the database missing, the process stays up, says
//! what it waits for (WARN lines, `/readyz` 503 naming it), and becomes ready by itself
//! when the dependency answers; a database lost while running makes it unready again.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use outbox_tests::faults::FaultEnv;

use crate::common::{Relay, free_port, sqlite_args, wait_for};
use crate::logs::table_args;

/// The WARN line of a failed attempt on `dependency` at `address`, if printed yet.
pub fn warn_line(output: &str, dependency: &str, address: &str) -> Option<String> {
    output
        .lines()
        .find(|l| {
            l.contains(" WARN ")
                && l.contains(&format!("dependency={dependency}"))
                && l.contains(address)
                && l.contains("retry_in_ms=")
        })
        .map(str::to_owned)
}

/// Asserts `/healthz` 200 and `/readyz` 503 with a body containing `says`.
pub fn assert_alive_not_ready(relay: &Relay, says: &str) {
    assert_eq!(relay.get("/healthz").map(|(s, _)| s), Some(200));
    let mut last = None;
    let named = wait_for(
        || {
            last = relay.get("/readyz");
            last.as_ref()
                .is_some_and(|(s, b)| *s == 503 && b.contains(says))
        },
        Duration::from_secs(10),
    );
    assert!(named, "/readyz should say {says:?}; it said {last:?}");
}

#[test]
fn an_unreachable_broker_is_named_and_the_relay_becomes_ready_once_it_starts() {
    let port = outbox_tests::broker::pick_free_port().unwrap();
    let address = format!("127.0.0.1:{port}");
    let url = outbox_tests::sqlite_url();
    let mut args = sqlite_args(&url);
    // The default first backoff (1 s), a low ceiling so the test need not wait 30 s.
    args.extend(["--brokers", &address, "--max-error-backoff", "2s"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = Relay::start(&args, &[]);
    let mut line = None;
    assert!(
        wait_for(
            || {
                line = warn_line(&relay.output(), "broker", &address);
                line.is_some()
            },
            Duration::from_secs(10)
        ),
        "no WARN line naming the broker\n{}",
        relay.output()
    );
    let line = line.unwrap();
    assert!(
        line.contains("connection refused") && line.contains("retry_in_ms=1000"),
        "the first failure names the error and retries within a second: {line}"
    );
    assert_alive_not_ready(
        &relay,
        &format!("not ready: broker {address} unreachable: connection refused (retrying)"),
    );

    let mut broker = outbox_tests::start_broker(&outbox_tests::private_broker_spec().port(port));
    relay.wait_ready(Duration::from_secs(30));
    let (status, output) = relay.terminate();
    assert_eq!(status.code(), Some(0), "{output}");
    assert!(output.contains("connected to the broker"), "{output}");
    broker.stop().unwrap();
}

/// A TCP forwarder the test owns, on a fixed port: it can be stopped (listener closed,
/// connections cut) and started again on the same port.
struct Forwarder {
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Forwarder {
    fn start(port: u16, upstream: String) -> io::Result<Forwarder> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let accept = {
            let (stop, streams) = (Arc::clone(&stop), Arc::clone(&streams));
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let client = match listener.accept() {
                        Ok((client, _)) => client,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(20));
                            continue;
                        }
                        Err(_) => continue,
                    };
                    let _ = client.set_nonblocking(false);
                    let Ok(server) = TcpStream::connect(&upstream) else {
                        continue;
                    };
                    let pairs = [
                        (client.try_clone().unwrap(), server.try_clone().unwrap()),
                        (server.try_clone().unwrap(), client.try_clone().unwrap()),
                    ];
                    streams.lock().unwrap().extend([client, server]);
                    for (mut from, mut to) in pairs {
                        std::thread::spawn(move || {
                            let _ = io::copy(&mut from, &mut to);
                            let _ = to.shutdown(Shutdown::Both);
                        });
                    }
                }
            })
        };
        Ok(Forwarder {
            stop,
            streams,
            accept: Some(accept),
        })
    }

    /// Closes the listener and cuts every forwarded connection.
    fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            accept.join().unwrap();
        }
        for stream in self.streams.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_named_and_the_relay_becomes_ready_once_it_answers() {
    let env = FaultEnv::new("relay_nodb", &outbox_tests::brokers(), 1).await;
    let upstream = outbox_tests::host_port(&env.database_url);
    let port = free_port();
    // A password (ignored by trust authentication) that must never be printed.
    let url = env
        .database_url
        .replacen("postgres@", "postgres:hunter2@", 1)
        .replacen(&upstream, &format!("127.0.0.1:{port}"), 1);
    assert!(
        url.contains("hunter2") && url.contains(&port.to_string()),
        "{url}"
    );
    let shown = url.replacen("hunter2", "***", 1);
    let mut args = vec![
        "--database-url".to_owned(),
        url.clone(),
        "--brokers".to_owned(),
        env.brokers.clone(),
        // Dependency checks every second while running; short leases to match.
        "--lease-renew-interval".to_owned(),
        "1s".to_owned(),
        "--lease-duration".to_owned(),
        "3s".to_owned(),
        "--max-error-backoff".to_owned(),
        "2s".to_owned(),
    ];
    args.extend(table_args(&env));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = Relay::start(&args, &[]);
    let address = format!("127.0.0.1:{port}");
    assert!(
        wait_for(
            || warn_line(&relay.output(), "database", &address).is_some(),
            Duration::from_secs(10)
        ),
        "no WARN line naming the database\n{}",
        relay.output()
    );
    assert_alive_not_ready(
        &relay,
        &format!("not ready: database {shown} unreachable: connection refused (retrying)"),
    );

    // The database answers: ready without a restart.
    let forwarder = Forwarder::start(port, upstream.clone()).unwrap();
    relay.wait_ready(Duration::from_secs(30));

    // Lost while running: unready, naming it; back: ready again.
    forwarder.stop();
    assert_alive_not_ready(&relay, &format!("database {shown} unreachable"));
    let forwarder = Forwarder::start(port, upstream).unwrap();
    relay.wait_ready(Duration::from_secs(30));

    let (status, output) = relay.terminate();
    forwarder.stop();
    assert_eq!(status.code(), Some(0), "{output}");
    assert!(
        !output.contains("hunter2"),
        "the password was printed:\n{output}"
    );
    assert!(output.contains("database reachable again"), "{output}");
    env.drop_tables().await;
}
