#!/usr/bin/env python3
"""Real-speech benchmark for stt, run by scripts/bench-asr after its espeak-ng part.

On the recordings of real people that scripts/fetch-speech installs (each with its reference
transcript), in several desk conditions, it measures in one run:
  1. the real release daemon (`stt-daemon --input SESSION.wav --fast`, the live daemon's VAD,
     segmentation, whisper and filters) on every clip of a condition in one file, each with
     1.5 s of silence either side, as a subscriber on its socket sees the transcripts;
  2. faster-whisper (int8 and float32) on the same clips fed whole, one at a time;
  3. `stt-daemon transcribe` on a long recording (six utterances, 44.1 kHz stereo) against
     faster-whisper's whole process on the same file, with where our time goes.
Prints a Markdown report and, with --write FILE, replaces its section in FILE.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_asr", HERE / "bench-asr.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

SECTION = "bench-asr-real"
RATE = 16_000
AROUND_S = 1.5  # silence either side of a clip: what a live daemon hears around a command
SEED = 11

# Condition | what is done to every clip (after the silence is added).
CONDITIONS = [
    ("clean", "as recorded, digital silence around"),
    ("quiet", "20 dB quieter (a microphone far away or turned down)"),
    ("fan", "brown noise at 10 dB below the speech's RMS, silences too (a fan or air vent)"),
    ("keys", "keyboard clicks: 3 ms bursts, about 6 a second, peaks 12 dB below the speech's peak"),
    ("8k", "through an 8 kHz path (sox to 8 kHz mono; the daemon resamples)"),
    ("44k", "as a 44.1 kHz stereo file (the daemon resamples and downmixes)"),
]

# The long recording: six utterances of different speakers and lengths, 1.5 s apart.
LONG_IDS = ["jfk", "librispeech-61-70968-0000", "librivox-0870", "librivox-0920",
            "librivox-0890", "ps-forever"]
LONG_REPS = 5

# Fixed encoder windows (`[daemon].audio_ctx`) the daemon also runs with on the clean clips, to
# compare the guard with always decoding wide: 750 frames is its first retry, 1500 whisper's own.
FIXED_WINDOWS = [750, 1500]

log = bench.log


def words(text: str | None) -> list[str]:
    return bench.normalize(re.sub(r"\bmr\b\.?", "mister", (text or "").lower()))


def errors(ref: str, hyp: str | None) -> tuple[int, int]:
    r = words(ref)
    return bench.edit_distance(r, words(hyp)), len(r)


def runaway(ref: str, hyp: str | None) -> bool:
    """More than 1.5 times the words said: whisper's repetition loop, or its kin."""
    return len(words(hyp)) > 1.5 * len(words(ref))


def read(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768


def write(path: Path, x: np.ndarray, rate: int = RATE, channels: int = 1) -> None:
    pcm = (np.clip(x, -1, 1) * 32767).round().astype("<i2")
    if channels == 2:
        pcm = np.repeat(pcm, 2)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def brown(n: int, rng: np.random.Generator) -> np.ndarray:
    x = np.cumsum(rng.standard_normal(n))
    x -= np.convolve(x, np.ones(1601) / 1601, mode="same")  # no drift: a high-pass at ~10 Hz
    return x / (np.sqrt(np.mean(x**2)) + 1e-12)


def clicks(n: int, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros(n, dtype=np.float32)
    t = 0
    burst = int(0.003 * RATE)
    env = np.exp(-np.arange(burst) / (0.001 * RATE))
    while True:
        t += int(rng.exponential(RATE / 6))
        if t + burst >= n:
            return out
        out[t:t + burst] += (rng.standard_normal(burst) * env * rng.uniform(0.5, 1.0)).astype(np.float32)


def condition(name: str, x: np.ndarray, speech: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    rms = float(np.sqrt(np.mean(speech**2)))
    if name == "quiet":
        return x * 0.1
    if name == "fan":
        return x + brown(len(x), rng) * rms * 10 ** (-10 / 20)
    if name == "keys":
        c = clicks(len(x), rng)
        peak = float(np.max(np.abs(c))) or 1.0
        return x + c / peak * float(np.max(np.abs(speech))) * 10 ** (-12 / 20)
    return x


def make_sets(speech_dir: Path, work: Path, manifest: list[dict]) -> dict[str, list[dict]]:
    """Per condition: one WAV per clip (with the silence around it) and one session WAV of all."""
    sets: dict[str, list[dict]] = {}
    pad = np.zeros(int(AROUND_S * RATE), dtype=np.float32)
    for name, _ in CONDITIONS:
        rng = np.random.default_rng(SEED)
        d = work / name
        d.mkdir(parents=True, exist_ok=True)
        clips, session, at = [], [], 0.0
        for m in manifest:
            speech = read(speech_dir / m["file"])
            x = condition(name, np.concatenate([pad, speech, pad]), speech, rng)
            path = d / m["file"]
            if name == "8k":
                write(path.with_suffix(".16k.wav"), x)
                subprocess.run(["sox", "-D", str(path.with_suffix(".16k.wav")), "-r", "8000", str(path)], check=True)
            elif name == "44k":
                write(path.with_suffix(".16k.wav"), x)
                subprocess.run(["sox", "-D", str(path.with_suffix(".16k.wav")), "-r", "44100", "-c", "2", str(path)], check=True)
            else:
                write(path, x)
            clips.append(dict(m, path=str(path), session_start=at, session_end=at + len(x) / RATE))
            session.append(x)
            at += len(x) / RATE
        whole = np.concatenate(session)
        spath = work / f"session-{name}.wav"
        if name in ("8k", "44k"):
            write(spath.with_suffix(".16k.wav"), whole)
            rate = "8000" if name == "8k" else "44100"
            chans = ["-c", "2"] if name == "44k" else []
            subprocess.run(["sox", "-D", str(spath.with_suffix(".16k.wav")), "-r", rate, *chans, str(spath)], check=True)
        else:
            write(spath, whole)
        sets[name] = clips
        sets[name + ":session"] = [{"path": str(spath), "seconds": at}]
    return sets


def daemon_log(path: Path) -> dict[int, dict]:
    out = {}
    for line in path.read_text(errors="replace").splitlines():
        if "transcribed" in line:
            m = re.search(r"seg_id=(\d+).*?elapsed_ms=(\d+)", line)
            if m:
                passes = re.search(r"decodes=(\d+)", line)  # logged since the runaway guard
                out[int(m.group(1))] = {"elapsed_ms": int(m.group(2)),
                                        "decodes": int(passes.group(1)) if passes else 1}
    return out


def run_daemon(binary: str, model: str, session: Path, clips: list[dict], work: Path, tag: str,
               config_text: str = "") -> dict:
    d = bench.Daemon(binary, model, session, work, tag, config_text, extra=("--fast",))
    d.wait_hello()
    d.wait(600)
    segs = bench.segments_of(d)
    wlog = daemon_log(d.log_path)
    per = {}
    for c in clips:
        mine = sorted(sid for sid, s in segs.items() if "start" in s and "end" in s
                      and s["start"] < c["session_end"] and s["end"] > c["session_start"])
        per[c["id"]] = {
            "text": " ".join(segs[s]["text"] for s in mine if segs[s].get("text")),
            "segments": len(mine),
            "ms": sum(wlog.get(s, {}).get("elapsed_ms", 0) for s in mine),
            "decodes": sum(wlog.get(s, {}).get("decodes", 1) for s in mine),
            "retried": sum(1 for s in mine if wlog.get(s, {}).get("decodes", 1) > 1),
        }
    return {"clips": per, "segments": len(segs), "exit": d.proc.returncode,
            "retried": sum(1 for w in wlog.values() if w["decodes"] > 1)}


def run_long(binary: str, model: str, venv_python: str, ct2: str, work: Path, speech_dir: Path,
             manifest: dict[str, dict]) -> dict:
    pad = np.zeros(int(AROUND_S * RATE), dtype=np.float32)
    parts = [pad]
    for i in LONG_IDS:
        parts += [read(speech_dir / manifest[i]["file"]), pad]
    x = np.concatenate(parts)
    write(work / "long.16k.wav", x)
    long44 = work / "long-44k-stereo.wav"
    subprocess.run(["sox", "-D", str(work / "long.16k.wav"), "-r", "44100", "-c", "2", str(long44)], check=True)
    write(work / "short.wav", np.zeros(int(0.2 * RATE), dtype=np.float32))
    write(work / "silence-44k.16k.wav", np.zeros(len(x), dtype=np.float32))
    silence44 = work / "silence-44k-stereo.wav"
    subprocess.run(["sox", "-D", str(work / "silence-44k.16k.wav"), "-r", "44100", "-c", "2", str(silence44)], check=True)
    ref = " ".join(manifest[i]["text"] for i in LONG_IDS)
    fw_script = work / "fw_whole.py"
    fw_script.write_text(
        "import sys\n"
        "from faster_whisper import WhisperModel\n"
        "m = WhisperModel(sys.argv[1], device='cpu', compute_type=sys.argv[2], cpu_threads=2)\n"
        "segs, _ = m.transcribe(sys.argv[3], language='en', beam_size=1, temperature=0,\n"
        "                       condition_on_previous_text=False)\n"
        "for s in segs:\n"
        "    print(s.text.strip())\n")
    cfg = work / "config-long.toml"
    cfg.write_text("")
    ours_cmd = [binary, "--config", str(cfg), "--model", model, "transcribe"]

    def timed(cmd: list[str]) -> tuple[float, str]:
        t = time.monotonic()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return time.monotonic() - t, out

    runs: dict[str, list[float]] = {"ours": [], "fw int8": [], "fw float32": [], "load": [], "silence": []}
    texts: dict[str, str] = {}
    for _ in range(LONG_REPS):  # interleaved, so background load falls on all alike
        for name, cmd in [("ours", ours_cmd + [str(long44)]),
                          ("fw int8", [venv_python, str(fw_script), ct2, "int8", str(long44)]),
                          ("fw float32", [venv_python, str(fw_script), ct2, "float32", str(long44)]),
                          ("load", ours_cmd + [str(work / "short.wav")]),
                          ("silence", ours_cmd + [str(silence44)])]:
            s, out = timed(cmd)
            runs[name].append(s)
            texts[name] = out
    return {"seconds": len(x) / RATE, "runs": runs, "texts": texts, "ref": ref,
            "errors": {k: errors(ref, texts[k]) for k in ("ours", "fw int8", "fw float32")}}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(e: int, n: int) -> str:
    return f"{100 * e / n:.1f}%" if n else "–"


def report(a, manifest, results, fixed, baseline, fw_versions, long, started) -> str:
    fw_types = ["int8", "float32"]
    speakers = sorted({m["speaker"] for m in manifest})
    short = sum(1 for m in manifest if m["speech_s"] <= 1.5)
    n_words = sum(len(words(m["text"])) for m in manifest)
    sources = sorted({m["source"] for m in manifest})
    L = []
    L.append("## Real speech (`scripts/bench-asr`, second part)\n")
    L.append(
        f"Measured {dt.date.today().isoformat()} on {bench.cpu_model()}, Linux {platform.release()}, release "
        f"build, whisper `{Path(a.model).name}` on {a.threads} threads, the daemon's default config; "
        f"faster-whisper {fw_versions} with the same tiny.en weights (CTranslate2). Reproduce with "
        "`scripts/bench-asr` (it runs `scripts/fetch-speech` for the recordings, then "
        "`scripts/bench-asr-real.py`, which rewrites this section).\n")
    L.append(
        f"**Recordings**: {len(manifest)} utterances of real people, {len(speakers)} speaker labels (at least 13 "
        f"different people), {short} of them 1.5 s of speech or shorter, {n_words} words, "
        f"{min(m['speech_s'] for m in manifest):.2f}–{max(m['speech_s'] for m in manifest):.1f} s of speech each, "
        f"each with the transcript its source states. They come from the test data and examples of packages "
        f"in the registries ({', '.join(sources)}): card names and commands, a LibriVox and a LibriSpeech "
        "reader, JFK, two podcast speakers, digits said by two people, telephone prompts (8 kHz), speaker-test's "
        "channel names. `scripts/fetch-speech` lists each clip's source and licence; the audio is never committed.\n")
    L.append("**Conditions** (each clip with 1.5 s of silence either side, as the live daemon hears a command):\n")
    for name, what in CONDITIONS:
        L.append(f"- `{name}`: {what}")
    L.append("")
    L.append(
        "**Method.** *ours* = the release daemon, `stt-daemon --input SESSION.wav --fast` with the default "
        "config, every clip of a condition in one file, a subscriber on its socket; a clip's text is every "
        "transcript whose segment overlaps it, and its time is whisper's for those segments (the daemon's "
        "`transcribed elapsed_ms`, decoding again included). *fw* = faster-whisper's `transcribe` on each "
        "clip's file whole (beam 1, temperature 0, no VAD, without timestamps, no previous text), model "
        "loaded, after a warm-up. WER = word edits / reference words after lower-casing, dropping "
        "punctuation, spelling numbers as words and \"Mr.\" as \"mister\". A *runaway* output has more "
        "than 1.5 times the words said. *decoded again* counts the segments whose first pass ran away "
        "and were decoded again with a wider window (`crates/stt-asr/src/filter.rs`, `runaway`).\n")
    L.append(f"*Noise*: {bench.noise_summary()}.\n")

    L.append("### By condition\n")
    L.append("| condition | WER ours (daemon) | WER fw int8 | WER fw float32 | runaway ours / int8 / float32 "
             "| whisper ms ours / int8 / float32 | segments decoded again |")
    L.append("|---|---:|---:|---:|---|---|---:|")
    totals = {"e": 0, "n": 0, "fe": {t: 0 for t in fw_types}, "run": 0, "frun": {t: 0 for t in fw_types}}
    for name, _ in CONDITIONS:
        r = results[name]
        e = n = 0
        fe = {t: 0 for t in fw_types}
        run = 0
        frun = {t: 0 for t in fw_types}
        ms = 0
        fms = {t: 0.0 for t in fw_types}
        for m in manifest:
            o = r["ours"]["clips"][m["id"]]
            ee, nn = errors(m["text"], o["text"])
            e, n = e + ee, n + nn
            run += runaway(m["text"], o["text"])
            ms += o["ms"]
            for t in fw_types:
                f = r["fw"][t][m["id"]]
                fe[t] += errors(m["text"], f["text"])[0]
                frun[t] += runaway(m["text"], f["text"])
                fms[t] += f["ms"]
        r["summary"] = {"e": e, "n": n, "fe": fe, "run": run, "frun": frun}
        totals["e"] += e
        totals["n"] += n
        totals["run"] += run
        for t in fw_types:
            totals["fe"][t] += fe[t]
            totals["frun"][t] += frun[t]
        segs = r["ours"]["segments"]
        L.append(f"| `{name}` | {pct(e, n)} | {pct(fe['int8'], n)} | {pct(fe['float32'], n)} | "
                 f"{run} / {frun['int8']} / {frun['float32']} | {ms:.0f} / {fms['int8']:.0f} / {fms['float32']:.0f} | "
                 f"{r['ours']['retried']} of {segs} |")
    tn = totals["n"]
    L.append(f"| all | **{pct(totals['e'], tn)}** | {pct(totals['fe']['int8'], tn)} | {pct(totals['fe']['float32'], tn)} "
             f"| {totals['run']} / {totals['frun']['int8']} / {totals['frun']['float32']} | | |")
    L.append("")

    if fixed:
        L.append("### The guard against a fixed wide window\n")
        L.append("The `clean` clips through the daemon with its shipped window (the segment's frames + 256, "
                 "decoded again wider when `runaway` says so) and with `[daemon].audio_ctx` fixed, which never "
                 "needs the guard's retry"
                 + (f"; *before the guard* is `{a.baseline_label}`, the same window without the guard" if baseline else "")
                 + ".\n")
        L.append("| window | WER | runaway outputs | whisper ms in all | segments decoded again |")
        L.append("|---|---:|---:|---:|---:|")
        rows = [("shipped: +256, guarded", results["clean"]["ours"])] + [(f"fixed {c}", fixed[c]) for c in FIXED_WINDOWS]
        if baseline:
            rows.append(("before the guard: +256", baseline))
        for label, run in rows:
            e = n = r = ms = 0
            for m in manifest:
                o = run["clips"][m["id"]]
                ee, nn = errors(m["text"], o["text"])
                e, n, r, ms = e + ee, n + nn, r + runaway(m["text"], o["text"]), ms + o["ms"]
            L.append(f"| {label} | {pct(e, n)} | {r} | {ms} | {run['retried']} of {run['segments']} |")
        L.append("")

    L.append("### Per clip\n")
    L.append("Word errors of ours (the daemon) / fw int8 / fw float32 in the `clean` condition, then ours / fw "
             "int8 in each other condition; times in ms for `clean` (ours: whisper's time for the clip's "
             "segments, with the decoding passes it took).\n")
    others = [c for c, _ in CONDITIONS if c != "clean"]
    L.append("| clip | speaker | speech s | words | clean: ours / int8 / f32 | "
             + " | ".join(f"{c}: ours / int8" for c in others) + " | ours ms (passes) | int8 ms | f32 ms |")
    L.append("|---|---|---:|---:|---|" + "---|" * len(others) + "---:|---:|---:|")
    for m in manifest:
        clean = results["clean"]
        o = clean["ours"]["clips"][m["id"]]
        cells = [f"{errors(m['text'], o['text'])[0]} / {errors(m['text'], clean['fw']['int8'][m['id']]['text'])[0]} / "
                 f"{errors(m['text'], clean['fw']['float32'][m['id']]['text'])[0]}"]
        for c in others:
            r = results[c]
            cells.append(f"{errors(m['text'], r['ours']['clips'][m['id']]['text'])[0]} / "
                         f"{errors(m['text'], r['fw']['int8'][m['id']]['text'])[0]}")
        L.append(f"| {m['id']} | {m['speaker']} | {m['speech_s']:.2f} | {len(words(m['text']))} | "
                 + " | ".join(cells)
                 + f" | {o['ms']} ({o['decodes']}) | {clean['fw']['int8'][m['id']]['ms']:.0f} | "
                   f"{clean['fw']['float32'][m['id']]['ms']:.0f} |")
    L.append("")

    runs = long["runs"]
    L.append("### A long recording, whole process\n")
    L.append(
        f"Six utterances ({', '.join(LONG_IDS)}), 1.5 s of silence between, {long['seconds']:.1f} s in one "
        "44.1 kHz stereo 16-bit WAV. *ours* = `stt-daemon transcribe FILE` (model load, reading, "
        "resampling, VAD, whisper per segment, printing); *fw* = a Python process that imports "
        "faster_whisper, loads the model and transcribes the file (beam 1, temperature 0, no previous "
        "text, its default 30 s windows), as someone would run it. Wall time from spawn to exit, median of "
        f"{LONG_REPS} runs, interleaved. *load* is the same command on 0.2 s of silence (start-up and model "
        "load); *silence* is the same length of silence at 44.1 kHz stereo (reading, resampling, VAD, no "
        "speech): what is left of *ours* is whisper.\n")
    L.append("| command | median s | min s | max s | WER | fw int8 time / this |")
    L.append("|---|---:|---:|---:|---:|---:|")
    fw8 = med(runs["fw int8"])
    for k in ("ours", "fw int8", "fw float32"):
        e, n = long["errors"][k]
        L.append(f"| {k} | {med(runs[k]):.2f} | {min(runs[k]):.2f} | {max(runs[k]):.2f} | {pct(e, n)} | "
                 f"{fw8 / med(runs[k]):.2f}× |")
    L.append(f"| ours: start-up and model load | {med(runs['load']):.2f} | {min(runs['load']):.2f} | {max(runs['load']):.2f} | | |")
    L.append(f"| ours: reading, resampling, VAD ({long['seconds']:.0f} s of silence) | {med(runs['silence']) - med(runs['load']):.2f} | | | | |")
    L.append(f"| ours: whisper (the rest) | {med(runs['ours']) - med(runs['silence']):.2f} | | | | |")
    L.append("")

    clean = results["clean"]["summary"]
    allrun = totals["run"]
    L.append("### Targets\n")
    ok = lambda b: "**met**" if b else "**not met**"
    L.append(f"- WER through the daemon ≤ faster-whisper int8's on the same clips fed whole: {ok(totals['e'] <= totals['fe']['int8'])} "
             f"over all conditions ({pct(totals['e'], tn)} vs {pct(totals['fe']['int8'], tn)}); clean "
             f"{pct(clean['e'], clean['n'])} vs {pct(clean['fe']['int8'], clean['n'])}.")
    L.append(f"- No runaway output through the daemon: {ok(allrun == 0)} ({allrun} in {len(manifest) * len(CONDITIONS)} "
             f"clip-conditions; fw int8 {totals['frun']['int8']}, float32 {totals['frun']['float32']}).")
    ratio = fw8 / med(runs["ours"])
    eo, no = long["errors"]["ours"]
    ef, _ = long["errors"]["fw int8"]
    L.append(f"- `stt-daemon transcribe` ≥ 1.3× faster than faster-whisper's whole process on a recording of 30 s or "
             f"more, at no worse WER: {ok(ratio >= 1.3 and eo <= ef)} ({ratio:.2f}× int8, "
             f"{med(runs['fw float32']) / med(runs['ours']):.2f}× float32; WER {pct(eo, no)} vs {pct(ef, no)}).")
    L.append(f"\nThe whole run took {(time.monotonic() - started) / 60:.1f} minutes.\n")
    return "\n".join(L) + "\n"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--speech", required=True, help="directory scripts/fetch-speech printed")
    p.add_argument("--model", required=True)
    p.add_argument("--ct2", required=True)
    p.add_argument("--daemon", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--conditions", default=",".join(c for c, _ in CONDITIONS))
    p.add_argument("--clips", type=int, default=0, help="only the first N clips (a quick look)")
    p.add_argument("--baseline", help="another stt-daemon build to run on the clean clips, for comparison")
    p.add_argument("--baseline-label", default="an earlier build", help="what --baseline is, for the report")
    p.add_argument("--write")
    a = p.parse_args()
    started = time.monotonic()
    work = Path(a.work) / "real"
    work.mkdir(parents=True, exist_ok=True)
    speech = Path(a.speech)
    everything = json.loads((speech / "manifest.json").read_text())
    manifest = everything
    if a.clips:
        manifest = manifest[: a.clips]
    CONDITIONS[:] = [c for c in CONDITIONS if c[0] in a.conditions.split(",")]

    import ctranslate2
    import faster_whisper
    from faster_whisper import decode_audio

    fw_versions = f"{faster_whisper.__version__} (CTranslate2 {ctranslate2.__version__})"
    log(f"real speech: {len(manifest)} clips in {len(CONDITIONS)} conditions")
    sets = make_sets(speech, work, manifest)
    results: dict[str, dict] = {}
    models = {}
    for name, _ in CONDITIONS:
        clips = sets[name]
        log(f"real speech, {name}: the daemon")
        with bench.Phase("daemon"):
            ours = run_daemon(a.daemon, a.model, Path(sets[name + ":session"][0]["path"]), clips, work, f"real-{name}")
        fw = {}
        for t in ("int8", "float32"):
            log(f"real speech, {name}: faster-whisper {t}")
            with bench.Phase(f"fw {t}"):
                if t not in models:
                    models[t] = bench.FasterWhisper(a.ct2, t, a.threads, clips[:1])
                m = models[t]
                # Each file as it is: faster-whisper's own decoder resamples the 8 and 44.1 kHz ones.
                m.audio = {c["path"]: decode_audio(c["path"], sampling_rate=RATE) for c in clips}
                fw[t] = {}
                for c in clips:
                    ms, text = m.transcribe(c["path"])
                    fw[t][c["id"]] = {"ms": ms, "text": text}
        results[name] = {"ours": ours, "fw": fw}
    models.clear()
    fixed = {}
    if "clean" in results:
        for ctx in FIXED_WINDOWS:
            log(f"real speech, clean: the daemon with a fixed window of {ctx} frames")
            with bench.Phase("daemon"):
                fixed[ctx] = run_daemon(a.daemon, a.model, Path(sets["clean:session"][0]["path"]), sets["clean"],
                                        work, f"real-clean-{ctx}", f"[daemon]\naudio_ctx = {ctx}\n")
    baseline = None
    if a.baseline and "clean" in results:
        log(f"real speech, clean: {a.baseline_label}")
        with bench.Phase("daemon"):
            baseline = run_daemon(a.baseline, a.model, Path(sets["clean:session"][0]["path"]), sets["clean"], work,
                                  "real-clean-baseline")
    log(f"long recording: ours and faster-whisper's whole process, {LONG_REPS} times each")
    with bench.Phase("long"):
        long = run_long(a.daemon, a.model, sys.executable, a.ct2, work, speech, {m["id"]: m for m in everything})

    body = report(a, manifest, results, fixed, baseline, fw_versions, long, started)
    print(body)
    for m in manifest:  # the transcripts, to check the WER by eye
        print(f"{m['id']}: {m['text']}", file=sys.stderr)
        for name, _ in CONDITIONS:
            print(f"   {name} ours: {results[name]['ours']['clips'][m['id']]['text']}", file=sys.stderr)
            print(f"   {name} fw int8: {results[name]['fw']['int8'][m['id']]['text']}", file=sys.stderr)
    for k, v in long["texts"].items():
        print(f"long {k}: {' '.join(v.split())}", file=sys.stderr)
    if a.write:
        bench.SECTION = SECTION
        bench.write_section(Path(a.write), body)
        log(f"wrote the {SECTION} section of {a.write}")


if __name__ == "__main__":
    main()
