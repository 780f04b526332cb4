//! Messages as tests build them: the usual values, so a test names only what it is about
//! (`Status { mode: Mode::Chat, ..msg::status() }`).

use stt_proto::{
    AudioState, DaemonEvent, DaemonHeartbeat, Mode, Speaker, SpeakerState, SpeakerStatus, Speakers,
    Status, Transcript,
};

/// An idle assistant with STT healthy, the model answering and one viewer.
pub fn status() -> Status {
    Status {
        mode: Mode::Idle,
        stt_healthy: true,
        stt_detail: String::new(),
        llm_enabled: true,
        llm_endpoint: "http://127.0.0.1:9931/v1/chat/completions".into(),
        llm_reachable: Some(true),
        llm_provider: Some("llamacpp".into()),
        llm_model: String::new(),
        inference_queue: 0,
        inference_busy: false,
        viewers: 1,
        command_buffer: String::new(),
        command_edited: false,
        version: "0.1.0".into(),
        timers: Vec::new(),
        chat: None,
        voice: false,
        lanes: Vec::new(),
    }
}

/// The daemon's heartbeat number `seq`: capturing, speech recognition healthy, nothing
/// waiting.
pub fn heartbeat(seq: u64) -> DaemonEvent {
    DaemonEvent::Heartbeat(DaemonHeartbeat {
        seq,
        uptime_s: seq as f64,
        backlog: 0,
        stt_healthy: true,
        audio: AudioState::Capturing,
        model: "ggml-tiny.en-q8_0.bin".into(),
        remote: None,
        wake: None,
    })
}

/// The daemon's transcript of segment `seg_id`, one second long, no speaker identified.
pub fn transcript(seg_id: u64, text: &str) -> Transcript {
    Transcript {
        seg_id,
        text: text.into(),
        language: "en".into(),
        start: seg_id as f64,
        end: seg_id as f64 + 1.0,
        duration: 1.0,
        speaker_id: None,
        speaker_status: SpeakerStatus::None,
        speaker: None,
        speaker_score: None,
    }
}

/// A confirmed, named speaker of the roster.
pub fn speaker(id: &str, name: Option<&str>) -> Speaker {
    Speaker {
        id: id.into(),
        name: name.map(Into::into),
        status: SpeakerState::Confirmed,
        cumulative_s: 73.5,
        sample_path: None,
        created_at: "2026-11-30T09:12:44Z".into(),
    }
}

/// A roster of `speakers`.
pub fn roster(speakers: Vec<Speaker>) -> Speakers {
    Speakers { speakers }
}
