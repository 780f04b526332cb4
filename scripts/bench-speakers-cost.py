#!/usr/bin/env python3
"""Helper of scripts/bench-speakers (read that first): what speaker identification costs the
daemon. The release daemon reads bench-asr's 20 espeak-ng utterances (five voices, 1 to 7 s) at
real time, with `[speakers]` off and on in alternating rounds, and this measures per utterance
speech_stop -> transcript (what the daemon adds after the end of speech), the daemon's RSS with
its models loaded, and, from its debug log, the embedding time per second of speech and any
transcript sent without its speaker because the lane was late.

  bench-speakers-cost.py --daemon BIN --model GGML --models DIR --work DIR [--rounds N]

Prints a Markdown section. Needs numpy (bench-asr.py's clips).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("bench_asr", HERE / "bench-asr.py")
assert spec and spec.loader
asr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(asr)


def run(daemon: str, model: str, session: Path, clips: list[dict], work: Path, tag: str,
        on: bool) -> dict:
    data = Path(tempfile.mkdtemp(prefix=f"data-{tag}-", dir=work))
    os.environ["XDG_DATA_HOME"] = str(data)
    config = "[speakers]\nenabled = true\n" if on else ""
    d = asr.Daemon(daemon, model, session, work, tag, config)
    d.wait_hello()
    d.sample()
    loaded = dict(d.samples[-1]) if d.samples else {}
    total = max(c["session_end"] for c in clips) + asr.GAP_S
    d.wait(total + 120)
    segs = asr.segments_of(d)
    stop_to_text = []
    identified = 0
    for c in clips:
        mine = [s for s in segs.values() if "start" in s and "end" in s
                and s["start"] < c["session_end"] and s["end"] > c["session_start"]]
        if len(mine) == 1 and "transcript_at" in mine[0] and "speech_stop_at" in mine[0]:
            stop_to_text.append((mine[0]["transcript_at"] - mine[0]["speech_stop_at"]) * 1000)
    for _, ev in d.events:
        if ev.get("type") == "transcript" and ev.get("speaker_status") not in (None, "none"):
            identified += 1
    log = d.log_path.read_text(errors="replace")
    # Each segment's embedding: at a pause (its own line), or at the end when not previewed.
    embeds = [float(m.group(1)) for m in re.finditer(r"embed_ms=([\d.]+)", log)
              if float(m.group(1)) > 0]
    early = len(re.findall(r"speaker identified.*early=true", log))
    late = log.count("the speaker lane was late")
    hwm = max((s.get("VmHWM", 0) for s in d.samples), default=0)
    return {"a_ms": stop_to_text, "loaded": loaded.get("VmRSS", 0), "hwm": hwm, "embeds": embeds,
            "late": late, "early": early, "identified": identified, "transcripts": sum(
                1 for _, ev in d.events if ev.get("type") == "transcript")}


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--daemon", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--models", required=True, help="the models directory (speaker model, VAD)")
    p.add_argument("--work", required=True)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    os.environ["STT_MODELS_DIR"] = a.models
    clips, session = asr.make_clips(work, asr.UTTERANCES)
    speech_s = [c["speech_s"] for c in clips]
    results: dict[bool, list[dict]] = {False: [], True: []}
    for r in range(a.rounds):
        for on in (False, True):
            tag = f"{'on' if on else 'off'}-{r}"
            print(f"bench-speakers: round {r + 1}/{a.rounds}, speakers {'on' if on else 'off'}",
                  file=sys.stderr)
            results[on].append(run(a.daemon, a.model, session, clips, work, tag, on))

    def merged(on: bool, key: str) -> list[float]:
        return [x for res in results[on] for x in res[key]]

    off, on = merged(False, "a_ms"), merged(True, "a_ms")
    # Per utterance: the median over rounds, on minus off.
    per_clip_off = [statistics.median(res["a_ms"][i] for res in results[False]) for i in range(len(clips))
                    if all(len(res["a_ms"]) == len(clips) for res in results[False])]
    per_clip_on = [statistics.median(res["a_ms"][i] for res in results[True]) for i in range(len(clips))
                   if all(len(res["a_ms"]) == len(clips) for res in results[True])]
    diffs = [b - a_ for a_, b in zip(per_clip_off, per_clip_on)]
    embeds = merged(True, "embeds")
    mb = lambda b: f"{b / 2**20:.1f} MB"  # noqa: E731 (bench-asr's proc_status gives bytes)
    rss_off = statistics.median(res["loaded"] for res in results[False])
    rss_on = statistics.median(res["loaded"] for res in results[True])
    hwm_off = max(res["hwm"] for res in results[False])
    hwm_on = max(res["hwm"] for res in results[True])
    late = sum(res["late"] for res in results[True])
    early = sum(res["early"] for res in results[True])
    ident = sum(res["identified"] for res in results[True])
    trans = sum(res["transcripts"] for res in results[True])
    print("## Speaker identification: cost\n")
    print("Reproduce: `scripts/bench-speakers --cost` (release daemon, bench-asr's 20 espeak-ng "
          f"utterances of {min(speech_s):.1f}–{max(speech_s):.1f} s at real time, {a.rounds} rounds "
          "of `[speakers]` off and on, alternating; whisper tiny.en on 2 threads, CAM++ on 1).\n")
    print("| | speakers off | speakers on | on − off |")
    print("|---|---|---|---|")
    print(f"| speech_stop → transcript, median | {statistics.median(off):.0f} ms | "
          f"{statistics.median(on):.0f} ms | {statistics.median(diffs):+.0f} ms (median per utterance) |")
    print(f"| speech_stop → transcript, p90 | {pct(off, 90):.0f} ms | {pct(on, 90):.0f} ms | "
          f"{pct(diffs, 90):+.0f} ms (p90 per utterance) |")
    print(f"| speech_stop → transcript, max | {max(off):.0f} ms | {max(on):.0f} ms | "
          f"{max(diffs):+.0f} ms (worst utterance) |")
    print(f"| RSS, models loaded, before speech (VmRSS) | {mb(rss_off)} | {mb(rss_on)} | "
          f"{mb(rss_on - rss_off)} |")
    print(f"| peak RSS over the session (VmHWM) | {mb(hwm_off)} | {mb(hwm_on)} | {mb(hwm_on - hwm_off)} |")
    print()
    total_speech = sum(speech_s) * a.rounds
    if embeds:
        print(f"Embedding: {len(embeds)} embeddings, {sum(embeds):.0f} ms for {total_speech:.0f} s of "
              f"speech, **{sum(embeds) / total_speech:.1f} ms per second of speech** (median "
              f"{statistics.median(embeds):.1f} ms, max {max(embeds):.1f} ms); {early} of the "
              f"segments identified were embedded at a pause, during the VAD's hangover, before "
              "the segment ended.")
    print(f"Transcripts with their speaker: {ident} of {trans}; sent without it because the lane "
          f"was late (after the 20 ms it may wait): {late}.")


if __name__ == "__main__":
    main()
