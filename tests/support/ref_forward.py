#!/usr/bin/env python3
"""A float64 reference forward of a llama-architecture GGUF, for ember's deep-model accuracy test.

The weights are dequantized exactly (each block's scales and quants as the GGUF stores them), and every
rounding ggml applies to *activations* on the CPU is emulated, because those roundings are part of what a
quantized model computes:
  * the input of every matmul is quantized to the weight type's dot type first: Q8_0 (for Q4_0, Q5_0,
    Q8_0 weights), Q8_1 (Q4_1, Q5_1: its block sum `s` is rounded to fp16 too and enters through the
    weight's min), Q8_K (K-quants: f32 scale -127/max over 256 values), fp16 for F16 and bf16 for BF16;
  * the KV cache is F16: K (after RoPE) and V are rounded to fp16, q to fp16 before q.k, and the softmax
    probabilities to fp16 before p.V (ggml's non-flash attention with an F16 cache).
Everything else (norms, RoPE, softmax, accumulation) is float64. Both ember and llama.cpp compute this
with float32 sums in their own orders; depth amplifies the resulting rounding flips, and the test asks
that ember be no farther from this reference than llama.cpp is (docs/parity.md).

  ref_forward.py MODEL --tokens 1,2,3 --rows 5,9 --out ROWS.f64 [--kv f16|f32]
writes the float64 logits of the listed positions (n_rows x n_vocab, little endian) and prints JSON.
Only numpy is needed (python3-numpy, installed by scripts/setup).
"""
import argparse
import json
import struct
import sys

import numpy as np

# ggml type id -> (name, elements per block, bytes per block)
TYPES = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22),
         7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34), 12: ("q4_k", 256, 144), 13: ("q5_k", 256, 176),
         14: ("q6_k", 256, 210), 30: ("bf16", 1, 2)}
# The activation format ggml's CPU backend converts a matmul's input to, per weight type.
DOT_TYPE = {"f32": None, "f16": "f16", "bf16": "bf16", "q4_0": "q8_0", "q5_0": "q8_0", "q8_0": "q8_0",
            "q4_1": "q8_1", "q5_1": "q8_1", "q4_k": "q8_k", "q5_k": "q8_k", "q6_k": "q8_k"}


class Gguf:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.raw = f.read()  # the test models are tens of MB; struct over bytes parses 400k strings fast
        self.buf = np.frombuffer(self.raw, dtype=np.uint8)
        self.pos = 0
        if self.raw[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        self.pos = 4
        version, n_tensors, n_kv = self._u32(), self._u64(), self._u64()
        if version < 2:
            raise ValueError(f"{path}: GGUF v{version} is not supported")
        self.meta = {}
        for _ in range(n_kv):
            key = self._str()
            self.meta[key] = self._value(self._u32())
        self.tensors = {}
        for _ in range(n_tensors):
            name = self._str()
            dims = [self._u64() for _ in range(self._u32())]
            t, off = self._u32(), self._u64()
            self.tensors[name] = (dims, t, off)
        align = int(self.meta.get("general.alignment", 32))
        self.data = (self.pos + align - 1) // align * align

    def _take(self, n):
        b = self.raw[self.pos:self.pos + n]
        self.pos += n
        return b

    def _u32(self):
        return struct.unpack("<I", self._take(4))[0]

    def _u64(self):
        return struct.unpack("<Q", self._take(8))[0]

    def _str(self):
        return self._take(self._u64()).decode("utf-8", "replace")

    SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

    def _value(self, t):
        if t in self.SCALARS:
            fmt = self.SCALARS[t]
            return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]
        if t == 8:
            return self._str()
        if t == 9:
            et, n = self._u32(), self._u64()
            if et == 8:  # string arrays (the vocabulary): skipped, only their count is kept
                for _ in range(n):
                    self.pos += 8 + struct.unpack_from("<Q", self.raw, self.pos)[0]
                return {"array_length": n}
            return [self._value(et) for _ in range(n)]
        raise ValueError(f"unknown GGUF value type {t}")

    def has(self, name):
        return name in self.tensors

    def rows(self, name, first=0, count=None):
        """Rows [first, first + count) of a 2-D tensor (or the whole 1-D one), dequantized to float64."""
        dims, t, off = self.tensors[name]
        if t not in TYPES:
            raise ValueError(f"{name}: ggml type {t} is not supported by the reference")
        tname, blk, bsz = TYPES[t]
        ne0 = dims[0]
        n_rows = int(np.prod(dims[1:])) if len(dims) > 1 else 1
        count = n_rows - first if count is None else count
        row_bytes = ne0 // blk * bsz
        start = self.data + off + first * row_bytes
        raw = np.asarray(self.buf[start:start + count * row_bytes]).reshape(count * (ne0 // blk), bsz)
        return dequantize(tname, raw).reshape(count, ne0)

    def type_of(self, name):
        return TYPES[self.tensors[name][1]][0]

    def block_mins(self, name):
        """Q4_1 / Q5_1: each block's fp16 min m, shape (rows, blocks), for the Q8_1 `s` correction."""
        dims, t, off = self.tensors[name]
        tname, blk, bsz = TYPES[t]
        n_rows = int(np.prod(dims[1:]))
        raw = np.asarray(self.buf[self.data + off:self.data + off + n_rows * dims[0] // blk * bsz])
        raw = raw.reshape(-1, bsz)
        return f16(raw[:, 2:4]).reshape(n_rows, dims[0] // blk)


def f16(b):
    return np.ascontiguousarray(b).view("<f2").astype(np.float64).reshape(-1)


def k_scales(sc):
    """The 8 six-bit (scale, min) pairs of a Q4_K / Q5_K block's 12 scale bytes."""
    sc = sc.astype(np.int64)
    s = np.empty((sc.shape[0], 8), np.int64)
    m = np.empty((sc.shape[0], 8), np.int64)
    s[:, :4] = sc[:, 0:4] & 63
    m[:, :4] = sc[:, 4:8] & 63
    s[:, 4:] = (sc[:, 8:12] & 0xF) | ((sc[:, 0:4] >> 6) << 4)
    m[:, 4:] = (sc[:, 8:12] >> 4) | ((sc[:, 4:8] >> 6) << 4)
    return s, m


def dequantize(t, raw):
    n = raw.shape[0]
    if t == "f32":
        return np.ascontiguousarray(raw).view("<f4").astype(np.float64).reshape(-1)
    if t == "f16":
        return f16(raw)
    if t == "bf16":
        u = np.ascontiguousarray(raw).view("<u2").astype(np.uint32) << 16
        return u.view(np.float32).astype(np.float64).reshape(-1)
    if t == "q8_0":
        return (f16(raw[:, 0:2])[:, None] * raw[:, 2:34].view(np.int8)).reshape(-1)
    if t in ("q4_0", "q4_1"):
        d = f16(raw[:, 0:2])[:, None]
        qs = raw[:, 4:20] if t == "q4_1" else raw[:, 2:18]
        q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.float64)
        return (d * q + f16(raw[:, 2:4])[:, None] if t == "q4_1" else d * (q - 8)).reshape(-1)
    if t in ("q5_0", "q5_1"):
        d = f16(raw[:, 0:2])[:, None]
        o = 4 if t == "q5_1" else 2
        qh = np.ascontiguousarray(raw[:, o:o + 4]).view("<u4").astype(np.int64)  # (n, 1)
        qs = raw[:, o + 4:o + 20].astype(np.int64)
        bits = (qh >> np.arange(32)) & 1
        q = np.concatenate([qs & 0xF, qs >> 4], axis=1) | (bits << 4)
        return (d * q + f16(raw[:, 2:4])[:, None] if t == "q5_1" else d * (q - 16)).reshape(-1)
    if t in ("q4_k", "q5_k"):
        d, dmin = f16(raw[:, 0:2])[:, None], f16(raw[:, 2:4])[:, None]
        s, m = k_scales(raw[:, 4:16])
        qs = raw[:, 16:144] if t == "q4_k" else raw[:, 48:176]
        qs = qs.astype(np.int64).reshape(n, 4, 32)
        q = np.stack([qs & 0xF, qs >> 4], axis=2).reshape(n, 8, 32)  # sub-block 2c: low nibbles of chunk c
        if t == "q5_k":
            qh = raw[:, 16:48].astype(np.int64)  # bit j of byte l: the 5th bit of element l of sub-block j
            q = q | (((qh[:, None, :] >> np.arange(8)[None, :, None]) & 1) << 4)
        return ((d * s)[:, :, None] * q - (dmin * m)[:, :, None]).reshape(-1)
    if t == "q6_k":
        ql = raw[:, 0:128].astype(np.int64).reshape(n, 2, 64)
        qh = raw[:, 128:192].astype(np.int64).reshape(n, 2, 32)
        sc = raw[:, 192:208].view(np.int8).astype(np.float64).reshape(n, 16)
        d = f16(raw[:, 208:210])[:, None]
        q1 = (ql[:, :, 0:32] & 0xF) | (((qh >> 0) & 3) << 4)
        q2 = (ql[:, :, 32:64] & 0xF) | (((qh >> 2) & 3) << 4)
        q3 = (ql[:, :, 0:32] >> 4) | (((qh >> 4) & 3) << 4)
        q4 = (ql[:, :, 32:64] >> 4) | (((qh >> 6) & 3) << 4)
        q = np.stack([q1, q2, q3, q4], axis=2).reshape(n, 16, 16) - 32  # 16 sub-blocks of 16
        return ((d * sc)[:, :, None] * q).reshape(-1)
    raise ValueError(f"type {t} is not supported")


def round_f16(x):
    return x.astype(np.float16).astype(np.float64)


def round_bf16(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16  # round to nearest even, as ggml's fp32 -> bf16
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def quantize_act(x, dot):
    """x: (T, K) float64 -> (dequantized activations, Q8_1 per-block s or None) as ggml would round them."""
    if dot is None:
        return x, None
    if dot == "f16":
        return round_f16(x), None
    if dot == "bf16":
        return round_bf16(x), None
    T, K = x.shape
    if dot in ("q8_0", "q8_1"):
        b = x.reshape(T, K // 32, 32)
        amax = np.abs(b).max(axis=2, keepdims=True)
        d = round_f16(amax / 127)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(amax > 0, np.rint(b * (127 / amax)), 0)
        s = round_f16((amax / 127)[:, :, 0] * q.sum(axis=2)) if dot == "q8_1" else None
        return (d * q).reshape(T, K), s
    if dot == "q8_k":
        b = x.reshape(T, K // 256, 256)
        idx = np.abs(b).argmax(axis=2)[:, :, None]
        mx = np.take_along_axis(b, idx, axis=2)  # the signed value of largest magnitude
        with np.errstate(divide="ignore", invalid="ignore"):
            iscale = np.where(mx != 0, -127 / mx, 0)
            q = np.minimum(127, np.rint(iscale * b))
            d = np.where(mx != 0, (1 / iscale).astype(np.float32).astype(np.float64), 0)
        return (d * q).reshape(T, K), None
    raise ValueError(dot)


class Linear:
    def __init__(self, g, name):
        self.t = g.type_of(name)
        self.w = g.rows(name)  # (out, in)
        self.mins = g.block_mins(name) if self.t in ("q4_1", "q5_1") else None

    def __call__(self, x):
        a, s = quantize_act(x, DOT_TYPE[self.t])
        y = a @ self.w.T
        if s is not None:  # ggml uses the fp16 block sum s where exact math has sum(d * q)
            c = s - a.reshape(a.shape[0], -1, 32).sum(axis=2)  # (T, blocks)
            y += c @ self.mins.T
        return y


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w


def rope(x, n_head, hd, n_rot, base):
    """llama's (non-NeoX) rotation of adjacent pairs; x: (T, n_head * hd)."""
    T = x.shape[0]
    x = x.reshape(T, n_head, hd).copy()
    i = np.arange(n_rot // 2)
    theta = np.arange(T)[:, None] * base ** (-2.0 * i / n_rot)[None, :]
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    x0, x1 = x[:, :, 0:n_rot:2].copy(), x[:, :, 1:n_rot:2].copy()
    x[:, :, 0:n_rot:2] = x0 * c - x1 * s
    x[:, :, 1:n_rot:2] = x0 * s + x1 * c
    return x.reshape(T, n_head * hd)


def forward(g, tokens, rows, kv):
    arch = g.meta["general.architecture"]
    if arch != "llama":
        raise ValueError(f"the reference forward knows only the llama architecture, not {arch}")
    m = lambda k: g.meta[f"llama.{k}"]
    n_layer, n_embd, n_head = m("block_count"), m("embedding_length"), m("attention.head_count")
    n_kv = m("attention.head_count_kv")
    hd = g.meta.get("llama.attention.key_length", n_embd // n_head)
    n_rot = g.meta.get("llama.rope.dimension_count", hd)
    base = g.meta.get("llama.rope.freq_base", 10000.0)
    eps = m("attention.layer_norm_rms_epsilon")
    if g.has("rope_freqs.weight"):
        raise ValueError("rope scaling (rope_freqs.weight) is not supported by the reference")
    T = len(tokens)
    emb = "token_embd.weight"
    x = np.stack([g.rows(emb, t, 1)[0] for t in tokens])  # get_rows dequantizes exactly
    rkv = round_f16 if kv == "f16" else (lambda v: v.astype(np.float32).astype(np.float64))
    mask = np.triu(np.full((T, T), -np.inf), 1)
    group = n_head // n_kv
    for li in range(n_layer):
        p = f"blk.{li}."
        h = rms_norm(x, g.rows(p + "attn_norm.weight")[0], eps)
        q = rope(Linear(g, p + "attn_q.weight")(h), n_head, hd, n_rot, base)
        k = rkv(rope(Linear(g, p + "attn_k.weight")(h), n_kv, hd, n_rot, base))
        v = rkv(Linear(g, p + "attn_v.weight")(h))
        if kv == "f16":
            q = round_f16(q)  # q.k with an F16 K is an F16 dot: ggml converts q first
        out = np.empty((T, n_head * hd))
        for hh in range(n_head):
            kh = hh // group
            sc = q[:, hh * hd:(hh + 1) * hd] @ k[:, kh * hd:(kh + 1) * hd].T / np.sqrt(hd) + mask
            sc = np.exp(sc - sc.max(axis=1, keepdims=True))
            pr = sc / sc.sum(axis=1, keepdims=True)
            if kv == "f16":
                pr = round_f16(pr)  # and p.V with an F16 V converts the probabilities
            out[:, hh * hd:(hh + 1) * hd] = pr @ v[:, kh * hd:(kh + 1) * hd]
        x = x + Linear(g, p + "attn_output.weight")(out)
        h = rms_norm(x, g.rows(p + "ffn_norm.weight")[0], eps)
        gate, up = Linear(g, p + "ffn_gate.weight")(h), Linear(g, p + "ffn_up.weight")(h)
        x = x + Linear(g, p + "ffn_down.weight")(gate / (1 + np.exp(-gate)) * up)
    h = rms_norm(x[rows], g.rows("output_norm.weight")[0], eps)
    out_name = "output.weight" if g.has("output.weight") else emb
    dims, _, _ = g.tensors[out_name]
    a, s = quantize_act(h, DOT_TYPE[g.type_of(out_name)])
    if s is not None:
        raise ValueError("a Q4_1 / Q5_1 output matrix is not supported by the reference")
    logits = np.empty((len(rows), dims[1]))
    step = 8192  # the output matrix is dequantized a slice at a time: float64 of a 128k vocabulary is big
    for at in range(0, dims[1], step):
        n = min(step, dims[1] - at)
        logits[:, at:at + n] = a @ g.rows(out_name, at, n).T
    return logits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--rows", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kv", default="f16", choices=["f16", "f32"])
    a = ap.parse_args()
    tokens = [int(t) for t in a.tokens.split(",") if t]
    rows = [int(r) for r in a.rows.split(",") if r]
    try:
        g = Gguf(a.model)
        logits = forward(g, tokens, rows, a.kv)
    except (ValueError, KeyError, OSError) as e:
        print(json.dumps({"error": str(e)}))
        return 1
    logits.astype("<f8").tofile(a.out)
    print(json.dumps({"n_tokens": len(tokens), "rows": len(rows), "n_vocab": logits.shape[1], "out": a.out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
