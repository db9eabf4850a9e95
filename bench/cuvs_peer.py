#!/usr/bin/env python3
"""NVIDIA cuVS CAGRA as a peer of `cagra bench`: builds cuVS CAGRA indexes over the same files and
writes the same JSON-lines records (tools/cli/bench_json.cpp), so that bench/plot.py puts both on
one recall/QPS plot.

  cuvs_peer.py BASE QUERIES GT [--graph-degree 32,64] [--itopk 32,64,128] [--search-width 1]
               [--batch 10000] [--k 10] [--metric l2|ip|cosine] [--build-algo nn_descent]
               [--io device,copy] [--reps 5] [--no-defaults] [--json FILE] [--dataset NAME]
               [--commit C]

BASE and QUERIES are .u8bin / .i8bin / .fbin files, GT an .ibin file (an int32 row count and
column count, then the rows). For each graph degree d an index is built with
IndexParams(graph_degree=d, intermediate_graph_degree=2d, build_algo=--build-algo) from a device
array (the build is timed from the device array to the synchronized index: the padded copy cuVS
makes is part of it), then every itopk x search width point searches all queries in calls of
--batch queries on one stream: a warm-up pass (it also pays for the kernels that cuVS links at run
time), then --reps timed passes, the best one kept. QPS = queries / wall time of the pass (the
Python loop and a final synchronization included; the CUDA-event time of the same pass is
recorded as event_ms). Two ways of feeding it (--io):
  device  the queries already on the device, the results left there (cuVS's own benchmarks);
  copy    the queries copied from pinned host memory before each call and the ids and distances
          copied back after it, on the same stream: what `cagra bench` times for a host batch.
An extra point "at cuVS's defaults" builds with IndexParams() (graph degree 64, intermediate 128,
IVF-PQ kNN graph) and searches with SearchParams() (itopk 64, search width 1, algo auto); its
records carry "defaults": true. Recall is |found[:k] & truth[:k]| / k, averaged (cagra::recall).

cuVS must be imported before anything else loads libnvJitLink (PyTorch would bring its own, older
one): this script imports cuvs first and never imports torch.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import cuvs  # first: libcuvs loads its libraries (nvJitLink) before CuPy does anything
    from cuvs.common import Resources
    from cuvs.neighbors import cagra
except ImportError as e:  # pragma: no cover - the GPU machine only
    sys.exit(f"cuvs_peer: cannot import cuvs ({e}); see scripts/dev/device-cuvs.sh")
import cupy as cp  # noqa: E402  (after cuvs, on purpose)
import cupyx  # noqa: E402
from peer_common import commit_id, recall_at  # noqa: E402  (numpy and the standard library only)

DTYPES = {".u8bin": np.uint8, ".i8bin": np.int8, ".fbin": np.float32, ".ibin": np.int32}
STORAGE = {np.uint8: "u8", np.int8: "i8", np.float32: "f32"}
METRICS = {"l2": "sqeuclidean", "ip": "inner_product", "cosine": "cosine"}


def die(msg):
    print(f"cuvs_peer: error: {msg}", file=sys.stderr)
    sys.exit(1)


def read_bin(path):
    ext = os.path.splitext(path)[1]
    if ext not in DTYPES:
        die(f"{path}: unknown extension (one of {', '.join(DTYPES)})")
    dtype = DTYPES[ext]
    with open(path, "rb") as f:
        rows, cols = (int(x) for x in np.fromfile(f, dtype=np.int32, count=2))
        data = np.fromfile(f, dtype=dtype, count=rows * cols)
    if data.size != rows * cols:
        die(f"{path}: header says {rows} x {cols}, file holds {data.size} values")
    return data.reshape(rows, cols)


def int_list(s):
    return [int(x) for x in s.split(",") if x.strip()]


def device_name():
    """The same form as `cagra bench`: 'NAME (sm_90, 132 SMs, 81079 MiB, driver D, runtime R)'."""
    p = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
    return (f"{name} (sm_{p['major']}{p['minor']}, {p['multiProcessorCount']} SMs, "
            f"{p['totalGlobalMem'] // (1 << 20)} MiB, driver {cp.cuda.runtime.driverGetVersion()}, "
            f"runtime {cp.cuda.runtime.runtimeGetVersion()})")


class Searcher:
    """All queries in calls of `batch`, on one stream, fed as --io says; buffers made once."""

    def __init__(self, queries, k, batch, io, stream, res):
        self.nq, self.k, self.batch, self.io = queries.shape[0], k, batch, io
        self.stream, self.res = stream, res
        self.starts = list(range(0, self.nq, batch))
        with stream:
            if io == "device":
                self.d_q = cp.asarray(queries)
                self.d_nb = cp.empty((self.nq, k), dtype=cp.uint32)
                self.d_dist = cp.empty((self.nq, k), dtype=cp.float32)
            else:
                self.h_q = cupyx.empty_pinned(queries.shape, dtype=queries.dtype)
                self.h_q[...] = queries
                self.h_nb = cupyx.empty_pinned((self.nq, k), dtype=np.uint32)
                self.h_dist = cupyx.empty_pinned((self.nq, k), dtype=np.float32)
                self.d_q = cp.empty((batch, queries.shape[1]), dtype=queries.dtype)
                self.d_nb = cp.empty((batch, k), dtype=cp.uint32)
                self.d_dist = cp.empty((batch, k), dtype=cp.float32)
        stream.synchronize()

    def one_pass(self, index, sp):
        for s in self.starts:
            e = min(s + self.batch, self.nq)
            if self.io == "device":
                cagra.search(sp, index, self.d_q[s:e], self.k, neighbors=self.d_nb[s:e],
                             distances=self.d_dist[s:e], resources=self.res)
            else:
                n = e - s
                self.d_q[:n].set(self.h_q[s:e], stream=self.stream)
                cagra.search(sp, index, self.d_q[:n], self.k, neighbors=self.d_nb[:n],
                             distances=self.d_dist[:n], resources=self.res)
                # blocking=False: the copies queue on the stream (the pass ends synchronized)
                self.d_nb[:n].get(stream=self.stream, out=self.h_nb[s:e], blocking=False)
                self.d_dist[:n].get(stream=self.stream, out=self.h_dist[s:e], blocking=False)

    def timed(self, index, sp, reps):
        """(best wall seconds, its CUDA-event milliseconds) over reps passes, after a warm-up."""
        self.one_pass(index, sp)
        self.stream.synchronize()
        best = (float("inf"), float("nan"))
        for _ in range(reps):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            t0 = time.perf_counter()
            start.record(self.stream)
            self.one_pass(index, sp)
            end.record(self.stream)
            end.synchronize()
            wall = time.perf_counter() - t0
            if wall < best[0]:
                best = (wall, cp.cuda.get_elapsed_time(start, end))
        return best

    def found(self):
        return cp.asnumpy(self.d_nb) if self.io == "device" else np.array(self.h_nb)


def build(base_d, params, res):
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    index = cagra.build(params, base_d, resources=res)
    res.sync()
    return index, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("queries")
    ap.add_argument("gt")
    ap.add_argument("--graph-degree", default="32,64", help="comma list (intermediate = 2x)")
    ap.add_argument("--itopk", default="32,64,128", help="comma list")
    ap.add_argument("--search-width", default="1", help="comma list")
    ap.add_argument("--batch", type=int, default=10000, help="queries a call (0: all)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--metric", default="l2", choices=sorted(METRICS))
    ap.add_argument("--build-algo", default="nn_descent",
                    choices=("nn_descent", "ivf_pq", "iterative_cagra_search"))
    ap.add_argument("--io", default="device,copy", help="device, copy or both")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-defaults", action="store_true", help="skip the cuVS-defaults point")
    ap.add_argument("--json", help="append the records to this file")
    ap.add_argument("--dataset", help="name in the records (default: the base file's folder)")
    ap.add_argument("--commit", help="commit in the records (default $CAGRA_COMMIT, git)")
    args = ap.parse_args()

    ios = [x for x in args.io.split(",") if x]
    if not ios or any(x not in ("device", "copy") for x in ios):
        die("--io takes device, copy or device,copy")
    base = read_bin(args.base)
    queries = read_bin(args.queries)
    gt = read_bin(args.gt)
    if queries.shape[1] != base.shape[1] or queries.dtype != base.dtype:
        die(f"queries {queries.shape} {queries.dtype} do not match base {base.shape} {base.dtype}")
    if gt.shape[0] != queries.shape[0] or gt.shape[1] < args.k:
        die(f"ground truth {gt.shape} does not cover {queries.shape[0]} queries x k={args.k}")
    n, dim = base.shape
    nq = queries.shape[0]
    batch = args.batch if 0 < args.batch < nq else nq
    dataset = args.dataset or os.path.basename(os.path.dirname(os.path.abspath(args.base)))
    commit = commit_id(args.commit)
    device = device_name()
    version = getattr(cuvs, "__version__", "unknown")
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-cuvs-{os.getpid()}"
    print(f"cuvs {version} on {device}; {dataset}: n={n} dim={dim} {base.dtype} nq={nq} "
          f"batch={batch} k={args.k} metric={args.metric}", flush=True)

    out = open(args.json, "a") if args.json else None  # opened first: a bad path fails early
    # The default stream and cuVS's default resources: Resources(stream=<a CuPy stream>) made
    # cagra.build segfault with cuVS 26.10 on an H100 (faulthandler: inside cagra.build).
    stream = cp.cuda.Stream.null
    res = Resources()
    with stream:
        base_d = cp.asarray(base)
    stream.synchronize()
    searchers = {io: Searcher(queries, args.k, batch, io, stream, res) for io in ios}

    # Untimed: the first build of each kind in a process also loads its kernels (CUDA's lazy
    # module loading), which the timed builds should not pay.
    for algo in {args.build_algo} | (set() if args.no_defaults else {"ivf_pq"}):
        warm = cagra.IndexParams(metric=METRICS[args.metric], graph_degree=32,
                                 intermediate_graph_degree=64, build_algo=algo)
        build(base_d[: min(n, 20000)], warm, res)

    def emit(index, sp, params, build_s, extra):
        for io, srch in searchers.items():
            wall, event_ms = srch.timed(index, sp, args.reps)
            rec = {
                "run_id": run_id, "system": "cuvs-cagra", "device": device, "commit": commit,
                "dataset": dataset, "metric": args.metric, "n": n, "dim": dim, "nq": nq,
                "batch": 0 if batch >= nq else batch, "k": args.k,
                "params": dict(params, io=io),
                "recall": round(recall_at(srch.found(), gt, args.k), 6),
                "qps": round(nq / wall, 2),
                "latency_ms": round(wall * 1e3 / len(srch.starts), 6),
                "build_s": round(build_s, 6),
                "event_ms": round(event_ms, 6),
                "cuvs_version": version,
                "plan": f"cuvs-cagra {version} algo={params['algo']} io={io} "
                        f"calls={len(srch.starts)} best-of={args.reps}",
            }
            rec.update(extra)
            print(f"  d={params['graph_degree']:3d} itopk={params['itopk']:4d} "
                  f"width={params['search_width']} io={io:6s} recall@{args.k}={rec['recall']:.4f} "
                  f"QPS={rec['qps']:14,.0f} ({rec['latency_ms']:.3f} ms a call, "
                  f"events {event_ms:.3f} ms a pass)", flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
                out.flush()

    storage = STORAGE[base.dtype.type]
    for d in int_list(args.graph_degree):
        ip = cagra.IndexParams(metric=METRICS[args.metric], graph_degree=d,
                               intermediate_graph_degree=2 * d, build_algo=args.build_algo)
        index, build_s = build(base_d, ip, res)
        print(f"build d={d} intermediate={2 * d} {args.build_algo}: {build_s:.3f} s", flush=True)
        for width in int_list(args.search_width):
            for itopk in int_list(args.itopk):
                if itopk < args.k:
                    continue
                sp = cagra.SearchParams(itopk_size=itopk, search_width=width)
                params = {"itopk": itopk, "search_width": width, "max_iterations": 0,
                          "threads": 1, "storage": storage, "graph_degree": d,
                          "intermediate_graph_degree": 2 * d, "build_algo": args.build_algo,
                          "algo": "auto"}
                emit(index, sp, params, build_s, {})
        del index

    if not args.no_defaults:
        ip = cagra.IndexParams(metric=METRICS[args.metric])
        index, build_s = build(base_d, ip, res)
        sp = cagra.SearchParams()
        algo_names = {0: "auto", 1: "ivf_pq", 2: "nn_descent", 3: "iterative_cagra_search",
                      4: "ace"}  # enum cuvsCagraGraphBuildAlgo (cuvs/neighbors/cagra.h)
        build_algo = algo_names.get(int(ip.build_algo), str(ip.build_algo))
        print(f"build at cuVS defaults (d={ip.graph_degree} intermediate="
              f"{ip.intermediate_graph_degree} {build_algo}): {build_s:.3f} s", flush=True)
        params = {"itopk": sp.itopk_size, "search_width": sp.search_width,
                  "max_iterations": sp.max_iterations, "threads": 1, "storage": storage,
                  "graph_degree": ip.graph_degree,
                  "intermediate_graph_degree": ip.intermediate_graph_degree,
                  "build_algo": build_algo, "algo": "auto"}
        emit(index, sp, params, build_s, {"defaults": True})
    if out:
        out.close()


if __name__ == "__main__":
    main()
