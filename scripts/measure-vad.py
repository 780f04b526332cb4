#!/usr/bin/env python3
"""Builds the VAD measurement clips and scores them with Silero; run by scripts/measure-vad.

usage: measure-vad.py WORK_DIR

Writes into WORK_DIR:
  clips/NAME.wav   16 kHz mono 16-bit clips (espeak-ng speech with silence between, mixed with
                   noise at several SNRs; and noise-only clips)
  truth.tsv        NAME, kind (speech|noise), condition, speech spans as START:END in samples,
                   where the espeak audio is non-silent (|x| >= 1e-3)
  silero/NAME.f32  Silero's speech probability per 512-sample chunk (little-endian f32)
  silero.tsv       Silero's CPU seconds (inside InferenceSession.run, one thread) and the
                   seconds of audio they covered

Silero runs exactly as its own OnnxWrapper runs it: 512-sample chunks at 16 kHz, the previous
64 samples prepended as context, state [2, 1, 128] carried from chunk to chunk.
"""

import os
import subprocess
import sys
import time
import wave

import importlib.util

import numpy as np

RATE = 16000
SEED = 20261130
VOICES = ["en-us", "en-gb", "en-us+f3", "en+m7"]
RATES_WPM = [140, 165, 190]
SENTENCES = [
    "Stop.",
    "Yes.",
    "Thanks.",
    "Six fish were found in the sea.",
    "Close all windows.",
    "Hey, what's the weather like tomorrow in Paris?",
    "Open the file manager and show me my downloads.",
    "Set a timer for fifteen minutes, then remind me to check the oven.",
    "Please turn the volume down a little.",
    "Find every file that changed since yesterday afternoon.",
    "How far is it from here to the station, and how long would it take to walk?",
    "Send a message to Sam saying I'll be five minutes late.",
]
PER_CLIP = 5
# Speech + noise conditions: (name, noise colour, SNR in dB over the speech's active RMS,
# gain applied to the speech in dB).
SPEECH_CONDITIONS = [
    ("clean", None, None, 0),
    ("clean, quiet (-20 dB)", None, None, -20),
    ("pink 20 dB SNR", "pink", 20, 0),
    ("pink 10 dB SNR", "pink", 10, 0),
    ("pink 5 dB SNR", "pink", 5, 0),
    ("white 10 dB SNR", "white", 10, 0),
]
# Noise-only clips: (name, colour, RMS in dBFS), 60 s each.
NOISE_ONLY = [
    ("digital silence", None, None),
    ("white -60 dBFS", "white", -60),
    ("pink -45 dBFS", "pink", -45),
    ("pink -30 dBFS", "pink", -30),
    ("pink -20 dBFS", "pink", -20),
    ("white -30 dBFS", "white", -30),
    ("brown -25 dBFS", "brown", -25),
]
NOISE_S = 60
NOISE_POOL_S = 600


def run(*cmd):
    subprocess.run(cmd, check=True)


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768


def write_wav(path, x):
    pcm = np.clip(np.round(x * 32768), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def noise(tmp, colour, samples, rng):
    """`samples` of sox's noise generator from a random offset, scaled to unit RMS. sox runs
    in repeatable mode (-R), so each colour's long noise file is the same on every run."""
    path = os.path.join(tmp, f"{colour}.wav")
    if not os.path.exists(path):
        run("sox", "-R", "-n", "-r", str(RATE), "-c", "1", "-b", "16", path, "synth",
            str(NOISE_POOL_S), f"{colour}noise", "vol", "0.25")
    pool = read_wav(path)
    at = int(rng.integers(0, len(pool) - samples))
    n = pool[at : at + samples]
    return n / np.sqrt(np.mean(n**2))


def utterance(tmp, voice, wpm, i, text):
    raw = os.path.join(tmp, f"u-{voice}-{wpm}-{i}.22k.wav")
    out = os.path.join(tmp, f"u-{voice}-{wpm}-{i}.wav")
    run("espeak-ng", "-v", voice, "-s", str(wpm), "-w", raw, text)
    run("sox", "-R", raw, "-r", str(RATE), "-c", "1", "-b", "16", out)
    x = read_wav(out)
    loud = np.nonzero(np.abs(x) >= 1e-3)[0]
    return x[loud[0] : loud[-1] + 1]


def build(work):
    tmp = os.path.join(work, "tmp")
    clips = os.path.join(work, "clips")
    os.makedirs(tmp, exist_ok=True)
    os.makedirs(clips, exist_ok=True)
    rng = np.random.default_rng(SEED)
    truth = []
    for voice in VOICES:
        for wpm in RATES_WPM:
            picks = rng.choice(len(SENTENCES), size=PER_CLIP, replace=False)
            parts, spans, at = [], [], 0
            lead = int(rng.uniform(0.8, 1.5) * RATE)
            parts.append(np.zeros(lead, np.float32))
            at += lead
            for k, j in enumerate(picks):
                u = utterance(tmp, voice, wpm, k, SENTENCES[j])
                parts.append(u)
                spans.append((at, at + len(u)))
                at += len(u)
                gap = int(rng.uniform(1.0, 2.5) * RATE)
                parts.append(np.zeros(gap, np.float32))
                at += gap
            speech = np.concatenate(parts)
            active = np.concatenate([speech[a:b] for a, b in spans])
            speech_rms = np.sqrt(np.mean(active**2))
            for cond, colour, snr, gain_db in SPEECH_CONDITIONS:
                x = speech * 10 ** (gain_db / 20)
                if colour:
                    n = noise(tmp, colour, len(x), rng)
                    x = x + n * speech_rms * 10 ** (-snr / 20)
                name = f"{voice}-{wpm}-{cond.split(',')[0].split()[0]}{snr or ''}{'q' if gain_db else ''}"
                write_wav(os.path.join(clips, name + ".wav"), x)
                truth.append((name, "speech", cond, spans))
    for cond, colour, dbfs in NOISE_ONLY:
        if colour:
            x = noise(tmp, colour, NOISE_S * RATE, rng) * 10 ** (dbfs / 20)
        else:
            x = np.zeros(NOISE_S * RATE, np.float32)
        name = "noise-" + cond.replace(" ", "").replace("-", "m")
        write_wav(os.path.join(clips, name + ".wav"), x)
        truth.append((name, "noise", cond, []))
    with open(os.path.join(work, "truth.tsv"), "w") as f:
        for name, kind, cond, spans in truth:
            f.write(f"{name}\t{kind}\t{cond}\t{','.join(f'{a}:{b}' for a, b in spans)}\n")
    return [t[0] for t in truth]


def silero(work, names):
    # Located without importing the package, whose __init__ needs torch.
    package = importlib.util.find_spec("silero_vad").submodule_search_locations[0]
    model = os.path.join(package, "data", "silero_vad.onnx")
    import onnxruntime  # here, so that bench-turn.py can build the clips without it

    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = onnxruntime.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    sr = np.array(RATE, dtype=np.int64)
    os.makedirs(os.path.join(work, "silero"), exist_ok=True)
    cpu, audio_s = 0.0, 0.0
    for name in names:
        x = read_wav(os.path.join(work, "clips", name + ".wav"))
        state = np.zeros((2, 1, 128), np.float32)
        context = np.zeros((1, 64), np.float32)
        probs = []
        for i in range(0, len(x) - 511, 512):
            chunk = np.concatenate([context, x[None, i : i + 512]], axis=1)
            t0 = time.process_time()
            out, state = sess.run(None, {"input": chunk, "state": state, "sr": sr})
            cpu += time.process_time() - t0
            context = chunk[:, -64:]
            probs.append(float(out[0, 0]))
        audio_s += len(x) / RATE
        np.asarray(probs, dtype="<f4").tofile(os.path.join(work, "silero", name + ".f32"))
    with open(os.path.join(work, "silero.tsv"), "w") as f:
        f.write(f"{cpu}\t{audio_s}\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    work = sys.argv[1]
    names = build(work)
    silero(work, names)
    print(f"measure-vad: {len(names)} clips in {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
