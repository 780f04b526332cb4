//! Speech recognition on another machine: any server of OpenAI's
//! `POST /v1/audio/transcriptions` (whisper.cpp's `whisper-server` with `--inference-path
//! /v1/audio/transcriptions`, speaches, a cloud endpoint), each segment sent as a WAV file,
//! with the local model as the fallback ([`Hybrid`]).
//!
//! Every failure says what to do: nothing answering, a time-out, a refused key, a wrong
//! path, a server error. With the local fallback a failed segment is transcribed here at
//! once, and the remote is left alone for [`REST`] before it is tried again, so one dead
//! server costs one time-out, not one per segment.

use std::time::{Duration, Instant};

use reqwest::blocking::multipart::{Form, Part};

use crate::worker::{Engine, Pass};
use crate::{AsrError, Transcription, Whisper, filter};

/// How long the remote is left alone after it failed (the local model serves meanwhile).
pub const REST: Duration = Duration::from_secs(30);

/// Where and how to reach the server. Its `Debug` never shows the key.
#[derive(Clone)]
pub struct RemoteConfig {
    /// The transcriptions URL, e.g. `http://10.0.0.5:8080/v1/audio/transcriptions`.
    pub url: String,
    /// The bearer key (already read from its variable); `None` sends none.
    pub key: Option<String>,
    /// The `model` field (OpenAI's `whisper-1`; whisper-server ignores it).
    pub model: String,
    /// A language code, or `"auto"`.
    pub language: String,
    /// How long one segment may take, connection included.
    pub timeout: Duration,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("url", &self.url)
            .field("key", &self.key.as_ref().map(|_| "…"))
            .field("model", &self.model)
            .field("language", &self.language)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Why a segment was not transcribed remotely. Each names the fix.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(
        "nothing answers at {url} ({why}): start the server (whisper-server --inference-path /v1/audio/transcriptions), or fix [daemon].remote_url"
    )]
    Unreachable { url: String, why: String },
    #[error(
        "{url} did not answer within {ms} ms: the server is busy or far; raise [daemon].remote_timeout_ms, or use a faster server"
    )]
    Timeout { url: String, ms: u128 },
    #[error(
        "{url} refused the key ({status}): set the variable [daemon].remote_key names to a key the server takes"
    )]
    Refused { url: String, status: u16 },
    #[error(
        "{url} has no transcription endpoint (404): set [daemon].remote_url to the full …/v1/audio/transcriptions URL"
    )]
    NotFound { url: String },
    #[error("{url} answered {status}: {said}")]
    Status { url: String, status: u16, said: String },
    #[error(
        "{url} answered something that is not a transcription ({why}): is it an OpenAI-compatible /v1/audio/transcriptions?"
    )]
    BadReply { url: String, why: String },
    #[error(
        "{url} needs HTTPS, and this build has no TLS: build stt-daemon with --features https, or use http://"
    )]
    NoTls { url: String },
}

/// A client of one transcription server. Blocking: make, use and drop it on a thread of its
/// own (the whisper worker's), never inside an async runtime.
#[derive(Debug)]
pub struct Remote {
    config: RemoteConfig,
    client: reqwest::blocking::Client,
}

impl Remote {
    pub fn new(config: RemoteConfig) -> Result<Self, RemoteError> {
        let client = reqwest::blocking::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| RemoteError::Unreachable {
                url: config.url.clone(),
                why: e.to_string(),
            })?;
        Ok(Self { config, client })
    }

    pub fn url(&self) -> &str {
        &self.config.url
    }

    /// The host audio goes to, for people: `10.0.0.5:8080`.
    pub fn host(&self) -> String {
        host(&self.config.url)
    }

    /// The text of 16 kHz mono `samples`; `prompt` is whisper's initial prompt (the
    /// vocabulary), sent when not empty.
    pub fn transcribe(&self, samples: &[f32], prompt: &str) -> Result<String, RemoteError> {
        let url = self.config.url.clone();
        let file = Part::bytes(stt_audio::wav_bytes(samples))
            .file_name("segment.wav")
            .mime_str("audio/wav")
            .map_err(|e| RemoteError::BadReply { url: url.clone(), why: e.to_string() })?;
        let mut form = Form::new();
        for (name, value, sent) in [
            ("model", self.config.model.as_str(), !self.config.model.is_empty()),
            ("language", self.config.language.as_str(), self.config.language != "auto"),
            ("prompt", prompt, !prompt.is_empty()),
            ("response_format", "json", true),
            ("temperature", "0", true),
        ] {
            if sent {
                form = form.text(name, value.to_owned());
            }
        }
        let mut request = self.client.post(&url).multipart(form.part("file", file));
        if let Some(key) = &self.config.key {
            request = request.bearer_auth(key);
        }
        // A time-out names the limit set, not the moment the clock noticed.
        let limit = self.config.timeout.as_millis();
        let reply = request.send().map_err(|e| {
            if e.is_timeout() {
                RemoteError::Timeout { url: url.clone(), ms: limit }
            } else if url.starts_with("https://") && e.is_builder() {
                RemoteError::NoTls { url: url.clone() }
            } else {
                RemoteError::Unreachable { url: url.clone(), why: root_cause(&e) }
            }
        })?;
        let status = reply.status().as_u16();
        let text = reply.text().map_err(|e| {
            if e.is_timeout() {
                RemoteError::Timeout { url: url.clone(), ms: limit }
            } else {
                RemoteError::BadReply { url: url.clone(), why: e.to_string() }
            }
        })?;
        match status {
            200..=299 => {}
            401 | 403 => return Err(RemoteError::Refused { url, status }),
            404 => return Err(RemoteError::NotFound { url }),
            _ => {
                let said = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| {
                        v.pointer("/error/message")
                            .or_else(|| v.get("error"))
                            .and_then(|m| m.as_str().map(str::to_owned))
                    })
                    .unwrap_or_else(|| {
                        text.lines().next().unwrap_or("").chars().take(200).collect()
                    });
                return Err(RemoteError::Status { url, status, said });
            }
        }
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| RemoteError::BadReply { url: url.clone(), why: e.to_string() })?;
        value
            .get("text")
            .and_then(serde_json::Value::as_str)
            .map(|t| t.trim().to_owned())
            .ok_or_else(|| RemoteError::BadReply {
                url,
                why: format!("no \"text\" in {text:.200}"),
            })
    }
}

/// The host of `url`, for people: `10.0.0.5:8080`.
pub fn host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// The innermost cause of a request error (reqwest wraps hyper wraps io).
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// Remote first, the local model as the fallback: the engine the worker runs when
/// `[daemon].asr = "remote"`.
///
/// - A final (and a pause pass) goes to the remote; when it fails, the local model
///   transcribes it at once (with a fallback) and the failure is told in the transcription's
///   `note`; the remote then rests for [`REST`] (segments go to the local model meanwhile).
///   Without a fallback the failure is the segment's error.
/// - A live partial never leaves the machine: the local model reads it, or (without one)
///   there are no partials.
#[derive(Debug)]
pub struct Hybrid {
    remote: Remote,
    local: Option<Whisper>,
    name: String,
    /// Until when the remote is left alone.
    resting: Option<Instant>,
    prompt: String,
}

impl Hybrid {
    pub fn new(remote: Remote, local: Option<Whisper>) -> Self {
        let name = match &local {
            Some(w) => format!("remote {} (fallback {})", remote.host(), w.model_name()),
            None => format!("remote {}", remote.host()),
        };
        Self { remote, local, name, resting: None, prompt: String::new() }
    }

    fn local(
        &mut self,
        pass: Pass,
        samples: &[f32],
        speech_s: f64,
    ) -> Result<Transcription, AsrError> {
        match &mut self.local {
            Some(whisper) => Engine::transcribe(whisper, pass, samples, speech_s),
            None => Ok(Transcription::nothing("")),
        }
    }
}

impl Engine for Hybrid {
    fn model_name(&self) -> &str {
        &self.name
    }

    fn transcribe(
        &mut self,
        pass: Pass,
        samples: &[f32],
        speech_s: f64,
    ) -> Result<Transcription, AsrError> {
        if pass == Pass::Partial {
            return self.local(pass, samples, speech_s);
        }
        if self.local.is_some() && self.resting.is_some_and(|until| Instant::now() < until) {
            return self.local(pass, samples, speech_s);
        }
        match self.remote.transcribe(samples, &self.prompt) {
            Ok(raw) => {
                self.resting = None;
                let heard =
                    filter::Heard { text: &raw, no_speech_prob: 0.0, rms: filter::rms(samples) };
                let text = filter::clean(&heard).map(|t| filter::bound(&t, speech_s));
                Ok(Transcription {
                    text,
                    raw,
                    ..Transcription::nothing(&self.remote.config.language)
                })
            }
            Err(e) if self.local.is_some() => {
                self.resting = Some(Instant::now() + REST);
                let mut t = self.local(pass, samples, speech_s)?;
                t.note = Some(format!(
                    "{e}; transcribed on this machine instead (the server is tried again in {} s)",
                    REST.as_secs()
                ));
                Ok(t)
            }
            Err(e) => Err(AsrError::Remote(e.to_string())),
        }
    }

    fn set_vocabulary(&mut self, terms: &[String]) -> Result<(), AsrError> {
        self.prompt = if terms.is_empty() {
            String::new()
        } else {
            format!("Glossary: {}.", terms.join(", "))
        };
        match &mut self.local {
            Some(w) => Engine::set_vocabulary(w, terms),
            None => Ok(()),
        }
    }

    fn shed(&mut self) -> Result<(), AsrError> {
        match &mut self.local {
            Some(w) => w.shed(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;

    use super::*;

    /// A server that answers one request with `status` and `body` (or never, when `status`
    /// is 0), and hands back what it was sent.
    fn server(status: u16, body: &'static str) -> (String, mpsc::Receiver<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/audio/transcriptions", listener.local_addr().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0; 65_536];
            // Read until the multipart body's closing boundary.
            while !got.ends_with(b"--\r\n") {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            let _ = tx.send(got);
            if status == 0 {
                std::thread::sleep(Duration::from_secs(5));
                return;
            }
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        });
        (url, rx)
    }

    fn remote(url: &str, timeout_ms: u64) -> Remote {
        Remote::new(RemoteConfig {
            url: url.to_owned(),
            key: Some("sk-test".into()),
            model: "whisper-1".into(),
            language: "en".into(),
            timeout: Duration::from_millis(timeout_ms),
        })
        .unwrap()
    }

    #[test]
    fn a_segment_goes_as_a_wav_file_with_the_key_and_comes_back_as_text() {
        let (url, sent) = server(200, r#"{"text":" Turn on the lights. "}"#);
        let text = remote(&url, 5000).transcribe(&[0.25; 1600], "Glossary: Efren.").unwrap();
        assert_eq!(text, "Turn on the lights.");
        let sent = String::from_utf8_lossy(&sent.recv().unwrap()).into_owned();
        for part in [
            "POST /v1/audio/transcriptions",
            "authorization: Bearer sk-test",
            "name=\"model\"\r\n\r\nwhisper-1",
            "name=\"language\"\r\n\r\nen",
            "name=\"prompt\"\r\n\r\nGlossary: Efren.",
            "filename=\"segment.wav\"",
            "RIFF",
            "WAVEfmt ",
        ] {
            assert!(
                sent.to_lowercase().contains(&part.to_lowercase()),
                "{part} not in {sent:.600}"
            );
        }
    }

    #[test]
    fn each_failure_names_its_fix() {
        let cases: [(u16, &str, &str); 4] = [
            (401, r#"{"error":{"message":"bad key"}}"#, "remote_key"),
            (404, "not found", "full …/v1/audio/transcriptions URL"),
            (500, r#"{"error":{"message":"model not loaded"}}"#, "answered 500: model not loaded"),
            (200, "<html>", "not a transcription"),
        ];
        for (status, body, says) in cases {
            let (url, _sent) = server(status, body);
            let why = remote(&url, 5000).transcribe(&[0.0; 160], "").unwrap_err().to_string();
            assert!(why.contains(says), "{status}: {why}");
        }
        // Nothing listening.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/v1/audio/transcriptions");
        let why = remote(&url, 5000).transcribe(&[0.0; 160], "").unwrap_err().to_string();
        assert!(why.contains("nothing answers") && why.contains("remote_url"), "{why}");
        // A server that never answers.
        let (url, _sent) = server(0, "");
        let started = Instant::now();
        let why = remote(&url, 300).transcribe(&[0.0; 160], "").unwrap_err().to_string();
        assert!(why.contains("within 300 ms") && why.contains("remote_timeout_ms"), "{why}");
        assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    }

    #[test]
    fn without_a_local_model_a_failed_segment_is_an_error_and_partials_stay_here() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/v1/audio/transcriptions");
        let mut hybrid = Hybrid::new(remote(&url, 1000), None);
        assert_eq!(Engine::model_name(&hybrid), format!("remote 127.0.0.1:{port}"));
        let partial = Engine::transcribe(&mut hybrid, Pass::Partial, &[0.0; 160], 0.01).unwrap();
        assert_eq!(partial.text, None, "a partial never leaves the machine");
        let err = Engine::transcribe(&mut hybrid, Pass::Final, &[0.0; 160], 0.01).unwrap_err();
        assert!(
            matches!(err, AsrError::Remote(ref why) if why.contains("nothing answers")),
            "{err}"
        );
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let shown =
            format!("{:?}", Hybrid::new(remote("http://h:1/v1/audio/transcriptions", 100), None));
        assert!(!shown.contains("sk-test"), "{shown}");
        assert!(shown.contains("h:1"), "{shown}");
    }
}
