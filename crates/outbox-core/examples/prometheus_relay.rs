//! A relay whose instruments are served on `http://127.0.0.1:9898/metrics`.
//!
//! ```sh
//! cargo run -p outbox-core --example prometheus_relay --features testing,prometheus
//! curl -s 127.0.0.1:9898/metrics | grep outbox_
//! ```
//!
//! It runs on the in-memory store and publisher so it needs nothing else; a real service
//! passes its sea-orm store and Kafka publisher instead.

use std::time::Duration;

use outbox_core::driver::Relay;
use outbox_core::testing::{MemoryPublisher, MemoryStore};
use outbox_core::{CommitNotifier, EnqueueConfig, OutboxMessage, RelayOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The exporter, with the naming and buckets docs/metrics.md assumes.
    let handle = outbox_core::metrics::prometheus::builder()?.install_recorder()?;

    // 2. A relay that samples the backlog (off by default).
    let store = MemoryStore::new();
    let options = RelayOptions::builder()
        .metrics_name("example")
        .backlog_sampling(true)
        .metrics_collection_interval(Duration::from_secs(5))
        .metrics_collection_timeout(Duration::from_secs(1))
        .build()?;
    let config = options.enqueue_config();
    let relay = Relay::spawn(store.clone(), MemoryPublisher::new(), options)?;

    // 3. Some traffic: a message every 100 ms.
    let notifier = relay.notifier();
    tokio::spawn(async move {
        for n in 0u64.. {
            if let Ok(message) = order(&config, n) {
                let bucket = message.bucket;
                store.enqueue(message);
                notifier.notify_buckets(&[bucket]);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });

    // 4. `/metrics`: the smallest HTTP server that a scraper accepts.
    let listener = TcpListener::bind("127.0.0.1:9898").await?;
    println!("serving http://127.0.0.1:9898/metrics (Ctrl-C to stop)");
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (mut socket, _) = accepted?;
                let body = handle.render();
                tokio::spawn(async move {
                    let mut request = [0u8; 1024];
                    let _ = socket.read(&mut request).await;
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                });
            }
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    relay.stop(Duration::from_secs(5)).await?;
    Ok(())
}

fn order(config: &EnqueueConfig, n: u64) -> Result<OutboxMessage, outbox_core::MessageError> {
    OutboxMessage::builder("orders")
        .key(format!("order-{}", n % 50))
        .value(format!("{{\"n\":{n}}}"))
        .build(config)
}
