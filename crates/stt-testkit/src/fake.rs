//! A fake assistant: a control-socket [`Handler`] that answers as the assistant would and
//! remembers every request, served on a thread of its own, for testing clients (`stt-ctl`)
//! and the bus without the real assistant.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use stt_bus::{BoundSocket, ConnInfo, ControlServer, Handler, Publisher};
use stt_proto::{Ack, AssistantEvent, ErrorCode, ErrorMsg, Request, Speakers, Status};
use tokio_util::sync::CancellationToken;

/// Answers `status` with its status, `speaker_list` with its roster, `speaker_name`,
/// `speaker_forget` and `speaker_merge` for an id not in the roster with `unknown_speaker`,
/// and acks everything else (changing nothing: its roster stays as given).
#[derive(Debug)]
pub struct FakeAssistant {
    status: Status,
    roster: Speakers,
    seen: Mutex<Vec<Request>>,
}

impl FakeAssistant {
    pub fn new(status: Status, roster: Speakers) -> Self {
        Self { status, roster, seen: Mutex::default() }
    }

    /// The requests received since the last call.
    pub fn take_seen(&self) -> Vec<Request> {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Handler for FakeAssistant {
    async fn handle(&self, _conn: &ConnInfo, request: Request) -> AssistantEvent {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).push(request.clone());
        match request {
            Request::Status => AssistantEvent::Status(self.status.clone()),
            Request::SpeakerList => AssistantEvent::SpeakerList(self.roster.clone()),
            // As the assistant does: the status after the toggle (the fake's voice was off).
            Request::VoiceToggle => {
                AssistantEvent::Status(stt_proto::Status { voice: true, ..self.status.clone() })
            }
            other => {
                let ids = match &other {
                    Request::SpeakerName { speaker_id, .. }
                    | Request::SpeakerForget { speaker_id } => vec![speaker_id],
                    Request::SpeakerMerge { speaker_id, into } => vec![speaker_id, into],
                    _ => vec![],
                };
                let unknown =
                    ids.into_iter().find(|id| !self.roster.speakers.iter().any(|s| s.id == **id));
                match unknown {
                    Some(id) => AssistantEvent::Error(ErrorMsg::new(
                        ErrorCode::UnknownSpeaker,
                        format!("no speaker '{id}': `stt-ctl speaker-list` shows the ids"),
                    )),
                    None => AssistantEvent::Ack(Ack { command: other.kind().into(), ok: true }),
                }
            }
        }
    }
}

/// A control server for `handler` on `socket`, on a runtime thread of its own; stopped and
/// joined when dropped.
#[derive(Debug)]
pub struct Served<H> {
    pub handler: Arc<H>,
    shutdown: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<H: Handler + Send + Sync + 'static> Served<H> {
    /// Binds `socket` and serves; returns once the socket is bound.
    pub fn start(socket: &Path, handler: H) -> Self {
        let handler = Arc::new(handler);
        let shutdown = CancellationToken::new();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = {
            let (handler, shutdown, path) =
                (Arc::clone(&handler), shutdown.clone(), socket.to_path_buf());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| panic!("a runtime for the fake assistant: {e}"));
                runtime.block_on(async move {
                    let socket = BoundSocket::bind(&path, "stt-assistant")
                        .unwrap_or_else(|e| panic!("cannot bind {}: {e}", path.display()));
                    let _ = ready_tx.send(());
                    ControlServer::new(handler, Publisher::default()).serve(socket, shutdown).await;
                });
            })
        };
        ready_rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| {
            panic!("the fake assistant did not bind {} within 10 s", socket.display())
        });
        Self { handler, shutdown, thread: Some(thread) }
    }
}

impl<H> Drop for Served<H> {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
