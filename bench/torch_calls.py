"""Python search calls of torch CUDA queries, by batch size: the time a call of
``Index.search`` when each call waits for its results, and when calls are queued back to back
with ``stream_ordered=True`` (one ``torch.cuda.synchronize`` at the end); each also with the
results written into the same two tensors every call (``out=``). An index with labels returns
labels (mapped on the GPU), turned back into rows for the recall. The last column: the same
queries from a numpy array (host memory: at batch 1 the resident kernel). ``--ext-alloc`` also
times the stream-ordered calls with their result arrays made by the extension (``cudaMalloc``,
freed with ``cudaFree``, which waits for the GPU) instead of torch's caching allocator. Median
over --rounds rounds of --calls calls, after a warm-up round.

    python3 bench/torch_calls.py INDEX QUERIES GT [--batches 1,10,100,1000] [--calls 2000]
        [--rounds 5] [--itopk 32] [--ext-alloc] [--dataset NAME] [--label L] [--json FILE]
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import time

import cagra
import cagra._index
import numpy as np
import torch


def per_call_us(fn, calls: int, rounds: int) -> float:
    fn(calls // 10 + 1)  # warm-up: the index's device copy, workspaces, kernels loaded
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(calls)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("index")
    ap.add_argument("queries")
    ap.add_argument("gt")
    ap.add_argument("--batches", default="1,10,100,1000")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--itopk", type=int, default=32)
    ap.add_argument("--ext-alloc", action="store_true")
    ap.add_argument("--dataset", default="unnamed")
    ap.add_argument("--label", default="")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    index = cagra.load(a.index)
    queries = cagra.read_matrix(a.queries)
    truth = cagra.read_neighbors(a.gt)[0]
    k = 10
    own_alloc = cagra._index._cuda_results
    has_out = "out" in inspect.signature(cagra.Index.search).parameters
    labels = index.labels  # an index with labels returns them (int64): rows again for recall
    order = np.argsort(labels) if labels is not None else None

    def as_rows(found: np.ndarray) -> np.ndarray:
        if labels is None:
            return found
        at = np.clip(np.searchsorted(labels[order], found), 0, len(labels) - 1)
        return order[at].astype(np.uint32)

    print(
        f"{'batch':>7} {'recall':>8} {'waiting us':>11} {'ordered us':>11} {'waiting out=':>13} "
        f"{'ordered out=':>13} {'ext-alloc':>10} {'numpy us':>9}"
    )
    for b in (int(x) for x in a.batches.split(",")):
        b = min(b, len(queries))
        q = torch.from_numpy(np.ascontiguousarray(queries[:b])).cuda()
        ids, _ = index.search(q, k, itopk_size=a.itopk)
        rec = cagra.recall(as_rows(np.from_dlpack(ids.cpu())), truth[:b], k)

        def waiting(n: int, q: torch.Tensor = q) -> None:
            for _ in range(n):
                index.search(q, k, itopk_size=a.itopk)

        def ordered(n: int, q: torch.Tensor = q) -> None:
            for _ in range(n):
                index.search(q, k, itopk_size=a.itopk, stream_ordered=True)

        out = (
            torch.empty(
                (b, k), dtype=torch.uint32 if labels is None else torch.int64, device=q.device
            ),
            torch.empty((b, k), dtype=torch.float32, device=q.device),
        )

        host_q = np.ascontiguousarray(queries[:b])

        def host(n: int, q: np.ndarray = host_q) -> None:
            for _ in range(n):
                index.search(q, k, itopk_size=a.itopk)

        def waiting_out(n: int, q: torch.Tensor = q, out: tuple = out) -> None:
            for _ in range(n):
                index.search(q, k, itopk_size=a.itopk, out=out)

        def ordered_out(n: int, q: torch.Tensor = q, out: tuple = out) -> None:
            for _ in range(n):
                index.search(q, k, itopk_size=a.itopk, stream_ordered=True, out=out)

        row = {
            "dataset": a.dataset,
            "label": a.label,
            "batch": b,
            "itopk": a.itopk,
            "recall": rec,
            "waiting_us": per_call_us(waiting, a.calls, a.rounds),
            "ordered_us": per_call_us(ordered, a.calls, a.rounds),
            "host_us": per_call_us(host, a.calls, a.rounds),
        }
        if has_out:  # (a package from before out= times the other columns)
            row["waiting_out_us"] = per_call_us(waiting_out, a.calls, a.rounds)
            row["ordered_out_us"] = per_call_us(ordered_out, a.calls, a.rounds)
        if a.ext_alloc:
            cagra._index._cuda_results = lambda *args: None
            try:
                row["ordered_ext_alloc_us"] = per_call_us(ordered, a.calls, a.rounds)
            finally:
                cagra._index._cuda_results = own_alloc
        print(
            f"{b:>7} {rec:>8.4f} {row['waiting_us']:>11.1f} {row['ordered_us']:>11.1f} "
            f"{row.get('waiting_out_us', float('nan')):>13.1f} "
            f"{row.get('ordered_out_us', float('nan')):>13.1f} "
            f"{row.get('ordered_ext_alloc_us', float('nan')):>10.1f} {row['host_us']:>9.1f}"
        )
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
