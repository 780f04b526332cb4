#!/usr/bin/env python3
"""End-of-turn benchmark for stt, run by `scripts/bench-asr --only turn`: how often the daemon
splits one utterance in two at a pause inside it, for several `vad_hangover_ms`. Each of
bench-asr's 20 espeak-ng utterances of four words or more is cut where a middle word ends (the
audio of the whole sentence, so its intonation goes on) and a pause of 300, 450 or 600 ms is
put there; the release daemon reads them (`--fast`, 1.8 s apart) and the segments per
utterance are counted. Prints a Markdown report and, with --write FILE, replaces its section.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lib"))
from load_script import load  # noqa: E402


asr = load("bench_asr", "bench-asr.py")
live = load("bench_live", "bench-live.py")

SECTION = "bench-turn"
PAUSES_MS = [300, 450, 600]
HANGOVERS_MS = [500, 400, 300, 200]


def log(msg: str) -> None:
    print(f"bench-turn: {msg}", file=sys.stderr, flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--daemon", required=True)
    p.add_argument("--write")
    a = p.parse_args()
    work = Path(a.work) / "turn"
    work.mkdir(parents=True, exist_ok=True)
    clips, _ = asr.make_clips(work, asr.UTTERANCES)
    clips = [c for c in clips if len(c["text"].split()) >= 4]
    ends = {c["n"]: live.word_ends(work, c["n"], c["voice"], c["wpm"], c["text"]) for c in clips}
    gap = np.zeros(int(asr.GAP_S * asr.RATE), np.float32)
    rows = {}
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
        for hangover in HANGOVERS_MS:
            log(f"pause {pause_ms} ms, hangover {hangover} ms")
            d = asr.Daemon(a.daemon, a.model, wav, work, f"turn-{pause_ms}-{hangover}",
                           f"[daemon]\nvad_hangover_ms = {hangover}\n", ("--fast",))
            d.wait_hello()
            d.wait(600)
            segs = asr.segments_of(d)
            split = 0
            for start, end in spans:
                mine = [s for s in segs.values() if "start" in s and "end" in s and s["start"] < end and s["end"] > start]
                split += len(mine) > 1
            rows[(pause_ms, hangover)] = split
    n = len(clips)
    out = [
        "## A pause inside an utterance (`scripts/bench-asr --only turn`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {asr.cpu_model()}, release daemon, Silero VAD at the shipped "
        f"threshold. {n} of bench-asr's espeak-ng utterances (those of four words or more), each cut where its "
        "middle word ends (in the audio of the whole sentence, so the voice does not fall there) with a pause put "
        "in; read with `--fast`; utterances the daemon split in two, by pause and `vad_hangover_ms` (500 ships). "
        "Reproduce with `scripts/bench-asr --only turn` (`scripts/bench-turn.py`).",
        "",
        "| pause | " + " | ".join(f"hangover {h} ms" for h in HANGOVERS_MS) + " |",
        "|---|" + "---:|" * len(HANGOVERS_MS),
    ]
    for pause_ms in PAUSES_MS:
        out.append(f"| {pause_ms} ms | " + " | ".join(f"{rows[(pause_ms, h)]} of {n}" for h in HANGOVERS_MS) + " |")
    out += ["", "The baseline for the end-of-turn work of issue 26: a shorter hangover ends a turn sooner "
            "and splits more of these (the latency of each policy is to be measured beside it).", ""]
    body = "\n".join(out)
    print(body)
    if a.write:
        asr.write_section(Path(a.write), body, SECTION, after="<!-- bench-vocabulary:end -->")


if __name__ == "__main__":
    main()
