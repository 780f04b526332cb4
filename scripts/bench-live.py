#!/usr/bin/env python3
"""Live speech benchmark for stt, run by `scripts/bench-asr --only live` (which sets up what
it needs): the release daemon on bench-asr's 20 espeak-ng utterances paced at real time, once
with live partial transcripts (`[daemon].partials = true`, the default) and once without, in
the same run. Measures:
  - word spoken -> first shown: for every word, the time from the end of that word in the
    audio to the first event of its segment (a `transcript_partial`, or the `transcript`)
    showing at least that many words. A word's end is where espeak-ng's speech of the
    sentence up to that word ends (each prefix is synthesised on its own);
  - end of spoken audio -> final `transcript`, median and p90;
  - the daemon's CPU over the run (user + system seconds, from getrusage);
  - committed words the final changed: of the words the last partial of a segment had
    committed, how many the final transcript has otherwise or not at all;
  - the finals' WER, which partials must not raise.
Prints a Markdown report and, with --write FILE, replaces its section in FILE.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lib"))
from load_script import load  # noqa: E402

asr = load("bench_asr", "bench-asr.py")

SECTION = "bench-live"


def log(msg: str) -> None:
    print(f"bench-live: {msg}", file=sys.stderr, flush=True)


def word_ends(work: Path, n: int, voice: str, wpm: int, text: str) -> list[float]:
    """Seconds from the start of the sentence's speech to the end of each of its words."""
    words = text.split()
    ends = []
    for k in range(1, len(words) + 1):
        raw = work / f"prefix{n:02}-{k:02}.wav"
        conv = work / f"prefix{n:02}-{k:02}-16k.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-w", str(raw), " ".join(words[:k])], check=True)
        subprocess.run(["sox", "-R", str(raw), "-r", str(asr.RATE), "-c", "1", "-b", "16", "-e", "signed-integer", str(conv)],
                       check=True)
        x = asr.read_wav(conv)
        loud = np.flatnonzero(np.abs(x) >= asr.SILENT)
        ends.append((loud[-1] + 1 - loud[0]) / asr.RATE if len(loud) else 0.0)
    # Never past the whole sentence's end (a prefix ends a little longer: a final fall).
    whole = ends[-1]
    return [min(e, whole) for e in ends]


def matched(ref: list[str], hyp: list[str]) -> set[int]:
    """The reference words a best word alignment of `hyp` to `ref` matches exactly."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    out, i, j = set(), n, m
    while i > 0 and j > 0:
        if ref[i - 1] == hyp[j - 1] and d[i][j] == d[i - 1][j - 1]:
            out.add(i - 1)
            i, j = i - 1, j - 1
        elif d[i][j] == d[i - 1][j - 1] + 1:
            i, j = i - 1, j - 1
        elif d[i][j] == d[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return out


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def aligned_changes(committed: list[str], final: list[str]) -> int:
    """Committed words the final has otherwise or not at all: the edits of the best alignment
    of `committed` to a prefix of `final`, less those that only add final words."""
    return min(asr.edit_distance(committed, final[:j]) for j in range(len(final) + 1))


def run(binary: str, model: str, session: Path, clips: list[dict], ends: dict[int, list[float]], work: Path,
        tag: str, config: str = "") -> dict:
    """The daemon with `config` (TOML) on the session at real time: what the report needs."""
    cpu0 = children_cpu_s()
    d = asr.Daemon(binary, model, session, work, f"live-{tag}", config)
    t0 = d.wait_hello()
    total = max(c["session_end"] for c in clips) + asr.GAP_S
    d.wait(total + 120)
    cpu = children_cpu_s() - cpu0
    by_seg = events_by_segment(d)
    shown_lat, final_lat, changed, committed_n, pairs, partial_counts = [], [], 0, 0, [], []
    segs_per_clip = []
    for c in clips:
        mine = [sid for sid, evs in by_seg.items()
                if any(ev["type"] == "speech_start" and ev["start"] < c["session_end"] for _, ev in evs)
                and any(ev["type"] == "speech_stop" and ev["end"] > c["session_start"] for _, ev in evs)]
        segs_per_clip.append(len(mine))
        events = sorted((x for sid in mine for x in by_seg[sid]), key=lambda x: x[0])
        finals = [(at, ev) for at, ev in events if ev["type"] == "transcript"]
        partial = [(at, ev) for at, ev in events if ev["type"] == "transcript_partial"]
        partial_counts.append(len(partial))
        text = " ".join(ev["text"] for _, ev in finals)
        pairs.append(asr.errors(c["text"], text))
        if len(mine) != 1 or not finals:
            continue
        final_at, final = finals[-1]
        final_lat.append((final_at - (t0 + c["session_end"])) * 1000)
        shown_lat += first_shown(events, c, ends[c["n"]], t0)
        if partial:
            last = partial[-1][1]
            committed = asr.normalize(last["text"][: last["committed_len"]])
            committed_n += len(committed)
            changed += aligned_changes(committed, asr.normalize(final["text"]))
    return {"shown": shown_lat, "final": final_lat, "cpu_s": cpu, "wer": asr.wer_of(pairs),
            "changed": changed, "committed": committed_n, "partials": sum(partial_counts),
            "split": sum(1 for n in segs_per_clip if n > 1), "missed": sum(1 for n in segs_per_clip if n == 0),
            "audio_s": total, "exit": d.proc.returncode}


def word_times(example: str, model: str, files: list[Path]) -> dict[str, list[tuple[str, float]]]:
    """Each file's words and when they end, as whisper's alignment heads place them (the
    `word_times` example, whole files, full window)."""
    out = subprocess.run([example, model, *map(str, files)], capture_output=True, text=True, check=True).stdout
    words: dict[str, list[tuple[str, float]]] = {str(f): [] for f in files}
    for line in out.splitlines():
        file, word, end = line.split("\t")
        words[file].append((word, float(end)))
    return words


def events_by_segment(d) -> dict[int, list[tuple[float, dict]]]:
    by_seg: dict[int, list[tuple[float, dict]]] = {}
    for at, ev in d.events:
        sid = ev.get("seg_id")
        if sid is not None:
            by_seg.setdefault(sid, []).append((at, ev))
    return by_seg


def first_shown(events: list[tuple[float, dict]], c: dict, ends: list[float], t0: float) -> list[float]:
    """Milliseconds from the end of each word of clip `c` to the first event of its segments
    (in `events`) whose words, aligned to what was said, have it (a word no event ever gets
    right: the first with as many words as reach it)."""
    ref = asr.normalize(c["text"])
    shown = [(at, matched(ref, asr.normalize(ev["text"])), len(asr.normalize(ev["text"])))
             for at, ev in events if ev["type"] in ("transcript_partial", "transcript")]
    out = []
    for k, end in enumerate(ends):
        spoken_at = t0 + c["session_start"] + end
        first = next((at for at, hit, _ in shown if k in hit), None)
        if first is None:
            first = next((at for at, _, n in shown if n > k), None)
        if first is not None:
            out.append((first - spoken_at) * 1000)
    return out


def shown_of(d, clips: list[dict], ends: dict[int, list[float]]) -> list[float]:
    """[`first_shown`] over every clip of a run."""
    by_seg, t0 = events_by_segment(d), d.hello_at
    out = []
    for c in clips:
        mine = [sid for sid, evs in by_seg.items()
                if any(ev["type"] == "speech_start" and ev["start"] < c["session_end"] for _, ev in evs)
                and any(ev["type"] == "speech_stop" and ev["end"] > c["session_start"] for _, ev in evs)]
        events = sorted((x for sid in mine for x in by_seg[sid]), key=lambda x: x[0])
        out += first_shown(events, c, ends[c["n"]], t0)
    return out


def run_real(binary: str, model: str, speech: Path, work: Path, example: str | None) -> dict:
    """The real recordings (scripts/fetch-speech), 1 s of silence around each, at real time:
    the finals' WER with partials on and off; with the `word_times` example, word spoken ->
    first shown too, a word's time being where whisper's alignment heads end it (and
    what was said, whisper's own offline words)."""
    wav, manifest, spans = asr.real_session(speech, work)
    times = word_times(example, model, [speech / m["file"] for m in manifest]) if example else {}
    clips, ends = [], {}
    for n, (m, (_, at, _)) in enumerate(zip(manifest, spans)):
        words = times.get(str(speech / m["file"]), [])
        if words:
            start = at + 1.0
            clips.append({"n": n, "text": " ".join(w for w, _ in words), "session_start": start,
                          "session_end": start + words[-1][1]})
            ends[n] = [e for _, e in words]
    at = spans[-1][2]
    out = {}
    for partials in (True, False):
        tag = "partials" if partials else "finals"
        log(f"the {len(manifest)} real recordings at real time ({at:.0f} s), {tag}")
        d = asr.Daemon(binary, model, wav, work, f"real-{tag}", "" if partials else "[daemon]\npartials = false\n")
        d.wait_hello()
        d.wait(at + 300)
        if clips:
            out[tag + "_shown"] = shown_of(d, clips, ends)
        segs = asr.segments_of(d)
        pairs = []
        for text, start, end in spans:
            heard = asr.heard_in(segs, start, end)
            pairs.append(asr.errors(text, heard))
        out[tag] = asr.wer_of(pairs)
        out[tag + "_partials"] = sum(1 for _, ev in d.events if ev.get("type") == "transcript_partial")
    out["clips"] = len(manifest)
    out["seconds"] = at
    return out


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    return float(np.percentile(xs, q))


def report(args, clips, runs: dict[str, dict], noise: str) -> str:
    on, off = runs["partials"], runs["finals"]
    words = sum(len(asr.normalize(c["text"])) for c in clips)
    out = [
        "## Live partial transcripts (`scripts/bench-asr --only live`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {asr.cpu_model()}, release build, whisper "
        f"`{Path(args.model).name}` on {args.threads} threads, the shipped defaults but for `partials`. "
        f"Reproduce with `scripts/bench-asr --only live` (about 5 minutes; `scripts/bench-live.py` measures).",
        "",
        f"**Clips**: bench-asr's {len(clips)} espeak-ng utterances ({words} words, 0.8–6.7 s of speech each), "
        f"1.8 s apart in one WAV paced at real time ({on['audio_s']:.0f} s), read by the release daemon twice: "
        "with live partials and without. A word's time is the end of the sentence's speech up to it (each prefix "
        "synthesised alone); *first shown* is from there to the first event of its segment (a partial, or the "
        "final) whose words, aligned to what was said, have it right (a word no event gets right: the first "
        "with as many words as reach it). Whisper hears the start of a word before it ends, so a few are "
        "shown before their end (negative times, counted as they are). End of speech → final is from the end of the utterance's audio "
        "to its `transcript`. CPU is the daemon's user + system time over the whole run (getrusage). "
        f"Machine noise during the runs: {noise}.",
        "",
        "| | partials on (`partial_interval_ms` = 500) | partials off |",
        "|---|---:|---:|",
        f"| word spoken → first shown, median | {pct(on['shown'], 50):.0f} ms | {pct(off['shown'], 50):.0f} ms |",
        f"| word spoken → first shown, p90 | {pct(on['shown'], 90):.0f} ms | {pct(off['shown'], 90):.0f} ms |",
        f"| words shown before their end in the audio | {sum(x < 0 for x in on['shown'])} of {len(on['shown'])} "
        f"| {sum(x < 0 for x in off['shown'])} of {len(off['shown'])} |",
        f"| end of speech → final, median | {pct(on['final'], 50):.0f} ms | {pct(off['final'], 50):.0f} ms |",
        f"| end of speech → final, p90 | {pct(on['final'], 90):.0f} ms | {pct(off['final'], 90):.0f} ms |",
        f"| daemon CPU over the run | {on['cpu_s']:.1f} s ({on['cpu_s'] / on['audio_s'] * 100:.0f}% of a core) "
        f"| {off['cpu_s']:.1f} s ({off['cpu_s'] / off['audio_s'] * 100:.0f}% of a core) |",
        f"| partials published | {on['partials']} | – |",
        f"| committed words the final changed | {on['changed']} of {on['committed']} "
        f"({on['changed'] / max(on['committed'], 1) * 100:.1f}%) | – |",
        f"| WER of the finals | {on['wer'] * 100:.1f}% | {off['wer'] * 100:.1f}% |",
        f"| utterances split in two / missed | {on['split']} / {on['missed']} | {off['split']} / {off['missed']} |",
        "",
        "**Targets** (issue 26): word spoken → first shown median ≤ 0.6 s: "
        f"**{'met' if pct(on['shown'], 50) <= 600 else 'not met'}** ({pct(on['shown'], 50):.0f} ms); "
        f"p90 ≤ 1.0 s: **{'met' if pct(on['shown'], 90) <= 1000 else 'not met'}** ({pct(on['shown'], 90):.0f} ms); "
        "committed words changed by the final ≤ 5%: "
        f"**{'met' if on['changed'] <= 0.05 * max(on['committed'], 1) else 'not met'}**; "
        f"the finals' WER with partials on not above it without: **{'met' if on['wer'] <= off['wer'] else 'not met'}** "
        f"({on['wer'] * 100:.1f}% against {off['wer'] * 100:.1f}%).",
        "",
    ]
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--daemon", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--clips", type=int, default=len(asr.UTTERANCES))
    p.add_argument("--speech", help="scripts/fetch-speech's directory: the real recordings too")
    p.add_argument("--word-times", help="the word_times example: the real recordings' word times")
    p.add_argument("--write")
    a = p.parse_args()
    work = Path(a.work)
    utterances = asr.UTTERANCES[: a.clips]
    log(f"making {len(utterances)} clips and their word times")
    clips, session = asr.make_clips(work, utterances)
    ends = {c["n"]: word_ends(work, c["n"], c["voice"], c["wpm"], c["text"]) for c in clips}
    runs = {}
    for partials in (True, False):
        tag = "partials" if partials else "finals"
        log(f"daemon at real time, {tag}")
        with asr.Phase(f"daemon {tag}"):
            config = "" if partials else "[daemon]\npartials = false\n"
            runs[tag] = run(a.daemon, a.model, session, clips, ends, work, tag, config)
    body = report(a, clips, runs, asr.noise_summary())
    if a.speech:
        real = run_real(a.daemon, a.model, Path(a.speech), work, a.word_times)
        body += (
            f"**Real speech**: the {real['clips']} recordings of people (scripts/fetch-speech), 1 s of silence "
            f"around each, at real time ({real['seconds']:.0f} s): the finals' WER {real['partials'] * 100:.1f}% "
            f"with partials on ({real['partials_partials']} partials), {real['finals'] * 100:.1f}% without: "
            f"**{'met' if real['partials'] <= real['finals'] else 'not met'}** (not above).\n"
        )
        if "partials_shown" in real:
            on, off = real["partials_shown"], real["finals_shown"]
            body += (
                f"\n**Real speech, word spoken → first shown** ({len(on)} words; a word's end where whisper's own "
                "cross-attention aligns it over the whole recording, the `word_times` example: dynamic time warping on the model's alignment heads): median "
                f"**{pct(on, 50):.0f} ms**, p90 **{pct(on, 90):.0f} ms** with partials on "
                f"(off: {pct(off, 50):.0f} / {pct(off, 90):.0f} ms). Targets median ≤ 0.6 s, p90 ≤ 1.0 s: "
                f"**{'met' if pct(on, 50) <= 600 and pct(on, 90) <= 1000 else 'not met'}**.\n"
            )
    print(body)
    if a.write:
        asr.write_section(Path(a.write), body, SECTION, after="<!-- bench-asr:end -->")


if __name__ == "__main__":
    main()
