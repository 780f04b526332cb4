#!/usr/bin/env python3
"""Wake-word benchmark for stt, run by scripts/bench-wake (which builds and fetches what it needs).

Makes the audio (or takes it from the cache, where an earlier run left it), runs the detector
over it with crates/stt-wake/examples/wake_bench.rs (one lane per phrase, as the daemon runs
one), and prints a Markdown report:
  1. recall: each phrase said by every voice, alone and leading a command, clean and at 10 dB
     SNR under four noises, a clip heard when its phrase is detected between the clip's start
     and half a second after its end;
  2. false accepts per hour on sources with no wake phrase in them, each source named with
     where it came from;
  3. the CPU of each lane per second of audio, as a share of one core.
With --write FILE it replaces the section between <!-- wake: start --> and <!-- wake: end -->
in FILE (appending it when FILE has no such section). Everything random is drawn from
generators seeded from SEED and the name of what they make, so every run makes the same audio,
except Piper's (its model samples noise inside ONNX Runtime): that is made once and cached.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

RATE = 16_000
SEED = 47  # the number
RECIPE = 1  # made audio is rebuilt when this changes
SNR_DB = 10.0
SPEECH_DBFS = -23.0  # the level every clip of speech is brought to (its active speech)
LEAD_S = 1.0  # before each wake clip in a recall stream
TAIL_S = 1.6  # after it: with the lead, more than the detector's 2 s refractory time
HIT_AFTER_S = 0.5  # a detection this long after a clip's end still counts for it
QUICK_S = 180  # seconds of each false-accept source in --quick
QUICK_SPEECH_S = 60  # of each real-speech source in --quick
FULL_S = 40 * 60  # of music, TV and stt's voice in a full run (real speech: all there is)
SECTION = "wake"

# Detector name, what is said, and how it is listened for.
PHRASES = [
    ("hey_jarvis", "hey jarvis", "openWakeWord's head, threshold 0.5"),
    ("alexa", "alexa", "openWakeWord's head, threshold 0.5"),
    ("hey_computer", "hey computer", "enrolled from 3 espeak-ng takes of en-us+m1 (160, 175, 190 wpm)"),
]
ENROL_VOICE = "en-us+m1"
ENROL_WPM = (160, 175, 190)

# label | engine | voice | words per minute
VOICES = [
    ("en-us", "espeak", "en-us", 175),
    ("en-gb", "espeak", "en-gb", 175),
    ("en-us+f2", "espeak", "en-us+f2", 175),
    ("en-us+f3", "espeak", "en-us+f3", 175),
    ("en-us+m3", "espeak", "en-us+m3", 175),
    ("en-us+m7", "espeak", "en-us+m7", 175),
    ("en-gb-scotland", "espeak", "en-gb-scotland", 175),
    ("en-us at 140 wpm", "espeak", "en-us", 140),
    ("en-us at 190 wpm", "espeak", "en-us", 190),
    ("en-gb-x-rp+f4", "espeak", "en-gb-x-rp+f4", 170),
    ("en-029 (Caribbean)", "espeak", "en-029", 170),
    ("en-us-nyc+m2", "espeak", "en-us-nyc+m2", 180),
    ("en-gb-x-gbclan+f1 (Lancaster)", "espeak", "en-gb-x-gbclan+f1", 165),
    ("en-gb-x-gbcwmd+m5 (West Midlands)", "espeak", "en-gb-x-gbcwmd+m5", 165),
    ("Piper en_US-joe-medium (stt's voice)", "piper", "joe", 0),
    # The enrolment voice at speeds it was not enrolled at: for "hey computer" these are
    # counted apart ("the enrolment voice"), not as other voices.
    ("en-us+m1 at 140 wpm (enrolment voice)", "espeak", ENROL_VOICE, 140),
    ("en-us+m1 at 210 wpm (enrolment voice)", "espeak", ENROL_VOICE, 210),
]
COMMANDS = [
    "what time is it?",
    "turn the music down a little.",
    "set a timer for ten minutes.",
    "what is the weather like tomorrow?",
    "open a new browser window.",
    "remind me to call my sister at six.",
]
CONDITIONS = ["clean", "fan", "music", "keyboard", "babble"]
CONDITION_WHAT = {
    "clean": "no noise",
    "fan": "pink and brown noise with a 100 Hz motor hum",
    "music": "excerpts of the music source below",
    "keyboard": "synthesised typing: bursts of key clicks, press and release, a louder space bar",
    "babble": "six talkers at once: four espeak-ng voices and two real ones (Asterisk's English and Spanish prompts)",
}

# Asterisk's prompts: Debian package, folder in it, language, speaker.
ASTERISK = [
    ("asterisk-core-sounds-en-wav", "en_US_f_Allison", "English (US)", "Allison Smith"),
    ("asterisk-core-sounds-es-wav", "es_MX_f_Allison", "Spanish (Mexico)", "Allison Smith"),
    ("asterisk-core-sounds-fr-wav", "fr_CA_f_June", "French (Canada)", "June Wallack"),
    ("asterisk-core-sounds-it-wav", "it_IT_m_Carlo", "Italian", "Carlo"),
]
MOH = "asterisk-moh-opsound-wav"


def log(msg: str) -> None:
    print(f"bench-wake: {msg}", file=sys.stderr, flush=True)


def rng_for(*names: object) -> np.random.Generator:
    """A generator seeded from SEED and `names`: the same audio on every run."""
    digest = hashlib.sha256(repr((SEED,) + names).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


# --- audio helpers ---------------------------------------------------------------------------


def read_raw(path: Path) -> np.ndarray:
    return np.fromfile(path, dtype="<i2").astype(np.float32) / 32768.0


def write_raw(path: Path, x: np.ndarray) -> None:
    (np.clip(x, -1.0, 1.0) * 32767.0).astype("<i2").tofile(path)


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path)) as w:
        assert w.getsampwidth() == 2, path
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
        if w.getnchannels() > 1:
            x = x.reshape(-1, w.getnchannels()).mean(axis=1)
        return x, w.getframerate()


def upsample2(x: np.ndarray) -> np.ndarray:
    """8 kHz to 16 kHz, band-limited (the spectrum padded with zeros)."""
    if len(x) == 0:
        return x
    spectrum = np.fft.rfft(x)
    padded = np.zeros(len(x) + 1, dtype=complex)
    padded[: len(spectrum)] = spectrum
    return (np.fft.irfft(padded, 2 * len(x)) * 2).astype(np.float32)


def to_16k(x: np.ndarray, rate: int) -> np.ndarray:
    if rate == RATE:
        return x
    if rate == 8000:
        return upsample2(x)
    raise ValueError(f"unexpected sample rate {rate}")


def frame_levels(x: np.ndarray) -> np.ndarray:
    """Power of each 10 ms frame."""
    n = len(x) // 160 * 160
    if n == 0:
        return np.array([float(np.mean(x**2)) if len(x) else 0.0])
    return np.mean(x[:n].reshape(-1, 160) ** 2, axis=1)


def active_power(x: np.ndarray) -> float:
    """Mean power of the frames within 35 dB of the loudest: the speech, not the pauses."""
    levels = frame_levels(x)
    loudest = levels.max()
    if loudest <= 0:
        return 0.0
    return float(levels[levels >= loudest * 10 ** (-35 / 10)].mean())


def normalise(x: np.ndarray, dbfs: float = SPEECH_DBFS) -> np.ndarray:
    p = active_power(x)
    if p <= 0:
        return x
    return (x * np.sqrt(10 ** (dbfs / 10) / p)).astype(np.float32)


def unit_power(x: np.ndarray) -> np.ndarray:
    p = float(np.mean(x**2)) if len(x) else 0.0
    return x / np.sqrt(p) if p > 0 else x


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * RATE)), dtype=np.float32)


# --- speech synthesis (cached per text) -------------------------------------------------------


class Tts:
    """espeak-ng and stt's own voice (`stt-ctl say --wav`), 16 kHz, each clip kept in `dir`."""

    def __init__(self, folder: Path, ctl: str, work: Path):
        self.dir = folder
        self.ctl = ctl
        self.config = work / "empty-config.toml"
        self.config.write_text("")  # stt's defaults: the voice scripts/fetch-voice installs
        folder.mkdir(parents=True, exist_ok=True)

    def _cached(self, key: str, make) -> np.ndarray:
        path = self.dir / (hashlib.sha256(key.encode()).hexdigest()[:20] + ".raw")
        if not path.exists():
            x = make()
            tmp = path.with_suffix(".tmp")
            write_raw(tmp, x)
            tmp.rename(path)
        return read_raw(path)

    def espeak(self, voice: str, wpm: int, text: str) -> np.ndarray:
        def make() -> np.ndarray:
            espeak = subprocess.run(
                ["espeak-ng", "--stdout", "-v", voice, "-s", str(wpm), text],
                capture_output=True, check=True,
            )
            sox = subprocess.run(
                ["sox", "-R", "-t", "wav", "-", "-r", str(RATE), "-c", "1", "-b", "16",
                 "-e", "signed-integer", "-L", "-t", "raw", "-"],
                input=espeak.stdout, capture_output=True, check=True,
            )
            return np.frombuffer(sox.stdout, dtype="<i2").astype(np.float32) / 32768.0

        return self._cached(f"espeak|{voice}|{wpm}|{text}", make)

    def piper(self, text: str) -> np.ndarray:
        def make() -> np.ndarray:
            with tempfile.TemporaryDirectory() as tmp:
                wav = Path(tmp) / "say.wav"
                out = Path(tmp) / "say.raw"
                r = subprocess.run([self.ctl, "--config", str(self.config), "say", text, "--wav", str(wav)],
                                   capture_output=True, text=True)
                if r.returncode != 0 or not wav.exists():
                    raise SystemExit(f"bench-wake: error: stt-ctl say failed ({r.returncode}): {r.stderr.strip()}\n"
                                     "  Fix: run scripts/fetch-voice and scripts/fetch-models, then rerun.")
                if "espeak-ng speaks instead" in r.stderr:
                    raise SystemExit(f"bench-wake: error: stt's Piper voice did not load: {r.stderr.strip()}")
                subprocess.run(["sox", "-R", str(wav), "-r", str(RATE), "-c", "1", "-b", "16",
                                "-e", "signed-integer", "-L", "-t", "raw", str(out)], check=True)
                return read_raw(out)

        return self._cached(f"piper|joe|{text}", make)

    def say(self, engine: str, voice: str, wpm: int, text: str) -> np.ndarray:
        return self.piper(text) if engine == "piper" else self.espeak(voice, wpm, text)


# --- text with no wake phrase in it -----------------------------------------------------------

PLACES = ["the city council", "the county", "the harbour authority", "the national weather service",
          "the school board", "the hospital", "the football club", "the university", "the museum",
          "the water company", "the rail operator", "the airport"]
SAID = ["said on Monday", "announced this morning", "confirmed late on Tuesday", "told reporters",
        "said in a statement", "warned on Friday", "admitted yesterday", "revealed this week"]
NEWS_WHAT = ["that the new bridge would open in the spring", "that ticket prices would rise by four percent",
             "that the storm had knocked out power to thousands of homes", "that the road works would last until March",
             "that the festival had drawn a record crowd", "that two hundred new jobs would be created",
             "that the library would stay open later on weekdays", "that the river had burst its banks near the old mill",
             "that the trial of the new buses had gone well", "that the budget was short by eleven million",
             "that the match had been postponed because of snow", "that a rare bird had been seen in the park"]
NEWS_AFTER = ["Residents are being asked to stay calm.", "More details are expected later today.",
              "Critics say the plan does not go far enough.", "The decision was welcomed by local businesses.",
              "Traffic is moving slowly on the main road.", "Officials will meet again next week.",
              "It is the third time this year.", "Nobody was hurt.", "Temperatures will fall sharply tonight.",
              "Back to you in the studio."]
DIALOGUE = ["Hey, how are you doing?", "I told you we should have left earlier.", "Where did you put the keys?",
            "That is not what I meant and you know it.", "Can you pass me the salt, please?",
            "Did you see the game last night?", "I have no idea what you are talking about.",
            "We need to talk about what happened at the party.", "Hey, wait for me!",
            "Honestly, I think the whole thing is a mistake.", "Are you coming to dinner on Sunday?",
            "The computer crashed again, so I lost everything.", "Let me get my coat.", "You look tired.",
            "Nobody tells me anything around here.", "I will call you when I land.", "Is that a new jacket?",
            "Turn left at the lights, then it is the second house.", "Why is the door open?",
            "Well, that went better than expected.", "Do you remember where we parked?", "Hey there, long time no see."]
ADS = ["Big savings this weekend only at your local furniture store.", "Buy one, get one free on every pizza, every Tuesday.",
       "Call now and ask about our easy payment plan.", "The new model is faster, lighter and quieter than ever.",
       "Terms and conditions apply.", "Visit us online or in store today.", "Fresh, local and always on time.",
       "Now with twenty percent more flavour.", "Hurry, offer ends Sunday.", "Your home deserves the very best."]
REPLY_TEMPLATES = [
    "The timer is set for {n} minutes.", "It is {n} degrees and {weather} in {city} right now.",
    "I added {item} to your shopping list.", "Your next meeting is at {hour} o'clock with the {team} team.",
    "I found {n} emails from last week that mention the budget.", "The file was moved to the archive folder.",
    "Tomorrow will be {weather} with a high of {n} degrees.", "I opened a new window in the browser.",
    "Okay, I will remind you to {errand} at {hour}.", "The volume is now at {n} percent.",
    "There are {n} days left until the end of the month.", "I could not find a file called {item}.",
    "Here is a short summary of the meeting: the {team} team will ship on {day}.",
    "Sure. I turned the music down.", "Done. The screen is locked.", "Your battery is at {n} percent.",
    "The translation is ready; shall I read it to you?", "I saved the note as {item}.",
    "It takes about {n} minutes to get to {city} by train.", "The {team} team moved the review to {day}.",
]
FILL = {
    "n": [str(n) for n in (2, 3, 5, 7, 10, 12, 15, 18, 21, 25, 30, 45)],
    "weather": ["sunny", "cloudy", "raining", "windy", "foggy", "clear", "snowing"],
    "city": ["Boston", "Leeds", "Toronto", "Dublin", "Denver", "Glasgow", "Seattle", "Bristol"],
    "item": ["milk", "bread", "coffee beans", "batteries", "the quarterly report", "notes for Monday", "eggs"],
    "hour": ["nine", "ten", "eleven", "two", "three", "four", "six"],
    "team": ["design", "sales", "support", "platform", "research"],
    "errand": ["call the dentist", "water the plants", "pay the rent", "pick up the parcel", "stretch"],
    "day": ["Monday", "Tuesday", "Thursday", "Friday"],
}
# Voices the TV and the babble speak with (none of them a recall voice but by chance of name).
TV_VOICES = ["en-us+m3", "en-gb+f2", "en-us+f4", "en-gb-scotland+m1", "en-us+m5", "en-gb-x-rp+m2",
             "en-us+f1", "en-029+m4", "en-us-nyc+f5", "en-gb-x-gbclan+m6"]


def pick(rng: np.random.Generator, items: list[str]) -> str:
    return items[int(rng.integers(len(items)))]


def news(rng: np.random.Generator) -> str:
    s = f"{pick(rng, PLACES).capitalize()} {pick(rng, SAID)} {pick(rng, NEWS_WHAT)}."
    return s + (" " + pick(rng, NEWS_AFTER) if rng.random() < 0.6 else "")


def reply(rng: np.random.Generator) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: pick(rng, FILL[m.group(1)]), pick(rng, REPLY_TEMPLATES))


# --- noises ------------------------------------------------------------------------------------


def coloured(n: int, rng: np.random.Generator, exponent: float) -> np.ndarray:
    """Noise whose power falls as 1/f**exponent above 20 Hz (1: pink, 2: brown), unit power."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    shape = np.zeros_like(f)
    shape[f >= 20] = f[f >= 20] ** (-exponent / 2)
    return unit_power(np.fft.irfft(spectrum * shape, n)).astype(np.float32)


def fan(n: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n) / RATE
    hum = sum(np.sin(2 * np.pi * 100 * k * t + rng.uniform(0, 6.3)) / k for k in (1, 2, 3))
    return unit_power(coloured(n, rng, 1) + 0.8 * coloured(n, rng, 2) + 0.15 * unit_power(hum)).astype(np.float32)


def keyboard(n: int, rng: np.random.Generator) -> np.ndarray:
    """Typing: bursts of keys at 5 to 11 a second, each a click when pressed and a softer one
    when released, the space bar lower and louder; pauses between bursts."""
    out = np.zeros(n, dtype=np.float32)

    def click(at: float, amp: float, tone: float) -> None:
        i = int(at * RATE)
        length = int(0.012 * RATE)
        if i + length >= n:
            return
        k = np.arange(length) / RATE
        burst = rng.standard_normal(length) * np.exp(-k / 0.0015)
        thock = np.sin(2 * np.pi * tone * k) * np.exp(-k / 0.003)
        out[i:i + length] += amp * (0.6 * np.diff(burst, prepend=0) + 0.4 * thock)

    t = float(rng.uniform(0, 0.4))
    while t < n / RATE:
        for _ in range(int(rng.integers(3, 16))):
            space = rng.random() < 0.18
            amp = float(rng.uniform(0.6, 1.0)) * (1.4 if space else 1.0)
            tone = 700.0 if space else float(rng.uniform(1800, 3800))
            click(t, amp, tone)
            click(t + float(rng.uniform(0.05, 0.12)), amp * 0.45, tone * 1.1)
            t += float(rng.uniform(0.09, 0.2))
        t += float(rng.uniform(0.3, 1.8))
    return unit_power(out)


PROGRESSIONS = [[0, 7, 9, 5], [0, 5, 7, 5], [9, 5, 0, 7], [0, 9, 5, 7], [2, 7, 0, 0]]
MINOR = {9, 2, 4}  # scale degrees whose triad is minor


def synth_music(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Pieces of 20 to 45 s: a four-chord progression (pad, bass, a plucked line on chord
    tones), a kick, a snare and a hi-hat, each piece in its own key and tempo."""
    n = int(seconds * RATE)
    out = np.zeros(n + RATE * 4, dtype=np.float32)

    def note(at: int, freq: float, length: float, amp: float, decay: float, harmonics: int) -> None:
        m = int(length * RATE)
        k = np.arange(m) / RATE
        env = np.minimum(k / 0.01, 1.0) * np.exp(-k / decay)
        wave_ = sum(np.sin(2 * np.pi * freq * h * k) / h for h in range(1, harmonics + 1))
        out[at:at + m] += (amp * env * wave_)[: len(out) - at]

    def drum(at: int, kind: str) -> None:
        m = int(0.2 * RATE)
        k = np.arange(m) / RATE
        if kind == "kick":
            sound = np.sin(2 * np.pi * (45 + 60 * np.exp(-k / 0.03)) * k) * np.exp(-k / 0.08)
        elif kind == "snare":
            sound = 0.5 * rng.standard_normal(m) * np.exp(-k / 0.05) + 0.3 * np.sin(2 * np.pi * 190 * k) * np.exp(-k / 0.04)
        else:
            sound = 0.15 * np.diff(rng.standard_normal(m), prepend=0) * np.exp(-k / 0.012)
        out[at:at + m] += sound[: len(out) - at]

    t = 0
    while t < n:
        key = 110.0 * 2 ** (int(rng.integers(0, 12)) / 12)
        beat = 60.0 / float(rng.uniform(78, 138))
        progression = PROGRESSIONS[int(rng.integers(len(PROGRESSIONS)))]
        piece_end = t + int(float(rng.uniform(20, 45)) * RATE)
        bar = 0
        while t < min(piece_end, n):
            degree = progression[bar % 4]
            root = key * 2 ** (degree / 12)
            triad = [0, 3 if degree in MINOR else 4, 7]
            for step in triad:
                note(t, root * 2 * 2 ** (step / 12), 4 * beat, 0.08, 1.5, 4)
            for b in range(4):
                at = t + int(b * beat * RATE)
                if b in (0, 2):
                    note(at, root / 2, beat, 0.25, 0.3, 3)
                    drum(at, "kick")
                else:
                    drum(at, "snare")
                for half in (0, 1):
                    drum(at + int(half * beat / 2 * RATE), "hat")
                    if rng.random() < 0.6:
                        step = triad[int(rng.integers(3))] + 12 * int(rng.integers(1, 3))
                        note(at + int(half * beat / 2 * RATE), root * 2 ** (step / 12), beat, 0.12, 0.15, 2)
            t += int(4 * beat * RATE)
            bar += 1
    return normalise(out[:n], -20.0)


# --- the sources -------------------------------------------------------------------------------


class Sources:
    """Where the audio comes from: the packages, unpacked once into the work directory."""

    def __init__(self, debs: dict[str, Path], speech: Path, work: Path, tts: Tts, quick: bool):
        self.debs = debs
        self.speech = speech
        self.work = work
        self.tts = tts
        self.quick = quick
        self._unpacked: dict[str, Path] = {}
        self._prompts: dict[str, list[Path]] = {}
        self._music: np.ndarray | None = None
        self._babble: np.ndarray | None = None

    def unpack(self, package: str) -> Path:
        if package not in self._unpacked:
            dest = self.work / package
            subprocess.run(["dpkg-deb", "-x", str(self.debs[package]), str(dest)], check=True)
            self._unpacked[package] = dest
        return self._unpacked[package]

    def prompts(self, package: str, folder: str) -> list[Path]:
        """Every prompt of a voice, in a seeded order."""
        if package not in self._prompts:
            root = self.unpack(package) / "usr/share/asterisk/sounds" / folder
            files = sorted(root.rglob("*.wav"))
            order = rng_for("prompts", package).permutation(len(files))
            self._prompts[package] = [files[i] for i in order]
        return self._prompts[package]

    def real_speech(self, package: str, folder: str, seconds: float | None) -> tuple[np.ndarray, int]:
        """The prompts one after another (each at SPEECH_DBFS, 0.3 to 1 s apart), up to
        `seconds` (all of them when None); and how many were used."""
        rng = rng_for("real-speech", package)
        parts, total, used = [], 0, 0
        for path in self.prompts(package, folder):
            x, rate = read_wav(path)
            x = normalise(to_16k(x, rate))
            gap = silence(float(rng.uniform(0.3, 1.0)))
            parts += [x, gap]
            total += len(x) + len(gap)
            used += 1
            if seconds is not None and total >= seconds * RATE:
                break
        return np.concatenate(parts), used

    def fetch_speech(self) -> tuple[np.ndarray, list[dict]]:
        """scripts/fetch-speech's recordings but Asterisk's (they are in the sources above)."""
        manifest = json.loads((self.speech / "manifest.json").read_text())
        clips = [c for c in manifest if "asterisk" not in c["source"]]
        rng = rng_for("fetch-speech")
        parts = []
        for c in clips:
            x, rate = read_wav(self.speech / c["file"])
            parts += [normalise(to_16k(x, rate)), silence(float(rng.uniform(0.5, 1.5)))]
        return np.concatenate(parts), clips

    def moh(self, seconds: float | None) -> tuple[np.ndarray, list[str]]:
        """The five music-on-hold tracks; with `seconds`, an excerpt of each from its middle."""
        root = self.unpack(MOH) / "usr/share/asterisk/moh"
        tracks = sorted(root.glob("*.wav"))
        parts = []
        for path in tracks:
            x, rate = read_wav(path)
            x = to_16k(x, rate)
            if seconds is not None:
                take = int(seconds / len(tracks) * RATE)
                start = max(0, (len(x) - take) // 2)
                x = x[start:start + take]
            parts.append(normalise(x, -20.0))
        return np.concatenate(parts), [p.stem for p in tracks]

    def music_bed(self) -> np.ndarray:
        """What the music noise of the recall streams is cut from: real tracks and synthesised."""
        if self._music is None:
            real, _ = self.moh(120.0)
            self._music = np.concatenate([real, synth_music(120.0, rng_for("music-bed"))])
        return self._music

    def babble_bed(self, seconds: float = 150.0) -> np.ndarray:
        """Six talkers at once: four espeak-ng voices reading news and dialogue, and Asterisk's
        English and Spanish prompts."""
        if self._babble is None:
            n = int(seconds * RATE)
            talkers = []
            for i, voice in enumerate(TV_VOICES[:4]):
                rng = rng_for("babble", voice)
                parts, total = [], 0
                while total < n:
                    text = news(rng) if rng.random() < 0.5 else pick(rng, DIALOGUE)
                    x = normalise(self.tts.espeak(voice, int(rng.integers(150, 200)), text))
                    parts += [x, silence(float(rng.uniform(0.1, 0.4)))]
                    total += len(x) + len(parts[-1])
                talkers.append(np.concatenate(parts)[:n])
            for package, folder, _, _ in ASTERISK[:2]:
                x, _ = self.real_speech(package, folder, seconds)
                talkers.append(x[:n])
            self._babble = normalise(sum(t[:n] for t in talkers), -20.0)
        return self._babble

    def excerpt(self, bed: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        start = int(rng.integers(0, max(1, len(bed) - n)))
        x = bed[start:start + n]
        if len(x) < n:
            x = np.concatenate([x, np.zeros(n - len(x), dtype=np.float32)])
        return unit_power(x)

    def noise(self, condition: str, n: int, rng: np.random.Generator) -> np.ndarray | None:
        if condition == "clean":
            return None
        if condition == "fan":
            return fan(n, rng)
        if condition == "keyboard":
            return keyboard(n, rng)
        if condition == "music":
            return self.excerpt(self.music_bed(), n, rng)
        if condition == "babble":
            return self.excerpt(self.babble_bed(), n, rng)
        raise ValueError(condition)

    def tv(self, seconds: float) -> np.ndarray:
        """TV-like: news read by an anchor (a music bed under it half the time), scenes of two
        or three people talking, adverts read fast over music, and crowds, one after another."""
        rng = rng_for("tv")
        bed = self.music_bed()
        parts, total, n = [], 0, int(seconds * RATE)
        while total < n:
            kind = rng.choice(["news", "dialogue", "advert", "crowd"], p=[0.35, 0.35, 0.15, 0.15])
            if kind == "news":
                voice = pick(rng, TV_VOICES)
                text = " ".join(news(rng) for _ in range(int(rng.integers(2, 5))))
                x = normalise(self.tts.espeak(voice, int(rng.integers(150, 185)), text))
                if rng.random() < 0.5:
                    x = x + self.excerpt(bed, len(x), rng) * np.sqrt(10 ** ((SPEECH_DBFS - 25) / 10))
            elif kind == "dialogue":
                cast = [TV_VOICES[i] for i in rng.choice(len(TV_VOICES), size=int(rng.integers(2, 4)), replace=False)]
                lines = []
                for i in range(int(rng.integers(4, 9))):
                    lines += [normalise(self.tts.espeak(cast[i % len(cast)], int(rng.integers(155, 200)),
                                                        pick(rng, DIALOGUE))),
                              silence(float(rng.uniform(0.15, 0.6)))]
                x = np.concatenate(lines)
            elif kind == "advert":
                text = " ".join(pick(rng, ADS) for _ in range(int(rng.integers(2, 4))))
                x = normalise(self.tts.espeak(pick(rng, TV_VOICES), int(rng.integers(195, 230)), text))
                x = x + self.excerpt(bed, len(x), rng) * np.sqrt(10 ** ((SPEECH_DBFS - 10) / 10))
            else:
                m = int(float(rng.uniform(4, 10)) * RATE)
                crowd = self.excerpt(self.babble_bed(), m, rng)
                claps = keyboard(m, rng) * 0.5 + coloured(m, rng, 0.5) * 0.3
                x = normalise(crowd + claps)
            parts += [x, silence(float(rng.uniform(0.3, 1.0)))]
            total += len(x) + len(parts[-1])
        return np.concatenate(parts)[:n]

    def voice(self, seconds: float) -> np.ndarray:
        """stt's own voice reading replies, 5 to 9 sentences at a time, 1.5 to 4 s apart."""
        rng = rng_for("stt-voice")
        parts, total, n = [], 0, int(seconds * RATE)
        while total < n:
            text = " ".join(reply(rng) for _ in range(int(rng.integers(5, 10))))
            x = normalise(self.tts.piper(text))
            parts += [x, silence(float(rng.uniform(1.5, 4.0)))]
            total += len(x) + len(parts[-1])
        return np.concatenate(parts)[:n]


# --- building the streams ---------------------------------------------------------------------


def recall_items() -> list[dict]:
    """Every clip the recall streams hold, in one seeded order: phrase × voice × rendition."""
    items = []
    for vi, (label, engine, voice, wpm) in enumerate(VOICES):
        for name, said, _ in PHRASES:
            items.append({"phrase": name, "voice": label, "rendition": "alone", "text": said,
                          "engine": engine, "v": voice, "wpm": wpm})
            command = COMMANDS[(vi + len(items)) % len(COMMANDS)]
            items.append({"phrase": name, "voice": label, "rendition": "command",
                          "text": f"{said.capitalize()}, {command}", "engine": engine, "v": voice, "wpm": wpm})
    order = rng_for("recall-order").permutation(len(items))
    return [items[i] for i in order]


def build(out: Path, src: Sources, quick: bool) -> dict:
    """Makes every stream into `out` and gives the manifest that says what is where."""
    manifest: dict = {"recipe": RECIPE, "quick": quick, "streams": []}
    tts = src.tts

    log("making the enrolment takes and the recall clips")
    enrol = []
    for wpm in ENROL_WPM:
        path = out / f"enrol-{wpm}.raw"
        write_raw(path, normalise(tts.espeak(ENROL_VOICE, wpm, "hey computer")))
        enrol.append(path.name)
    manifest["enrol"] = enrol

    items = recall_items()
    clips = [normalise(tts.say(it["engine"], it["v"], it["wpm"], it["text"])) for it in items]
    for condition in CONDITIONS:
        log(f"recall stream: {condition}")
        parts, placed, at = [], [], 0
        for i, (it, clip) in enumerate(zip(items, clips)):
            segment = np.concatenate([silence(LEAD_S), clip, silence(TAIL_S)])
            noise = src.noise(condition, len(segment), rng_for("noise", condition, i))
            if noise is not None:
                segment = segment + noise * np.sqrt(active_power(clip) / 10 ** (SNR_DB / 10))
            peak = float(np.abs(segment).max())
            if peak > 0.99:
                segment = segment * (0.99 / peak)
            start = at + int(LEAD_S * RATE)
            placed.append({k: it[k] for k in ("phrase", "voice", "rendition", "text")}
                          | {"start": start, "end": start + len(clip)})
            parts.append(segment)
            at += len(segment)
        write_raw(out / f"recall-{condition}.raw", np.concatenate(parts))
        manifest["streams"].append({"id": f"recall-{condition}", "kind": "recall", "condition": condition,
                                    "file": f"recall-{condition}.raw", "items": placed})

    def fa(id: str, group: str, audio: np.ndarray, what: str) -> None:
        write_raw(out / f"{id}.raw", audio)
        manifest["streams"].append({"id": id, "kind": "fa", "group": group, "file": f"{id}.raw",
                                    "seconds": len(audio) / RATE, "what": what})

    for package, folder, language, speaker in ASTERISK:
        log(f"false-accept source: {package}")
        x, used = src.real_speech(package, folder, QUICK_SPEECH_S if quick else None)
        total = len(src.prompts(package, folder))
        fa(f"speech-{folder}", "real speech", x,
           f"{speaker}'s {language} telephone prompts, {used} of the {total} in Debian's {package} 1.6.1-1 "
           f"(8 kHz, CC-BY-SA-3.0), 0.3–1 s apart")
    log("false-accept source: scripts/fetch-speech")
    x, clips_used = src.fetch_speech()
    people = sorted({c["speaker"] for c in clips_used})
    origins = sorted({c["source"] for c in clips_used})
    fa("speech-fetch-speech", "real speech", x,
       f"scripts/fetch-speech's {src.speech.name} set but Asterisk's: {len(clips_used)} clips, "
       f"{len(people)} speaker labels, from {', '.join(origins)}")
    log("false-accept source: music")
    music_s = QUICK_S if quick else FULL_S
    real, names = src.moh(music_s / 2 if quick else None)
    fa("music-opsound", "music", real,
       f"Debian's {MOH} 2.03-1.1 (CC-BY-SA-3.0, 8 kHz): {', '.join(names)}"
       + (" (an excerpt from the middle of each)" if quick else ""))
    synth_s = max(music_s - len(real) / RATE, 60.0)
    fa("music-synth", "music", synth_music(synth_s, rng_for("music-synth")),
       "synthesised here: four-chord progressions (pad, bass, plucked chord tones), kick, snare and hi-hat, "
       "a new key and tempo every 20–45 s")
    log("false-accept source: TV")
    fa("tv", "TV-like babble", src.tv(QUICK_S if quick else FULL_S),
       "made here with espeak-ng (10 voices): news read over a music bed, scenes of 2–3 people talking "
       "(a few say \"hey\"), adverts read fast over music, crowds (the babble noise with clapping)")
    log("false-accept source: stt's voice (stt-ctl say)")
    fa("stt-voice", "stt's voice", src.voice(QUICK_S if quick else FULL_S),
       "Piper en_US-joe-medium through `stt-ctl say --wav`, reading generated replies (timers, weather, "
       "lists, meetings; \"computer\" never said)")
    return manifest


# --- running the detector ----------------------------------------------------------------------


def run_bench(bench: str, data: Path, manifest: dict, work: Path) -> tuple[dict, list[dict], float]:
    streams = work / "streams.tsv"
    streams.write_text("".join(f"{s['id']}\t{data / s['file']}\n" for s in manifest["streams"]))
    cmd = [bench, "--heads", "hey_jarvis,alexa", "--enrol", "hey_computer",
           *[str(data / f) for f in manifest["enrol"]], "--streams", str(streams)]
    log(f"running the detector: {' '.join(cmd[:3])} ... ({sum(s.get('seconds', 0) for s in manifest['streams']) / 3600:.2f} h of false-accept audio, 3 lanes)")
    started = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    took = time.monotonic() - started
    if r.returncode != 0:
        raise SystemExit(f"bench-wake: error: wake_bench failed ({r.returncode}):\n{r.stderr.strip()}")
    enrolled, results = {}, []
    for line in r.stdout.splitlines():
        row = json.loads(line)
        if "enrolled" in row:
            enrolled = row
        elif "process_cpu_ns" in row:
            enrolled["process_cpu_ns"] = row["process_cpu_ns"]
        else:
            results.append(row)
    return enrolled, results, took


# --- the report -----------------------------------------------------------------------------


def pct(hits: int, total: int) -> str:
    return f"{hits}/{total} ({hits / total:.0%})" if total else "–"


def said(name: str) -> str:
    return next(s for n, s, _ in PHRASES if n == name)


def is_enrol_voice(voice: str) -> bool:
    return "(enrolment voice)" in voice


def score(manifest: dict, results: list[dict]) -> dict:
    """Recall counts, confusions and detections between clips, per phrase and condition."""
    by = {(r["stream"], r["phrase"]): r for r in results}
    recall: dict = {}
    for s in manifest["streams"]:
        if s["kind"] != "recall":
            continue
        for name, _, _ in PHRASES:
            dets = [d[0] for d in by[(s["id"], name)]["detections"]]
            used = set()
            for it in s["items"]:
                window = (it["start"], it["end"] + HIT_AFTER_S * RATE)
                inside = [d for d in dets if window[0] < d <= window[1]]
                used.update(inside)
                if it["phrase"] == name:
                    key = "enrol-voice" if name == "hey_computer" and is_enrol_voice(it["voice"]) else "others"
                    cell = recall.setdefault((name, key, s["condition"]), [0, 0])
                    cell[0] += bool(inside)
                    cell[1] += 1
                    v = recall.setdefault((name, "voice", it["voice"]), [0, 0])
                    v[0] += bool(inside)
                    v[1] += 1
                elif inside:
                    c = recall.setdefault((name, "confused", s["condition"]), [0, 0])
                    c[0] += len(inside)
            stray = [d for d in dets if d not in used]
            recall.setdefault((name, "stray", s["condition"]), [0, 0])[0] += len(stray)
    return recall


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0))
    return f"{model} ({cores} CPUs available), {platform.system()} {platform.release()}"


def tool_version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()
        return out[0] if out else "?"
    except OSError:
        return "?"


def report(a: argparse.Namespace, manifest: dict, enrolled: dict, results: list[dict],
           took: dict, loads: tuple[str, str]) -> str:
    recall = score(manifest, results)
    names = [n for n, _, _ in PHRASES]
    out = []
    cmd = "scripts/bench-wake" + (" --quick" if a.quick else "") + (" --debug" if a.profile == "debug" else "")
    espeak = re.sub(r"\s+Data at:.*", "", tool_version(["espeak-ng", "--version"]))
    out.append("## Wake word (`scripts/bench-wake`)\n")
    out.append(
        f"Measured {dt.date.today().isoformat()} on {machine()}, {a.profile} build, "
        f"{'**reduced run (`--quick`)**: a few minutes of each false-accept source' if a.quick else 'full run'}; "
        f"{espeak}; load average {loads[0]} at the start and {loads[1]} at the end. Reproduce with "
        f"`{cmd}` (`--quick` for minutes instead of hours of false-accept audio, `--write` rewrites this "
        f"section). The detector is `stt_wake::Detector` with one phrase, as `[wake]` runs it in the daemon, "
        f"fed 32 ms chunks (`crates/stt-wake/examples/wake_bench.rs`), one lane per phrase on a thread of its own. "
        f"All audio is made or fetched at run time into `~/.cache/stt/wake-bench` from fixed seeds.\n")
    if a.profile != "release":
        out.append("*A debug build: stt's own code (the DTW of the enrolled phrase, the glue around ONNX Runtime) "
                   "is unoptimised, so the CPU figures are above the release daemon's.*\n")
    out.append("Phrases: " + "; ".join(f"**{s}** ({how})" for _, s, how in PHRASES)
               + f". The enrolled phrase's threshold came out at {enrolled.get('threshold', float('nan')):.3f} "
               f"(templates of {enrolled.get('template_lengths')} embeddings).\n")

    # Recall.
    voices = [v[0] for v in VOICES]
    others = [v for v in voices if not is_enrol_voice(v)]
    out.append("### Recall\n")
    out.append(
        f"Each phrase said by {len(others)} voices and speeds ({len(others) - 1} of espeak-ng, and Piper's "
        f"en_US-joe-medium, stt's own voice; the only Piper voice found in a registry package) and by the "
        f"enrolment voice at two more speeds, alone and leading a command (\"Hey Jarvis, what time is it?\"), "
        f"each clip brought to {SPEECH_DBFS:.0f} dBFS of active speech, {LEAD_S:g} s of silence before it and "
        f"{TAIL_S:g} s after, one stream per condition. Under noise the noise runs through the whole stretch at "
        f"{SNR_DB:.0f} dB below the clip's active speech power. Heard: the phrase detected between the clip's "
        f"start and {HIT_AFTER_S:g} s after its end. \"hey computer\" is enrolled from `{ENROL_VOICE}`, so its "
        f"figures are of the other voices; the enrolment voice at speeds it was not enrolled at is its own row. "
        f"No real recording of anyone saying these phrases was found in the registries.\n")
    out.append("| phrase | " + " | ".join(CONDITIONS) + " | all |")
    out.append("|---|" + "---:|" * (len(CONDITIONS) + 1))
    rows = [(n, "others", said(n)) for n in names] + [("hey_computer", "enrol-voice", "hey computer, the enrolment voice")]
    for name, key, label in rows:
        cells = [recall.get((name, key, c), [0, 0]) for c in CONDITIONS]
        total = [sum(c[0] for c in cells), sum(c[1] for c in cells)]
        out.append(f"| {label} | " + " | ".join(pct(*c) for c in cells) + f" | **{pct(*total)}** |")
    out.append("")
    out.append("Detections that were not the phrase said, in the same streams: in a clip of another phrase "
               "(\"confused\"), and between clips, in silence or noise alone (\"stray\"):\n")
    out.append("| lane | " + " | ".join(CONDITIONS) + " |")
    out.append("|---|" + "---:|" * len(CONDITIONS))
    for name in names:
        cells = [f"{recall.get((name, 'confused', c), [0])[0]} / {recall.get((name, 'stray', c), [0])[0]}" for c in CONDITIONS]
        out.append(f"| {said(name)} (confused / stray) | " + " | ".join(cells) + " |")
    out.append("")
    out.append("By voice, all conditions and both renditions together:\n")
    out.append("| voice | " + " | ".join(said(n) for n in names) + " |")
    out.append("|---|" + "---:|" * len(names))
    for v in voices:
        out.append(f"| {v} | " + " | ".join(pct(*recall.get((n, 'voice', v), [0, 0])) for n in names) + " |")
    out.append("")

    # False accepts.
    fa_streams = [s for s in manifest["streams"] if s["kind"] == "fa"]
    by = {(r["stream"], r["phrase"]): r for r in results}
    hours = sum(s["seconds"] for s in fa_streams) / 3600
    out.append("### False accepts per hour\n")
    out.append(f"{hours:.2f} h of audio with no wake phrase in it, each source a stream of its own through each lane "
               "(detections, and per hour):\n")
    out.append("| source | kind | audio | " + " | ".join(said(n) for n in names) + " |")
    out.append("|---|---|---:|" + "---:|" * len(names))

    def fa_cell(ids: list[str], name: str, seconds: float) -> str:
        count = sum(len(by[(i, name)]["detections"]) for i in ids)
        return f"{count} ({count / (seconds / 3600):.1f}/h)" if seconds else "–"

    for s in fa_streams:
        out.append(f"| {s['id']} | {s['group']} | {s['seconds'] / 60:.1f} min | "
                   + " | ".join(fa_cell([s["id"]], n, s["seconds"]) for n in names) + " |")
    for group in ["real speech", "music", "TV-like babble", "stt's voice"]:
        ids = [s["id"] for s in fa_streams if s["group"] == group]
        seconds = sum(s["seconds"] for s in fa_streams if s["group"] == group)
        out.append(f"| **all {group}** | | {seconds / 3600:.2f} h | "
                   + " | ".join(fa_cell(ids, n, seconds) for n in names) + " |")
    all_ids = [s["id"] for s in fa_streams]
    out.append(f"| **everything** | | {hours:.2f} h | "
               + " | ".join(fa_cell(all_ids, n, hours * 3600) for n in names) + " |")
    out.append("")
    out.append("Where each source came from:\n")
    for s in fa_streams:
        out.append(f"- `{s['id']}` ({s['seconds'] / 60:.1f} min): {s['what']}.")
    out.append("")
    heard = sorted((s["id"], r["phrase"], d[0] / RATE, d[1]) for s in fa_streams for r in results
                   if r["stream"] == s["id"] for d in r["detections"])
    if heard:
        out.append("The false accepts (source, lane, where in the source, score): "
                   + "; ".join(f"{i} {said(p)} at {t:.1f} s ({sc:.2f})" for i, p, t, sc in heard[:30])
                   + ("; …" if len(heard) > 30 else "") + ".\n")

    # Cost.
    out.append("### CPU of the wake lane\n")
    out.append("Each lane's thread time on a CPU (`/proc/thread-self/schedstat`) over all the false-accept audio, "
               "divided by the audio's length: the share of one core the lane takes listening at real time "
               "(the work per chunk is the same whether the audio comes at real time or faster).\n")
    out.append("| lane | audio | CPU time | share of one core | per 80 ms step |")
    out.append("|---|---:|---:|---:|---:|")
    for name in names:
        rows_ = [by[(s["id"], name)] for s in fa_streams]
        cpu = sum(r["cpu_ns"] for r in rows_) / 1e9
        audio = sum(r["samples"] for r in rows_) / RATE
        steps = audio / 0.08
        out.append(f"| {said(name)} | {audio / 3600:.2f} h | {cpu:.1f} s | {cpu / audio:.2%} | "
                   f"{cpu / steps * 1e3:.2f} ms |")
    out.append("")
    process = enrolled.get("process_cpu_ns")
    if process is not None:
        all_audio = sum(r["samples"] for r in results) / RATE
        out.append(f"Check: the whole process (`/proc/self/stat`, as getrusage counts it: the three lanes, the "
                   f"enrolment, loading the models, reading the files) used {process / 1e9:.1f} s while "
                   f"{len(PHRASES)} lanes each heard {all_audio / len(PHRASES) / 3600:.2f} h (recall streams "
                   f"included): {process / 1e9 / all_audio:.2%} of one core per lane.\n")
    out.append(f"This run: making the audio {took['build'] / 60:.1f} min"
               f"{' (taken from the cache)' if took['cached'] else ''}, the detector {took['detect'] / 60:.1f} min "
               f"for the three lanes on {len(os.sched_getaffinity(0))} cores.\n")
    out.append("### End to end\n")
    out.append("TODO (issue 47 §5): the name said → the earcon, and the end of a spoken command → the tool run "
               "through the real daemon and the local model, are measured elsewhere, not by this script.\n")
    return "\n".join(out)


def write_section(path: Path, body: str) -> None:
    """Replaces the wake section of `path` with `body`; appends it when there is none."""
    start, end = f"<!-- {SECTION}: start -->", f"<!-- {SECTION}: end -->"
    text = path.read_text()
    block = f"{start}\n{body}{end}"
    if start in text and end in text:
        pre, rest = text.split(start, 1)
        _, post = rest.split(end, 1)
        text = pre + block + post
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="the wake_bench example")
    p.add_argument("--ctl", required=True, help="stt-ctl, for stt's own voice")
    p.add_argument("--profile", default="release")
    p.add_argument("--speech", required=True, help="scripts/fetch-speech's directory")
    p.add_argument("--cache", required=True, help="where made audio is kept")
    p.add_argument("--work", required=True)
    p.add_argument("--deb", nargs=2, action="append", default=[], metavar=("NAME", "FILE"))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--fresh", action="store_true")
    p.add_argument("--write")
    a = p.parse_args()

    load_start = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    cache = Path(a.cache)
    work = Path(a.work)
    tts = Tts(cache / "clips", a.ctl, work)
    data = cache / ("quick" if a.quick else "full")
    manifest_path = data / "manifest.json"
    started = time.monotonic()
    manifest = None
    if manifest_path.exists() and not a.fresh:
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("recipe") != RECIPE:
            manifest = None
    cached = manifest is not None
    if manifest is None:
        src = Sources({n: Path(f) for n, f in a.deb}, Path(a.speech), work, tts, a.quick)
        aside = Path(tempfile.mkdtemp(prefix=f".{data.name}.new.", dir=cache))
        manifest = build(aside, src, a.quick)
        (aside / "manifest.json").write_text(json.dumps(manifest))
        if data.exists():
            shutil.rmtree(data)
        aside.rename(data)
    else:
        log(f"using the audio made earlier in {data} (--fresh makes it again)")
    build_s = time.monotonic() - started

    enrolled, results, detect_s = run_bench(a.bench, data, manifest, work)
    load_end = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    body = report(a, manifest, enrolled, results, {"build": build_s, "detect": detect_s, "cached": cached},
                  (load_start, load_end))
    print(body)
    if a.write:
        write_section(Path(a.write), body)
        log(f"wrote the {SECTION} section of {a.write}")


if __name__ == "__main__":
    main()
