#!/usr/bin/env python3
"""Embed sentence files with a sentence-transformers model folder, offline, into .fbin.

  python3 bench/datasets/text_embed.py --model MODEL_DIR IN.txt OUT.fbin [IN2.txt OUT2.fbin ...]

MODEL_DIR is a sentence-transformers folder (modules.json, config.json, model.safetensors,
tokenizer files, 1_Pooling/): all-MiniLM-L6-v2 (384-d, minilm-1m) or all-mpnet-base-v2 (768-d,
mpnet-1m), as scripts/dataset-text.sh unpacks them, loaded offline (HF_HUB_OFFLINE=1,
TRANSFORMERS_OFFLINE=1). Each input holds one sentence per line; the output is .fbin (uint32 rows,
uint32 cols = the model's dimension, row-major float32), rows L2-normalized (cosine = inner
product), in line order. The model runs in fp16 on CUDA (--dtype auto), fp32 on the CPU.
Progress (rows, sentences/s, ETA) goes to stderr. An existing output is refused unless --force.

Resumable (--parts-dir DIR): each --chunk rows of an input go to DIR/NAME.partNNNNN.f32 (NAME:
the output's name without .fbin; raw float32; temporary file + rename) unless present with the
right size; DIR/NAME.parts.json (sha256 of the lines, rows, chunk, batch, dtype, model) refuses
parts made otherwise (--force deletes them). --time-limit SECONDS: no chunk is started past SECONDS
from the start, nor when the last chunk's time says it would end past them. Once all chunks of an
input are there they are joined and written as without --parts-dir (the same bytes), parts deleted.
Exit status 0: every output written; 3: stopped by --time-limit with chunks missing (run again).
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
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
    else:  # float32 compute even when the weights are stored in float16 (mpnet-1m)
        model.float()
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


def embed(model, sentences, batch, chunk, label, parts=None, deadline=None, last=0.0):
    """Encodes in chunks (progress per chunk); returns (float32 [n, dim] with rows L2-normalized,
    seconds, seconds of the last chunk). With parts (a path prefix) each chunk goes to
    PREFIX.partNNNNN.f32 and present ones are skipped; the array is None when the deadline left
    chunks missing (a chunk is not started when `last` seconds from now would pass it)."""
    n = len(sentences)
    dim = model_dim(model)
    out = np.empty((n, dim), dtype=np.float32)
    chunks = [(s, min(chunk, n - s), f"{parts}.part{i:05d}.f32" if parts else None)
              for i, s in enumerate(range(0, n, chunk))]
    todo = [(s, r, p) for s, r, p in chunks
            if not (p and os.path.isfile(p) and os.path.getsize(p) == r * dim * 4)]
    left = sum(r for _, r, _ in todo)
    if parts:
        log(f"  {label}: {len(chunks) - len(todo)}/{len(chunks)} chunks present, "
            f"{left:,} rows to embed")
    t, next_log, done = time.time(), 0.0, 0
    for s, rows, path in todo:
        if deadline is not None and time.time() + last > deadline:
            break
        c = time.time()
        e = model.encode(sentences[s:s + rows], batch_size=batch, convert_to_numpy=True,
                         normalize_embeddings=False, show_progress_bar=False)
        e = e.astype(np.float32, copy=False)
        if path:
            with open(path + ".tmp", "wb") as f:
                e.astype("<f4", copy=False).tofile(f)
            os.replace(path + ".tmp", path)
        else:
            out[s:s + len(e)] = e
        done += len(e)
        last = time.time() - c
        el = time.time() - t
        if el >= next_log or done == left:
            rate = done / max(el, 1e-9)
            log(f"  {label}: {done:,}/{left:,} ({100 * done / max(left, 1):5.1f}%)  "
                f"{rate:,.0f} sentences/s  ETA {(left - done) / max(rate, 1e-9):,.0f} s")
            next_log = el + 10.0
    if done < left:
        log(f"  {label}: stopped by --time-limit, {left - done:,} rows left: run again")
        return None, time.time() - t, last
    for s, rows, path in chunks if parts else []:
        out[s:s + rows] = np.fromfile(path, "<f4").reshape(rows, dim)
    # L2-normalize in float32 (the model's own Normalize module may have run in fp16).
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if not np.all(np.isfinite(out)) or np.any(norms == 0):
        raise SystemExit(f"error: {label}: non-finite or zero embeddings")
    out /= norms
    return out, time.time() - t, last


def write_fbin(path, a):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<II", a.shape[0], a.shape[1]))
        a.astype("<f4", copy=False).tofile(f)
    os.replace(tmp, path)


def drop_parts(prefix):  # the chunk files and PREFIX.parts.json
    d, name = os.path.split(prefix)
    for f in os.listdir(d):
        if f.startswith(name + ".part"):
            os.remove(os.path.join(d, f))


def parts_prefix(a, sents, dst, chunk, batch, dtype, dim):
    """DIR/NAME; checks (or writes) DIR/NAME.parts.json, what the parts are made from."""
    os.makedirs(a.parts_dir, exist_ok=True)
    prefix = os.path.join(a.parts_dir, os.path.basename(dst)[: -len(".fbin")])
    sha = hashlib.sha256("\n".join(sents).encode()).hexdigest()
    want = {"lines_sha256": sha, "rows": len(sents), "chunk": chunk, "batch": batch,
            "dtype": dtype, "dim": dim, "model": os.path.abspath(a.model)}
    meta = prefix + ".parts.json"
    if os.path.exists(meta):
        with open(meta) as f:
            have = json.load(f)
        if have == want:
            return prefix
        if not a.force:
            sys.exit(f"error: {meta}: parts made from other lines or settings; use --force")
        log(f"{meta}: parts made from other lines or settings: deleted")
        drop_parts(prefix)
    with open(meta, "w") as f:
        json.dump(want, f)
    return prefix


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="sentence-transformers model folder")
    ap.add_argument("pairs", nargs="+", help="IN.txt OUT.fbin [IN2.txt OUT2.fbin ...]")
    ap.add_argument("--device", default="auto", help="auto (cuda when available), cuda, cpu")
    ap.add_argument("--dtype", default="auto", choices=["auto", "fp16", "fp32"],
                    help="model precision: auto = fp16 on CUDA, fp32 on CPU")
    ap.add_argument("--batch", type=int, default=0, help="batch size (0: 512 on CUDA, 64 on CPU)")
    ap.add_argument("--chunk", type=int, default=0, help="sentences per progress step and part "
                    "file (0: 50,000 on CUDA, 2,000 on CPU)")
    ap.add_argument("--limit", type=int, default=0, help="embed only the first N lines (tests)")
    ap.add_argument("--check", type=int, default=0, help="also embed the first N lines of the "
                    "first input with the model in fp32 and report the cosine between the two "
                    "(the fp16 error); with fp32 it checks determinism")
    ap.add_argument("--parts-dir", help="resumable: per-chunk files in this folder (see above)")
    ap.add_argument("--time-limit", type=float, default=0, help="seconds: start no new chunk "
                    "past them (with --parts-dir; exit status 3 when chunks are missing)")
    ap.add_argument("--force", action="store_true", help="replace existing outputs")
    a = ap.parse_args()
    if len(a.pairs) % 2:
        ap.error("inputs and outputs come in pairs: IN.txt OUT.fbin")
    if a.time_limit and not a.parts_dir:
        ap.error("--time-limit needs --parts-dir (the chunks done so far are kept there)")
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
    deadline = T0 + a.time_limit if a.time_limit else None

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
    first, partial, last = None, False, 0.0
    for src, dst in pairs:
        sents = read_lines(src, a.limit)
        if first is None:
            first = (src, sents[:a.check])
        log(f"{src}: {len(sents):,} sentences (batch {batch})")
        parts = a.parts_dir and parts_prefix(a, sents, dst, chunk, batch, dtype, dim)
        # Longest first inside each chunk is what sentence-transformers does; the output keeps
        # the input order.
        e, secs, last = embed(model, sents, batch, chunk, os.path.basename(src), parts,
                              deadline, last)
        if e is None:
            partial = True
            continue
        write_fbin(dst, e)
        log(f"wrote {dst}: {e.shape[0]:,} x {e.shape[1]} float32 in {secs:.1f} s "
            f"({e.shape[0] / max(secs, 1e-9):,.0f} sentences/s)")
        if parts:
            drop_parts(parts)
        if a.check and src == first[0]:
            first = (src, first[1], e[:len(first[1])].copy())
        del e, sents
    if a.check and first and len(first) == 3:
        src, sents, e16 = first
        ref, _, _ = load_model(a.model, device, "fp32")
        e32 = embed(ref, sents, batch, chunk, "check fp32")[0]
        cos = (e16 * e32).sum(axis=1)
        log(f"check: {len(sents):,} sentences of {src}, {dtype} vs fp32 model: cosine min "
            f"{cos.min():.6f}, mean {cos.mean():.6f}, "
            f"self-cosine (norm) min {np.linalg.norm(e16, axis=1).min():.6f}")
    if partial:
        log("PARTIAL: stopped by --time-limit; the chunks done are kept: run again")
        sys.exit(3)


if __name__ == "__main__":
    main()
