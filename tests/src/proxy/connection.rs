//! One client connection of the Kafka-aware proxy: a request pump that counts requests
//! and applies the queued faults, a response pump that drops or rewrites responses, and
//! a single writer task towards the client.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::fault::{Fault, METADATA, PRODUCE, Shared};
use super::metadata::rewrite_metadata;
use super::produce::{produce_error_response, produce_targets};
use super::wire::request_header;

/// What the proxy remembers about a forwarded request until its response.
#[derive(Debug, Clone, Copy)]
struct Pending {
    api_key: i16,
    api_version: i16,
    fault: Option<Fault>,
}

/// Serves one client connection of a Kafka-aware proxy: requests go through the
/// queued faults to `server`, responses come back (Metadata rewritten to `own_addr`).
pub(super) async fn kafka_connection<C>(
    client: C,
    server: TcpStream,
    own_addr: String,
    shared: Arc<Mutex<Shared>>,
) where
    C: AsyncRead + AsyncWrite + Send + 'static,
{
    let (client_read, client_write) = tokio::io::split(client);
    let (server_read, server_write) = server.into_split();
    let pending: Arc<Mutex<HashMap<i32, Pending>>> = Arc::default();
    // Everything for the client goes through one writer task.
    let (to_client, from_pumps) = mpsc::unbounded_channel::<Option<Vec<u8>>>();
    let writer = tokio::spawn(client_writer(client_write, from_pumps));
    let requests = tokio::spawn(request_pump(
        client_read,
        server_write,
        Arc::clone(&pending),
        shared,
        to_client.clone(),
    ));
    let responses = tokio::spawn(response_pump(server_read, pending, own_addr, to_client));
    // Whichever side ends first ends the connection. Aborting on drop matters too: the
    // proxy cuts connections by aborting this task.
    let _guard = AbortOnDrop(vec![
        requests.abort_handle(),
        responses.abort_handle(),
        writer.abort_handle(),
    ]);
    let _ = writer.await;
}

/// Aborts the connection's pump tasks when the connection task ends or is aborted.
struct AbortOnDrop(Vec<tokio::task::AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

async fn client_writer(
    mut write: impl AsyncWrite + Unpin,
    mut frames: mpsc::UnboundedReceiver<Option<Vec<u8>>>,
) {
    while let Some(frame) = frames.recv().await {
        let Some(frame) = frame else {
            break; // close requested
        };
        if write.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = write.shutdown().await;
}

async fn read_frame(read: &mut (impl AsyncRead + Unpin)) -> io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    read.read_exact(&mut size).await?;
    let len = usize::try_from(i32::from_be_bytes(size))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "negative frame size"))?;
    let mut frame = vec![0u8; 4 + len];
    frame[..4].copy_from_slice(&size);
    read.read_exact(&mut frame[4..]).await?;
    Ok(frame)
}

async fn request_pump(
    mut client: impl AsyncRead + Unpin,
    mut server: impl AsyncWrite + Unpin,
    pending: Arc<Mutex<HashMap<i32, Pending>>>,
    shared: Arc<Mutex<Shared>>,
    to_client: mpsc::UnboundedSender<Option<Vec<u8>>>,
) {
    while let Ok(frame) = read_frame(&mut client).await {
        let Some((api_key, api_version, correlation)) = request_header(&frame) else {
            break;
        };
        let fault = {
            let mut shared = shared.lock().unwrap_or_else(|p| p.into_inner());
            *shared.requests.entry(api_key).or_default() += 1;
            let targets = if api_key == PRODUCE {
                produce_targets(&frame, api_version).unwrap_or_default()
            } else {
                Vec::new()
            };
            let position = shared.faults.iter().position(|r| {
                r.api_key == api_key && r.target.as_ref().is_none_or(|t| targets.contains(t))
            });
            let fault = position
                .and_then(|i| shared.faults.remove(i))
                .map(|r| r.fault);
            if fault.is_some() {
                shared.faults_applied += 1;
            }
            fault
        };
        if let Some(Fault::FailWith(code)) = fault {
            match produce_error_response(&frame, api_version, correlation, code) {
                Some(response) => {
                    let _ = to_client.send(Some(response));
                    continue;
                }
                None => panic!(
                    "the proxy can only fail Produce v3..=8 requests, got api key {api_key} v{api_version}"
                ),
            }
        }
        pending.lock().unwrap_or_else(|p| p.into_inner()).insert(
            correlation,
            Pending {
                api_key,
                api_version,
                fault,
            },
        );
        if server.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = to_client.send(None);
}

async fn response_pump(
    mut server: impl AsyncRead + Unpin,
    pending: Arc<Mutex<HashMap<i32, Pending>>>,
    own_addr: String,
    to_client: mpsc::UnboundedSender<Option<Vec<u8>>>,
) {
    let (host, port) = own_addr.rsplit_once(':').unwrap_or((&own_addr, "0"));
    let port: i32 = port.parse().unwrap_or(0);
    while let Ok(frame) = read_frame(&mut server).await {
        let Some(correlation) = frame
            .get(4..8)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        else {
            break;
        };
        let request = pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&correlation);
        let frame = match request {
            Some(Pending {
                fault: Some(Fault::DropResponse),
                ..
            }) => continue,
            Some(Pending {
                fault: Some(Fault::DropResponseAndClose),
                ..
            }) => {
                let _ = to_client.send(None);
                break;
            }
            Some(Pending {
                api_key: METADATA,
                api_version,
                ..
            }) => rewrite_metadata(&frame, api_version, host, port).unwrap_or(frame),
            _ => frame,
        };
        if to_client.send(Some(frame)).is_err() {
            break;
        }
    }
    let _ = to_client.send(None);
}
