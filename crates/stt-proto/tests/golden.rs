//! Golden lines: the exact bytes of every message on the wire. A change here is a change of
//! protocol: bump `PROTOCOL_VERSION` or make the change backward compatible, and update
//! docs/PROTOCOL.md in the same commit.

// Test helpers outside #[test] functions may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use stt_proto::*;

fn transcript(speaker: Option<&str>) -> Transcript {
    Transcript {
        seg_id: 7,
        text: "what time is it".into(),
        language: "en".into(),
        start: 12.48,
        end: 14.1,
        duration: 1.62,
        speaker_id: speaker.map(|_| "spk_0001".into()),
        speaker_status: if speaker.is_some() {
            SpeakerStatus::Matched
        } else {
            SpeakerStatus::None
        },
        speaker: speaker.map(Into::into),
        speaker_score: speaker.map(|_| 0.87),
    }
}

fn roster() -> Speakers {
    Speakers {
        speakers: vec![Speaker {
            id: "spk_0001".into(),
            name: Some("Efren".into()),
            status: SpeakerState::Confirmed,
            cumulative_s: 73.5,
            sample_path: Some("speakers/spk_0001.wav".into()),
            created_at: "2026-11-30T09:12:44Z".into(),
        }],
    }
}

fn hello(peer: &str) -> Hello {
    Hello { protocol_version: 3, peer: peer.into(), version: "0.1.0".into() }
}

pub fn daemon_events() -> Vec<(DaemonEvent, &'static str)> {
    vec![
        (
            DaemonEvent::Hello(hello("stt-daemon")),
            r#"{"type":"hello","protocol_version":3,"peer":"stt-daemon","version":"0.1.0"}"#,
        ),
        (
            DaemonEvent::SpeechStart(SpeechStart { seg_id: 7, start: 12.48 }),
            r#"{"type":"speech_start","seg_id":7,"start":12.48}"#,
        ),
        (
            DaemonEvent::SpeechStop(SpeechStop { seg_id: 7, end: 14.1 }),
            r#"{"type":"speech_stop","seg_id":7,"end":14.1}"#,
        ),
        (
            DaemonEvent::TranscriptPartial(TranscriptPartial {
                seg_id: 7,
                text: "what time is".into(),
                committed_len: 9,
            }),
            r#"{"type":"transcript_partial","seg_id":7,"text":"what time is","committed_len":9}"#,
        ),
        (
            DaemonEvent::Levels(Levels { seg_id: 7, end: 13.1, db: vec![-41.5, -38.0, -60.0] }),
            r#"{"type":"levels","seg_id":7,"end":13.1,"db":[-41.5,-38.0,-60.0]}"#,
        ),
        (
            DaemonEvent::Transcript(transcript(None)),
            r#"{"type":"transcript","seg_id":7,"text":"what time is it","language":"en","start":12.48,"end":14.1,"duration":1.62,"speaker_id":null,"speaker_status":"none","speaker":null,"speaker_score":null}"#,
        ),
        (
            DaemonEvent::Transcript(transcript(Some("Efren"))),
            r#"{"type":"transcript","seg_id":7,"text":"what time is it","language":"en","start":12.48,"end":14.1,"duration":1.62,"speaker_id":"spk_0001","speaker_status":"matched","speaker":"Efren","speaker_score":0.87}"#,
        ),
        (
            DaemonEvent::SegmentDone(SegmentDone { seg_id: 7 }),
            r#"{"type":"segment_done","seg_id":7}"#,
        ),
        (
            DaemonEvent::Speakers(roster()),
            r#"{"type":"speakers","speakers":[{"id":"spk_0001","name":"Efren","status":"confirmed","cumulative_s":73.5,"sample_path":"speakers/spk_0001.wav","created_at":"2026-11-30T09:12:44Z"}]}"#,
        ),
        (
            DaemonEvent::Heartbeat(DaemonHeartbeat {
                seq: 42,
                uptime_s: 42.0,
                backlog: 1,
                stt_healthy: true,
                audio: AudioState::Capturing,
                model: "ggml-tiny.en-q8_0.bin".into(),
                remote: None,
                wake: None,
            }),
            r#"{"type":"heartbeat","seq":42,"uptime_s":42.0,"backlog":1,"stt_healthy":true,"audio":"capturing","model":"ggml-tiny.en-q8_0.bin","remote":null,"wake":null}"#,
        ),
        (
            DaemonEvent::Wake(Wake { phrase: "hey_jarvis".into(), score: 0.93, at: 31.52 }),
            r#"{"type":"wake","phrase":"hey_jarvis","score":0.93,"at":31.52}"#,
        ),
        (
            DaemonEvent::Error(ErrorMsg::new(
                ErrorCode::Audio,
                "microphone 'USB Audio' vanished; retrying in 2 s",
            )),
            r#"{"type":"error","code":"audio","message":"microphone 'USB Audio' vanished; retrying in 2 s"}"#,
        ),
    ]
}

pub fn requests() -> Vec<(Request, &'static str)> {
    vec![
        (
            Request::Hello(hello("stt-ctl")),
            r#"{"type":"hello","protocol_version":3,"peer":"stt-ctl","version":"0.1.0"}"#,
        ),
        (Request::Subscribe { viewer: true }, r#"{"type":"subscribe","viewer":true}"#),
        (Request::CommandStart, r#"{"type":"command_start"}"#),
        (Request::CommandExecute { wait_ms: None }, r#"{"type":"command_execute","wait_ms":null}"#),
        (
            Request::CommandExecute { wait_ms: Some(3000) },
            r#"{"type":"command_execute","wait_ms":3000}"#,
        ),
        (Request::CommandCancel, r#"{"type":"command_cancel"}"#),
        (
            Request::CommandEdit { text: "what time is it".into() },
            r#"{"type":"command_edit","text":"what time is it"}"#,
        ),
        (Request::ChatToggle, r#"{"type":"chat_toggle"}"#),
        (Request::DictateStart, r#"{"type":"dictate_start"}"#),
        (Request::DictateStop, r#"{"type":"dictate_stop"}"#),
        (Request::DictateToggle, r#"{"type":"dictate_toggle"}"#),
        (
            Request::Intents(IntentsRequest::Test { text: "set a timer for ten minutes".into() }),
            r#"{"type":"intents","verb":"test","text":"set a timer for ten minutes"}"#,
        ),
        (Request::Clear, r#"{"type":"clear"}"#),
        (Request::Status, r#"{"type":"status"}"#),
        (Request::SpeakerList, r#"{"type":"speaker_list"}"#),
        (
            Request::SpeakerName { speaker_id: "spk_0001".into(), name: "Efren".into() },
            r#"{"type":"speaker_name","speaker_id":"spk_0001","name":"Efren"}"#,
        ),
        (
            Request::SpeakerForget { speaker_id: "spk_0003".into() },
            r#"{"type":"speaker_forget","speaker_id":"spk_0003"}"#,
        ),
        (
            Request::SpeakerMerge { speaker_id: "spk_0004".into(), into: "spk_0001".into() },
            r#"{"type":"speaker_merge","speaker_id":"spk_0004","into":"spk_0001"}"#,
        ),
        (
            Request::Confirm { call_id: Some("call_3".into()) },
            r#"{"type":"confirm","call_id":"call_3"}"#,
        ),
        (Request::Deny { call_id: None }, r#"{"type":"deny","call_id":null}"#),
        (
            Request::TimerCancel { timer_id: 1_764_581_534_000_001 },
            r#"{"type":"timer_cancel","timer_id":1764581534000001}"#,
        ),
        (
            Request::ChatSend { text: "what is the capital of Peru?".into() },
            r#"{"type":"chat_send","text":"what is the capital of Peru?"}"#,
        ),
        (
            Request::ChatCommand { line: "/model qwen2.5:7b".into() },
            r#"{"type":"chat_command","line":"/model qwen2.5:7b"}"#,
        ),
        (Request::ChatStop, r#"{"type":"chat_stop"}"#),
        (
            Request::Memory(MemoryRequest::Search { text: "sister".into(), limit: Some(5) }),
            r#"{"type":"memory","verb":"search","text":"sister","limit":5}"#,
        ),
        (
            Request::Memory(MemoryRequest::List {
                kind: Some("intention".into()),
                archived: false,
                limit: None,
            }),
            r#"{"type":"memory","verb":"list","kind":"intention","archived":false,"limit":null}"#,
        ),
        (
            Request::Memory(MemoryRequest::Show { id: 12 }),
            r#"{"type":"memory","verb":"show","id":12}"#,
        ),
        (
            Request::Task(TaskRequest::Add {
                title: "Learn Rust".into(),
                goal: None,
                due: Some("2026-12-20".into()),
                priority: Some(2),
            }),
            r#"{"type":"task","verb":"add","title":"Learn Rust","goal":null,"due":"2026-12-20","priority":2}"#,
        ),
        (
            Request::Task(TaskRequest::Done { id: 9, item: true }),
            r#"{"type":"task","verb":"done","id":9,"item":true}"#,
        ),
        (
            Request::Task(TaskRequest::Next { limit: None }),
            r#"{"type":"task","verb":"next","limit":null}"#,
        ),
        (
            Request::Memory(MemoryRequest::Forget { id: Some(12), all: false }),
            r#"{"type":"memory","verb":"forget","id":12,"all":false}"#,
        ),
        (
            Request::Memory(MemoryRequest::Export { dir: "/home/u/memory".into() }),
            r#"{"type":"memory","verb":"export","dir":"/home/u/memory"}"#,
        ),
        (
            Request::Memory(MemoryRequest::Import { dir: "/home/u/memory".into() }),
            r#"{"type":"memory","verb":"import","dir":"/home/u/memory"}"#,
        ),
        (Request::Memory(MemoryRequest::Dream), r#"{"type":"memory","verb":"dream"}"#),
        (
            Request::Memory(MemoryRequest::Dreams { limit: Some(3) }),
            r#"{"type":"memory","verb":"dreams","limit":3}"#,
        ),
        (Request::Memory(MemoryRequest::Stats), r#"{"type":"memory","verb":"stats"}"#),
        (Request::VoiceToggle, r#"{"type":"voice_toggle"}"#),
        (
            Request::Memory(MemoryRequest::Tree { node: Some(7) }),
            r#"{"type":"memory","verb":"tree","node":7}"#,
        ),
    ]
}

pub fn assistant_events() -> Vec<(AssistantEvent, &'static str)> {
    vec![
        (
            AssistantEvent::Hello(hello("stt-assistant")),
            r#"{"type":"hello","protocol_version":3,"peer":"stt-assistant","version":"0.1.0"}"#,
        ),
        (
            AssistantEvent::Mode { mode: Mode::CommandArmed },
            r#"{"type":"mode","mode":"command_armed"}"#,
        ),
        (
            AssistantEvent::CommandText { text: "what time is it".into(), edited: false },
            r#"{"type":"command_text","text":"what time is it","edited":false}"#,
        ),
        (
            AssistantEvent::Transcript(Transcript {
                speaker: None,
                speaker_status: SpeakerStatus::Unknown,
                speaker_id: Some("spk_0002".into()),
                speaker_score: Some(0.41),
                ..transcript(None)
            }),
            r#"{"type":"transcript","seg_id":7,"text":"what time is it","language":"en","start":12.48,"end":14.1,"duration":1.62,"speaker_id":"spk_0002","speaker_status":"unknown","speaker":null,"speaker_score":0.41}"#,
        ),
        (
            AssistantEvent::TranscriptPartial(TranscriptPartial {
                seg_id: 8,
                text: "and tomor".into(),
                committed_len: 3,
            }),
            r#"{"type":"transcript_partial","seg_id":8,"text":"and tomor","committed_len":3}"#,
        ),
        (
            AssistantEvent::SpeechStart(SpeechStart { seg_id: 8, start: 15.0 }),
            r#"{"type":"speech_start","seg_id":8,"start":15.0}"#,
        ),
        (
            AssistantEvent::SpeechStop(SpeechStop { seg_id: 8, end: 16.25 }),
            r#"{"type":"speech_stop","seg_id":8,"end":16.25}"#,
        ),
        (
            AssistantEvent::TurnEnded(TurnEnded {
                seg_ids: vec![8, 9],
                text: "Remind me to call Ana, after lunch tomorrow.".into(),
                speaker: Some("Efren".into()),
            }),
            r#"{"type":"turn_ended","seg_ids":[8,9],"text":"Remind me to call Ana, after lunch tomorrow.","speaker":"Efren"}"#,
        ),
        (
            AssistantEvent::Triage(Triage {
                id: 12,
                stage: TriageStage::Signals,
                seg_ids: vec![8, 9],
                signals: vec![
                    TriageSignal { category: "request".into(), confidence: 0.82 },
                    TriageSignal { category: "task".into(), confidence: 0.31 },
                ],
                content: None,
                error: None,
            }),
            r#"{"type":"triage","id":12,"stage":"signals","seg_ids":[8,9],"signals":[{"category":"request","confidence":0.82},{"category":"task","confidence":0.31}],"content":null,"error":null}"#,
        ),
        (
            AssistantEvent::Triage(Triage {
                id: 12,
                stage: TriageStage::Content,
                seg_ids: vec![8, 9],
                signals: vec![TriageSignal { category: "request".into(), confidence: 0.82 }],
                content: Some(TriageContent {
                    tasks: vec![TriageTask {
                        what: "call Ana".into(),
                        who: None,
                        when: Some("after lunch tomorrow".into()),
                    }],
                    dates: vec!["tomorrow".into()],
                    people: vec!["Ana".into()],
                    decision: None,
                }),
                error: None,
            }),
            r#"{"type":"triage","id":12,"stage":"content","seg_ids":[8,9],"signals":[{"category":"request","confidence":0.82}],"content":{"tasks":[{"what":"call Ana","who":null,"when":"after lunch tomorrow"}],"dates":["tomorrow"],"people":["Ana"],"decision":null},"error":null}"#,
        ),
        (
            AssistantEvent::ToolCall(ToolCall {
                call_id: "call_3".into(),
                tool: "open_url".into(),
                args: json!({"url": "https://example.org"}),
                side_effect: SideEffect::External,
                requires_confirmation: true,
                awaiting_confirmation: true,
                outside: None,
            }),
            r#"{"type":"tool_call","call_id":"call_3","tool":"open_url","args":{"url":"https://example.org"},"side_effect":"external","requires_confirmation":true,"awaiting_confirmation":true,"outside":null}"#,
        ),
        (
            AssistantEvent::ToolCall(ToolCall {
                call_id: "call_2".into(),
                tool: "fetch_web".into(),
                args: json!({"url": "https://example.org/?q=tea"}),
                side_effect: SideEffect::External,
                requires_confirmation: false,
                awaiting_confirmation: true,
                outside: Some(r#"read_file({"path":"notes/tea.md"})"#.into()),
            }),
            r#"{"type":"tool_call","call_id":"call_2","tool":"fetch_web","args":{"url":"https://example.org/?q=tea"},"side_effect":"external","requires_confirmation":false,"awaiting_confirmation":true,"outside":"read_file({\"path\":\"notes/tea.md\"})"}"#,
        ),
        (
            AssistantEvent::ToolResult(ToolResult {
                call_id: "call_1".into(),
                tool: "get_datetime".into(),
                ok: true,
                result: "2026-11-30T12:00:00+01:00 (Monday)".into(),
                latency_ms: 3,
            }),
            r#"{"type":"tool_result","call_id":"call_1","tool":"get_datetime","ok":true,"result":"2026-11-30T12:00:00+01:00 (Monday)","latency_ms":3}"#,
        ),
        (
            AssistantEvent::ChatMessage(ChatMessage {
                id: 4,
                role: ChatRole::User,
                speaker: Some("Efren".into()),
                text: "tell me a joke".into(),
                partial: false,
                stopped: false,
            }),
            r#"{"type":"chat_message","id":4,"role":"user","speaker":"Efren","text":"tell me a joke","partial":false,"stopped":false}"#,
        ),
        (
            AssistantEvent::ChatMessage(ChatMessage {
                id: 5,
                role: ChatRole::Assistant,
                speaker: None,
                text: "Why did".into(),
                partial: true,
                stopped: false,
            }),
            r#"{"type":"chat_message","id":5,"role":"assistant","speaker":null,"text":"Why did","partial":true,"stopped":false}"#,
        ),
        (
            AssistantEvent::ChatMessage(ChatMessage {
                id: 6,
                role: ChatRole::Note,
                speaker: None,
                text: "context compacted: 12 turns summarized".into(),
                partial: false,
                stopped: false,
            }),
            r#"{"type":"chat_message","id":6,"role":"note","speaker":null,"text":"context compacted: 12 turns summarized","partial":false,"stopped":false}"#,
        ),
        (
            AssistantEvent::Speakers(roster()),
            r#"{"type":"speakers","speakers":[{"id":"spk_0001","name":"Efren","status":"confirmed","cumulative_s":73.5,"sample_path":"speakers/spk_0001.wav","created_at":"2026-11-30T09:12:44Z"}]}"#,
        ),
        (AssistantEvent::Cleared {}, r#"{"type":"cleared"}"#),
        (
            AssistantEvent::Heartbeat(AssistantHeartbeat {
                seq: 9,
                mode: Mode::Chat,
                stt_healthy: true,
                daemon_backlog: 2,
                inference_queue: 1,
                inference_busy: true,
                stt_remote: None,
                wake: Some("hey_jarvis".into()),
                speaking: false,
            }),
            r#"{"type":"heartbeat","seq":9,"mode":"chat","stt_healthy":true,"daemon_backlog":2,"inference_queue":1,"inference_busy":true,"stt_remote":null,"wake":"hey_jarvis","speaking":false}"#,
        ),
        (
            AssistantEvent::Wake(Wake { phrase: "enrolled".into(), score: 0.97, at: 12.4 }),
            r#"{"type":"wake","phrase":"enrolled","score":0.97,"at":12.4}"#,
        ),
        (
            AssistantEvent::Error(ErrorMsg::new(
                ErrorCode::NotReady,
                "not ready: speech is still open (segment 8); execute again when it closes",
            )),
            r#"{"type":"error","code":"not_ready","message":"not ready: speech is still open (segment 8); execute again when it closes"}"#,
        ),
        (
            AssistantEvent::Error(ErrorMsg::new(ErrorCode::NotFound, "memory has no item 7")),
            r#"{"type":"error","code":"not_found","message":"memory has no item 7"}"#,
        ),
        (
            AssistantEvent::Ack(Ack { command: "command_start".into(), ok: true }),
            r#"{"type":"ack","command":"command_start","ok":true}"#,
        ),
        (
            AssistantEvent::Status(Status {
                mode: Mode::Idle,
                stt_healthy: false,
                stt_detail: "no heartbeat from stt-daemon for 4.2 s".into(),
                llm_enabled: true,
                llm_endpoint: "http://localhost:9931/v1/chat/completions".into(),
                llm_reachable: None,
                llm_provider: Some("llamacpp".into()),
                llm_model: String::new(),
                inference_queue: 0,
                inference_busy: false,
                viewers: 1,
                command_buffer: String::new(),
                command_edited: false,
                version: "0.1.0".into(),
                timers: vec![TimerInfo {
                    id: 1_764_581_534_000_001,
                    label: "tea".into(),
                    remaining_s: 42.5,
                }],
                chat: None,
                voice: false,
                lanes: vec![
                    LaneStatus {
                        name: "memory".into(),
                        state: LaneState::Ready,
                        why: None,
                        queued: 2,
                    },
                    LaneStatus {
                        name: "voice".into(),
                        state: LaneState::Off,
                        why: Some("the voice is off: no output device".into()),
                        queued: 0,
                    },
                ],
            }),
            r#"{"type":"status","mode":"idle","stt_healthy":false,"stt_detail":"no heartbeat from stt-daemon for 4.2 s","llm_enabled":true,"llm_endpoint":"http://localhost:9931/v1/chat/completions","llm_reachable":null,"llm_provider":"llamacpp","llm_model":"","inference_queue":0,"inference_busy":false,"viewers":1,"command_buffer":"","command_edited":false,"version":"0.1.0","timers":[{"id":1764581534000001,"label":"tea","remaining_s":42.5}],"chat":null,"voice":false,"lanes":[{"name":"memory","state":"ready","why":null,"queued":2},{"name":"voice","state":"off","why":"the voice is off: no output device","queued":0}]}"#,
        ),
        (
            AssistantEvent::ChatSession(ChatSession {
                provider: Some("llamacpp".into()),
                model: String::new(),
                endpoint: "127.0.0.1:9931".into(),
                loading: false,
                turns: 2,
                last: Some(TokenUsage { prompt: 412, completion: 38, cached: 380 }),
                total: TokenUsage { prompt: 790, completion: 71, cached: 380 },
            }),
            r#"{"type":"chat_session","provider":"llamacpp","model":"","endpoint":"127.0.0.1:9931","loading":false,"turns":2,"last":{"prompt":412,"completion":38,"cached":380},"total":{"prompt":790,"completion":71,"cached":380}}"#,
        ),
        (
            AssistantEvent::ChatOutput { text: "now using ollama · qwen2.5:7b".into() },
            r#"{"type":"chat_output","text":"now using ollama · qwen2.5:7b"}"#,
        ),
        (
            AssistantEvent::MemoryOutput {
                text: "1 found".into(),
                entries: vec![MemoryEntry {
                    target: "item".into(),
                    id: 12,
                    kind: "knowledge".into(),
                    text: "sister's city: My sister lives in Porto".into(),
                    at: 1_764_581_534.0,
                    score: Some(0.75),
                    archived: false,
                }],
            },
            r#"{"type":"memory_output","text":"1 found","entries":[{"target":"item","id":12,"kind":"knowledge","text":"sister's city: My sister lives in Porto","at":1764581534.0,"score":0.75,"archived":false}]}"#,
        ),
        (
            AssistantEvent::IntentOutput {
                text: "timer_set (template: set a timer for {duration})".into(),
                intent: Some("timer_set".into()),
            },
            r#"{"type":"intent_output","text":"timer_set (template: set a timer for {duration})","intent":"timer_set"}"#,
        ),
        (
            AssistantEvent::TaskOutput {
                text: "item 3: Write a small CLI (task 1 Learn Rust), on 2026-12-14".into(),
                tasks: vec![],
                next: vec![NextAction {
                    task: 1,
                    task_title: "Learn Rust".into(),
                    item: Some(3),
                    text: "Write a small CLI".into(),
                    day: Some("2026-12-14".into()),
                    priority: 2,
                    overdue: false,
                }],
            },
            r#"{"type":"task_output","text":"item 3: Write a small CLI (task 1 Learn Rust), on 2026-12-14","tasks":[],"next":[{"task":1,"task_title":"Learn Rust","item":3,"text":"Write a small CLI","day":"2026-12-14","priority":2,"overdue":false}]}"#,
        ),
        (
            AssistantEvent::TaskOutput {
                text: "task 1 [open] Learn Rust (priority 2), due 2026-12-20".into(),
                tasks: vec![TaskEntry {
                    id: 1,
                    title: "Learn Rust".into(),
                    goal: String::new(),
                    status: "open".into(),
                    priority: 2,
                    due: Some("2026-12-20".into()),
                    phases: vec![PlanPhase {
                        title: "Basics".into(),
                        done: false,
                        items: vec![PlanItem {
                            id: 1,
                            day: "2026-12-07".into(),
                            text: "Read chapters 1 to 4".into(),
                            done: true,
                        }],
                    }],
                }],
                next: vec![],
            },
            r#"{"type":"task_output","text":"task 1 [open] Learn Rust (priority 2), due 2026-12-20","tasks":[{"id":1,"title":"Learn Rust","goal":"","status":"open","priority":2,"due":"2026-12-20","phases":[{"title":"Basics","done":false,"items":[{"id":1,"day":"2026-12-07","text":"Read chapters 1 to 4","done":true}]}]}],"next":[]}"#,
        ),
        (
            AssistantEvent::SpeakerList(roster()),
            r#"{"type":"speaker_list","speakers":[{"id":"spk_0001","name":"Efren","status":"confirmed","cumulative_s":73.5,"sample_path":"speakers/spk_0001.wav","created_at":"2026-11-30T09:12:44Z"}]}"#,
        ),
    ]
}

#[track_caller]
fn check<M: Message + PartialEq + std::fmt::Debug>(cases: Vec<(M, &'static str)>) {
    let mut seen = std::collections::BTreeSet::new();
    for (msg, golden) in cases {
        let line = encode_line(&msg);
        assert_eq!(std::str::from_utf8(&line).unwrap(), format!("{golden}\n"), "{msg:?}");
        assert_eq!(parse::<M>(golden.as_bytes()).as_ref(), Ok(&msg), "{golden}");
        let value: serde_json::Value = serde_json::from_str(golden).unwrap();
        assert_eq!(Some(Message::kind(&msg)), value["type"].as_str(), "kind() of {golden}");
        seen.insert(value["type"].as_str().unwrap().to_owned());
    }
    let known: std::collections::BTreeSet<_> = M::TYPES.iter().map(|t| t.to_string()).collect();
    assert_eq!(seen, known, "golden lines must cover every type of the family, and only those");
}

#[test]
fn daemon_events_are_pinned() {
    check(daemon_events());
}

#[test]
fn requests_are_pinned() {
    check(requests());
}

#[test]
fn assistant_events_are_pinned() {
    check(assistant_events());
}

#[test]
fn unit_requests_accept_missing_optional_fields() {
    assert_eq!(
        parse::<Request>(br#"{"type":"subscribe"}"#),
        Ok(Request::Subscribe { viewer: false })
    );
    assert_eq!(parse::<Request>(br#"{"type":"confirm"}"#), Ok(Request::Confirm { call_id: None }));
    assert_eq!(
        parse::<Request>(br#"{"type":"command_execute"}"#),
        Ok(Request::CommandExecute { wait_ms: None })
    );
}

#[test]
fn unknown_error_codes_from_newer_peers_still_parse() {
    let event = parse::<AssistantEvent>(br#"{"type":"error","code":"quantum","message":"m"}"#);
    assert_eq!(event, Ok(AssistantEvent::Error(ErrorMsg::new(ErrorCode::Other, "m"))));
}

#[test]
fn a_version_mismatch_says_what_to_do() {
    let theirs =
        Hello { protocol_version: 4, peer: "stt-assistant".into(), version: "0.3.0".into() };
    let err = theirs.check("stt-ctl").unwrap_err();
    assert_eq!(err.code, ErrorCode::VersionMismatch);
    assert!(err.message.contains("stt-assistant speaks protocol v4, this stt-ctl speaks v3"));
    assert!(err.message.contains("restart"));
    assert!(Hello::new("stt-assistant").check("stt-ctl").is_ok());
}

#[test]
fn a_request_id_comes_back_as_in_reply_to() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/PROTOCOL.md"))
            .unwrap();
    let cases = [
        (
            r#"{"type":"command_start","id":7}"#,
            Ok(Request::CommandStart),
            AssistantEvent::Ack(Ack { command: "command_start".into(), ok: true }),
            r#"{"type":"ack","command":"command_start","ok":true,"in_reply_to":7}"#,
        ),
        (
            r#"{"type":"fly","id":"req-8"}"#,
            Err(ErrorCode::UnknownType),
            AssistantEvent::Error(parse::<Request>(br#"{"type":"fly"}"#).unwrap_err().0),
            r#"{"type":"error","code":"unknown_type","message":"unknown message type 'fly' (protocol v3; known types: hello, subscribe, command_start, command_execute, command_cancel, command_edit, chat_toggle, dictate_start, dictate_stop, dictate_toggle, clear, status, speaker_list, speaker_name, speaker_forget, speaker_merge, confirm, deny, timer_cancel, chat_send, chat_command, chat_stop, memory, task, intents, voice_toggle)","in_reply_to":"req-8"}"#,
        ),
    ];
    for (request, parsed, reply, golden) in cases {
        assert_eq!(parse::<Request>(request.as_bytes()).map_err(|e| e.code()), parsed);
        let id = request_id(request.as_bytes());
        let line = reply_line(&reply, id.as_ref());
        assert_eq!(std::str::from_utf8(&line).unwrap(), format!("{golden}\n"));
        // The reply still parses as itself, and the doc shows both lines.
        assert_eq!(parse::<AssistantEvent>(golden.as_bytes()), Ok(reply));
        assert!(doc.contains(request) && doc.contains(golden), "docs/PROTOCOL.md lacks {golden}");
    }
}

#[test]
fn a_partial_splits_into_committed_words_and_the_tentative_tail() {
    let partial = |text: &str, committed_len| TranscriptPartial {
        seg_id: 1,
        text: text.into(),
        committed_len,
    };
    assert_eq!(partial("what time is", 9).split(), ("what time", " is"));
    assert_eq!(partial("what time is", 0).split(), ("", "what time is"));
    // Characters, not bytes.
    assert_eq!(partial("café au lait", 7).split(), ("café au", " lait"));
    // Past the end: all of it is committed.
    assert_eq!(partial("done", 40).split(), ("done", ""));
}
