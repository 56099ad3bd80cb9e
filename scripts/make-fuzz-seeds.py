#!/usr/bin/env python3
"""Writes the small GGUF seed files for the reader fuzzer (tests/fuzz/gguf_corpus/).

Run after a format change; the outputs are committed (each well under 1 KB)."""
import os
import struct
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "gguf_corpus")


def s(x: bytes) -> bytes:
    return struct.pack("<Q", len(x)) + x


def kv(key: str, vtype: int, payload: bytes) -> bytes:
    return s(key.encode()) + struct.pack("<I", vtype) + payload


def tensor(name: str, ne, ttype: int, offset: int) -> bytes:
    out = s(name.encode()) + struct.pack("<I", len(ne))
    for d in ne:
        out += struct.pack("<Q", d)
    return out + struct.pack("<IQ", ttype, offset)


def gguf(kvs, tensors, data: bytes, version=3, align=32) -> bytes:
    head = struct.pack("<IIQQ", 0x46554747, version, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)
    head += b"\0" * ((-len(head)) % align)
    return head + data


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    meta = [
        kv("general.architecture", 8, s(b"llama")),
        kv("llama.block_count", 4, struct.pack("<I", 2)),
        kv("i8", 1, struct.pack("<b", -3)), kv("u16", 2, struct.pack("<H", 9)), kv("i16", 3, struct.pack("<h", -9)),
        kv("i32", 5, struct.pack("<i", -7)), kv("f32", 6, struct.pack("<f", 1.5)), kv("b", 7, b"\x01"),
        kv("u64", 10, struct.pack("<Q", 5)), kv("i64", 11, struct.pack("<q", -5)), kv("f64", 12, struct.pack("<d", 2.5)),
        kv("tokens", 9, struct.pack("<IQ", 8, 3) + s(b"a") + s(b"\xe2\x96\x81b") + s(b"")),
        kv("scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<ff", 0.5, -1.0)),
        kv("nested", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 4, 1) + struct.pack("<I", 3)),
    ]
    seeds = {
        "empty_v3.gguf": gguf([], [], b""),
        "meta_only_v2.gguf": gguf(meta, [], b"", version=2),
        "meta_only_v3.gguf": gguf(meta, [], b""),
        "f32_tensor.gguf": gguf(meta[:2], [tensor("w", [4, 2], 0, 0)], bytes(range(32))),
        "two_tensors.gguf": gguf([], [tensor("a", [32], 8, 0), tensor("b", [32], 2, 64)], b"\x01" * 34 + b"\0" * 30 + b"\x02" * 18),
        "kquant.gguf": gguf([], [tensor("k", [256], 12, 0), tensor("s", [256], 14, 160)], b"\x03" * 144 + b"\0" * 16 + b"\x04" * 210),
        # The low-bit types (MXFP4 39, IQ4_NL 20, IQ4_XS 23, Q2_K 10, Q3_K 11), one block each with
        # every byte value somewhere: the fuzzer dequantizes each tensor's first row.
        "lowbit_types.gguf": gguf([], [tensor("mx", [32], 39, 0), tensor("nl", [32], 20, 32), tensor("xs", [256], 23, 64),
                                       tensor("q2", [256], 10, 224), tensor("q3", [256], 11, 320)],
                                  bytes(i % 256 for i in range(17)) + b"\0" * 15 + bytes((7 * i) % 256 for i in range(18))
                                  + b"\0" * 14 + bytes((13 * i + 5) % 256 for i in range(136)) + b"\0" * 24
                                  + bytes((31 * i) % 256 for i in range(84)) + b"\0" * 12
                                  + bytes((255 - i) % 256 for i in range(110))),
        "align64.gguf": gguf([kv("general.alignment", 4, struct.pack("<I", 64))], [tensor("x", [3, 1, 1, 2], 1, 0)],
                             b"\x05" * 12, align=64),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
