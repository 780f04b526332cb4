//! A daemon that publishes whatever the test writes, on a real daemon socket (the real
//! publish server, on a runtime of its own): for tests of what the assistant does with
//! events without whisper in the way.

use std::path::Path;

use stt_proto::DaemonEvent;

use crate::DEADLINE;

#[derive(Debug)]
pub struct HandWrittenDaemon {
    publisher: stt_bus::Publisher,
    shutdown: tokio_util::sync::CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HandWrittenDaemon {
    /// Serves `socket` (the sandbox's `daemon_socket()`).
    pub fn start(socket: &Path) -> Self {
        let path = socket.to_path_buf();
        let publisher = stt_bus::Publisher::default();
        let shutdown = tokio_util::sync::CancellationToken::new();
        let (p, s) = (publisher.clone(), shutdown.clone());
        let (bound_tx, bound) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("a runtime: {e}"));
            rt.block_on(async move {
                let socket = stt_bus::BoundSocket::bind(&path, "stt-daemon")
                    .unwrap_or_else(|e| panic!("the socket: {e}"));
                let _ = bound_tx.send(());
                let hello = stt_proto::Hello::new("stt-daemon");
                stt_bus::publish_server::serve(socket, p, hello, s).await;
            });
        });
        bound.recv_timeout(DEADLINE).unwrap_or_else(|e| panic!("the daemon socket is bound: {e}"));
        Self { publisher, shutdown, thread: Some(thread) }
    }

    /// Publishes one line as it is written (a newline is added).
    pub fn line(&self, line: &str) {
        self.publisher.publish_line(bytes::Bytes::from(format!("{line}\n")));
    }

    /// Publishes an event.
    pub fn publish(&self, event: &DaemonEvent) {
        self.publisher.publish(event);
    }

    /// Its publisher, for a thread of the test's own (heartbeats while it works).
    pub fn publisher(&self) -> stt_bus::Publisher {
        self.publisher.clone()
    }

    /// How many follow it.
    pub fn subscribers(&self) -> usize {
        self.publisher.subscribers()
    }
}

impl Drop for HandWrittenDaemon {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
