#!/usr/bin/env python3
"""Custom vocabulary benchmark for stt, run by `scripts/bench-asr --only vocabulary`: 20 names
and terms tiny.en tends to misspell, in 40 espeak-ng sentences (two voices), read by the
release daemon (`--fast`) with `[daemon].vocabulary` listing the 20 and without it: how many
of the terms come out spelled right. Then the real-speech set (scripts/fetch-speech, clean),
none of whose sentences holds a term, with and without the list: how much the prompt moves
the WER of speech it is not about. Prints a Markdown report and, with --write FILE, replaces
its section in FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lib"))
from load_script import load  # noqa: E402


asr = load("bench_asr", "bench-asr.py")

SECTION = "bench-vocabulary"

TERMS = ["Nextcloud", "kubectl", "Siobhan", "Grafana", "Tailscale", "Oyelaran", "Efren", "Terraform",
         "Niamh", "Mattermost", "Prometheus", "Jellyfin", "Syncthing", "WireGuard", "PipeWire", "Hyprland",
         "Obsidian", "Anneliese", "Krzysztof", "Ngozi"]

# Two sentences per term, each naming it once.
SENTENCES = [
    "Please open Nextcloud and share the file.", "Upload the photos to Nextcloud tonight.",
    "Run kubectl get pods in the staging cluster.", "Use kubectl to restart the web service.",
    "Ask Siobhan to check the report.", "Siobhan will call you after lunch.",
    "Open the Grafana dashboard for the servers.", "The Grafana alert fired again this morning.",
    "Connect to the Tailscale network first.", "Tailscale says the laptop is offline.",
    "Send the draft to Oyelaran before noon.", "Oyelaran wants the numbers by Friday.",
    "Share the file with Efren please.", "Efren is late for the meeting.",
    "Deploy the change with Terraform.", "The Terraform plan shows three changes.",
    "Tell Niamh the train is delayed.", "Niamh booked the table for eight.",
    "Post the notes in Mattermost.", "Mattermost is down for maintenance.",
    "Prometheus stopped scraping the database.", "Add a Prometheus rule for the disk.",
    "Play the film on Jellyfin in the living room.", "Jellyfin needs a new library folder.",
    "Syncthing finished copying the music.", "Pause Syncthing on the laptop.",
    "Turn on WireGuard before you connect.", "The WireGuard tunnel keeps dropping.",
    "Restart PipeWire, the sound is gone.", "PipeWire picked the wrong microphone.",
    "Move the window to the left in Hyprland.", "Hyprland crashed after the update.",
    "Write this down in Obsidian.", "Search Obsidian for the recipe.",
    "Remind Anneliese about the invoice.", "Anneliese sent the contract back.",
    "Call Krzysztof about the car.", "Krzysztof fixed the printer yesterday.",
    "Ngozi is presenting the results today.", "Ask Ngozi for the slides.",
]
VOICES = ["en-us", "en-gb"]


def log(msg: str) -> None:
    print(f"bench-vocabulary: {msg}", file=sys.stderr, flush=True)


def transcribe(daemon: str, model: str, wav: Path, work: Path, tag: str, vocabulary: list[str]) -> list[str]:
    """`stt-daemon transcribe` (the daemon's VAD and whisper, with the vocabulary as the daemon
    gives it): one line per segment."""
    config = work / f"config-{tag}.toml"
    config.write_text("[daemon]\nvocabulary = " + json.dumps(vocabulary) + "\n" if vocabulary else "")
    out = subprocess.run([daemon, "--config", str(config), "--model", model, "transcribe", str(wav)],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "STT_DATA_DIR": str(work / f"data-{tag}"),
                              "STT_MODELS_DIR": os.environ.get("STT_MODELS_DIR", str(Path(model).parent))})
    return out.stdout.splitlines()


def spelled(term: str, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z]){re.escape(term)}(?![A-Za-z])", text, re.IGNORECASE) is not None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--daemon", required=True)
    p.add_argument("--speech", required=True, help="scripts/fetch-speech's directory")
    p.add_argument("--write")
    a = p.parse_args()
    work = Path(a.work) / "vocabulary"
    work.mkdir(parents=True, exist_ok=True)

    # One WAV per sentence, each its own segment: the count of segments must match.
    clips = []
    for i, text in enumerate(SENTENCES):
        voice = VOICES[(i // 2 + i) % 2]
        raw, wav = work / f"s{i:02}.raw.wav", work / f"s{i:02}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", "165", "-w", str(raw), text], check=True)
        subprocess.run(["sox", "-R", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(wav), "pad", "0.5", "1.0"],
                       check=True)
        clips.append({"text": text, "voice": voice, "term": TERMS[i // 2], "path": wav})
    results = {}
    for tag, vocabulary in (("without", []), ("with", TERMS)):
        log(f"40 sentences {tag} the list")
        rows = []
        for c in clips:
            text = " ".join(transcribe(a.daemon, a.model, c["path"], work, tag, vocabulary))
            rows.append({"text": text, "right": spelled(c["term"], text), "errors": asr.errors(c["text"], text),
                         "invented": sum(spelled(t, text) for t in TERMS if t != c["term"])})
        results[tag] = rows

    speech = Path(a.speech)
    manifest = json.loads((speech / "manifest.json").read_text())
    pad = np.zeros(int(0.5 * asr.RATE), np.float32)
    real = {}
    for tag, vocabulary in (("without", []), ("with", TERMS)):
        log(f"{len(manifest)} real recordings {tag} the list")
        pairs, invented = [], 0
        for m in manifest:
            wav = work / f"real-{m['file']}"
            if not wav.exists():
                asr.write_wav(wav, np.concatenate([pad, asr.read_wav(speech / m["file"]), pad]))
            text = " ".join(transcribe(a.daemon, a.model, wav, work, tag, vocabulary))
            pairs.append(asr.errors(m["text"], text))
            invented += sum(spelled(t, text) for t in TERMS)
        real[tag] = asr.wer_of(pairs)
        real[tag + "_invented"] = invented

    n = len(clips)
    right = {t: sum(r["right"] for r in rows) for t, rows in results.items()}
    other = {t: asr.wer_of([r["errors"] for r in rows]) for t, rows in results.items()}
    invented = {t: sum(r["invented"] for r in rows) for t, rows in results.items()}
    lines = [
        "## Custom vocabulary (`scripts/bench-asr --only vocabulary`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {asr.cpu_model()}, release build, whisper `{Path(a.model).name}`, "
        "`stt-daemon transcribe` (the daemon's VAD and whisper, given the vocabulary as the running daemon gives it: "
        "`Glossary: term, term, ….` as whisper's initial prompt, the terms' tokens favoured while it decodes "
        "(`stt_asr::bias`), and a word or run of words within a letter in five of a term spelled as the term). Reproduce with `scripts/bench-asr --only vocabulary` "
        "(`scripts/bench-vocabulary.py`).",
        "",
        f"**Sentences**: {len(TERMS)} names and terms in {n} espeak-ng sentences (en-us and en-gb, 165 wpm), two each.",
        "",
        "| | without the list | with the 20 terms in `[daemon].vocabulary` |",
        "|---|---:|---:|",
        f"| terms spelled right | {right['without']} of {n} ({right['without'] / n * 100:.0f}%) "
        f"| {right['with']} of {n} ({right['with'] / n * 100:.0f}%) |",
        f"| WER of the 40 sentences, terms included | {other['without'] * 100:.1f}% | {other['with'] * 100:.1f}% |",
        f"| terms written that were not said: in the 40 sentences (another term was) | {invented['without']} "
        f"| {invented['with']} |",
        f"| … in the {len(manifest)} real recordings | {real['without_invented']} | {real['with_invented']} |",
        f"| WER on the {len(manifest)} real recordings (none holds a term) | {real['without'] * 100:.1f}% "
        f"| {real['with'] * 100:.1f}% |",
        "",
        "Per term (✓ spelled right), without → with the list:",
        "",
        "| term | sentence | without | with |",
        "|---|---|---|---|",
    ]
    for c, before, after in zip(clips, results["without"], results["with"]):
        mark = lambda r: ("✓ " if r["right"] else "") + r["text"].replace("|", "/")
        lines.append(f"| {c['term']} | {c['text']} | {mark(before)} | {mark(after)} |")
    rise = (real["with"] - real["without"]) * 100
    lines += [
        "",
        f"**Targets** (issue 26): terms spelled right ≥ 90% with the list: "
        f"**{'met' if right['with'] >= 0.9 * n else 'not met'}** ({right['with'] / n * 100:.0f}%, "
        f"from {right['without'] / n * 100:.0f}% without); the real-speech WER rises by at most 0.5 points: "
        f"**{'met' if rise <= 0.5 else 'not met'}** ({rise:+.1f} points).",
        "",
    ]
    body = "\n".join(lines)
    print(body)
    if a.write:
        asr.write_section(Path(a.write), body, SECTION, after="<!-- bench-live:end -->")


if __name__ == "__main__":
    main()
