#!/usr/bin/env python3
"""SIFT-128 from real photos: uint8 SIFT descriptors (like the texmex SIFT sets) of the wallpaper
photos that Debian packages ship, as a 1M-vector base set plus 10K queries from other photos.

  sift_wallpapers.py [OUT_DIR] [--base 1000000] [--queries 10000] [--packages P,P,...]
                     [--max-share 0.035] [--query-frac 0.10] [--max-mpix 16]
                    [--contrast-threshold 0.01] [--threads N] [--seed 1]
                    [--force]

OUT_DIR (default data/sift-wall-1m) gets:
  base.u8bin       BASE x 128 u8 (uint32 rows, uint32 cols, then row-major bytes;
                   docs/vector_formats.md)
  query.u8bin      QUERIES x 128 u8, from photos none of whose descriptors are in the base
  base.photo.npy   uint16 per base row: the index of its photo in manifest.json's "photos"
  query.photo.npy  the same for the queries
  manifest.json    packages and versions, every photo (paths, sha256, size, keypoints found and
                   taken, role), the parameters, the totals, the OpenCV and numpy versions
  cache/           one .npz per photo with its strongest descriptors (reruns skip extraction)

What it does, step by step (everything is deterministic for the same packages and versions):
 1. Photos: the files that `dpkg -L` lists for the installed packages of --packages, with an image
    extension (.jpg .jpeg .png .webp .jxl .tif .tiff .bmp) that this OpenCV can decode. SVG is
    not read, and images under --min-mpix (0.5 MP, e.g. Plasma's screenshot.png previews) are
    skipped. Byte-identical files (same sha256: Plasma's per-resolution symlinks, Lomiri's two
    names of one PNG) count once. One wallpaper shipped at several resolutions (Plasma's
    contents/images/WxH files, MATE's Elephants_WxH.jpg, sway's *_WxH[_Portrait].png) is kept
    once, at its largest size.
 2. Split: variants of one design (Plasma's images/ and images_dark/, GNOME's -l/-d, MATE's
    -Light/-Dark) form one family, and a family goes wholly to the base or to the queries, so no
    query photo is a recolour of a base photo. Families are ordered by the smallest sha256 of their
    photos (content-defined, independent of paths and listing order); the first families in that
    order become query photos until they hold >= --query-frac of the photos and enough
    descriptors for --queries; the rest are base photos. (SIFT1M also takes its queries from
    other images than its base.)
 3. SIFT: OpenCV's cv2.SIFT_create() on the grayscale image, first downscaled with INTER_AREA to
    at most --max-mpix megapixels (16: only the largest photos are reduced). Its parameters are
    OpenCV's defaults (3 layers per octave, edge threshold 10, sigma 1.6) except the contrast
    threshold: 0.01 instead of 0.04, because most wallpapers are smooth artwork on which the
    default finds a few hundred keypoints or none (the 108 photos of the default packages gave
    736K keypoints in all at 0.04 and 8 MP, 419K within a 2% cap: far from 1M; at 0.01 and 16 MP
    they give 2.6M). VLFeat's SIFT keeps every extremum by default (peak threshold 0), so
    low-contrast keypoints are ordinary SIFT practice; each photo still contributes its
    strongest keypoints first (step 4). OpenCV's float descriptors are already the
    integers 0..255 (normalize, clip at 0.2, renormalize, times 512, saturate to uchar, as in
    Lowe's code and the texmex sets); they are rounded, clipped to 0..255 and stored as uint8.
    All-zero rows are dropped.
 4. Per photo, the keypoints are ordered strongest first (response, then octave, y, x, angle as
    tie breaks), duplicate descriptor rows are dropped (keeping the stronger), and the strongest
    max-share x BASE rows are kept in the cache. Rows that equal a row of an earlier photo (in
    sha256 order) are dropped too, so the base has no duplicate rows.
 5. Cap: the base takes the same number c of rows from every photo that has c, and all rows of the
    photos that have fewer ("water filling"): c is the largest value for which the total stays
    <= BASE, and the remainder goes one row each to the first capped photos. c never exceeds
    --max-share x BASE, so no photo is more than that share of the base; if the photos cannot give
    BASE rows within that cap, the base is smaller and manifest.json and the output say so. The
    default 3.5% is what ~100 photos, half of them smooth artwork, need for 1M rows: with the
    default packages c comes out near 3.4% (a 2% cap gives 732K rows, 3% about 956K). The
    queries are taken from the query photos the same way (strongest first, water filling), and a
    query row that equals a base row is dropped.
 6. The base rows and the query rows are each shuffled with --seed (numpy PCG64), so any prefix of
    base.u8bin is a sample of all photos (a 100K prefix is a fair small subset).

Progress goes to stdout, one line per photo, with an estimate of the time left. When the outputs
exist and were made with the same parameters, nothing is done; when they were made with other
parameters, it stops with an error instead of replacing them (--force replaces them).
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

DEFAULT_PACKAGES = [
    "gnome-backgrounds", "mate-backgrounds", "plasma-workspace-wallpapers", "ukui-wallpapers",
    "lomiri-wallpapers", "lomiri-wallpapers-16.04", "lomiri-wallpapers-20.04", "sway-backgrounds",
]
IMAGE_EXT = (".jpg", ".jpeg", ".png", ".webp", ".jxl", ".tif", ".tiff", ".bmp")
DIM = 128
CACHE_VERSION = 1


def log(msg):
    print(msg, flush=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_u8bin(path, x):
    x = np.ascontiguousarray(x, dtype=np.uint8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.array(x.shape, dtype=np.uint32).tofile(f)
        x.tofile(f)
    os.replace(tmp, path)  # a file that exists is a complete one


def save_npy(path, x):
    tmp = path + ".tmp.npy"
    np.save(tmp, x)
    os.replace(tmp, path)


def dpkg_files(package):
    """(version, [files]) of an installed package, or (None, []) when it is not installed."""
    q = subprocess.run(["dpkg-query", "-W", "-f", "${Status}\t${Version}", package],
                       capture_output=True, text=True)
    if q.returncode != 0 or not q.stdout.startswith("install ok installed"):
        return None, []
    version = q.stdout.split("\t", 1)[1]
    listing = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True)
    return version, [line for line in listing.stdout.splitlines() if line]


RES = re.compile(r"[_-]?\d{3,5}x\d{3,5}")


def variant_key(path):
    """Files with the same key are one wallpaper at several sizes: the largest is kept."""
    parts = path.split("/")
    if "contents" in parts:  # Plasma: NAME/contents/images[_dark]/WxH.ext
        i = parts.index("contents")
        return "/".join(parts[:i + 2])
    stem = os.path.splitext(parts[-1])[0]
    stem = RES.sub("", stem)
    stem = re.sub(r"_Portrait$", "", stem)
    return "/".join(parts[:-1] + [stem])


def family_key(variant):
    """Variants of one design (dark/light, images/images_dark) share a family: one split side."""
    parts = variant.split("/")
    if "contents" in parts:
        return "/".join(parts[:parts.index("contents")])
    return re.sub(r"([-_](d|l|dark|light))$", "", variant, flags=re.IGNORECASE)


def find_photos(packages, min_mpix, cv2):
    """Lists, deduplicates and measures the photos. Returns (package versions, photos, skipped)."""
    versions, candidates, skipped = {}, [], []
    for p in packages:
        version, files = dpkg_files(p)
        if version is None:
            log(f"  {p}: not installed, skipped")
            continue
        versions[p] = version
        n = 0
        for f in files:
            if not f.lower().endswith(IMAGE_EXT) or f.startswith("/usr/share/doc/"):
                continue
            if not os.path.isfile(f):
                continue
            candidates.append((p, f))
            n += 1
        log(f"  {p} {version}: {n} image files")
    by_sha = {}
    for p, f in candidates:
        digest = sha256_file(f)
        if digest in by_sha:
            by_sha[digest]["paths"].append(f)
            continue
        # Only the header is needed for the size, but OpenCV has no header-only reader for every
        # format: decode once here (grayscale, a few seconds in all) and again in extraction.
        img = cv2.imread(f, cv2.IMREAD_GRAYSCALE)
        if img is None:
            skipped.append({"path": f, "package": p, "why": "OpenCV cannot decode it"})
            by_sha[digest] = None
            continue
        h, w = img.shape[:2]
        by_sha[digest] = {"package": p, "path": f, "paths": [f], "sha256": digest,
                          "bytes": os.path.getsize(f), "width": int(w), "height": int(h)}
    photos = []
    for ph in by_sha.values():
        if ph is None:
            continue
        if ph["width"] * ph["height"] < min_mpix * 1e6:
            skipped.append({"path": ph["path"], "package": ph["package"],
                            "why": f"{ph['width']}x{ph['height']} is under {min_mpix} MP"})
            continue
        photos.append(ph)
    # One wallpaper at several resolutions: keep the largest (ties: smallest sha256).
    best = {}
    for ph in photos:
        key = (ph["package"], variant_key(ph["path"]))
        ph["variant"] = key[1]
        old = best.get(key)
        rank = (-ph["width"] * ph["height"], ph["sha256"])
        if old is None or rank < (-old["width"] * old["height"], old["sha256"]):
            if old is not None:
                skipped.append({"path": old["path"], "package": old["package"],
                                "why": f"smaller copy of {ph['path']}"})
            best[key] = ph
        else:
            skipped.append({"path": ph["path"], "package": ph["package"],
                            "why": f"smaller copy of {old['path']}"})
    photos = sorted(best.values(), key=lambda ph: ph["sha256"])
    for ph in photos:
        ph["family"] = family_key(ph["variant"])
    return versions, photos, skipped


def extract(ph, args, cv2, cache_dir, pool_rows):
    """The photo's strongest `pool_rows` unique descriptors (uint8, strongest first), cached."""
    tag = f"v{CACHE_VERSION}-mp{args.max_mpix:g}-ct{args.contrast_threshold:g}-r{pool_rows}"
    cache = os.path.join(cache_dir, f"{ph['sha256'][:16]}-{tag}.npz")
    if os.path.exists(cache):
        z = np.load(cache)
        return z["desc"], {k: int(z[k]) for k in ("keypoints", "unique", "proc_w", "proc_h")}, True
    img = cv2.imread(ph["path"], cv2.IMREAD_GRAYSCALE)
    h, w = img.shape
    scale = min(1.0, (args.max_mpix * 1e6 / (w * h)) ** 0.5)
    if scale < 1.0:
        img = cv2.resize(img, (max(1, round(w * scale)), max(1, round(h * scale))),
                         interpolation=cv2.INTER_AREA)
    sift = cv2.SIFT_create(contrastThreshold=args.contrast_threshold)
    kps, desc = sift.detectAndCompute(img, None)
    n = len(kps)
    if n == 0 or desc is None:
        desc = np.zeros((0, DIM), dtype=np.uint8)
        unique = 0
    else:
        keys = np.array([(k.response, k.octave, k.pt[1], k.pt[0], k.angle) for k in kps],
                        dtype=np.float64)
        # np.lexsort sorts by the last key first: strongest response, then the tie breaks.
        order = np.lexsort((keys[:, 4], keys[:, 3], keys[:, 2], keys[:, 1], -keys[:, 0]))
        desc = np.clip(np.rint(desc[order]), 0, 255).astype(np.uint8)
        desc = desc[desc.any(axis=1)]
        _, first = np.unique(desc, axis=0, return_index=True)
        desc = desc[np.sort(first)]  # drop repeats, keep the stronger occurrence, keep the order
        unique = len(desc)
        desc = desc[:pool_rows]
    info = {"keypoints": n, "unique": unique, "proc_w": img.shape[1], "proc_h": img.shape[0]}
    tmp = cache + ".tmp.npz"
    np.savez(tmp, desc=desc, **info)
    os.replace(tmp, cache)
    return desc, info, False


def water_fill(counts, total, cap):
    """Rows to take per photo: min(count, c) or c + 1, summing to
    min(total, sum(min(count, cap)))."""
    counts = np.asarray(counts, dtype=np.int64)
    avail = np.minimum(counts, cap)
    if avail.sum() <= total:
        return avail
    lo, hi = 0, cap  # largest c with sum(min(counts, c)) <= total
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if np.minimum(counts, mid).sum() <= total:
            lo = mid
        else:
            hi = mid - 1
    take = np.minimum(counts, lo)
    rest = total - int(take.sum())
    for i in np.nonzero(counts > lo)[0][:rest]:  # photos in sha256 order get the remainder
        take[i] += 1
    return take


def rows_in(a, b):
    """Mask of the rows of `a` that equal some row of `b`."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros(len(a), dtype=bool)
    _, inverse = np.unique(np.concatenate([b, a]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    return np.isin(inverse[len(b):], inverse[:len(b)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default="data/sift-wall-1m")
    ap.add_argument("--base", type=int, default=1_000_000, help="base rows wanted")
    ap.add_argument("--queries", type=int, default=10_000, help="query rows wanted")
    ap.add_argument("--packages", default=",".join(DEFAULT_PACKAGES),
                    help="comma-separated Debian packages whose images are used")
    ap.add_argument("--max-share", type=float, default=0.035,
                    help="the most one photo may contribute, as a share of --base")
    ap.add_argument("--query-frac", type=float, default=0.10, help="share of photos for queries")
    ap.add_argument("--max-mpix", type=float, default=16.0,
                    help="downscale larger images to this many megapixels before SIFT")
    ap.add_argument("--min-mpix", type=float, default=0.5, help="skip smaller images")
    ap.add_argument("--contrast-threshold", type=float, default=0.01,
                    help="SIFT contrastThreshold (OpenCV's default is 0.04; see the notes)")
    ap.add_argument("--threads", type=int, default=0, help="OpenCV threads (0: all cores)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the row shuffles")
    ap.add_argument("--force", action="store_true",
                    help="remake the outputs even when they exist (other parameters included)")
    args = ap.parse_args()

    params = {"base": args.base, "queries": args.queries,
              "packages": [p for p in args.packages.split(",") if p],
              "max_share": args.max_share, "query_frac": args.query_frac,
              "max_mpix": args.max_mpix, "min_mpix": args.min_mpix, "seed": args.seed,
              "contrast_threshold": args.contrast_threshold}
    outputs = [os.path.join(args.out, f) for f in ("base.u8bin", "query.u8bin", "manifest.json")]
    if all(os.path.exists(f) for f in outputs) and not args.force:
        with open(outputs[2]) as f:
            old = {k: v for k, v in json.load(f).get("parameters", {}).items() if k in params}
        if old == params:
            log(f"{args.out}: base.u8bin, query.u8bin and manifest.json exist, made with these "
                f"parameters: nothing to do (--force remakes them)")
            return
        changed = ", ".join(f"{k} {old.get(k)!r} -> {v!r}" for k, v in params.items()
                            if old.get(k) != v)
        sys.exit(f"error: {args.out} holds a dataset made with other parameters ({changed}); "
                 f"pick another output folder, or pass --force to replace it")

    import cv2  # imported here so that --help works without OpenCV
    if args.threads > 0:
        cv2.setNumThreads(args.threads)
    t_start = time.time()
    out = args.out
    cache_dir = os.path.join(out, "cache")
    os.makedirs(cache_dir, exist_ok=True)
    packages = [p for p in args.packages.split(",") if p]
    pool_rows = int(args.max_share * args.base)
    if pool_rows < 1:
        sys.exit("error: --max-share x --base must be at least 1 row")

    log(f"== photos (OpenCV {cv2.__version__}, numpy {np.__version__}) ==")
    versions, photos, skipped = find_photos(packages, args.min_mpix, cv2)
    if not photos:
        sys.exit("error: no usable photos: are the wallpaper packages installed?")
    per_pkg = {}
    for ph in photos:
        per_pkg[ph["package"]] = per_pkg.get(ph["package"], 0) + 1
    log(f"  {len(photos)} distinct photos ({', '.join(f'{p} {n}' for p, n in per_pkg.items())}); "
        f"{len(skipped)} files skipped (smaller copies, small or unreadable images); "
        f"{sum(len(ph['paths']) - 1 for ph in photos)} byte-identical copies merged")
    t_found = time.time()

    log(f"== SIFT (at most {args.max_mpix:g} MP per image; the strongest {pool_rows} unique "
        f"rows per photo are kept) ==")
    pools = []
    t0 = time.time()
    done_new = 0
    for i, ph in enumerate(photos):
        t1 = time.time()
        desc, info, cached = extract(ph, args, cv2, cache_dir, pool_rows)
        ph.update(info)
        pools.append(desc)
        if not cached:
            done_new += 1
        left = len(photos) - i - 1
        eta = (time.time() - t0) / max(done_new, 1) * left if done_new else 0.0
        scaled = f" -> {ph['proc_w']}x{ph['proc_h']}" if ph["proc_w"] != ph["width"] else ""
        took = "cached" if cached else f"{time.time() - t1:.1f} s"
        log(f"  [{i + 1}/{len(photos)}] {ph['path']} {ph['width']}x{ph['height']}{scaled}"
            f": {ph['keypoints']} keypoints, {ph['unique']} unique rows"
            f" ({took}; ~{eta / 60:.1f} min left)")
    t_sift = time.time()

    # Rows that equal a row of an earlier photo (sha256 order) are dropped.
    allrows = np.concatenate(pools)
    owner = np.repeat(np.arange(len(pools)), [len(p) for p in pools])
    _, first = np.unique(allrows, axis=0, return_index=True)
    keep_all = np.zeros(len(allrows), dtype=bool)
    keep_all[first] = True  # np.unique reports the first occurrence: the earliest photo's
    del allrows
    for i in range(len(pools)):
        keep = keep_all[owner == i]
        photos[i]["cross_dups"] = int((~keep).sum())
        pools[i] = pools[i][keep]

    # Split by family: families ordered by their smallest photo sha256.
    fams = {}
    for i, ph in enumerate(photos):
        fams.setdefault(ph["family"], []).append(i)
    order = sorted(fams, key=lambda f: min(photos[i]["sha256"] for i in fams[f]))
    query_ids, base_ids = [], []
    need_photos = max(1, round(args.query_frac * len(photos)))
    for fam in order:
        q_rows = sum(len(pools[i]) for i in query_ids)
        if len(query_ids) < need_photos or q_rows < args.queries:
            query_ids += fams[fam]
        else:
            base_ids += fams[fam]
    query_ids.sort()
    base_ids.sort()
    if not base_ids:
        sys.exit("error: every photo went to the queries: too few photos")

    base_take = water_fill([len(pools[i]) for i in base_ids], args.base, pool_rows)
    cap_used = int(base_take.max())
    base_parts, base_photo = [], []
    for i, t in zip(base_ids, base_take):
        base_parts.append(pools[i][:t])
        base_photo.append(np.full(t, i, dtype=np.uint16))
        photos[i]["role"] = "base"
        photos[i]["taken"] = int(t)
    base = np.concatenate(base_parts)
    base_photo = np.concatenate(base_photo)

    q_all = np.concatenate([pools[i] for i in query_ids])
    q_owner = np.repeat(np.arange(len(query_ids)), [len(pools[i]) for i in query_ids])
    q_in_base = rows_in(q_all, base)
    q_pools = []
    for j, i in enumerate(query_ids):
        keep = ~q_in_base[q_owner == j]
        photos[i]["equal_to_base"] = int((~keep).sum())
        q_pools.append(pools[i][keep])
    del q_all
    q_take = water_fill([len(p) for p in q_pools], args.queries, args.queries)
    q_parts, q_photo = [], []
    for i, pool, t in zip(query_ids, q_pools, q_take):
        q_parts.append(pool[:t])
        q_photo.append(np.full(t, i, dtype=np.uint16))
        photos[i]["role"] = "query"
        photos[i]["taken"] = int(t)
    query = np.concatenate(q_parts)
    query_photo = np.concatenate(q_photo)

    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(len(base))
    base, base_photo = base[perm], base_photo[perm]
    perm = rng.permutation(len(query))
    query, query_photo = query[perm], query_photo[perm]

    assert len(np.unique(base, axis=0)) == len(base), "duplicate base rows"
    assert base.any(axis=1).all() and query.any(axis=1).all(), "all-zero rows"
    write_u8bin(os.path.join(out, "base.u8bin"), base)
    write_u8bin(os.path.join(out, "query.u8bin"), query)
    save_npy(os.path.join(out, "base.photo.npy"), base_photo)
    save_npy(os.path.join(out, "query.photo.npy"), query_photo)
    t_end = time.time()

    short = len(base) < args.base
    hist = np.bincount(base.ravel(), minlength=256)
    manifest = {
        "dataset": "sift-wall-1m",
        "description": "uint8 SIFT-128 descriptors (OpenCV SIFT) of wallpaper photos shipped in "
                       "Debian packages; queries from other photos than the base",
        "recipe": "bench/datasets/sift_wallpapers.py",
        "parameters": dict(params, sift=f"cv2.SIFT_create(contrastThreshold="
                                        f"{args.contrast_threshold:g}); other parameters at "
                                        f"OpenCV's defaults: nOctaveLayers=3, edgeThreshold=10, "
                                        f"sigma=1.6"),
        "software": {"opencv": cv2.__version__, "numpy": np.__version__,
                     "python": sys.version.split()[0]},
        "packages": versions,
        "totals": {
            "photos": len(photos), "base_photos": len(base_ids), "query_photos": len(query_ids),
            "base_rows": int(len(base)), "query_rows": int(len(query)),
            "base_short_of_target": bool(short),
            "per_photo_cap_rows": cap_used, "max_photo_share": cap_used / len(base),
            "keypoints_all_photos": int(sum(ph["keypoints"] for ph in photos)),
            "base_value_mean": float(base.mean()), "base_value_max": int(base.max()),
            "base_zero_fraction": float(hist[0] / hist.sum()),
            "base_values_over_200_fraction": float(hist[201:].sum() / hist.sum()),
            "seconds": {"find": round(t_found - t_start, 1), "sift": round(t_sift - t_found, 1),
                        "assemble": round(t_end - t_sift, 1)},
        },
        "files": {"base.u8bin": [int(len(base)), DIM], "query.u8bin": [int(len(query)), DIM],
                  "base.photo.npy": "uint16 index into photos per base row",
                  "query.photo.npy": "uint16 index into photos per query row"},
        "photos": photos,
        "skipped": skipped,
    }
    tmp = os.path.join(out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(out, "manifest.json"))

    log("== result ==")
    log(f"  base  {len(base)} x {DIM} u8 from {len(base_ids)} photos, at most {cap_used} rows "
        f"({100 * cap_used / len(base):.2f}%) from one photo")
    if short:
        log(f"  NOTE: the photos give only {len(base)} base rows within the {args.max_share:.1%} "
            f"per-photo cap, fewer than the {args.base} asked for")
    log(f"  query {len(query)} x {DIM} u8 from {len(query_ids)} other photos")
    log(f"  wrote {out}/base.u8bin, query.u8bin, base.photo.npy, query.photo.npy, manifest.json "
        f"({t_end - t_start:.0f} s)")


if __name__ == "__main__":
    main()
