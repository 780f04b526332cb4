//! The daemon's publish-only socket: hello, then events, and nothing is ever read as input.

use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use stt_proto::{DaemonEvent, Hello, encode_line};

use crate::publisher::{Forward, deliver, next_batch, write_within};
use crate::{BoundSocket, Publisher};

/// Serves `socket` until `shutdown`: each connection gets `hello` and the retained events
/// ([`Publisher::publish_retained`]), then every event published on `publisher`. Bytes a
/// subscriber sends are read only to notice that it left, and are thrown away unparsed.
pub async fn serve(
    socket: BoundSocket,
    publisher: Publisher,
    hello: Hello,
    shutdown: CancellationToken,
) {
    let hello = encode_line(&DaemonEvent::Hello(hello));
    let tracker = TaskTracker::new();
    let socket = Arc::new(socket);
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            stream = socket.accept() => stream,
        };
        // Subscribe before the hello goes out, so no event falls between them; the retained
        // events are taken after subscribing, so none is missed (see `publish_retained`).
        let rx = publisher.subscribe();
        let mut first = hello.to_vec();
        for line in publisher.retained() {
            first.extend_from_slice(&line);
        }
        tracker.spawn(subscriber(stream, rx, first.into(), shutdown.clone()));
    }
    tracker.close();
    tracker.wait().await;
}

async fn subscriber(
    stream: UnixStream,
    mut rx: tokio::sync::broadcast::Receiver<bytes::Bytes>,
    hello: bytes::Bytes,
    shutdown: CancellationToken,
) {
    let (mut read, mut write) = stream.into_split();
    // Cancelled when the peer's side fails or when we stop serving it.
    let gone = CancellationToken::new();
    let drain = {
        let gone = gone.clone();
        tokio::spawn(async move {
            let mut sink = [0u8; 512];
            loop {
                tokio::select! {
                    () = gone.cancelled() => break,
                    n = read.read(&mut sink) => match n {
                        // Half-closed (`socat - UNIX-CONNECT:… </dev/null`): the peer may
                        // still read. A peer that really left fails the next write.
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(_) => {
                            gone.cancel();
                            break;
                        }
                    },
                }
            }
        })
    };
    if write_within(&mut write, &hello).await.is_ok() {
        let mut buf = Vec::new();
        loop {
            let batch = tokio::select! {
                () = gone.cancelled() => break,
                () = shutdown.cancelled() => {
                    flush_pending(&mut rx, &mut write, &mut buf).await;
                    break;
                }
                batch = next_batch(&mut rx, &mut buf) => batch,
            };
            let sent = tokio::select! {
                () = gone.cancelled() => break,
                sent = deliver(&mut write, &buf, batch) => sent,
            };
            if let Forward::Stop = sent {
                break;
            }
        }
    }
    gone.cancel();
    let _ = drain.await;
}

/// On shutdown, hands a subscriber what was published before it, so the last events of a
/// run (a file's final transcript) are not lost; a subscriber that does not take them
/// within a second is not waited for.
async fn flush_pending(
    rx: &mut tokio::sync::broadcast::Receiver<bytes::Bytes>,
    write: &mut tokio::net::unix::OwnedWriteHalf,
    buf: &mut Vec<u8>,
) {
    buf.clear();
    while let Ok(line) = rx.try_recv() {
        buf.extend_from_slice(&line);
    }
    if !buf.is_empty() {
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            tokio::io::AsyncWriteExt::write_all(write, buf),
        )
        .await;
    }
}
