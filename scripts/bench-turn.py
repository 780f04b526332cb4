#!/usr/bin/env python3
"""End-of-turn benchmark for stt, run by `scripts/bench-asr --only turn`: for each way of
ending a turn (`[daemon].end_of_turn` and its pause, or a fixed `vad_hangover_ms`), in one run
of the release daemon:
  - latency: end of spoken audio -> final `transcript`, median and p90, on bench-asr's 20
    espeak-ng utterances at real time (bench-live's session and measure);
  - splits at a pause inside an utterance: each utterance of four words or more cut where its
    middle word ends (the audio of the whole sentence, so its intonation goes on) with 300,
    450 or 600 ms of silence put in; read with `--fast`, which ends a turn where an instant
    whisper would (the most a pause can be cut short); utterances split in two are counted;
  - the VAD set's gaps (scripts/measure-vad.py's clips: five sentences a clip, 1-2.5 s apart,
    clean and in pink noise at 10 dB SNR): utterances split, and gaps not cut (two utterances
    in one segment);
  - WER of the finals: the espeak-ng session, and the 59 recordings of people
    (scripts/fetch-speech) read with `--fast`.
Prints a Markdown report and, with --write FILE, replaces its section.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lib"))
from load_script import load  # noqa: E402


asr = load("bench_asr", "bench-asr.py")
live = load("bench_live", "bench-live.py")
vadset = load("measure_vad", "measure-vad.py")

SECTION = "bench-turn"
PITCH_SECTION = "bench-pitch"
PAUSES_MS = [300, 450, 600]
FALL_ST = -2.0  # stt_vad::pitch::FALL_ST
CLEAR_FALL_ST = -4.0  # stt_vad::pitch::CLEAR_FALL_ST
VAD_CONDITIONS = ["clean", "pink10"]
# (name, [daemon] keys). The first is the fixed hangover that shipped before issue 26.
POLICIES = [
    ("hangover 500 ms", 'end_of_turn = "hangover"\nvad_hangover_ms = 500\n'),
    ("hangover 300 ms", 'end_of_turn = "hangover"\nvad_hangover_ms = 300\n'),
    ("text, 250 ms", 'end_of_turn = "text"\nend_of_turn_pause_ms = 250\n'),
    ("text, 300 ms", 'end_of_turn = "text"\nend_of_turn_pause_ms = 300\n'),
    ("prosody, 250 ms", 'end_of_turn = "prosody"\nend_of_turn_pause_ms = 250\n'),
    ("prosody, 300 ms (shipped)", 'end_of_turn = "prosody"\nend_of_turn_pause_ms = 300\n'),
    ("prosody, 350 ms", 'end_of_turn = "prosody"\nend_of_turn_pause_ms = 350\n'),
]



def log(msg: str) -> None:
    print(f"bench-turn: {msg}", file=sys.stderr, flush=True)


def spans_split(segs: dict[int, dict], spans: list[tuple[float, float]]) -> tuple[int, int]:
    """Utterances split over more than one segment, and segments holding more than one."""
    closed = [s for s in segs.values() if "start" in s and "end" in s]
    split = sum(1 for a, b in spans if sum(1 for s in closed if s["start"] < b and s["end"] > a) > 1)
    merged = sum(1 for s in closed if sum(1 for a, b in spans if s["start"] < b and s["end"] > a) > 1)
    return split, merged


def paused_sessions(work: Path, clips: list[dict], ends: dict) -> dict[int, tuple[Path, list]]:
    gap = np.zeros(int(asr.GAP_S * asr.RATE), np.float32)
    out = {}
    for pause_ms in PAUSES_MS:
        parts, spans, at = [np.zeros(int(asr.LEAD_S * asr.RATE), np.float32)], [], asr.LEAD_S
        for c in clips:
            x = asr.read_wav(Path(c["path"]))
            pad = int(asr.PAD_S * asr.RATE)
            speech = x[pad: len(x) - pad]
            words = ends[c["n"]]
            cut = int(words[len(words) // 2 - 1] * asr.RATE)
            pause = np.zeros(int(pause_ms / 1000 * asr.RATE), np.float32)
            utterance = np.concatenate([speech[:cut], pause, speech[cut:]])
            spans.append((at, at + len(utterance) / asr.RATE))
            parts += [utterance, gap]
            at += (len(utterance) + len(gap)) / asr.RATE
        wav = work / f"paused-{pause_ms}.wav"
        asr.write_wav(wav, np.concatenate(parts))
        out[pause_ms] = (wav, spans)
    return out


def vad_sessions(work: Path) -> dict[str, tuple[Path, list]]:
    """The VAD set's clips of each condition, one after another (2 s apart), with the spans of
    their sentences in seconds."""
    vad_work = work / "vadset"
    if not (vad_work / "truth.tsv").exists():
        vadset.build(str(vad_work))
    truth = [line.split("\t") for line in (vad_work / "truth.tsv").read_text().splitlines()]
    out = {}
    for cond in VAD_CONDITIONS:
        parts, spans, at = [], [], 0
        between = np.zeros(2 * asr.RATE, np.float32)
        for name, kind, _, raw_spans in truth:
            if kind != "speech" or not name.endswith("-" + cond):
                continue
            x = asr.read_wav(vad_work / "clips" / f"{name}.wav")
            for span in raw_spans.strip().split(","):
                a, b = (int(v) for v in span.split(":"))
                spans.append(((at + a) / asr.RATE, (at + b) / asr.RATE))
            parts += [x, between]
            at += len(x) + len(between)
        wav = work / f"vadset-{cond}.wav"
        asr.write_wav(wav, np.concatenate(parts))
        out[cond] = (wav, spans)
    return out


def pitch_report(example: str, work: Path, clips: list[dict], ends: dict, speech: Path | None) -> str:
    """How the voice ends (`stt_vad::pitch::final_pitch`, the `final_pitch` example) where a
    turn ends and where a speaker only pauses: the espeak-ng utterances whole and cut where
    their middle word ends (as in the splits), and the recordings of people at their end and
    before each pause of 200 ms or more inside them (found by energy: 35 dB under the peak)."""
    out_dir = work / "pitch"
    out_dir.mkdir(exist_ok=True)
    pad = int(asr.PAD_S * asr.RATE)
    files: list[tuple[str, Path]] = []
    for c in clips:
        x = asr.read_wav(Path(c["path"]))
        speech_only = x[pad: len(x) - pad]
        whole = out_dir / f"whole-{c['n']}.wav"
        asr.write_wav(whole, speech_only)
        files.append(("espeak-ng utterances, at their end", whole))
        words = ends[c["n"]]
        if len(c["text"].split()) >= 4:
            cut = out_dir / f"cut-{c['n']}.wav"
            asr.write_wav(cut, speech_only[: int(words[len(words) // 2 - 1] * asr.RATE)])
            files.append(("espeak-ng utterances, cut after their middle word", cut))
    if speech:
        manifest = json.loads((speech / "manifest.json").read_text())
        for m in manifest:
            x = asr.read_wav(speech / m["file"])
            frames = len(x) // 160
            energy = np.array([np.sqrt(np.mean(x[i * 160:(i + 1) * 160] ** 2)) for i in range(frames)])
            loud = energy > max(energy.max() * 10 ** (-35 / 20), 1e-4)
            idx = np.where(loud)[0]
            if len(idx) == 0:
                continue
            first, last = idx[0], idx[-1]
            end = out_dir / f"real-{Path(m['file']).stem}.wav"
            asr.write_wav(end, x[: (last + 1) * 160])
            files.append(("recordings of people, at their end", end))
            quiet = 0
            for i in range(first, last + 1):
                if not loud[i]:
                    quiet += 1
                    continue
                if quiet >= 20:
                    pause = out_dir / f"pause-{Path(m['file']).stem}-{i - quiet}.wav"
                    asr.write_wav(pause, x[: (i - quiet) * 160])
                    files.append(("recordings of people, before a pause inside", pause))
                quiet = 0
    lines = subprocess.run([example, *(str(f) for _, f in files)], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    rows: dict[str, list[float | None]] = {}
    for (kind, _), line in zip(files, lines):
        value = line.split("\t")[1]
        rows.setdefault(kind, []).append(None if value == "-" else float(value))
    out = [
        "**How the voice ends** (`stt_vad::pitch`, the `final_pitch` example, in the same run): the pitch "
        "of the last 50 ms voiced against the median of the 3 s before, where a turn ends and where a "
        "speaker only pauses.",
        "",
        f"| where | fell {abs(FALL_ST):.1f} semitones or more (a turn may end) | did not | pitch not read |",
        "|---|---:|---:|---:|",
    ]
    for kind, values in rows.items():
        read = [v for v in values if v is not None]
        fell = sum(1 for v in read if v <= FALL_ST)
        out.append(f"| {kind} | {fell} of {len(values)} | {len(read) - fell} | {len(values) - len(read)} |")
    out.append("")
    return "\n".join(out)


def fast(a, wav: Path, work: Path, tag: str, keys: str) -> dict[int, dict]:
    d = asr.Daemon(a.daemon, a.model, wav, work, tag, "[daemon]\n" + keys, ("--fast",))
    d.wait_hello()
    d.wait(900)
    return asr.segments_of(d)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--daemon", required=True)
    p.add_argument("--speech", help="scripts/fetch-speech's directory: the real recordings' WER")
    p.add_argument("--final-pitch", required=True, help="the final_pitch example of stt-vad")
    p.add_argument("--pitch-only", action="store_true", help="only how the voice ends, no daemon runs")
    p.add_argument("--policies", help="only the policies whose names start with one of these (';' between them)")
    p.add_argument("--write")
    a = p.parse_args()
    work = Path(a.work) / "turn"
    work.mkdir(parents=True, exist_ok=True)
    all_clips, session = asr.make_clips(work, asr.UTTERANCES)
    ends = {c["n"]: live.word_ends(work, c["n"], c["voice"], c["wpm"], c["text"]) for c in all_clips}
    clips = [c for c in all_clips if len(c["text"].split()) >= 4]
    log("how the voice ends")
    pitch = pitch_report(a.final_pitch, work, all_clips, ends, Path(a.speech) if a.speech else None)
    print(pitch)
    if a.write:
        asr.write_section(Path(a.write), pitch, PITCH_SECTION, after="<!-- bench-turn:end -->")
    if a.pitch_only:
        return
    paused = paused_sessions(work, clips, ends)
    log("building the VAD set's clips")
    vad = vad_sessions(work)
    real = asr.real_session(Path(a.speech), work) if a.speech else None
    rows = []
    chosen = [n.strip() for n in a.policies.split(";")] if a.policies else None
    for name, keys in POLICIES:
        if chosen and not any(name.startswith(c) for c in chosen):
            continue
        row = {"name": name}
        log(f"{name}: the espeak-ng session at real time")
        timed = live.run(a.daemon, a.model, session, all_clips, ends, work, f"turn-{len(rows)}", "[daemon]\n" + keys)
        row["final"] = timed["final"]
        log(f"{name}: end of speech -> final, ms, by utterance: " + " ".join(f"{v:.0f}" for v in timed["final"]))
        row["wer"] = timed["wer"]
        row["session_split"] = timed["split"]
        for pause_ms, (wav, spans) in paused.items():
            log(f"{name}: a pause of {pause_ms} ms")
            row[pause_ms] = spans_split(fast(a, wav, work, f"turn-{len(rows)}-{pause_ms}", keys), spans)[0]
        for cond, (wav, spans) in vad.items():
            log(f"{name}: the VAD set, {cond}")
            row[cond] = spans_split(fast(a, wav, work, f"turn-{len(rows)}-{cond}", keys), spans)
            row[cond + "_n"] = len(spans)
        if real:
            log(f"{name}: the real recordings")
            tag = f"turn-{len(rows)}-real"
            segs = fast(a, real[0], work, tag, keys)
            row["real_early"] = (work / f"daemon-{tag}.log").read_text().count("the turn ended before the hangover")
            pairs = []
            for text, start, end in real[2]:
                heard = asr.heard_in(segs, start, end)
                pairs.append(asr.errors(text, heard))
            row["real_wer"] = asr.wer_of(pairs)
        rows.append(row)
    body = report(a, rows, len(clips), len(all_clips), real)
    print(body)
    if a.write:
        asr.write_section(Path(a.write), body, SECTION, after="<!-- bench-vocabulary:end -->")


def report(a, rows: list[dict], n: int, n_all: int, real) -> str:
    pct = live.pct
    head = ("| policy | end of speech → final, median | p90 | split at a pause of "
            + " / ".join(f"{p}" for p in PAUSES_MS) + " ms (of " + str(n) + ") | VAD set: split, gaps not cut "
            + " / ".join(VAD_CONDITIONS) + " | live: split at their own pauses (of " + str(n_all)
            + ") | WER espeak | WER real | real: turns ended early |")
    out = [
        "## The end of a turn (`scripts/bench-asr --only turn`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {asr.cpu_model()}, release daemon, Silero VAD at the shipped "
        f"threshold, each policy in the same run. Latency: bench-asr's {n_all} espeak-ng utterances at real "
        "time, end of spoken audio → final `transcript`. Splits: the " + str(n) + " of four words or more, "
        "each cut where its middle word ends (in the audio of the whole sentence, so the voice does not fall "
        "there) with a pause put in, read with `--fast`, which ends a turn where an instant whisper would: "
        "the most a pause can be cut short (live, speech that resumes while whisper reads the pause keeps "
        "the turn open). VAD set: scripts/measure-vad.py's clips, five sentences each 1–2.5 s apart "
        f"({rows[0]['clean_n']} sentences a condition), `--fast`. WER real: the "
        + (f"{len(real[2])} recordings of people (scripts/fetch-speech), `--fast`." if real else "(not run).")
        + " Reproduce with `scripts/bench-asr --only turn` (`scripts/bench-turn.py`).",
        "",
        "Policies: *hangover N* (`end_of_turn = \"hangover\"`, `vad_hangover_ms = N`): the turn ends after N ms "
        "of silence; whisper decodes the segment during the pause (at 300 ms, or when it closes if that is "
        "sooner), so its final is ready when the hangover runs out. *text, N ms* (`end_of_turn = \"text\"`, "
        "`end_of_turn_pause_ms = N`): whisper reads the pause 200 ms before N (at least 100 ms in); when the "
        "text is finished (it ends in a full stop, question or exclamation mark whisper gave at least 0.5, and "
        "not on \"and\", \"the\", …) the turn ends at N ms of pause, otherwise after the 500 ms hangover. "
        "*prosody, N ms* (`end_of_turn = \"prosody\"`): whisper reads the pause as for *text*, and the daemon "
        "reads the pitch where the voice stopped (its last 50 ms against its median over the 3 s before, "
        "`stt_vad::pitch`); the turn ends at N ms when the voice fell "
        f"{abs(FALL_ST):.1f} semitones or more and the text ends in a mark whisper gave at least 0.2 (not on "
        f"\"and\", …), or fell {abs(CLEAR_FALL_ST):.1f} or more and the text has no closing mark at all; a "
        "pitch that cannot be read ends nothing early. *Real: turns ended early*: of the recordings of people, those whose turn ended "
        "before the hangover (the rest waited it out).",
        "",
        head,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        vad = " / ".join(f"{r[c][0]}, {r[c][1]}" for c in VAD_CONDITIONS)
        real_wer = f"{r['real_wer'] * 100:.1f}%" if "real_wer" in r else "—"
        out.append(
            f"| {r['name']} | {pct(r['final'], 50):.0f} ms | {pct(r['final'], 90):.0f} ms | "
            + " / ".join(str(r[p]) for p in PAUSES_MS)
            + f" | {vad} | {r['session_split']} | {r['wer'] * 100:.1f}% | {real_wer} | "
            + (f"{r['real_early']} of {len(real[2])} |" if real else "— |")
        )
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    main()
