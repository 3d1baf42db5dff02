"""Explaining an item from its own text: sections of a PR description, identifiers, sentence-safe shortening.

Everything here is linear in the body: the body is split into lines once, each line is matched by a few
anchored patterns, and sentences are cut with one regular-expression pass. What counts as a motivation,
mechanism or test section, and the file roles, live in `defaults/rules/explain.toml`.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase, translate
from functools import lru_cache
from typing import Any

from ..config import rule_data, rules_cache
from ..models import FileChange

# --- the rules file --------------------------------------------------------------------------------


@rules_cache
def explain_rules() -> dict[str, Any]:
    """The explain rules (sections, limits, identifier stop words, file roles, link hygiene): the active rules
    directory's tables over the packaged ones."""
    return rule_data("explain")


# --- cleaning --------------------------------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_TAG = re.compile(r"</?[a-zA-Z][^<>\n]{0,300}/?>")
_MD_LINK = re.compile(r"!?\[([^\]\n]{0,200})\]\([^)\s]{0,500}\)")
_BARE_URL = re.compile(r"https?://\S+")
_EMPH = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_SPACE = re.compile(r"[ \t]+")
_STRUCK = re.compile(r"~~[^~\n]{0,2000}?~~")


def clean_inline(text: str) -> str:
    """Author text as plain text: entities decoded, tags, image/link markup and bold markers removed."""
    text = html.unescape(_TAG.sub("", text))
    text = _STRUCK.sub("", text).replace("~~", "")  # struck-out text is what the author took back
    text = _MD_LINK.sub(lambda m: m[1], text)
    text = _BARE_URL.sub("", text)
    return _SPACE.sub(" ", _EMPH.sub(lambda m: m[2], text)).strip()


# --- sentences -------------------------------------------------------------------------------------

# A sentence ends at . ! ? (followed by a space and not inside a number or an abbreviation) or at a CJK stop.
_SENT = re.compile(r"(?<=[。！？；])|(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\betc\.)\s+(?=[A-Z0-9`(\"'\u4e00-\u9fff])")
_CLAUSE = re.compile(r"(?<=[,;:，；：])\s*|\s+(?=—)|\s+-\s+|\s+(?=\()")


def sentences(text: str) -> list[str]:
    """The sentences of a paragraph, in order."""
    return [s.strip() for s in _SENT.split(text) if s and s.strip()]


def clip(text: str, limit: int, hard: int | None = None) -> str:
    """`text` made to about `limit` characters of whole sentences or clauses, never cut inside one and never
    ended with "…": whole sentences are kept while they fit; when even the first does not, its first whole
    clauses (comma, semicolon, colon, dash, parenthesis) that fit, else the whole first sentence up to `hard`
    (2 × limit), else its clauses up to `hard`; a text with no such boundary at all gives "" (a quote is
    better left out than cut)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    kept: list[str] = []
    size = 0
    parts = sentences(text)
    for sentence in parts:
        if size + len(sentence) + (1 if kept else 0) > limit:
            break
        kept.append(sentence)
        size += len(sentence) + (1 if kept else 0)
    if kept:
        return " ".join(kept)
    first = parts[0] if parts else text
    hard = hard or 2 * limit
    cut = _clause_cut(first, limit)
    if cut:
        return cut
    if len(first) <= hard:
        return first
    return _clause_cut(first, hard)


def whole(text: str) -> str:
    """A text someone else shortened with "…", taken back to its last sentence or clause boundary, without
    the "…": what is left ends with a whole sentence or clause, or is "" when there is none."""
    text = text.strip()
    if not text.endswith(("…", "...")):
        return text
    body = text.rstrip(".…").rstrip()
    done = sentences(body)
    if len(done) > 1:
        return " ".join(done[:-1])
    return _clause_cut(body, len(body), min_head=8)


def _clause_cut(sentence: str, limit: int, min_head: int | None = None) -> str:
    best = ""
    for m in _CLAUSE.finditer(sentence):
        if m.start() > limit:
            break
        head = sentence[: m.start()].rstrip(" ,;:，；：-—(")
        balanced = head.count("(") <= head.count(")") and head.count("`") % 2 == 0 and head.count("“") <= head.count("”")
        if len(head) >= (limit // 3 if min_head is None else min_head) and balanced and not head.endswith(("e.g.", "i.e.", "etc.", "vs.")):
            best = head
    return best


# --- sections --------------------------------------------------------------------------------------

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\s*(\*\*|__)([^*_\n]{2,80})\1\s*:?\s*$")
_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z /&'()-]{1,60}|[\u4e00-\u9fff][^\n:：]{0,20})\s*[:：？?]\s*$")
_INLINE_LABEL = re.compile(r"^\s*(Symptom|Root cause|Cause|Fix|Solution|Motivation|Background|Problem|Changes?)\s*:\s+(.+)$", re.I)
_BULLET = re.compile(r"^(\s*)(?:[-*+•]|\d{1,2}[.)])\s+(.*)$")
_BOX = re.compile(r"^\s*[-*]\s*\[[ xX]\]")
_TRAILER = re.compile(r"^\s*(signed-off-by|co-authored-by|cc)\s*:|^\s*-?\s*(vllm|vllm-ascend|torch|cann) version\b", re.I)
_TABLE = re.compile(r"^\s*\|.*\||^\s*[-:| ]+$|.*\s\|\s.*\s\|\s")


@dataclass
class Section:
    """A part of a PR description: its heading (lowercase), role, paragraphs and bullets in order."""

    heading: str
    role: str
    blocks: list[tuple[str, str]] = field(default_factory=list)  # ("p" | "b" | "b1" nested bullet, text)

    def text(self) -> str:
        return " ".join(t for _, t in self.blocks)


def _role(heading: str) -> str:
    rules = explain_rules()["sections"]
    low = heading.lower()
    for role in ("skip", "tests", "mechanism", "motivation"):  # "what it does / why" is a mechanism
        if any(word in low for word in rules[role]):
            return role
    return "other"


def sections(body: str) -> list[Section]:
    """The description split at its headings, template hints, check boxes, code and tables dropped.

    Hard-wrapped lines are joined into paragraphs; a bullet keeps its continuation lines. The part
    before any heading is a section with the heading "" (role "lead").
    """
    text = _FENCE.sub("", _COMMENT.sub("", body.replace("\r\n", "\n")))
    out: list[Section] = [Section("", "lead")]
    para: list[str] = []
    bullet: list[str] | None = None
    blank, quoted = True, False

    depth = 0

    def flush() -> None:
        nonlocal para, bullet
        if bullet:
            out[-1].blocks.append(("b1" if depth else "b", clean_inline(" ".join(bullet))))
        if para:
            out[-1].blocks.append(("p", clean_inline(" ".join(para))))
        para, bullet = [], None

    for line in text.split("\n"):
        stripped = line.strip()
        after_blank, blank = blank, not stripped
        if quoted and stripped and not _HEADING.match(line):
            continue  # a hint quoted with ">" goes on until a blank line
        quoted = False
        heading = _HEADING.match(line) or _BOLD_HEADING.match(line)
        label = (_LABEL.match(line) if not heading and after_blank and len(stripped.split()) <= 6 else None)
        if heading or label:
            flush()
            title = clean_inline(heading[2] if heading else label[1])
            out.append(Section(title.lower(), _role(title)))
            continue
        inline_label = _INLINE_LABEL.match(line)
        if inline_label:
            flush()
            out.append(Section(inline_label[1].lower(), _role(inline_label[1])))
            para = [inline_label[2]]
            continue
        if not stripped:
            flush()
            continue
        if stripped.startswith(">"):
            flush()
            quoted = True
            continue
        if _BOX.match(line) or _TRAILER.match(line) or _TABLE.match(line):
            flush()
            continue
        b = _BULLET.match(line)
        if b:
            if para:
                out[-1].blocks.append(("p", clean_inline(" ".join(para))))
                para = []
            if bullet:
                out[-1].blocks.append(("b1" if depth else "b", clean_inline(" ".join(bullet))))
            bullet, depth = [b[2]], 1 if len(b[1].expandtabs(4)) >= 2 else 0
        elif bullet is not None:
            bullet.append(stripped)
        else:
            para.append(stripped)
    flush()
    for s in out:
        s.blocks = [(k, t) for k, t in s.blocks if _meaningful(t)]
    return [s for s in out if s.blocks]


def _meaningful(text: str) -> bool:
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 12 or (letters >= 4 and any("\u4e00" <= ch <= "\u9fff" for ch in text))


@dataclass
class Explained:
    """What an item's own description says, by part."""

    motivation: list[tuple[str, str]]
    mechanism: list[tuple[str, str]]
    tests: list[tuple[str, str]]


@lru_cache(maxsize=512)
def explain_body(body: str) -> Explained:
    """Motivation, mechanism and test blocks of a description; the lead paragraph stands in for a missing part.

    Cached by the body (one item is explained for its conclusion, deep dive, checklist and porting view);
    callers must not change the lists they get."""
    parts = [s for s in sections(body) if s.role != "skip"]
    motivation = [b for s in parts if s.role == "motivation" for b in s.blocks]
    mechanism = [b for s in parts if s.role == "mechanism" for b in s.blocks]
    tests = [b for s in parts if s.role == "tests" for b in s.blocks]
    lead = [b for s in parts if s.role == "lead" for b in s.blocks]
    other = [b for s in parts if s.role == "other" for b in s.blocks]
    if not mechanism:
        mechanism, lead = (lead, []) if lead else (other, []) if other else (motivation, [])
    if not motivation and lead:
        motivation = lead[:1]
    return Explained(motivation, mechanism, tests)


def described(body: str) -> str:
    """The description without its template parts (checklists, usage templates, hints): what rules may read."""
    e = explain_body(body)
    return " ".join(t for _, t in e.motivation + e.mechanism + e.tests)


_DOING_START = re.compile(r"^(this|we|it now|now|the (pr|patch|fix|change))\b", re.I)
_DOING = re.compile(r"\b(adds?|introduces?|replaces?|removes?|moves?|fix(es)?|implements?|supports?|enables?|disables?|"
                    r"uses|computes?|precomputes?|caches?|fuses?|skips?|avoids?|reuses?|switch(es)?|refactors?|"
                    r"optimi[sz]es?|collects?|writes?|batches|merges?|splits?|turns?|makes?|lets?|keeps?|"
                    r"reduces?|overlaps?|paralleli[sz]es?|vectori[sz]es?|builds?|wraps?|drops?|handles?|"
                    r"updates?|changes?|routes?|defers?|prefetch(es)?|pads?|shares?)\b", re.I)


def doing_sentence(body: str, title: str = "") -> str:
    """The sentence of the mechanism that says what the change does ("This PR adds …"), else "".

    A sentence that opens with "This PR …" / "We …" wins over one that only has such a verb early on."""
    e = explain_body(body)
    candidates = [s for _, block in e.mechanism for s in sentences(block)
                  if len(s) >= 30 and not DEBRIS.search(s)]
    # a lead-in ("This PR introduces the following:") says less than a sentence that ends
    candidates.sort(key=lambda s: s.rstrip().endswith((":", "：")))
    opening = next((s for s in candidates if _DOING_START.search(s) and _DOING.search(s[:60])), "")
    return opening or next((s for s in candidates if _DOING.search(s[:80])), "")


# what is left of a sentence whose links were removed: "refer to: and , ," is no sentence to quote
DEBRIS = re.compile(r"\s[,;]\s*[,;]|\b(and|or|see|refer to|in)\s*[,;.:]|:\s*[,;]|\(\s*\)")


def mechanism(body: str, sentences_: int = 3, limit: int = 420) -> str:
    """The mechanism of a PR in a few whole sentences of the author's own description ("" if none)."""
    blocks = explain_body(body).mechanism
    if not blocks:
        return ""
    paragraph = " ".join(t for _, t in blocks)
    return clip(" ".join(sentences(paragraph)[:sentences_]), limit)


# --- identifiers -----------------------------------------------------------------------------------

_IDENT = re.compile(
    r"`([^`\n]{1,200})`"  # a code span (long ones are dropped below)
    r"|\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,}(?:=[\w.-]+)?)"  # an environment variable, maybe with its value
    r"|(--[a-z][\w-]{2,40}(?:=[\w.-]+)?)"  # a command-line flag
    r"|\b([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+\(?\)?)"  # a dotted name: module.attr, Class.method
    r"|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+(?:=[\w.]+)?)\b"  # snake_case, maybe key=value
    r"|\b([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[A-Z]{2,}[a-z][A-Za-z0-9]+)\b"  # CamelCase, TCPStore
)
_VERSIONISH = re.compile(r"^[\d.]+$|^v\d")


_SENTENCE_BREAK = re.compile(r"[.;:,] [A-Z][a-z]")


def identifiers(text: str, limit: int | None = None) -> list[str]:
    """The code identifiers of a text in first-seen order: code spans, env vars, flags, dotted and snake/Camel names."""
    stop = set(explain_rules()["identifiers"]["stop"])
    seen: dict[str, None] = {}
    for m in _IDENT.finditer(text):
        word = next(g for g in m.groups() if g).strip().rstrip(".,:;")
        low = word.lower()
        if m[1] and (len(word) > 60 or word.startswith((".", "/")) or _SENTENCE_BREAK.search(word)
                     or not any(ch.isalnum() for ch in word)):  # "`!!!!`": a marker, not a name
            continue
        if word.count("(") != word.count(")"):  # "torch.ones(", "`torch.bool)`": a piece of a line of code
            continue  # a path, or prose between two spans whose pairing a cut sentence broke ("x` for y. However, `")
        if (low in stop or len(word) < 3 or _VERSIONISH.match(word) or len(word.split()) > 3
                or low.startswith(("http", "www."))):
            continue
        if m[6] and len(word) < 6:  # MoE, RoPE, W8A8: names of things, not identifiers of this change
            continue
        if m[4] and word.count(".") == 1 and len(word.split(".")[1]) <= 2:  # "e.g", "v0.19"
            continue
        seen.setdefault(word, None)
        if limit and len(seen) >= limit:
            break
    return list(seen)


# --- files by role ---------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _role_patterns() -> list[tuple[str, re.Pattern[str], re.Pattern[str] | None]]:
    """Per role: one regex over the whole path (patterns with a slash) and one over a path segment or the
    file name (patterns without), compiled once."""
    out = []
    for role in explain_rules()["roles"]:
        whole = [translate(p) for p in role["paths"] if "/" in p]
        part = [translate(p) for p in role["paths"] if "/" not in p]
        out.append((role["id"], re.compile("|".join(whole)) if whole else re.compile(r"(?!)"),
                    re.compile("|".join(part)) if part else None))
    return out


@lru_cache(maxsize=65536)
def file_role(path: str) -> str:
    """The role id of a changed file (tests, docs, kernel, config, scheduler, model, other)."""
    segments = path.split("/")
    for role, whole, part in _role_patterns():
        if whole.match(path) or (part is not None and any(part.match(seg) for seg in segments)):
            return role
    return "other"


def files_by_role(files: list[FileChange], lang: str, per_role: int = 4) -> list[dict[str, Any]]:
    """Changed files grouped by role, in the rules' role order, each with its most-changed paths."""
    groups: dict[str, list[FileChange]] = {}
    for f in files:
        groups.setdefault(file_role(f.path), []).append(f)
    out = []
    for role in explain_rules()["roles"]:
        fs = groups.get(role["id"])
        if not fs:
            continue
        fs = sorted(fs, key=lambda f: (-((f.additions or 0) + (f.deletions or 0)), f.path))
        out.append({"role": role["id"], "name": role["name"].get(lang) or role["name"]["en"], "n": len(fs),
                    "paths": [f.path for f in fs[:per_role]], "more": max(len(fs) - per_role, 0)})
    return out


def code_module(files: list[FileChange]) -> str:
    """Where the change lives: the deepest directory shared by most of its code (not test/doc) lines."""
    code = ([f for f in files if file_role(f.path) not in ("tests", "docs", "config")]
            or [f for f in files if file_role(f.path) not in ("tests", "docs")] or files)
    if not code:
        return ""
    weights: dict[str, int] = {}
    for f in code:
        parts = f.path.split("/")[:-1]
        for depth in range(1, min(len(parts), 4) + 1):
            key = "/".join(parts[:depth]) + "/"
            weights[key] = weights.get(key, 0) + (f.additions or 0) + (f.deletions or 0) + 1
    if not weights:
        return max(code, key=lambda f: (f.additions or 0) + (f.deletions or 0)).path
    total = sum((f.additions or 0) + (f.deletions or 0) + 1 for f in code)
    # the deepest directory that still holds at least 60% of the changed code lines
    best = max((k for k, w in weights.items() if w >= 0.6 * total), key=lambda k: (k.count("/"), weights[k]),
               default="")
    if best:
        return best
    top = max(code, key=lambda f: ((f.additions or 0) + (f.deletions or 0), f.path))
    return top.path


# --- links worth clicking --------------------------------------------------------------------------

def clickable(url: str) -> bool:
    """False for local or placeholder hosts and for URLs that carry a token or an invite."""
    from urllib.parse import parse_qsl, urlsplit

    rules = explain_rules()["links"]
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        return False
    if any(fnmatchcase(host, pattern) for pattern in rules["bad_hosts"]):
        return False
    if any(key.lower() in rules["token_params"] for key, _ in parse_qsl(parts.query, keep_blank_values=True)):
        return False
    return not any(fnmatchcase(parts.path.lower(), pattern) for pattern in rules["token_paths"])
