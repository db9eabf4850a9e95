#!/usr/bin/env python3
"""English sentences from Debian text packages, for the MiniLM text-embedding benchmark set.

Reads the packages that scripts/dataset-text.sh unpacked (one folder per package under --root,
each the `dpkg-deb -x` tree of the .deb in --debs) plus apt's English description index
(Translation-en, fetched into --apt-lists), and writes into --out:

  base.txt         exactly --base sentences, one per line
  query.txt        exactly --queries held-out sentences (never in base.txt), one per line
  provenance.json  packages and versions, per-source counts, filters, seed, sha256 of the outputs

Pipeline (documented in docs/datasets.md, "Text embeddings"):
  1. every source yields paragraphs of text, its markup stripped (HTML tags and <pre>/<script>/
     <style> blocks; reST/asciidoc inline roles; POD codes; roff requests and escapes; the
     dictionary's pronunciations, etymologies, cross-reference braces and citations);
  2. typographic characters are mapped to ASCII, whitespace collapsed;
  3. a rule-based splitter cuts a paragraph after . ! or ? (plus closing quotes/brackets) when
     whitespace and an upper-case letter, digit or opening quote follow, except after a known
     abbreviation (e.g., i.e., Mr., Fig., ...), a single-letter initial or a dotted acronym (U.S.);
  4. a sentence is kept when it has 4..64 words, is pure printable ASCII, starts with a letter,
     digit, quote or parenthesis, has >= 75 % letters among its non-space characters, holds at
     least 2 English function words (the, of, a, to, is, ...), has no URL and none of the
     code-like characters { } < > \\ | $ @ # ` and no '==', '->', '::', '()', '__'; prose
     sources (documentation, long package descriptions) must also end in . ! or ?
     (optionally followed by a closing quote or bracket); glossary sources (WordNet glosses,
     dictionary definitions, short package descriptions) need not;
  5. exact dedupe (case-sensitive, after whitespace normalization); a sentence that appears in
     several sources is counted for the first source in SOURCES order;
  6. the unique sentences are sorted, shuffled with random.Random(--seed), the first --queries
     become the queries and the next --base the base set.
"""
import argparse
import glob
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time

from text_markup import (
    BAD_CHARS,
    BAD_RE,
    BAD_SUBSTR,
    END_OK,
    FIRST_OK,
    MAX_WORDS,
    MIN_WORDS,
    RE_PARA,
    dict_paragraphs,
    html_paragraphs,
    keep,
    norm,
    pod_paragraphs,
    roff_paragraphs,
    split_sentences,
    text_paragraphs,
)

# ---------------------------------------------------------------------------------------------
# Progress

T0 = time.time()


def log(msg):
    sys.stderr.write(f"[{time.time() - T0:7.1f}s] {msg}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# Sources: (name, package(s), function yielding (paragraph, need_end))

def read_text(path):
    if path.endswith(".gz") or path.endswith(".dz"):
        with gzip.open(path, "rb") as f:
            data = f.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    return data.decode("utf-8", errors="replace")


def files(root, pkg, patterns, exclude=None):
    out = []
    for pat in patterns:
        out += glob.glob(os.path.join(root, pkg, pat), recursive=True)
    out = sorted(set(f for f in out if os.path.isfile(f)))
    if exclude:
        rx = re.compile(exclude)
        out = [f for f in out if not rx.search(f)]
    return out


def src_wordnet(a):
    for pos in ("noun", "verb", "adj", "adv"):
        path = os.path.join(a.root, "wordnet-base/usr/share/wordnet/data." + pos)
        with open(path, encoding="latin-1") as f:
            for line in f:
                if line.startswith("  ") or " | " not in line:
                    continue
                gloss = line.split(" | ", 1)[1].strip()
                for ex in re.findall(r'"([^"]+)"', gloss):
                    yield ex, False
                for d in re.sub(r'"[^"]*"', "", gloss).split(";"):
                    yield d, False


def src_dict(name, gcide):
    def gen(a):
        path = os.path.join(a.root, f"dict-{name}/usr/share/dictd/{name}.dict.dz")
        raw = read_text(path)
        for p in dict_paragraphs(raw, gcide=gcide):
            yield p, False
    return gen


def src_descriptions(a):
    paths = sorted(glob.glob(os.path.join(a.apt_lists, "*_i18n_Translation-en*")))
    if not paths:
        raise SystemExit(f"no Translation-en under {a.apt_lists}")
    for path in paths:
        raw = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", path], check=True,
                             stdout=subprocess.PIPE).stdout.decode("utf-8", errors="replace")
        for rec in raw.split("\n\n"):
            lines = rec.split("\n")
            short, long_ = None, []
            for i, ln in enumerate(lines):
                if ln.startswith("Description-en:"):
                    short = ln.split(":", 1)[1].strip()
                    long_ = lines[i + 1:]
                    break
            if short is None:
                continue
            yield short, False
            para = []
            for ln in long_:
                if not ln.startswith(" "):
                    break
                body = ln[1:]
                bullet = body.lstrip()[:2] in ("* ", "- ", "+ ", "o ")
                if body.strip() == "." or body.startswith(" ") or bullet:
                    if para:
                        yield " ".join(para), True
                    para = []
                    item = body.lstrip()
                    if item[:2] in ("* ", "- ", "+ ", "o ") and not body.startswith("   "):
                        para = [item[2:]]
                    continue
                para.append(body)
            if para:
                yield " ".join(para), True


def src_html(pkg, patterns, exclude=None):
    def gen(a):
        fl = files(a.root, pkg, patterns, exclude)
        if not fl:
            raise SystemExit(f"{pkg}: no files match {patterns}")
        step = max(1, len(fl) // 10)
        for i, path in enumerate(fl):
            if i % step == 0 and i:
                log(f"  {pkg}: {i}/{len(fl)} files")
            for p in html_paragraphs(read_text(path)):
                yield p, True
    return gen


def src_pod(a):
    for path in files(a.root, "perl-doc", ["usr/share/perl/*/pod/*.pod"]):
        for p in pod_paragraphs(read_text(path)):
            yield p, True


def src_man(a):
    fl = files(a.root, "manpages", ["usr/share/man/man*/*.gz"]) + \
        files(a.root, "manpages-dev", ["usr/share/man/man*/*.gz"])
    for path in fl:
        for p in roff_paragraphs(read_text(path)):
            yield p, True


def src_info(pkg, patterns):
    def gen(a):
        for path in files(a.root, pkg, patterns):
            for p in text_paragraphs(read_text(path)):
                yield p, True
    return gen


def src_fortunes(a):
    fl = files(a.root, "fortunes", ["usr/share/games/fortunes/*"]) + \
        files(a.root, "fortunes-min", ["usr/share/games/fortunes/*"])
    for path in sorted(f for f in fl if "." not in os.path.basename(f)):
        for cookie in read_text(path).split("\n%\n"):
            body = "\n".join(ln for ln in cookie.splitlines() if not ln.lstrip().startswith("--"))
            for p in RE_PARA.split(body):
                yield p, True


SPHINX_EX = r"/(genindex|py-modindex|search)\.html$|/(_static|_sources|_modules)/"

SOURCES = [
    # name, packages, generator
    ("wordnet", ["wordnet-base"], src_wordnet),
    ("gcide", ["dict-gcide"], src_dict("gcide", True)),
    ("foldoc", ["dict-foldoc"], src_dict("foldoc", False)),
    ("jargon", ["dict-jargon"], src_dict("jargon", False)),
    ("package-descriptions", ["Translation-en"], src_descriptions),
    ("python-docs", ["python3.11-doc"],
     src_html("python3.11-doc", ["usr/share/doc/python3.11/html/**/*.html"],
              r"/(genindex|py-modindex|search)\.html$|/(_static|_sources)/")),
    ("linux-docs", ["linux-doc-6.1"],
     src_html("linux-doc-6.1", ["usr/share/doc/linux-doc-6.1/html/**/*.html"],
              r"/(genindex|py-modindex|search)\.html$|/(_static|_sources|translations)/")),
    ("postgresql-docs", ["postgresql-doc-15"],
     src_html("postgresql-doc-15", ["usr/share/doc/postgresql-doc-15/html/*.html"])),
    ("git-docs", ["git-doc"], src_html("git-doc", ["usr/share/doc/git-doc/**/*.html"])),
    ("debian-handbook", ["debian-handbook"],
     src_html("debian-handbook", ["usr/share/doc/debian-handbook/html/en-US/*.html"])),
    ("debian-reference", ["debian-reference-en"],
     src_html("debian-reference-en", ["usr/share/debian-reference/*.en.html"])),
    ("developers-reference", ["developers-reference"],
     src_html("developers-reference", ["usr/share/developers-reference/*.html"],
              r"/(genindex|search)\.html$")),
    ("debian-policy", ["debian-policy"],
     src_html("debian-policy", ["usr/share/doc/debian-policy/**/*.html"],
              r"/(genindex|search)\.html$")),
    ("gnu-standards", ["gnu-standards"],
     src_info("gnu-standards", ["usr/share/info/*.info*"])),
    ("perl-docs", ["perl-doc"], src_pod),
    ("man-pages", ["manpages", "manpages-dev"], src_man),
    ("devils-dictionary", ["dict-devil"], src_dict("devil", False)),
    ("openjdk-docs", ["openjdk-17-doc"], src_html("openjdk-17-doc", ["usr/share/doc/**/*.html"])),
    ("qt5-docs", ["qtbase5-doc-html"],
     src_html("qtbase5-doc-html", ["usr/share/qt5/doc/**/*.html"])),
    ("rust-docs", ["rust-doc"], src_html("rust-doc", ["usr/share/doc/rust-doc/html/**/*.html"])),
    ("erlang-docs", ["erlang-doc"], src_html("erlang-doc", ["usr/share/doc/erlang-doc/**/*.html"])),
    ("scipy-docs", ["python-scipy-doc"],
     src_html("python-scipy-doc", ["usr/share/doc/python-scipy-doc/html/**/*.html"],
              r"/(genindex|py-modindex|search)\.html$|/(_static|_sources)/")),
    ("boost-docs", ["libboost1.74-doc"],
     src_html("libboost1.74-doc", ["usr/share/doc/libboost1.74-doc/**/*.html"])),
    ("django-docs", ["python-django-doc"],
     src_html("python-django-doc", ["usr/share/doc/python-django-doc/html/**/*.html"],
              r"/(genindex|py-modindex|search)\.html$|/(_static|_sources)/")),
    ("cmake-docs", ["cmake-doc"], src_html("cmake-doc", ["usr/share/doc/cmake-data/html/**/*.html"],
                                           r"/(genindex|search)\.html$|/(_static|_sources)/")),
    ("octave-docs", ["octave-doc"], src_html("octave-doc", ["usr/share/doc/octave/**/*.html"])),
    ("nodejs-docs", ["nodejs-doc"], src_html("nodejs-doc", ["usr/share/doc/nodejs/**/*.html"])),
    ("apache-docs", ["apache2-doc"],
     src_html("apache2-doc", ["usr/share/doc/apache2-doc/manual/**/*.html"],
              r"/(da|de|es|fr|ja|ko|pt-br|ru|tr|zh-cn)/")),
    ("libreoffice-help", ["libreoffice-help-en-us"],
     src_html("libreoffice-help-en-us", ["usr/share/libreoffice/help/en-US/**/*.html"])),
    ("gimp-help", ["gimp-help-en"],
     src_html("gimp-help-en", ["usr/share/gimp/2.0/help/en/**/*.html"])),
    ("pandas-docs", ["python-pandas-doc"],
     src_html("python-pandas-doc", ["usr/share/doc/python-pandas-doc/html/**/*.html"], SPHINX_EX)),
    ("sympy-docs", ["python-sympy-doc"],
     src_html("python-sympy-doc", ["usr/share/doc/python-sympy-doc/html/**/*.html"], SPHINX_EX)),
    ("astropy-docs", ["python-astropy-doc"],
     src_html("python-astropy-doc", ["usr/share/doc/python-astropy-doc/html/**/*.html"],
              SPHINX_EX)),
    ("sphinx-docs", ["sphinx-doc"],
     src_html("sphinx-doc", ["usr/share/doc/sphinx-doc/html/**/*.html"], SPHINX_EX)),
    ("statsmodels-docs", ["python-statsmodels-doc"],
     src_html("python-statsmodels-doc", ["usr/share/doc/python-statsmodels-doc/html/**/*.html"],
              SPHINX_EX)),
    ("sklearn-docs", ["python-sklearn-doc"],
     src_html("python-sklearn-doc", ["usr/share/doc/python-sklearn-doc/html/**/*.html"],
              SPHINX_EX)),
    ("wireshark-docs", ["wireshark-doc"],
     src_html("wireshark-doc", ["usr/share/doc/wireshark/**/*.html"])),
    ("zsh-docs", ["zsh-doc"], src_html("zsh-doc", ["usr/share/doc/zsh-common/html/*.html"])),
    ("bash-docs", ["bash-doc"], src_html("bash-doc", ["usr/share/doc/bash/*.html"])),
    ("maxima-docs", ["maxima-doc"],
     src_html("maxima-doc", ["usr/share/doc/maxima-doc/html/*.html"])),
    ("lilypond-docs", ["lilypond-doc-html"],
     src_html("lilypond-doc-html", ["usr/share/doc/lilypond/html/Documentation/**/*.html"])),
    ("fortunes", ["fortunes", "fortunes-min"], src_fortunes),
]


def deb_versions(debs):
    out = {}
    for path in sorted(glob.glob(os.path.join(debs, "*.deb"))):
        f = subprocess.run(["dpkg-deb", "-f", path, "Package", "Version"], check=True,
                           stdout=subprocess.PIPE, text=True).stdout
        kv = dict(ln.split(": ", 1) for ln in f.strip().splitlines())
        out[kv["Package"]] = {"version": kv["Version"], "deb": os.path.basename(path),
                              "sha256": sha256(path)}
    return out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def inspect(a):
    names = a.only.split(",")
    rng = random.Random(1)
    for name, _pkgs, gen in SOURCES:
        if name not in names:
            continue
        kept, rejected = [], []
        for para, need_end in gen(a):
            for s in split_sentences(norm(para)):
                (kept if keep(s, need_end) else rejected).append(s)
        log(f"{name}: kept {len(kept):,} (unique {len(set(kept)):,}), rejected {len(rejected):,}")
        for s in rng.sample(kept, min(a.samples, len(kept))):
            print("  KEEP", s)
        for s in rng.sample(rejected, min(a.samples // 2, len(rejected))):
            print("  DROP", s[:160])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="folder with one dpkg-deb -x tree per package")
    ap.add_argument("--debs", required=True, help="folder with the .deb files (versions)")
    ap.add_argument("--apt-lists", required=True, help="folder with *_i18n_Translation-en*")
    ap.add_argument("--out", required=True)
    ap.add_argument("--base", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--force", action="store_true", help="replace existing outputs")
    ap.add_argument("--only", help="inspection: comma-separated sources; print counts and "
                    "--samples random kept sentences per source, write nothing")
    ap.add_argument("--samples", type=int, default=8)
    a = ap.parse_args()
    if a.only:
        inspect(a)
        return

    outs = [os.path.join(a.out, n) for n in ("base.txt", "query.txt", "provenance.json")]
    existing = [p for p in outs if os.path.exists(p)]
    if existing and not a.force:
        sys.exit(f"error: {', '.join(existing)} exist (use --force to replace)")
    os.makedirs(a.out, exist_ok=True)

    seen = {}  # sentence -> None (insertion ordered)
    stats = []
    for name, pkgs, gen in SOURCES:
        t = time.time()
        paras = cands = kept = 0
        uniq_src = set()
        new = 0
        for para, need_end in gen(a):
            paras += 1
            para = norm(para)
            if not para:
                continue
            for s in split_sentences(para):
                cands += 1
                if not keep(s, need_end):
                    continue
                kept += 1
                uniq_src.add(s)
                if s not in seen:
                    seen[s] = None
                    new += 1
        st = {"source": name, "packages": pkgs, "paragraphs": paras, "candidate_sentences": cands,
              "kept_after_filter": kept, "unique_in_source": len(uniq_src),
              "new_unique_after_global_dedupe": new, "seconds": round(time.time() - t, 1)}
        stats.append(st)
        log(f"{name:22s} paragraphs {paras:9,d}  candidates {cands:9,d}  kept {kept:9,d}  "
            f"unique {len(uniq_src):9,d}  new {new:9,d}  total {len(seen):10,d}  "
            f"({st['seconds']} s)")
        del uniq_src

    total = len(seen)
    need = a.base + a.queries
    if total < need:
        sys.exit(f"error: only {total:,} unique sentences, need {need:,}")
    log(f"sorting and shuffling {total:,} unique sentences (seed {a.seed})")
    allv = sorted(seen)
    del seen
    random.Random(a.seed).shuffle(allv)
    queries, base = allv[:a.queries], allv[a.queries:a.queries + a.base]

    for path, rows in ((outs[0], base), (outs[1], queries)):
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="ascii", newline="\n") as f:
            for s in rows:
                f.write(s + "\n")
        os.replace(tmp, path)
        log(f"wrote {path}: {len(rows):,} lines, {os.path.getsize(path):,} bytes")

    trans = []
    for p in sorted(glob.glob(os.path.join(a.apt_lists, "*_i18n_Translation-en*"))):
        trans.append({"file": os.path.basename(p), "bytes": os.path.getsize(p),
                      "sha256": sha256(p)})
    inrel = {}
    for p in sorted(glob.glob(os.path.join(a.apt_lists, "*_InRelease"))):
        with open(p, errors="replace") as f:
            for ln in f:
                if ln.startswith("Date:"):
                    inrel[os.path.basename(p)] = ln.split(":", 1)[1].strip()
                    break
    lens = [len(s.split()) for s in base]
    prov = {
        "dataset": "minilm-1m sentences",
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "script": "bench/datasets/text_sentences.py",
        "debian_packages": deb_versions(a.debs),
        "apt_translation_en": trans,
        "apt_release_dates": inrel,
        "sources": stats,
        "unique_total": total,
        "filters": {
            "words": [MIN_WORDS, MAX_WORDS], "ascii_printable_only": True,
            "min_letter_fraction_of_nonspace": 0.75, "min_function_words": 2,
            "first_char": FIRST_OK.pattern, "prose_end": END_OK.pattern,
            "bad_chars": "".join(sorted(BAD_CHARS)), "bad_substrings": list(BAD_SUBSTR),
            "bad_regex": BAD_RE.pattern,
            "dedupe": "exact, case-sensitive, after whitespace collapse and "
                      "typographic-to-ASCII map",
            "splitter": "after [.!?] + closing quotes/brackets when whitespace and "
                        "[\"'(\\[]?[A-Z0-9] follow; not after known abbreviations, "
                        "single-letter initials, dotted acronyms",
        },
        "shuffle": {"method": "sorted(unique) then random.Random(seed).shuffle", "seed": a.seed,
                    "python": sys.version.split()[0]},
        "split": {"queries": f"first {a.queries} of the shuffled list",
                  "base": f"next {a.base}"},
        "base": {"rows": len(base), "sha256": sha256(outs[0]),
                 "words_mean": round(sum(lens) / len(lens), 2)},
        "query": {"rows": len(queries), "sha256": sha256(outs[1])},
    }
    with open(outs[2] + ".tmp", "w") as f:
        json.dump(prov, f, indent=1)
        f.write("\n")
    os.replace(outs[2] + ".tmp", outs[2])
    log(f"wrote {outs[2]}")


if __name__ == "__main__":
    main()
