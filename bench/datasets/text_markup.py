"""Markup to sentences, for bench/datasets/text_sentences.py (the text-embedding sets).

What a paragraph goes through there, steps 1-4 of its pipeline: the markup of each source kind
stripped into paragraphs (HTML, plain text, POD, roff, dictionary entries), typographic
characters mapped to ASCII, a rule-based sentence splitter, and the filter that keeps
English-looking sentences. Pure functions of their input: the sentence sets' sha256 (pinned in
their provenance.json) depend on every rule here, so a change here is a new data set.
"""
import html
import re

# ---------------------------------------------------------------------------------------------
# Normalization, splitting, filtering

TYPO = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
    "\u2013": "-", "\u2014": "-", "\u2012": "-", "\u2010": "-", "\u2011": "-", "\u2212": "-",
    "\u00a0": " ", "\u2009": " ", "\u200a": " ", "\u202f": " ", "\u2002": " ", "\u2003": " ",
    "\u00ad": None, "\u200b": None, "\u00b6": None, "\ufeff": None,
    "\u2026": "...",
})

ABBREV = {
    "e.g.", "i.e.", "mr.", "mrs.", "ms.", "dr.", "st.", "vs.", "no.", "nos.", "fig.", "figs.",
    "cf.", "approx.", "prof.", "jr.", "sr.", "inc.", "ltd.", "co.", "vol.", "p.", "pp.", "ch.",
    "sec.", "eq.", "ed.", "eds.", "viz.", "al.", "ref.", "refs.", "resp.", "lit.", "gen.",
    "gov.", "rev.", "capt.", "col.", "lt.", "sgt.", "mt.", "ft.", "jan.", "feb.", "mar.",
    "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "oct.", "nov.", "dec.", "esp.", "corp.",
    "dept.", "univ.", "ave.", "blvd.", "min.", "max.", "incl.", "ca.", "c.", "v.", "vs",
}
SPLIT_AT = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
ACRONYM = re.compile(r"^\(?(?:[A-Za-z]\.){2,}$")
INITIAL = re.compile(r"^\(?[A-Z]\.$")


def split_sentences(para):
    out, start = [], 0
    for m in SPLIT_AT.finditer(para):
        head = para[start:m.start() + 1]
        last = head.rsplit(None, 1)[-1] if head.strip() else ""
        bare = last.lstrip("(\"'[").lower()
        if bare in ABBREV or INITIAL.match(last) or ACRONYM.match(last):
            continue
        out.append(para[start:m.end()].strip())
        start = m.end()
    tail = para[start:].strip()
    if tail:
        out.append(tail)
    return out


FUNCTION_WORDS = set("""
the a an of to in is are was were be been being and or but if for that this these those with
as at by from on not no it its he she they we you i his her their our your them him us can may
must should would will shall could which who whom whose what when where why how than then there
into onto upon about over under between all any each every some such one only also so do does
did has have had more most other very own same up out""".split())
BAD_SUBSTR = ("://", "www.", "==", "->", "::", "()", "__", "...")
BAD_RE = re.compile(r"--\S|\S--|\w\.\w+\(|\w\(\w*\)")  # options, x.f(, f(x)
BAD_CHARS = set("{}<>\\|$@#`~^*=_[]")
END_OK = re.compile(r"[.!?][\"')\]]?$")
FIRST_OK = re.compile(r"^[A-Za-z0-9\"'(]")
MIN_WORDS, MAX_WORDS = 4, 64


def keep(s, need_end):
    words = s.split()
    n = len(words)
    if n < MIN_WORDS or n > MAX_WORDS:
        return False
    if not s.isascii() or not s.isprintable():
        return False
    if not FIRST_OK.match(s):
        return False
    if need_end and not END_OK.search(s):
        return False
    if any(c in BAD_CHARS for c in s) or any(b in s for b in BAD_SUBSTR) or BAD_RE.search(s):
        return False
    nonspace = len(s) - s.count(" ")
    letters = sum(c.isalpha() for c in s)
    if letters < 0.75 * nonspace:
        return False
    fw = 0
    for w in words:
        if w.strip(".,;:!?\"'()").lower() in FUNCTION_WORDS:
            fw += 1
            if fw >= 2:
                return True
    return False


def norm(text):
    return " ".join(text.translate(TYPO).split())


# ---------------------------------------------------------------------------------------------
# Markup cleaners: each returns a list of paragraphs (plain text)

RE_HTML_DROP = re.compile(
    r"<(script|style|pre|head|nav|textarea|svg|math|code-block)\b.*?</\1\s*>", re.S | re.I)
RE_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
RE_HTML_BLOCK = re.compile(
    r"</?(p|div|li|ul|ol|dl|dt|dd|td|th|tr|table|thead|tbody|h[1-6]|br|hr|section|article|"
    r"blockquote|title|caption|figcaption|figure|aside|header|footer|form|body|html|span "
    r"class=\"?(?:linenos|headerlink))\b[^>]*>", re.I)
RE_TAG = re.compile(r"<[^>]*>")
RE_PARA = re.compile(r"\n\s*\n")


def html_paragraphs(raw):
    raw = RE_HTML_COMMENT.sub(" ", raw)
    raw = RE_HTML_DROP.sub("\n\n", raw)
    raw = RE_HTML_BLOCK.sub("\n\n", raw)
    raw = RE_TAG.sub("", raw)
    raw = html.unescape(raw)
    return RE_PARA.split(raw)


def text_paragraphs(raw, drop_indented=True):
    """Plain text (info, fortunes, descriptions): blank-line paragraphs; indented ones dropped."""
    out = []
    for p in RE_PARA.split(raw):
        if not p.strip():
            continue
        if drop_indented and p.lstrip("\n")[:1] in (" ", "\t") and p.lstrip("\n")[:4] == "    ":
            continue
        out.append(p)
    return out


RE_POD_CODE = re.compile(r"[A-Z]<<+\s+(.*?)\s+>>+|[A-Z]<([^<>]*)>")


def pod_paragraphs(raw):
    out = []
    for p in RE_PARA.split(raw):
        s = p.lstrip("\n")
        if not s or s[0] in " \t" or s.startswith("="):
            continue
        for _ in range(3):  # nested codes
            s = RE_POD_CODE.sub(lambda m: (m.group(1) or m.group(2) or "").split("|")[0], s)
        out.append(s)
    return out


RE_ROFF_ESC = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)|\\s[-+]?\d|\\[&|^%]|\\\*(?:\(..|\[[^\]]*\]|.)")
ROFF_CHARS = {"\\-": "-", "\\(em": "-", "\\(en": "-", "\\(aq": "'", "\\(dq": '"', "\\(lq": '"',
              "\\(rq": '"', "\\(oq": "'", "\\(cq": "'", "\\e": "\\", "\\ ": " ", "\\(bu": " "}
ROFF_TEXT_MACROS = {"B", "I", "BR", "RB", "IR", "RI", "BI", "IB", "SM", "SB"}


def roff_paragraphs(raw):
    out, cur, nofill = [], [], False
    for line in raw.splitlines():
        if line.startswith((".", "'")):
            parts = line[1:].split(None, 1)
            req = parts[0] if parts else ""
            if req in ("nf", "EX"):
                nofill = True
            elif req in ("fi", "EE"):
                nofill = False
            if req in ROFF_TEXT_MACROS and len(parts) > 1 and not nofill:
                cur.append(parts[1].replace('"', ""))
            elif req not in ROFF_TEXT_MACROS:
                if cur:
                    out.append(" ".join(cur))
                cur = []
            continue
        if nofill:
            continue
        if not line.strip():
            if cur:
                out.append(" ".join(cur))
            cur = []
            continue
        cur.append(line)
    if cur:
        out.append(" ".join(cur))
    res = []
    for p in out:
        for k, v in ROFF_CHARS.items():
            p = p.replace(k, v)
        p = RE_ROFF_ESC.sub("", p)
        p = re.sub(r"\\\(..", "", p)
        res.append(p)
    return res


# Dictionaries (dictd .dict.dz = gzip-compatible plain text)
RE_PRON = re.compile(r"^.*?\\[^\\\n]*\\,?\s*(?:(?:[a-z]{1,5}\.\s*)+)?", re.S)
RE_BRACKET = re.compile(r"\[[^\[\]]*\]")
RE_BRACE = re.compile(r"[{}]")
RE_CITE = re.compile(r"\s--\s?[A-Z].*$", re.S)
RE_NUM = re.compile(r"^\s*(?:\d+\.|\([a-z]\))\s+")


def dict_paragraphs(raw, gcide=False):
    out = []
    for p in RE_PARA.split(raw):
        if not p.strip():
            continue
        s = p
        if gcide and "\\" in s:
            s = RE_PRON.sub("", s, count=1)
        for _ in range(2):
            s = RE_BRACKET.sub(" ", s)
        s = RE_BRACE.sub("", s)
        s = RE_CITE.sub("", " " + s)
        s = RE_NUM.sub("", s)
        s = s.strip()
        if s.startswith(("Syn.", "Note:")):
            if s.startswith("Syn."):
                continue
            s = s[5:]
        out.append(s)
    return out
