//! `stt-daemon wyoming` as Home Assistant uses it: a client written here from the Wyoming
//! protocol (the header line, its data and payload), and the `wyoming` package's own Python
//! client (installed by scripts/setup from PyPI), each sending a recording of a person.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stt_testkit::speech::{Format, Line, Part, Speech};
use stt_testkit::{DEADLINE, Proc, Sandbox, real_speech, wait_for};

/// The reference package's version, as scripts/setup installs it.
const WYOMING_PY: &str = "wyoming-1.10.2";

/// The service on a free port of the loopback address, and that address.
fn service(sandbox: &Sandbox) -> (Proc, String) {
    service_with(sandbox, &[])
}

/// The same, with more arguments.
fn service_with(sandbox: &Sandbox, more: &[&str]) -> (Proc, String) {
    let mut args = vec!["wyoming", "--listen", "tcp://127.0.0.1:0"];
    args.extend(more);
    let proc = sandbox.spawn("stt-daemon", &args);
    let addr = wait_for("the service to listen", DEADLINE, || {
        let log = proc.log();
        log.split("answering Wyoming on tcp://")
            .nth(1)
            .map(|rest| rest.split_whitespace().next().unwrap_or_default().to_owned())
    });
    (proc, addr)
}

/// A client from the spec: one event is a JSON line, then `data_length` bytes of JSON data,
/// then `payload_length` bytes of payload.
struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    fn connect(addr: &str) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        Self { reader: BufReader::new(stream.try_clone().unwrap()), writer: stream }
    }

    fn send(&mut self, kind: &str, data: &Value, payload: &[u8]) {
        let data = serde_json::to_vec(data).unwrap();
        let mut header = json!({"type": kind, "version": "1.10.2", "data_length": data.len()});
        if !payload.is_empty() {
            header["payload_length"] = json!(payload.len());
        }
        let mut bytes = serde_json::to_vec(&header).unwrap();
        bytes.push(b'\n');
        bytes.extend(data);
        bytes.extend(payload);
        self.writer.write_all(&bytes).unwrap();
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
    }

    /// `describe`, and the kind of event that answers it; `None` when the service closed the
    /// connection (before the question was written, too).
    fn describe(&mut self) -> Option<String> {
        let header = b"{\"type\": \"describe\", \"data_length\": 0}\n";
        self.writer.write_all(header).ok()?;
        self.recv().map(|(kind, _)| kind)
    }

    /// The next event's type and data; `None` when the service closed the connection.
    fn recv(&mut self) -> Option<(String, Value)> {
        let mut line = String::new();
        if self.reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let header: Value = serde_json::from_str(&line).unwrap();
        let mut data = header.get("data").cloned().unwrap_or(json!({}));
        if let Some(n) = header["data_length"].as_u64().filter(|&n| n > 0) {
            let mut bytes = vec![0; usize::try_from(n).unwrap()];
            self.reader.read_exact(&mut bytes).unwrap();
            let more: Value = serde_json::from_slice(&bytes).unwrap();
            for (k, v) in more.as_object().unwrap() {
                data[k] = v.clone();
            }
        }
        if let Some(n) = header["payload_length"].as_u64().filter(|&n| n > 0) {
            let mut bytes = vec![0; usize::try_from(n).unwrap()];
            self.reader.read_exact(&mut bytes).unwrap();
        }
        Some((header["type"].as_str().unwrap().to_owned(), data))
    }

    /// Sends `pcm` (16-bit mono at `rate`) as one request in chunks of 100 ms; the
    /// transcript's text, and how long after `audio-stop` it came.
    fn transcribe(&mut self, pcm: &[u8], rate: u32) -> (String, Duration) {
        let format = json!({"rate": rate, "width": 2, "channels": 1});
        self.send("transcribe", &json!({"language": "en"}), &[]);
        self.send("audio-start", &format, &[]);
        for chunk in pcm.chunks(usize::try_from(rate / 10 * 2).unwrap()) {
            self.send("audio-chunk", &format, chunk);
        }
        self.send("audio-stop", &json!({}), &[]);
        let stopped = Instant::now();
        let (kind, data) = self.recv().expect("an answer");
        assert_eq!(kind, "transcript", "{data}");
        (data["text"].as_str().unwrap().to_owned(), stopped.elapsed())
    }
}

/// A WAV file's 16-bit samples and its rate.
fn pcm(wav: &Path) -> (Vec<u8>, u32) {
    let bytes = std::fs::read(wav).unwrap();
    let rate = u32::from_le_bytes(bytes[24..28].try_into().unwrap());
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let len =
            usize::try_from(u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap())).unwrap();
        if &bytes[at..at + 4] == b"data" {
            return (bytes[at + 8..(at + 8 + len).min(bytes.len())].to_vec(), rate);
        }
        at += 8 + len + (len & 1);
    }
    panic!("{}: no data chunk", wav.display());
}

/// The test set's recording nearest 5 s of speech.
fn five_seconds() -> real_speech::Clip {
    let clips = real_speech::test_set();
    clips
        .into_iter()
        .min_by(|a, b| (a.speech_s - 5.0).abs().total_cmp(&(b.speech_s - 5.0).abs()))
        .expect("a recording")
}

#[test]
fn a_client_from_the_spec_is_described_the_model_and_gets_transcripts() {
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let (proc, addr) = service(&sandbox);
    let mut client = Client::connect(&addr);

    client.send("describe", &json!({}), &[]);
    let (kind, info) = client.recv().unwrap();
    assert_eq!(kind, "info");
    let asr = &info["asr"][0];
    assert_eq!(asr["name"], "stt");
    assert_eq!(asr["installed"], true);
    assert!(asr["models"][0]["name"].as_str().unwrap().contains("ggml"), "{info}");
    assert_eq!(asr["models"][0]["languages"], json!(["en"]));

    // A person's recording, 16 kHz.
    let clip = five_seconds();
    let (audio, rate) = pcm(&clip.file);
    let (text, took) = client.transcribe(&audio, rate);
    let wer = real_speech::spoken_wer(&clip.text, &text);
    eprintln!(
        "{:.1} s of speech: {text:?} (WER {wer:.2}) {} ms after audio-stop",
        clip.speech_s,
        took.as_millis()
    );
    assert!(wer < 0.5, "{:?} heard as {text:?}\n{}", clip.text, proc.log());

    // espeak-ng at its own 22,050 Hz, on the same connection: resampled.
    let speech = Speech::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("speech"));
    let said =
        "Turn on the kitchen lights, then set a timer for ten minutes and play some quiet music.";
    let wav = speech.clip(
        &[Part::Silence(0.3), Part::Say(Line { text: said, voice: "en-us" }), Part::Silence(0.3)],
        Format::wav(22_050, 1),
    );
    let (audio, rate) = pcm(&wav);
    assert_eq!(rate, 22_050);
    let (text, took) = client.transcribe(&audio, rate);
    #[allow(clippy::cast_precision_loss, reason = "seconds of audio")]
    let seconds = audio.len() as f64 / 2.0 / f64::from(rate);
    eprintln!(
        "{seconds:.1} s of espeak-ng at 22,050 Hz: {text:?} {} ms after audio-stop",
        took.as_millis()
    );
    assert!(text.to_lowercase().contains("kitchen light"), "{text:?}");

    // A request out of order is refused and the connection goes on; garbage ends it.
    client.send("audio-chunk", &json!({"rate": 16000, "width": 2, "channels": 1}), &[0, 0]);
    let (kind, data) = client.recv().unwrap();
    assert_eq!((kind.as_str(), data["code"].as_str()), ("error", Some("bad_audio")), "{data}");
    client.send("ping", &json!({"text": "hi"}), &[]);
    assert_eq!(client.recv().unwrap().0, "pong");
    client.send_raw(b"this is not json\n");
    let (kind, data) = client.recv().unwrap();
    assert_eq!(kind, "error", "{data}");
    assert!(data["text"].as_str().unwrap().contains("cannot read"), "{data}");
    assert!(client.recv().is_none(), "the connection is closed");
    // The service goes on for the next client.
    let mut again = Client::connect(&addr);
    again.send("describe", &json!({}), &[]);
    assert_eq!(again.recv().unwrap().0, "info");
}

/// Where scripts/setup installs the `wyoming` package (a `--target` directory).
fn wyoming_package() -> Option<PathBuf> {
    let dir = stt_testkit::cache_dir()?.join("python").join(WYOMING_PY);
    dir.join("wyoming").is_dir().then_some(dir)
}

#[test]
#[allow(clippy::print_stderr, reason = "the skip is reported where cargo test shows it")]
fn the_wyoming_packages_own_client_gets_a_transcript() {
    let Some(package) = wyoming_package() else {
        assert!(
            std::env::var_os("STT_TEST_STRICT").is_none(),
            "the wyoming package is not installed: run scripts/setup"
        );
        eprintln!("skipped: the wyoming package is not installed (scripts/setup installs it)");
        return;
    };
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let (proc, addr) = service(&sandbox);
    let clip = five_seconds();
    let (host, port) = addr.rsplit_once(':').unwrap();
    let script = r#"
import asyncio, sys, wave
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioStart, AudioChunk, AudioStop

async def main(host, port, path):
    async with AsyncTcpClient(host, int(port)) as client:
        await client.write_event(Describe().event())
        while True:
            event = await client.read_event()
            if Info.is_type(event.type):
                info = Info.from_event(event)
                print("model", info.asr[0].models[0].name)
                break
        with wave.open(path, "rb") as w:
            rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
            audio = w.readframes(w.getnframes())
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(rate=rate, width=width, channels=channels).event())
        step = rate // 10 * width * channels
        for i in range(0, len(audio), step):
            await client.write_event(AudioChunk(rate=rate, width=width, channels=channels, audio=audio[i:i + step]).event())
        await client.write_event(AudioStop().event())
        while True:
            event = await client.read_event()
            if Transcript.is_type(event.type):
                print("text", Transcript.from_event(event).text)
                return

asyncio.run(main(*sys.argv[1:]))
"#;
    let out = std::process::Command::new("python3")
        .env("PYTHONPATH", &package)
        .args(["-c", script, host, port])
        .arg(&clip.file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        proc.log()
    );
    assert!(stdout.contains("model ggml"), "{stdout}");
    let text = stdout.lines().find_map(|l| l.strip_prefix("text ")).unwrap_or_default();
    let wer = real_speech::spoken_wer(&clip.text, text);
    assert!(wer < 0.5, "{:?} heard as {text:?}", clip.text);
}

/// Home Assistant's wake and voice stages with the `wyoming` package's own client: `detect`
/// streamed a recording with "hey jarvis" in it gets one `detection` (named, with its time),
/// one without it `not-detected`; `synthesize` gets the configured voice as audio, which
/// whisper hears back as the words.
#[test]
#[allow(clippy::print_stderr, reason = "the skip is reported where cargo test shows it")]
fn the_wyoming_packages_own_client_detects_the_wake_phrase_and_hears_the_voice() {
    let head = stt_testkit::models_dir().join("wake/hey_jarvis.onnx");
    let (Some(package), true) = (wyoming_package(), head.is_file()) else {
        assert!(
            std::env::var_os("STT_TEST_STRICT").is_none(),
            "the wyoming package or the hey_jarvis head is not installed: run scripts/setup \
             and scripts/fetch-wake --head hey_jarvis"
        );
        eprintln!("skipped: the wyoming package or the hey_jarvis head is not installed");
        return;
    };
    let _turn = crate::one_at_a_time();
    let sandbox = Sandbox::new();
    let (proc, addr) = service(&sandbox);
    let speech = Speech::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("speech"));
    let said = |text| Part::Say(Line { text, voice: "en-us" });
    let called = speech.clip(
        &[Part::Silence(0.5), said("hey jarvis"), Part::Silence(0.5), said("turn on the lights")],
        Format::wav(22_050, 1),
    );
    let not_called = speech.clip(
        &[Part::Silence(0.5), said("turn on the kitchen lights"), Part::Silence(0.5)],
        Format::wav(16_000, 1),
    );
    let spoken = sandbox.root().join("spoken.wav");
    let (host, port) = addr.rsplit_once(':').unwrap();
    let script = r#"
import asyncio, sys, wave
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.wake import Detect, Detection, NotDetected
from wyoming.tts import Synthesize
from wyoming.audio import AudioStart, AudioChunk, AudioStop

async def listen(client, path):
    with wave.open(path, "rb") as w:
        rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
        audio = w.readframes(w.getnframes())
    await client.write_event(Detect(names=["hey_jarvis"]).event())
    await client.write_event(AudioStart(rate=rate, width=width, channels=channels).event())
    step = rate // 10 * width * channels
    for i in range(0, len(audio), step):
        await client.write_event(AudioChunk(rate=rate, width=width, channels=channels, audio=audio[i:i + step]).event())
    await client.write_event(AudioStop().event())
    while True:
        event = await client.read_event()
        if Detection.is_type(event.type):
            d = Detection.from_event(event)
            print("detection", d.name, d.timestamp)
            return
        if NotDetected.is_type(event.type):
            print("not-detected")
            return

async def main(host, port, called, not_called, spoken):
    async with AsyncTcpClient(host, int(port)) as client:
        await client.write_event(Describe().event())
        while True:
            event = await client.read_event()
            if Info.is_type(event.type):
                info = Info.from_event(event)
                print("wake", " ".join(m.name for m in info.wake[0].models))
                print("tts", info.tts[0].voices[0].name)
                break
        await listen(client, called)
        await listen(client, not_called)
        await client.write_event(Synthesize(text="The lights are on now.").event())
        audio, rate = b"", None
        while True:
            event = await client.read_event()
            if AudioStart.is_type(event.type):
                rate = AudioStart.from_event(event).rate
            elif AudioChunk.is_type(event.type):
                audio += AudioChunk.from_event(event).audio
            elif AudioStop.is_type(event.type):
                break
        with wave.open(spoken, "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate); w.writeframes(audio)
        print("spoken", rate, len(audio) // 2)

asyncio.run(main(*sys.argv[1:]))
"#;
    let out = std::process::Command::new("python3")
        .env("PYTHONPATH", &package)
        .args(["-c", script, host, port])
        .args([&called, &not_called, &spoken])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        proc.log()
    );
    assert!(stdout.lines().any(|l| l.starts_with("wake ") && l.contains("hey_jarvis")), "{stdout}");
    assert!(stdout.contains("tts en_US-joe-medium"), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let detection = lines.iter().find_map(|l| l.strip_prefix("detection hey_jarvis "));
    let ms: u64 = detection.unwrap_or_else(|| panic!("no detection: {stdout}")).parse().unwrap();
    // Said after half a second of silence; heard within the phrase or just after it.
    assert!((500..3_000).contains(&ms), "detected at {ms} ms");
    assert!(lines.contains(&"not-detected"), "{stdout}");
    assert!(stdout.contains("spoken 22050 "), "{stdout}");
    // The voice's words, heard back by whisper.
    let heard = sandbox.run("stt-daemon", &["transcribe", spoken.to_str().unwrap()]);
    assert_eq!(heard.code, Some(0), "{heard:?}");
    assert!(heard.stdout.to_lowercase().contains("lights are on"), "{heard:?}");
}

/// More clients than the service serves at once: the one over is told so and closed, the
/// others are served; a client that stalls mid-event holds no one up and is closed once it
/// has been quiet for `--quiet-s`; a place given back is taken by the next client.
#[test]
fn more_clients_than_its_places_and_one_that_stalls_mid_event() {
    use stt_daemon::wyoming::CONNECTIONS;
    let sandbox = Sandbox::new();
    let (proc, addr) = service_with(&sandbox, &["--quiet-s", "3"]);
    let mut clients: Vec<Client> = (0..CONNECTIONS).map(|_| Client::connect(&addr)).collect();
    for client in &mut clients {
        assert_eq!(client.describe().as_deref(), Some("info"));
    }
    let mut over = Client::connect(&addr);
    let (kind, data) = over.recv().expect("an answer");
    assert_eq!((kind.as_str(), data["code"].as_str()), ("error", Some("busy")), "{data}");
    assert!(data["text"].as_str().unwrap().contains(&CONNECTIONS.to_string()), "{data}");
    assert!(over.recv().is_none(), "the client over the limit is closed");

    // One stalls in the middle of an event: its header says 40 bytes of data, 5 come.
    let mut stalled = clients.pop().unwrap();
    stalled.send_raw(b"{\"type\": \"describe\", \"data_length\": 40}\n{\"a\":");
    // Another goes; its place is taken by a new client, served while the stalled one waits.
    drop(clients.pop());
    let mut next = wait_for("a place for a new client", DEADLINE, || {
        let mut client = Client::connect(&addr);
        (client.describe().as_deref() == Some("info")).then_some(client)
    });
    assert_eq!(next.describe().as_deref(), Some("info"));
    let (kind, data) = stalled.recv().expect("the stalled client is told");
    assert_eq!((kind.as_str(), data["code"].as_str()), ("error", Some("timeout")), "{data}");
    assert!(stalled.recv().is_none(), "the stalled client is closed");
    assert!(proc.log().contains("sent nothing for"), "{}", proc.log());
}
