#!/usr/bin/env python3
"""Plots and tables from the JSON-lines results of `cagra bench` and its peers (bench/*_peer*).

Both writers share one record layout (run_id, system, device, dataset, batch, k, params, recall,
qps, latency_ms, build_s), so one reader can put every system on the same recall/QPS axes. A
results file is only ever appended to, so by default each curve keeps only its most recent run:
re-running a benchmark replaces its curve instead of zig-zagging it with the old one.

  plot.py RESULTS.jsonl [...] --dataset NAME --batch B -o OUT.png [--title T] [--k K]
  plot.py RESULTS.jsonl [...] --build --dataset NAME -o OUT.png [--systems S1,S2]
  plot.py --qps-at 0.90,0.95,0.99 RESULTS.jsonl [...] [--dataset NAME] [--batch B]
  plot.py RESULTS.jsonl [...] --selectivity --dataset NAME --batch B -o OUT.png [--recall 0.95]

Filtered points (`cagra bench --filter-selectivity`, hnswlib_peer likewise) carry a
"selectivity" field; --qps-at then gives one row per selectivity, and --selectivity plots QPS at
a recall level and cagra's recall at its default parameters against selectivity.
"""
import argparse
import json
import math
import sys

# The parameter that each system sweeps along its curve; every other parameter that takes several
# values in the selected points names a curve of its own (e.g. cagra with search_width 1 and 4).
SWEPT = {"ef", "itopk", "itopk_size", "nprobe", "rerank"}  # rerank: the plan's value follows itopk
REQUIRED = ("system", "dataset", "batch", "k", "recall", "qps")


def die(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def load(paths):
    points = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError as e:
                        die(f"{path}:{lineno}: not valid JSON ({e.msg})")
                    missing = [key for key in REQUIRED if key not in rec]
                    if missing:
                        die(f"{path}:{lineno}: record lacks {', '.join(missing)}")
                    rec.setdefault("params", {})
                    rec["_order"] = len(points)  # file order breaks run_id ties and formats
                    points.append(rec)
        except OSError as e:
            die(f"cannot read {path}: {e.strerror}")
    return points


# Parameters that the writers record only when set (`cagra bench` writes "persistent" only for
# points that ran through the resident kernel): a missing one has this value.
UNSET = {"persistent": False, "traversal": "exact"}


def param(point, key):
    return point["params"].get(key, UNSET.get(key))


def label_series(points):
    """Gives every point a '_series' label: system, plus device and non-swept parameters when
    the selection holds several values of them (a lone value would only clutter the legend).
    Decided per (dataset, system, batch): a single-query run may record other thread counts."""
    groups = {}
    for p in points:
        groups.setdefault((p["dataset"], p["system"], int(p["batch"])), []).append(p)
    for (_, system, _), pts in groups.items():
        varying = []
        devices = {p.get("device") for p in pts}
        keys = sorted({key for p in pts for key in p["params"]} - SWEPT)
        for key in keys:
            values = {json.dumps(param(p, key), sort_keys=True) for p in pts}
            if len(values) > 1:
                varying.append(key)
        for p in pts:
            parts = [f"{key}={param(p, key)}" for key in varying]
            if len(devices) > 1:
                parts.append(str(p.get("device")))
            p["_series"] = system + (f" ({', '.join(parts)})" if parts else "")


def latest_runs(points, group_keys):
    """Keeps, per group, only the points of the run that was appended last."""
    last = {}
    for p in points:
        g = tuple(p.get(key) for key in group_keys)
        if g not in last or p["_order"] > last[g][1]:
            last[g] = (p.get("run_id"), p["_order"])
    return [p for p in points if p.get("run_id") == last[tuple(p.get(k) for k in group_keys)][0]]


def select(points, dataset=None, batch=None, k=None):
    out = [p for p in points
           if (dataset is None or p["dataset"] == dataset)
           and (batch is None or int(p["batch"]) == batch)
           and (k is None or int(p["k"]) == k)]
    ks = sorted({int(p["k"]) for p in out})
    if k is None and len(ks) > 1:
        die(f"the selected points mix k = {ks}; pick one with --k")
    return out


def pareto(points):
    """Recall-sorted points that no other point beats on both recall and QPS."""
    best = []
    for p in sorted(points, key=lambda p: (-p["recall"], -p["qps"])):
        if not best or p["qps"] > best[-1]["qps"]:
            best.append(p)
    return best[::-1]


def qps_at(points, target):
    """QPS at `target` recall, linear in recall between the two bracketing frontier points.
    None when the sweep never reaches the target."""
    front = pareto(points)
    if not front or front[-1]["recall"] < target:
        return None
    if front[0]["recall"] >= target:  # even the fastest point is accurate enough
        return front[0]["qps"]
    for lo, hi in zip(front, front[1:]):
        if lo["recall"] <= target <= hi["recall"]:
            if hi["recall"] == lo["recall"]:
                return hi["qps"]
            t = (target - lo["recall"]) / (hi["recall"] - lo["recall"])
            return lo["qps"] + t * (hi["qps"] - lo["qps"])
    return None


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display on benchmark machines
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        die("matplotlib is not installed for this Python "
            f"({sys.executable}); try: apt-get install -y python3-matplotlib")


def plot_curves(points, args):
    plt = pyplot()
    k = int(points[0]["k"])
    fig, ax = plt.subplots(figsize=(8, 5.5))
    series = {}
    for p in points:
        series.setdefault(p["_series"], []).append(p)
    # Past matplotlib's 10 default colours two curves would share one: take 20, and vary the marker.
    colors = plt.get_cmap("tab20").colors if len(series) > 10 else [None] * len(series)
    markers = "os^Dv"
    for i, name in enumerate(sorted(series)):
        pts = sorted(series[name], key=lambda p: (p["recall"], -p["qps"]))
        ax.plot([p["recall"] for p in pts], [p["qps"] for p in pts], marker=markers[i % 5],
                markersize=4, color=colors[i], label=name)
    ax.set_yscale("log")
    ax.set_xlabel(f"recall@{k}")
    ax.set_ylabel("queries per second (log)")
    devices = sorted({str(p.get("device")) for p in points})
    default = f"{args.dataset}, batch={args.batch}"
    if len(devices) == 1:
        default += f"\n{devices[0]}"
    ax.set_title(args.title or default)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower left", fontsize="small")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output} ({len(series)} curves, {len(points)} points)")


def plot_build(points, args):
    plt = pyplot()
    per_system = {}
    for p in points:
        if isinstance(p.get("build_s"), (int, float)) and math.isfinite(p["build_s"]):
            per_system.setdefault(p["system"], {}).setdefault(p["build_s"], []).append(p)
    build = {}
    for system, groups in per_system.items():
        # One bar per distinct index, not per curve: curves that differ in search settings only
        # share a build. A bar is named by the parameters that tell the builds apart.
        if len(groups) == 1:
            build[system] = next(iter(groups))
            continue
        keys = sorted({key for pts in groups.values() for p in pts for key in p["params"]} - SWEPT)
        values = {b: {key: {json.dumps(p["params"].get(key)) for p in pts} for key in keys}
                  for b, pts in groups.items()}
        names = [key for key in keys if all(len(v[key]) == 1 for v in values.values())
                 and len({next(iter(v[key])) for v in values.values()}) == len(groups)]
        for i, (b, pts) in enumerate(sorted(groups.items())):
            parts = [f"{key}={pts[0]['params'].get(key)}" for key in names] or [f"build {i + 1}"]
            build[f"{system} ({', '.join(parts)})"] = b
    if not build:
        die(f"no point of dataset '{args.dataset}' carries a build time")
    names = sorted(build)
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(names)), 4.5))
    bars = ax.bar(range(len(names)), [build[n] for n in names])
    ax.bar_label(bars, fmt="%.1f s")
    ax.set_xticks(range(len(names)), names, rotation=15, ha="right")
    ax.set_ylabel("build time (s)")
    ax.set_title(args.title or f"{args.dataset}: index build time")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output} ({len(names)} bars)")


def selectivity_of(p):
    """The share of rows a filtered point's filter allowed; 1 for an unfiltered point."""
    s = p.get("selectivity")
    return 1.0 if s is None else float(s)


def print_qps_at(points, targets):
    filtered = any("selectivity" in p for p in points)
    groups = {}
    for p in points:
        key = (p["dataset"], p["_series"], int(p["batch"]), int(p["k"]))
        if filtered:
            key += (-selectivity_of(p),)  # descending selectivity
        groups.setdefault(key, []).append(p)
    head = ["dataset", "system", "batch", "k"] + (["selectivity"] if filtered else [])
    head += [f"QPS@{t:g}" for t in targets]
    rows = []
    for key in sorted(groups):
        vals = [qps_at(groups[key], t) for t in targets]
        cells = [str(x) for x in key[:4]] + ([f"{-key[4]:g}"] if filtered else [])
        rows.append(cells + ["n/a" if v is None else f"{v:,.0f}" for v in vals])
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 2 else "---:" for i in range(len(head))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def plot_selectivity(points, args):
    """QPS at args.recall against selectivity per system (left; a system's fastest point when it
    is already above the level: a lower bound), and cagra's recall at its default parameters
    (itopk 64, the plan growing it as selectivity falls) against selectivity (right)."""
    plt = pyplot()
    k = int(points[0]["k"])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 5))
    series = {}
    for p in points:
        series.setdefault(p["_series"], {}).setdefault(selectivity_of(p), []).append(p)
    for name, by_sel in sorted(series.items()):
        xs = sorted(by_sel)
        ys = [qps_at(by_sel[x], args.recall) for x in xs]
        kept = [(x, y) for x, y in zip(xs, ys) if y is not None]
        if kept:
            ax.plot([x for x, _ in kept], [y for _, y in kept], marker="o", label=name)
        defaults = [(x, p["recall"]) for x in xs for p in by_sel[x]
                    if p["params"].get("itopk") == 64]
        if defaults:
            ax2.plot([x for x, _ in defaults], [r for _, r in defaults], marker="o",
                     label=f"{name}, itopk 64 (default)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("selectivity (share of rows allowed)")
    ax.set_ylabel(f"QPS at recall@{k} {args.recall:g}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax2.set_xscale("log")
    ax2.axhline(args.recall, color="grey", linestyle="--", linewidth=1)
    ax2.set_xlabel("selectivity (share of rows allowed)")
    ax2.set_ylabel(f"recall@{k}")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend()
    batch = int(points[0]["batch"])
    fig.suptitle(args.title or f"{args.dataset}: filtered search, batch "
                 f"{'all queries' if batch == 0 else batch}, k = {k}")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", metavar="RESULTS.jsonl")
    ap.add_argument("--dataset")
    ap.add_argument("--batch", type=int, choices=(0, 1))
    ap.add_argument("--k", type=int)
    ap.add_argument("-o", "--output")
    ap.add_argument("--title")
    ap.add_argument("--build", action="store_true", help="bar chart of build_s per system")
    ap.add_argument("--systems", metavar="S1,S2,...",
                    help="only these systems (e.g. leave out cagra-cpu in a build chart when it "
                         "searched the GPU-built index)")
    ap.add_argument("--qps-at", metavar="R1,R2,...",
                    help="print QPS at these recall levels instead of plotting")
    ap.add_argument("--selectivity", action="store_true",
                    help="QPS at --recall and recall against the filter's selectivity")
    ap.add_argument("--recall", type=float, default=0.95,
                    help="recall level of the --selectivity plot (default 0.95)")
    ap.add_argument("--all-runs", action="store_true",
                    help="keep every run of a configuration, not only the last one appended")
    args = ap.parse_args()

    targets = None
    if args.qps_at:
        try:
            targets = [float(t) for t in args.qps_at.split(",")]
        except ValueError:
            die(f"--qps-at: expected recall levels like 0.9,0.95, got '{args.qps_at}'")
        if not all(0 < t <= 1 for t in targets):
            die("--qps-at: recall levels must lie in (0, 1]")
    else:
        if not args.output:
            die("-o OUT.png is required (or use --qps-at)")
        if not args.dataset:
            die("--dataset is required for a plot")
        if args.batch is None and not args.build:
            die("--batch 0|1 is required for a recall/QPS plot")

    points = load(args.files)
    if args.systems:
        keep = set(args.systems.split(","))
        points = [p for p in points if p["system"] in keep]
    points = select(points, args.dataset, None if args.build else args.batch, args.k)
    if not points:
        what = [f"dataset '{args.dataset}'" if args.dataset else None,
                f"batch {args.batch}" if args.batch is not None and not args.build else None,
                f"k {args.k}" if args.k else None]
        die(f"no point in {', '.join(args.files)} matches "
            f"{' and '.join(w for w in what if w) or 'anything'}")
    label_series(points)
    if not args.all_runs:
        points = latest_runs(points, ("dataset", "_series", "batch", "k"))
    if targets:
        print_qps_at(points, targets)
    elif args.build:
        plot_build(points, args)
    elif args.selectivity:
        plot_selectivity(points, args)
    else:
        plot_curves(points, args)


if __name__ == "__main__":
    main()
