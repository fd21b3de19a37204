#!/usr/bin/env python3
"""Rewrites a `llama` GGUF file as the numerically equivalent `phi3` file (pure Python, standard library).

llama.cpp applies a sliding window (`<arch>.attention.sliding_window`) to phi3 files but not to llama files,
so a windowed llama file (Mistral 7B v0.1) can be checked against it only through its phi3 twin:
  - attn_q, attn_k, attn_v are concatenated into attn_qkv and ffn_gate, ffn_up into ffn_up (gate rows first),
    the fusions llama.cpp's phi3 loader expects;
  - the rows of each Q and K head are reordered so that phi3's NEOX RoPE (pairs i, i + rope_dim/2) rotates
    the pairs llama's normal RoPE rotates (2i, 2i + 1): q.k is unchanged by a permutation applied to both;
  - every `llama.` key becomes `phi3.` and general.architecture `phi3`.
Row operations only move bytes (rows are contiguous in GGUF), so any weight type works.

Usage: gguf_twin.py IN.gguf OUT.gguf
"""
import struct
import sys

ALIGNMENT = 32
# GGUF metadata value types and their struct formats (8 string, 9 array handled apart).
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
# Bytes per block and elements per block of the tensor types make-model writes.
TYPE_BLOCKS = {0: (4, 1), 1: (2, 1), 30: (2, 1), 2: (18, 32), 6: (22, 32), 7: (24, 32), 8: (34, 32),
               12: (144, 256), 13: (176, 256), 14: (210, 256), 20: (18, 32), 23: (136, 256), 39: (17, 32),
               10: (84, 256), 11: (110, 256)}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values[0]

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s.decode("utf-8")

    def value(self, vtype):
        """Returns the value's encoded bytes (kept as they are unless the key is rewritten)."""
        start = self.pos
        self.skip(vtype)
        return self.data[start:self.pos]

    def skip(self, vtype):
        if vtype in SCALARS:
            self.pos += struct.calcsize(SCALARS[vtype])
        elif vtype == 8:
            self.string()
        elif vtype == 9:
            etype, n = self.take("<I"), self.take("<Q")
            for _ in range(n):
                self.skip(etype)
        else:
            raise ValueError(f"unknown GGUF value type {vtype}")


def encode_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def read_gguf(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.pos = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    if version != 3:
        raise ValueError(f"{path}: GGUF version {version}, expected 3")
    kvs = []
    for _ in range(n_kv):
        key = r.string()
        vtype = r.take("<I")
        kvs.append([key, vtype, r.value(vtype)])
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        ttype, offset = r.take("<I"), r.take("<Q")
        infos.append((name, dims, ttype, offset))
    if any(k == "general.alignment" and get_int(kvs, k) != ALIGNMENT for k, _, _ in kvs):
        raise ValueError(f"{path}: general.alignment is not {ALIGNMENT}")
    base = (r.pos + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    tensors = {}
    order = []
    for name, dims, ttype, offset in infos:
        if ttype not in TYPE_BLOCKS:
            raise ValueError(f"{path}: tensor {name} has type {ttype}, which this script does not size")
        block_bytes, block_elems = TYPE_BLOCKS[ttype]
        row_bytes = dims[0] // block_elems * block_bytes
        rows = 1
        for d in dims[1:]:
            rows *= d
        tensors[name] = [dims, ttype, data[base + offset:base + offset + row_bytes * rows], row_bytes]
        order.append(name)
    return kvs, tensors, order


def write_gguf(path, kvs, tensors, order):
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(order), len(kvs)))
    for key, vtype, value in kvs:
        out += encode_string(key) + struct.pack("<I", vtype) + value
    offset = 0
    offsets = []
    for name in order:
        dims, ttype, blob, _ = tensors[name]
        offsets.append(offset)
        out += encode_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        offset += (len(blob) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    out += b"\0" * ((ALIGNMENT - len(out) % ALIGNMENT) % ALIGNMENT)
    for name in order:
        blob = tensors[name][2]
        out += blob + b"\0" * ((ALIGNMENT - len(blob) % ALIGNMENT) % ALIGNMENT)
    with open(path, "wb") as f:
        f.write(out)


def get_int(kvs, key):
    for k, vtype, value in kvs:
        if k == key:
            return struct.unpack(SCALARS[vtype], value)[0]
    raise KeyError(key)


def permute_heads(blob, row_bytes, heads, head_dim, rope_dim):
    """Rows of each head reordered: 0, 2, ..., rope_dim - 2, 1, 3, ..., rope_dim - 1, then the unrotated."""
    order = list(range(0, rope_dim, 2)) + list(range(1, rope_dim, 2)) + list(range(rope_dim, head_dim))
    out = bytearray()
    for h in range(heads):
        for i in order:
            row = h * head_dim + i
            out += blob[row * row_bytes:(row + 1) * row_bytes]
    return bytes(out)


def twin(src, dst):
    kvs, tensors, order = read_gguf(src)
    arch = next(v for k, t, v in kvs if k == "general.architecture")[8:].decode()
    if arch != "llama":
        raise ValueError(f"{src}: architecture {arch}, expected llama")
    n_head, n_head_kv = get_int(kvs, "llama.attention.head_count"), get_int(kvs, "llama.attention.head_count_kv")
    n_embd = get_int(kvs, "llama.embedding_length")
    head_dim = get_int(kvs, "llama.attention.key_length")
    rope_dim = get_int(kvs, "llama.rope.dimension_count")
    if n_head * head_dim != n_embd:
        raise ValueError("llama.cpp's phi3 needs n_head * head_dim == n_embd")
    for kv in kvs:
        if kv[0] == "general.architecture":
            kv[2] = encode_string("phi3")
        elif kv[0].startswith("llama."):
            kv[0] = "phi3." + kv[0][len("llama."):]
    new_order = []
    for name in order:
        parts = name.split(".")
        if len(parts) == 4 and parts[0] == "blk":
            p = f"blk.{parts[1]}."
            if parts[2] in ("attn_k", "attn_v", "ffn_gate"):
                continue  # fused into the layer's attn_qkv / ffn_up
            if parts[2] == "attn_q":
                q, k, v = (tensors[p + n + ".weight"] for n in ("attn_q", "attn_k", "attn_v"))
                if not q[1] == k[1] == v[1]:
                    raise ValueError(f"{p}attn_q, attn_k and attn_v differ in type")
                blob = permute_heads(q[2], q[3], n_head, head_dim, rope_dim)
                blob += permute_heads(k[2], k[3], n_head_kv, head_dim, rope_dim) + v[2]
                tensors[p + "attn_qkv.weight"] = [[q[0][0], q[0][1] + k[0][1] + v[0][1]], q[1], blob, q[3]]
                new_order.append(p + "attn_qkv.weight")
                continue
            if parts[2] == "ffn_up":
                gate, up = tensors[p + "ffn_gate.weight"], tensors[p + "ffn_up.weight"]
                if gate[1] != up[1]:
                    raise ValueError(f"{p}ffn_gate and ffn_up differ in type")
                tensors[name] = [[up[0][0], gate[0][1] + up[0][1]], up[1], gate[2] + up[2], up[3]]
        new_order.append(name)
    write_gguf(dst, kvs, tensors, new_order)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    twin(sys.argv[1], sys.argv[2])
