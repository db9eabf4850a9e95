#!/usr/bin/env bash
# Stages files larger than one device call can carry (64 MiB, the repository included: ~10 MB on
# disk, which is what the device tool counts) onto the GPU machine, in pieces, over several calls:
# a warm machine keeps /tmp between calls.
#
#   scripts/dev/stage.sh pack NAME FILE...  (here) tar + compress FILE... into stage/NAME/part-NN,
#                                           pieces of at most 52 MiB, and stage/NAME/manifest.sha256
#                                           (the sha256 of every piece and of every packed file)
#   scripts/dev/stage.sh resplit NAME       (here) cuts stage/NAME's compressed stream into pieces
#                                           of PIECE_MIB again, without compressing anew (the
#                                           packed files and their sha256 stay); a machine that
#                                           received the old pieces starts over
#   scripts/dev/stage.sh receive NAME       (on the GPU machine, from the repository root, in a call
#                                           that carries stage/NAME/manifest.sha256 and some pieces)
#                                           copies the carried pieces into $STAGE_ROOT/NAME, checking
#                                           each; once all are there, unpacks them into
#                                           $DATA_ROOT/NAME and checks every file. Prints
#                                           `STAGED NAME complete` or `STAGED NAME partial k/n` and
#                                           exits 0; exits 1 on a bad checksum or a missing manifest.
#   scripts/dev/stage.sh status NAME        what is packed here, received and unpacked
#
# The files land flat in $DATA_ROOT/NAME/ under their base names (two FILEs with one base name are
# refused). stage/ is git-ignored.
#
# Environment: STAGE_ROOT (default /tmp/cagra-stage), DATA_ROOT (default /tmp/cagra-data),
# PIECE_MIB (40: a piece, the repository's tracked files, ~12 MB, and its .git, ~8 MB, must stay
# under the device call's 64 MiB; pieces of 52 MiB were refused), COMPRESS (xz, the default,
# which every Debian has; zstd when both ends have it; none), XZ_LEVEL (1: fast, most of the gain
# on vector data), FORCE=1 (pack over an existing stage/NAME made from other files).
set -euo pipefail

STAGE_ROOT=${STAGE_ROOT:-/tmp/cagra-stage}
DATA_ROOT=${DATA_ROOT:-/tmp/cagra-data}
PIECE_MIB=${PIECE_MIB:-40}
COMPRESS=${COMPRESS:-xz}
XZ_LEVEL=${XZ_LEVEL:-1}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

die() { echo "stage: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 2; }

check_name() {
  [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "NAME must be letters, digits, . _ - (got '$1')"
}

# The manifest: '# compression: C', '# pieces: N', then sha256sum lines, 'HASH  part-NN' for the
# pieces and 'HASH  files/BASENAME' for the packed files.
manifest_field() { sed -n "s/^# $1: //p" "$2"; }
piece_lines() { grep -E '^[0-9a-f]{64}  part-[0-9]+$' "$1" || true; }
file_lines() { sed -n 's#^\([0-9a-f]\{64\}\)  files/\(.*\)$#\1  \2#p' "$1"; }

decompressor() {
  case $1 in
    xz) echo "xz -d -T0" ;;
    zstd) echo "zstd -d -q" ;;
    none) echo "cat" ;;
    *) die "unknown compression '$1' in the manifest" ;;
  esac
}

# finish_pack OUT COMPRESSION FILE_LINES: OUT.tmp holds the new pieces; writes their manifest
# there, moves OUT.tmp to OUT and lists the pieces.
finish_pack() {
  local out=$1
  [[ ! -e $out.tmp/part-100 ]] || die "more than 100 pieces: raise PIECE_MIB or stage fewer files"
  {
    echo "# compression: $2"
    echo "# pieces: $(cd "$out.tmp" && ls part-* | wc -l)"
    (cd "$out.tmp" && sha256sum part-*)
    echo "$3"
  } >"$out.tmp/manifest.sha256"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  (cd "$out" && ls -l part-* manifest.sha256 | awk '{printf "  %-16s %12d bytes\n", $9, $5}')
}

cmd_pack() {
  (($# >= 2)) || usage
  local name=$1; shift
  check_name "$name"
  local -a tar_args=() names=()
  local f base
  for f in "$@"; do
    [[ -f $f ]] || die "$f: not a file"
    base=$(basename "$f")
    for n in "${names[@]}"; do [[ $n != "$base" ]] || die "two files named $base"; done
    names+=("$base")
    tar_args+=(-C "$(cd "$(dirname "$f")" && pwd)" "$base")
  done
  local out="$repo/stage/$name"
  echo "stage: checksums of ${#names[@]} file(s)"
  local sums
  sums=$(for f in "$@"; do
           printf '%s  files/%s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$(basename "$f")"
         done)
  if [[ -f $out/manifest.sha256 ]]; then
    if [[ $(grep '  files/' "$out/manifest.sha256") == "$sums" ]] &&
       (cd "$out" && piece_lines manifest.sha256 | sha256sum -c --quiet --status); then
      echo "stage: $out is already packed from these files: nothing to do"
      cmd_status "$name"
      return 0
    fi
    [[ ${FORCE:-} == 1 ]] ||
      die "$out holds a pack of other files (or a damaged one); remove it or set FORCE=1"
  fi
  local compressor
  case $COMPRESS in
    xz) command -v xz >/dev/null || die "xz not found (apt-get install xz-utils)"
        compressor=(xz -T0 "-$XZ_LEVEL" -c) ;;
    zstd) command -v zstd >/dev/null || die "zstd not found (apt-get install zstd)"
          compressor=(zstd -T0 -q -c) ;;
    none) compressor=(cat) ;;
    *) die "COMPRESS must be xz, zstd or none" ;;
  esac
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  local total
  total=$(du -cb "$@" | tail -1 | cut -f1)
  echo "stage: packing $((total / 1048576)) MiB with $COMPRESS into ${PIECE_MIB} MiB pieces"
  local progress=(cat)
  if command -v pv >/dev/null; then progress=(pv -f -s "$total")
  else progress=(dd bs=4M iflag=fullblock status=progress); fi
  tar -cf - "${tar_args[@]}" | "${progress[@]}" | "${compressor[@]}" |
    split -b "${PIECE_MIB}M" -d -a 2 - "$out.tmp/part-"
  echo "stage: packed $name:"
  finish_pack "$out" "$COMPRESS" "$sums"
  echo "stage: carry stage/$name/manifest.sha256 plus one piece per device call, running"
  echo "  bash scripts/dev/stage.sh receive $name"
}

cmd_resplit() {
  (($# == 1)) || usage
  local name=$1
  check_name "$name"
  local out="$repo/stage/$name"
  [[ -f $out/manifest.sha256 ]] || die "no pack $out (run pack first)"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  (cd "$out" && piece_lines manifest.sha256 | sha256sum -c --quiet) ||
    die "the pieces in $out do not match their manifest"
  local -a parts
  mapfile -t parts < <(piece_lines "$out/manifest.sha256" | awk '{print $2}')
  (cd "$out" && cat "${parts[@]}") | split -b "${PIECE_MIB}M" -d -a 2 - "$out.tmp/part-"
  echo "stage: $name cut into ${PIECE_MIB} MiB pieces:"
  finish_pack "$out" "$(manifest_field compression "$out/manifest.sha256")" \
    "$(grep -E '^[0-9a-f]{64}  files/' "$out/manifest.sha256")"
}

cmd_receive() {
  (($# == 1)) || usage
  local name=$1
  check_name "$name"
  local src="$repo/stage/$name" dst="$STAGE_ROOT/$name" data="$DATA_ROOT/$name"
  mkdir -p "$dst"
  if [[ -f $src/manifest.sha256 ]]; then
    if [[ -f $dst/manifest.sha256 ]] && ! cmp -s "$src/manifest.sha256" "$dst/manifest.sha256"; then
      # A new pack of the same name: start over.
      echo "stage: the carried manifest differs from the received one: dropping the old pieces"
      rm -rf "$dst" "$data"
      mkdir -p "$dst"
    fi
    cp "$src/manifest.sha256" "$dst/manifest.sha256"
  fi
  [[ -f $dst/manifest.sha256 ]] ||
    die "no manifest: carry stage/$name/manifest.sha256 along with the pieces"
  local m="$dst/manifest.sha256"
  local p hash want
  local bad=0
  for p in "$src"/part-*; do
    [[ -e $p ]] || continue
    p=$(basename "$p")
    want=$(piece_lines "$m" | awk -v p="$p" '$2 == p {print $1}')
    [[ -n $want ]] || { echo "stage: $p is not in the manifest: ignored"; continue; }
    hash=$(sha256sum "$src/$p" | cut -d' ' -f1)
    if [[ $hash != "$want" ]]; then
      echo "stage: $p: BAD checksum (carried copy damaged): not kept"
      bad=1
      continue
    fi
    if [[ -f $dst/$p ]] && [[ $(sha256sum "$dst/$p" | cut -d' ' -f1) == "$want" ]]; then
      echo "stage: $p: already received"
    else
      cp "$src/$p" "$dst/$p.tmp" && mv "$dst/$p.tmp" "$dst/$p"
      echo "stage: $p: received"
    fi
  done
  ((bad == 0)) || exit 1
  report_and_unpack "$name"
}

# Lists the present and missing pieces in $STAGE_ROOT/NAME; unpacks when all are present.
report_and_unpack() {
  local name=$1 dst="$STAGE_ROOT/$1" data="$DATA_ROOT/$1"
  local m="$dst/manifest.sha256"
  local -a present=() missing=()
  local p
  for p in $(piece_lines "$m" | awk '{print $2}'); do
    if [[ -f $dst/$p ]]; then present+=("$p"); else missing+=("$p"); fi
  done
  local n=$((${#present[@]} + ${#missing[@]}))
  echo "stage: present (${#present[@]}): ${present[*]:-none}"
  echo "stage: missing (${#missing[@]}): ${missing[*]:-none}"
  if ((${#missing[@]} > 0)); then
    echo "STAGED $name partial ${#present[@]}/$n"
    return 0
  fi
  if [[ -f $data/.staged ]] && cmp -s "$m" "$data/.staged"; then
    echo "stage: already unpacked in $data"
  else
    echo "stage: verifying the $n pieces"
    (cd "$dst" && piece_lines manifest.sha256 | sha256sum -c --quiet) ||
      die "a piece in $dst is damaged: delete it and carry it again"
    echo "stage: unpacking into $data"
    rm -rf "$data" "$data.tmp"
    mkdir -p "$data.tmp"
    local dec
    dec=$(decompressor "$(manifest_field compression "$m")")
    local -a pieces=()
    for p in "${present[@]}"; do pieces+=("$dst/$p"); done
    cat "${pieces[@]}" | $dec | tar -xf - -C "$data.tmp"
    echo "stage: verifying the unpacked files"
    (cd "$data.tmp" && file_lines "$m" | sha256sum -c) || die "unpacked files do not match"
    cp "$m" "$data.tmp/.staged"
    mv "$data.tmp" "$data"
  fi
  ls -l "$data" | awk 'NR > 1 {printf "  %s/%-20s %14d bytes\n", d, $9, $5}' d="$data"
  echo "STAGED $name complete"
}

cmd_status() {
  (($# == 1)) || usage
  local name=$1
  check_name "$name"
  local src="$repo/stage/$name"
  if [[ -f $src/manifest.sha256 ]]; then
    echo "stage: packed here: $src ($(manifest_field pieces "$src/manifest.sha256") pieces," \
      "$(manifest_field compression "$src/manifest.sha256"))"
    file_lines "$src/manifest.sha256" | awk '{print "  file " $2}'
    local carried
    carried=$(cd "$src" && ls part-* 2>/dev/null | tr '\n' ' ' || true)
    echo "  pieces in stage/$name: ${carried:-none}"
  else
    echo "stage: nothing packed in $src"
  fi
  if [[ -f $STAGE_ROOT/$name/manifest.sha256 ]]; then
    echo "stage: received in $STAGE_ROOT/$name:"
    local m="$STAGE_ROOT/$name/manifest.sha256"
    local -a present=() missing=()
    local p
    for p in $(piece_lines "$m" | awk '{print $2}'); do
      if [[ -f $STAGE_ROOT/$name/$p ]]; then present+=("$p"); else missing+=("$p"); fi
    done
    echo "  present (${#present[@]}): ${present[*]:-none}"
    echo "  missing (${#missing[@]}): ${missing[*]:-none}"
    if [[ -f $DATA_ROOT/$name/.staged ]] && cmp -s "$m" "$DATA_ROOT/$name/.staged"; then
      echo "STAGED $name complete"
    else
      echo "STAGED $name partial ${#present[@]}/$((${#present[@]} + ${#missing[@]}))"
    fi
  else
    echo "stage: nothing received in $STAGE_ROOT/$name"
  fi
}

(($# >= 1)) || usage
mode=$1; shift
case $mode in
  pack) cmd_pack "$@" ;;
  resplit) cmd_resplit "$@" ;;
  receive) cmd_receive "$@" ;;
  status) cmd_status "$@" ;;
  -h|--help|help) usage ;;
  *) die "unknown mode '$mode' (pack, resplit, receive or status)" ;;
esac
