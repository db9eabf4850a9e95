#!/usr/bin/env python3
"""faiss (CPU) as a peer of `cagra bench`: builds faiss indexes over the same files and writes the
same JSON-lines records (tools/cli/bench_json.cpp), so that bench/plot.py puts them on one
recall/QPS plot with CAGRA and hnswlib.

  faiss_peer.py BASE QUERIES GT [--index hnsw,hnsw-sq8,ivf] [--M 16] [--ef-construction 200]
                [--ef LIST] [--nlist N] [--nprobe LIST] [--threads T] [--batch 0,1]
                [--batch1-queries N] [--k 10] [--metric l2|ip|cosine] [--reps 3]
                [--json FILE] [--dataset NAME] [--commit C]

BASE and QUERIES are .u8bin / .i8bin / .fbin, .npy (2-D), .fvecs / .bvecs files or MNIST idx
files (.idx3-ubyte, optionally gzipped: Fashion-MNIST as Debian ships it); GT an .ibin file (an
int32 row count and column count, then the rows, as `cagra gt` writes it), .ivecs or .npy.
Rows are converted to float32 (unit rows for cosine, searched by inner product). Three indexes,
each a usual choice:
  hnsw  IndexHNSWFlat(dim, M), efConstruction as given (hnswlib's M=16 and efConstruction=200 by
        default, so the two HNSW implementations build the same kind of graph); efSearch swept;
  hnsw-sq8  IndexHNSWSQ: the same graph over rows of one byte an element, the storage CAGRA's
        u8 indexes use: QT_8bit_direct (the bytes as they are, exact) for u8 files, else QT_8bit
        (a trained per-dimension range);
  ivf   IndexIVFFlat over a flat coarse quantizer, nlist = 4 sqrt(n) rounded to a power of two
        (faiss's guideline is 4-16 sqrt(n)), trained by k-means on at most 256 rows a list;
        nprobe swept.
Builds and batch searches run on --threads OpenMP threads. Batch 0 searches all queries in one
call; batch 1 calls search() once a query on one thread, from Python: every call pays the
binding's overhead, which the run measures on a one-row flat index and prints (and records as
"call_us"), so that a reader can tell it from the search. --batch1-queries searches only the
first N queries at batch 1 (recall is then over those). Recall is |found[:k] & truth[:k]| / k,
averaged, as `cagra bench` computes it. The repetitions go round the whole sweep (best pass kept),
as in bench/hnswlib_peer.cpp.
"""
import argparse
import gzip
import json
import math
import os
import sys
import time
import zlib

import numpy as np
from peer_common import commit_id, recall_at

try:
    import faiss
except ImportError as e:  # pragma: no cover - needs the faiss-cpu wheel
    sys.exit(f"faiss_peer: cannot import faiss ({e}); pip install faiss-cpu")

BIN_DTYPES = {".u8bin": np.uint8, ".i8bin": np.int8, ".fbin": np.float32, ".ibin": np.int32}
VECS_DTYPES = {".fvecs": np.float32, ".bvecs": np.uint8, ".ivecs": np.int32}


def die(msg):
    print(f"faiss_peer: error: {msg}", file=sys.stderr)
    sys.exit(1)


def read_idx(path):
    """An MNIST idx file of unsigned bytes (magic 0x00000803: n x rows x cols), gzipped or not."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 16 or raw[:4] != b"\x00\x00\x08\x03":
        die(f"{path}: not an idx3 file of unsigned bytes")
    n, rows, cols = (int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(3))
    data = np.frombuffer(raw, dtype=np.uint8, offset=16)
    if data.size != n * rows * cols:
        die(f"{path}: header says {n} x {rows} x {cols}, file holds {data.size} bytes")
    return data.reshape(n, rows * cols)


def read_matrix(path):
    try:
        return read_matrix_file(path)
    except (OSError, EOFError, ValueError, zlib.error) as e:  # also damaged gzip or .npy
        die(f"cannot read {path}: {getattr(e, 'strerror', None) or e}")


def read_vecs(path, dtype):
    """.fvecs / .bvecs / .ivecs: every row an int32 dimension, then the row."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size < 4:
        die(f"{path}: shorter than one row")
    dim = int(raw[:4].view(np.int32)[0])
    row_bytes = 4 + dim * np.dtype(dtype).itemsize
    if dim <= 0 or raw.size % row_bytes:
        die(f"{path}: not a whole number of rows of dimension {dim}")
    rows = raw.reshape(-1, row_bytes)
    if (rows[:, :4].copy().view(np.int32) != dim).any():
        die(f"{path}: rows of different dimensions")
    return rows[:, 4:].copy().view(dtype)


def read_matrix_file(path):
    if "idx3-ubyte" in os.path.basename(path):
        return read_idx(path)
    ext = os.path.splitext(path)[1]
    if ext == ".npy":
        try:
            data = np.load(path, allow_pickle=False)
        except OSError:
            raise
        except Exception as e:  # numpy's header parser raises several kinds on damaged files
            die(f"{path}: not a readable .npy file ({type(e).__name__}: {e})")
        if data.ndim != 2 or data.dtype.kind not in "iuf":
            die(f"{path}: not a 2-D array of numbers ({data.shape} {data.dtype})")
        return data
    if ext in VECS_DTYPES:
        return read_vecs(path, VECS_DTYPES[ext])
    if ext not in BIN_DTYPES:
        die(f"{path}: unknown format (.u8bin, .i8bin, .fbin, .ibin, .npy, .fvecs, .bvecs, .ivecs "
            "or an idx3-ubyte file)")
    with open(path, "rb") as f:
        head = np.fromfile(f, dtype=np.int32, count=2)
        if head.size != 2 or head[0] < 0 or head[1] <= 0:
            die(f"{path}: no valid header")
        rows, cols = int(head[0]), int(head[1])
        data = np.fromfile(f, dtype=BIN_DTYPES[ext], count=rows * cols)
    if data.size != rows * cols:
        die(f"{path}: header says {rows} x {cols}, file holds {data.size} values")
    return data.reshape(rows, cols)


def int_list(s):
    try:
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        die(f"'{s}' is not a comma-separated list of integers")
    if not out:
        die("an empty list")
    return out


def cpu_model():
    """The CPU as `cagra bench` names it (tools/cli/bench_json.cpp, cpu_model)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    m = line.split(":", 1)[1]
                    for junk in ("(R)", "(r)", "(TM)", "(tm)", " CPU", " Processor"):
                        m = m.replace(junk, "")
                    m = " ".join(m.split())
                    if m:
                        return m
    except OSError:
        pass
    return "unknown CPU"


def as_float(rows, cosine):
    x = np.ascontiguousarray(rows, dtype=np.float32)
    if cosine:
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norms > 0, norms, 1)
    return np.ascontiguousarray(x, dtype=np.float32)


def call_overhead_us(dim, k):
    """Mean time of one search() call on a one-row flat index from Python: the per-call floor."""
    flat = faiss.IndexFlatL2(dim)
    flat.add(np.zeros((1, dim), dtype=np.float32))
    q = np.zeros((1, dim), dtype=np.float32)
    for _ in range(200):
        flat.search(q, k)
    t0 = time.perf_counter()
    calls = 5000
    for _ in range(calls):
        flat.search(q, k)
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("queries")
    ap.add_argument("gt")
    ap.add_argument("--index", default="hnsw,hnsw-sq8,ivf", help="hnsw, hnsw-sq8, ivf")
    ap.add_argument("--M", type=int, default=16, help="HNSW links a node (layer 0: 2M)")
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--ef", default="10,16,24,32,48,64,96,128,192,256,384,512")
    ap.add_argument("--nlist", type=int, default=0, help="IVF lists (0: 4 sqrt(n), a power of 2)")
    ap.add_argument("--nprobe", default="1,2,4,8,12,16,24,32,48,64,96,128,192,256")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", default="0,1", help="0: all queries a call; 1: one a call")
    ap.add_argument("--batch1-queries", type=int, default=0, help="batch 1: the first N (0: all)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--metric", default="l2", choices=("l2", "ip", "cosine"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="append the records to this file")
    ap.add_argument("--dataset", help="name in the records (default: the base file's folder)")
    ap.add_argument("--commit", help="commit in the records (default $CAGRA_COMMIT, git)")
    args = ap.parse_args()

    kinds = [x for x in args.index.split(",") if x]
    if not kinds or any(x not in ("hnsw", "hnsw-sq8", "ivf") for x in kinds):
        die("--index takes a comma list of hnsw, hnsw-sq8 and ivf")
    batches = int_list(args.batch)
    if any(b not in (0, 1) for b in batches):
        die("--batch takes 0 (all queries a call) and/or 1")
    if args.threads < 1 or args.k < 1 or args.reps < 1 or args.M < 2:
        die("--threads, --k and --reps must be >= 1, --M >= 2")

    base = read_matrix(args.base)
    queries = read_matrix(args.queries)
    gt = read_matrix(args.gt)
    if base.shape[0] == 0 or queries.shape[0] == 0:
        die("empty base or query file")
    if queries.shape[1] != base.shape[1]:
        die(f"queries have dimension {queries.shape[1]}, the base {base.shape[1]}")
    if gt.shape[0] != queries.shape[0] or gt.shape[1] < args.k:
        die(f"ground truth {gt.shape} does not cover {queries.shape[0]} queries x k={args.k}")
    n, dim = base.shape
    nq = queries.shape[0]
    cosine = args.metric == "cosine"
    direct_bytes = base.dtype == np.uint8 and not cosine  # QT_8bit_direct holds them exactly
    xb, xq = as_float(base, cosine), as_float(queries, cosine)
    del base
    faiss_metric = faiss.METRIC_L2 if args.metric == "l2" else faiss.METRIC_INNER_PRODUCT
    dataset = args.dataset or os.path.basename(os.path.dirname(os.path.abspath(args.base)))
    commit = commit_id(args.commit)
    cpu = cpu_model()
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-faiss-{os.getpid()}"
    try:
        out = open(args.json, "a", encoding="utf-8") if args.json else None  # fails early
    except OSError as e:
        die(f"cannot open {args.json} for appending: {e.strerror}")
    nq1 = min(nq, args.batch1_queries) if args.batch1_queries > 0 else nq
    call_us = call_overhead_us(dim, args.k) if 1 in batches else float("nan")
    print(f"faiss {faiss.__version__} ({faiss.get_compile_options()}) on {cpu}; {dataset}: n={n} "
          f"dim={dim} nq={nq} k={args.k} metric={args.metric} threads={args.threads}"
          + (f"; batch 1: {nq1} queries, a search() call from Python costs {call_us:.1f} us "
             "on a one-row index" if 1 in batches else ""), flush=True)

    def build(kind):
        faiss.omp_set_num_threads(args.threads)
        t0 = time.perf_counter()
        if kind in ("hnsw", "hnsw-sq8"):
            if kind == "hnsw":
                index = faiss.IndexHNSWFlat(dim, args.M, faiss_metric)
                params = {"storage": "f32"}
            else:
                sq = faiss.ScalarQuantizer
                qtype = sq.QT_8bit_direct if direct_bytes else sq.QT_8bit
                index = faiss.IndexHNSWSQ(dim, qtype, args.M, faiss_metric)
                index.train(xb)
                params = {"storage": "u8" if direct_bytes else "sq8"}
            index.hnsw.efConstruction = args.ef_construction
            index.add(xb)
            params.update(M=args.M, ef_construction=args.ef_construction)
        else:
            nlist = args.nlist or 1 << max(0, round(math.log2(4 * math.sqrt(n))))
            quantizer = faiss.IndexFlat(dim, faiss_metric)
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss_metric)
            sample = xb
            if n > 256 * nlist:  # faiss's k-means takes at most 256 rows a list itself
                pick = np.random.default_rng(0).choice(n, 256 * nlist, replace=False)
                sample = xb[np.sort(pick)]
            index.train(sample)
            index.add(xb)
            params = {"storage": "f32", "nlist": nlist}
        build_s = time.perf_counter() - t0
        print(f"built {kind} {params} in {build_s:.2f} s ({args.threads} threads)", flush=True)
        return index, params, build_s

    def set_point(index, kind, value):
        if kind != "ivf":
            index.hnsw.efSearch = value
        else:
            index.nprobe = value

    for kind in kinds:
        index, build_params, build_s = build(kind)
        swept_name = "nprobe" if kind == "ivf" else "ef"
        values = int_list(args.nprobe if kind == "ivf" else args.ef)
        if kind == "ivf":
            values = [v for v in values if v <= build_params["nlist"]]
        for batch in batches:
            threads = 1 if batch else args.threads
            count = nq1 if batch else nq
            q = xq[:count]
            faiss.omp_set_num_threads(threads)
            best = [math.inf] * len(values)
            found = [None] * len(values)
            for _ in range(args.reps):
                for i, v in enumerate(values):
                    set_point(index, kind, v)
                    t0 = time.perf_counter()
                    if batch:
                        ids = np.empty((count, args.k), dtype=np.int64)
                        for j in range(count):
                            ids[j] = index.search(q[j: j + 1], args.k)[1][0]
                    else:
                        ids = index.search(q, args.k)[1]
                    best[i] = min(best[i], time.perf_counter() - t0)
                    found[i] = ids
            device = f"{cpu} ({threads} thread{'' if threads == 1 else 's'})"
            print(f"{kind} batch={batch} ({threads} search thread{'' if threads == 1 else 's'})\n"
                  f"{swept_name:>8} {'recall@k':>10} {'QPS':>12} {'latency_ms':>12}", flush=True)
            for i, v in enumerate(values):
                recall = recall_at(found[i], gt[:count], args.k)
                qps = count / best[i]
                latency_ms = 1e3 * best[i] / count if batch else 1e3 * best[i]
                print(f"{v:8d} {recall:10.4f} {qps:12.1f} {latency_ms:12.4f}", flush=True)
                if out:
                    rec = {
                        "run_id": run_id, "system": f"faiss-{kind}", "device": device,
                        "commit": commit, "dataset": dataset, "metric": args.metric, "n": n,
                        "dim": dim, "nq": count, "batch": batch, "k": args.k,
                        "params": dict(build_params, **{swept_name: v, "threads": threads}),
                        "recall": round(recall, 6), "qps": round(qps, 2),
                        "latency_ms": round(latency_ms, 6), "build_s": round(build_s, 4),
                        "faiss_version": faiss.__version__,
                    }
                    if batch:
                        rec["call_us"] = round(call_us, 3)
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
        del index
    if out:
        out.close()


if __name__ == "__main__":
    main()
