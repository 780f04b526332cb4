#!/usr/bin/env python3
"""Nothing said, nothing written: run by `scripts/bench-asr --only quiet`. The release daemon,
live partials on (its default config), reads 30 minutes of a room where nobody speaks at real
time: silence, a fan, typing and a music bed (7.5 minutes each, made here with numpy from a
fixed seed). Counts the segments it opened and the non-empty `transcript`s and
`transcript_partial`s it published: there should be none of either text. Then the 59
recordings of people (scripts/fetch-speech), read with `--fast`: finals that end in a stock
caption ("thank you", "thanks for watching", "bye", ...) the person did not say.
Prints a Markdown report and, with --write FILE, replaces its section.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lib"))
from load_script import load  # noqa: E402

asr = load("bench_asr", "bench-asr.py")

SECTION = "bench-quiet"
RATE = 16000
SEED = 20261205
STOCK_ENDINGS = ["thank you", "thank you very much", "thanks for watching", "thank you for watching",
                 "thanks for listening", "please subscribe", "bye", "you"]


def log(msg: str) -> None:
    print(f"bench-quiet: {msg}", file=sys.stderr, flush=True)


def db(x: np.ndarray, dbfs: float) -> np.ndarray:
    """`x` scaled to an RMS of `dbfs`."""
    rms = float(np.sqrt(np.mean(x ** 2))) or 1.0
    return x / rms * 10 ** (dbfs / 20)


def room(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Digital silence with a faint hiss (-70 dBFS), as a quiet room through a good input."""
    return db(rng.normal(0, 1, int(seconds * RATE)), -70)


def fan(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Brown noise (a fan's rumble, -32 dBFS) with its motor's 100 Hz hum and a slow swell."""
    n = int(seconds * RATE)
    brown = np.cumsum(rng.normal(0, 1, n))
    brown -= np.convolve(brown, np.ones(801) / 801, mode="same")  # no drift
    t = np.arange(n) / RATE
    hum = np.sin(2 * np.pi * 100 * t) + 0.3 * np.sin(2 * np.pi * 200 * t)
    swell = 1 + 0.2 * np.sin(2 * np.pi * 0.13 * t)
    return (db(brown, -32) + db(hum, -48)) * swell


def typing(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Typing: bursts of key clicks (a sharp click and a low thock each, 80-300 ms apart), with
    pauses between the bursts, over a faint room hiss."""
    n = int(seconds * RATE)
    out = room(rng, seconds)
    t = 0.3
    while t < seconds - 0.5:
        burst_end = t + rng.uniform(1.5, 6.0)
        while t < min(burst_end, seconds - 0.5):
            i = int(t * RATE)
            k = int(0.012 * RATE)
            click = rng.normal(0, 1, k) * np.exp(-np.arange(k) / (0.002 * RATE)) * rng.uniform(0.2, 0.5)
            tt = np.arange(int(0.03 * RATE)) / RATE
            thock = np.sin(2 * np.pi * rng.uniform(150, 220) * tt) * np.exp(-tt / 0.008) * rng.uniform(0.1, 0.3)
            out[i: i + k] += click
            out[i: i + len(thock)] += thock
            t += rng.uniform(0.08, 0.3)
        t += rng.uniform(0.5, 3.0)
    return out[:n]


def music(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """A music bed: a new chord every two seconds, by turns its root held on an organ (a pure
    tone with a 5 Hz tremolo, at -18 dBFS) and played as plucked arpeggios over a soft pad."""
    n = int(seconds * RATE)
    out = np.zeros(n)
    chords = [[220.0, 277.2, 329.6], [246.9, 311.1, 370.0], [196.0, 246.9, 293.7], [174.6, 220.0, 261.6]]
    step = 2 * RATE
    for k, at in enumerate(range(0, n, step)):
        chord = chords[k % len(chords)]
        m = min(step, n - at)
        t = np.arange(m) / RATE
        if k % 2 == 0:
            tremolo = 1 - 0.4 * (0.5 + 0.5 * np.sin(2 * np.pi * 5 * t))
            organ = np.sin(2 * np.pi * chord[0] * t) * tremolo  # a held note: the root
            out[at: at + m] += db(organ, -18)
            continue
        bar = db(sum(np.sin(2 * np.pi * f * t) for f in chord), -34)
        for j in range(4):
            p0 = j * step // 4
            pm = min(step // 4, m - p0)
            if pm <= 0:
                break
            tt = np.arange(pm) / RATE
            f = chord[j % 3] * 2
            bar[p0: p0 + pm] += 0.1 * (np.sin(2 * np.pi * f * tt) + 0.3 * np.sin(4 * np.pi * f * tt)) * np.exp(-tt / 0.25)
        out[at: at + m] += bar
    return out + room(rng, seconds)


def ends_in_stock(text: str, said: str) -> bool:
    norm = lambda s: " ".join(re.sub(r"[^a-z' ]", " ", s.lower()).split())  # noqa: E731
    heard, ref = norm(text), norm(said)
    return any(heard.endswith(p) and not ref.endswith(p) for p in STOCK_ENDINGS)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--daemon", required=True)
    p.add_argument("--speech", help="scripts/fetch-speech's directory")
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--write")
    a = p.parse_args()
    work = Path(a.work) / "quiet"
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    quarter = a.minutes * 60 / 4
    parts = [("silence", room), ("a fan", fan), ("typing", typing), ("a music bed", music)]
    audio, spans, at = [], [], 0.0
    for name, make in parts:
        x = np.clip(make(rng, quarter), -1, 1).astype(np.float32)
        audio.append(x)
        spans.append((name, at, at + len(x) / RATE))
        at += len(x) / RATE
    wav = work / "quiet.wav"
    asr.write_wav(wav, np.concatenate(audio))
    log(f"{at / 60:.0f} minutes of a room where nobody speaks, at real time")
    d = asr.Daemon(a.daemon, a.model, wav, work, "quiet")
    d.wait_hello()
    d.wait(at + 600)
    opened = {name: 0 for name, _, _ in spans}
    written = {name: [] for name, _, _ in spans}
    starts = {}
    for _, ev in d.events:
        kind = ev.get("type")
        if kind == "speech_start":
            starts[ev["seg_id"]] = ev["start"]
            name = next((n for n, s, e in spans if s <= ev["start"] < e), spans[-1][0])
            opened[name] += 1
        elif kind in ("transcript", "transcript_partial") and ev.get("text", "").strip():
            start = starts.get(ev["seg_id"], 0.0)
            name = next((n for n, s, e in spans if s <= start < e), spans[-1][0])
            written[name].append(f"{kind}: {ev['text']}")
    out = [
        "## Nothing said, nothing written (`scripts/bench-asr --only quiet`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {asr.cpu_model()}, release daemon with its default config "
        f"(live partials on), {at / 60:.0f} minutes of a room where nobody speaks read at real time: "
        f"{quarter / 60:.1f} minutes each of silence (a -70 dBFS hiss), a fan (brown noise at -32 dBFS with a "
        "100 Hz hum), typing (bursts of key clicks) and a music bed (a chord every 2 s, by turns its root held on an organ "
        "with tremolo at -18 dBFS and plucked as arpeggios over a soft pad), made by `scripts/bench-quiet.py` from a fixed seed. Reproduce with "
        "`scripts/bench-asr --only quiet`.",
        "",
        "| part | segments opened | transcripts and partials with text |",
        "|---|---:|---:|",
    ]
    for name, _, _ in spans:
        out.append(f"| {name} | {opened[name]} | {len(written[name])} |")
    total = sum(len(w) for w in written.values())
    out += ["", f"Text written: **{total}** (target 0)." + (" " + "; ".join(
        f"{n}: {', '.join(w[:3])}" for n, w in written.items() if w) if total else ""), ""]
    if a.speech:
        real, manifest, refs = asr.real_session(Path(a.speech), work)
        log(f"the {len(manifest)} real recordings")
        d = asr.Daemon(a.daemon, a.model, real, work, "quiet-real", extra=("--fast",))
        d.wait_hello()
        d.wait(900)
        segs = asr.segments_of(d)
        stock = []
        for said, s0, s1 in refs:
            heard = asr.heard_in(segs, s0, s1)
            if ends_in_stock(heard, said):
                stock.append(f"{heard!r} for {said!r}")
        out += [f"**The real recordings**: of the {len(manifest)} recordings of people, "
                f"**{len(stock)}** end in a stock caption the person did not say (\"thank you\", \"thanks for "
                "watching\", \"bye\", \"you\", ...; target 0)" + (": " + "; ".join(stock) if stock else "") + ".", ""]
    body = "\n".join(out)
    print(body)
    if a.write:
        asr.write_section(Path(a.write), body, SECTION, after="<!-- bench-vocabulary:end -->")


if __name__ == "__main__":
    main()
