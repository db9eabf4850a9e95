"""What the demo's numbers mean: one line per CAGRA result of one sweep.

scripts/demo.sh runs `cagra bench`, the exact search (`cagra gt`) and bench/hnswlib_peer on the
same data and machine, each writing JSON lines (fields: docs/cli.md). For every CAGRA point this
prints its speed-up over the exact search and over hnswlib at the same recall: hnswlib's QPS at
that recall is read off its recall/QPS curve (the points that no other point beats on both),
interpolated between the two points around it (log QPS linear in recall), never extrapolated.

usage: demo_report.py CAGRA_JSONL HNSWLIB_JSONL [EXACT_JSONL]
Only the records of the batch mode of the first CAGRA record are read (all queries per call, or
one query per call on one thread); a missing or empty hnswlib or exact file leaves its column out.
"""

import json
import math
import sys


def read_jsonl(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def frontier(points):
    """The (recall, qps, ef) points that no other point beats on both, by rising recall."""
    best = []
    for recall, qps, ef in sorted(points, key=lambda p: (-p[0], -p[1])):
        if not best or qps > best[-1][1]:
            best.append((recall, qps, ef))
    return best[::-1]


def qps_at(curve, recall):
    """hnswlib's QPS at `recall` and where it came from; None and the reason where the curve
    does not reach it. Above hnswlib's highest recall, its QPS there bounds it from above."""
    if not curve:
        return None, "no hnswlib run"
    lo, hi = curve[0], curve[-1]
    if recall > hi[0]:
        return None, f"above hnswlib's best recall, {hi[0]:.5f} at ef {hi[2]} ({hi[1]:,.0f} QPS)"
    if recall < lo[0]:
        return None, f"below hnswlib's lowest recall, {lo[0]:.4f} at ef {lo[2]}"
    for (r0, q0, e0), (r1, q1, e1) in zip(curve, curve[1:] + [curve[-1]]):
        if r0 == recall or r1 == r0:
            return q0, f"ef {e0}"
        if r0 <= recall <= r1:
            t = (recall - r0) / (r1 - r0)
            return math.exp(math.log(q0) + t * (math.log(q1) - math.log(q0))), f"ef {e0}-{e1}"
    return None, "no hnswlib point at this recall"


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit("usage: demo_report.py CAGRA_JSONL HNSWLIB_JSONL [EXACT_JSONL]")
    cagra = [r for r in read_jsonl(argv[1]) if r.get("system", "").startswith("cagra")]
    if not cagra:
        sys.exit(f"error: no cagra records in {argv[1]}")
    batch = cagra[0]["batch"]
    cagra = [r for r in cagra if r["batch"] == batch]
    threads = cagra[0]["params"]["threads"]
    hnsw = [r for r in read_jsonl(argv[2]) if r.get("system") == "hnswlib" and r["batch"] == batch]
    curve = frontier([(r["recall"], r["qps"], r["params"]["ef"]) for r in hnsw])
    exact = read_jsonl(argv[3]) if len(argv) > 3 else []
    exact = [r for r in exact if "brute-force" in r.get("system", "")]

    # The exact search runs batched on all threads; one query per call on one thread is compared
    # with its rate per thread (a one-query exact scan is no faster than a batched one's share).
    exact_qps = None
    if exact:
        e = exact[-1]
        exact_qps = e["qps"]
        where = f"{e['device']}, all queries per call, measured with the ground truth"
        if batch == 1:
            exact_qps /= max(1, e["params"]["threads"])
            print(f"exact search: {exact_qps:,.0f} QPS per thread ({e['qps']:,.0f} QPS on {where})")
        else:
            print(f"exact search: {exact_qps:,.0f} QPS ({where})")
    else:
        print("exact search: not measured (the ground truth was cached without its speed)")
    if curve:
        m = hnsw[0]["params"]
        print(
            f"hnswlib: M {m['M']}, ef_construction {m['ef_construction']}, "
            f"{m['threads']} search thread{'s' if m['threads'] != 1 else ''}, "
            f"recall {curve[0][0]:.4f} to {curve[-1][0]:.4f}"
        )
    if batch == 1:
        print("CAGRA, one query per call, one thread:")
    else:
        print(f"CAGRA, all queries per call, {threads} threads:")
    for r in cagra:
        p = r["params"]
        line = (
            f"  itopk {p['itopk']:>3}, width {p['search_width']}: "
            f"recall@{r['k']} {r['recall']:.4f} at {r['qps']:>9,.0f} QPS"
        )
        if exact_qps:
            line += f" = {r['qps'] / exact_qps:,.0f}x exact search"
        hnsw_qps, note = qps_at(curve, r["recall"])
        if hnsw_qps is None and curve and r["recall"] > curve[-1][0]:
            line += f", more than {r['qps'] / curve[-1][1]:.1f}x hnswlib: {note}"
        elif hnsw_qps:
            speedup = r["qps"] / hnsw_qps
            line += f", {speedup:.1f}x hnswlib at this recall ({hnsw_qps:,.0f} QPS, {note})"
        else:
            line += f"; {note}"
        print(line)


if __name__ == "__main__":
    main(sys.argv)
