"""Performance claims an author reported in a PR description: prose pairs, ratios, changes, tables.

Decisions (documented here because renderers and tests rely on them):

- `change_pct` is (after - before) / before * 100 rounded to 2 decimals whenever both values are
  known (the computed figure wins over a stated one, so signs are consistent); for a claim with
  only a percentage it is the stated figure, signed by its verb ("reduced by 20%" -> -20).
- `ratio` is a stated factor ("2.45x", a speed-up column) if there is one, else derived as a
  speed-up: before/after for lower-is-better metrics (time, memory, latency), after/before for
  higher-is-better ones (throughput, TPS); None when the direction is unknown (e.g. "%" figures).
- Accuracy/quality figures (gsm8k, ceval, loss, score ...) are not performance claims and are
  skipped; so are configuration changes (`--max-model-len 4096 -> 8192`, timeouts, versions).
- A table with one row per code state gives one claim per metric column: the first baseline-like
  row against the last current/after-like row; intermediate rows are not paired.
- "Delta" restatements (`TTFT: -70.06 ms`) are not claims; a stated percentage whose metric already
  has a before/after claim in the same text is not counted again.
"""

from __future__ import annotations

import heapq
import re
import tomllib
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from ..models import PerfClaim, format_number  # format_number: re-exported, where it was first

__all__ = ["ClaimRules", "claim_meaning", "compile_claim_rules", "default_claim_rules", "extract_claims",
           "format_number"]

_NUM_BODY = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_NUM_BEFORE, _NUM_AFTER = r"(?<![\w.=/:#@$\-–+])", r"(?![\w.,]*\d)"
_ARROW = r"\s*(?:->|-->|→|⟶|=>|➡️?|~>)\s*"
_MARK = r"[`*_~]*"
_HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_MARKUP = re.compile(r"[`*~]+|(?<!\w)_+|_+(?!\w)")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)+\|?\s*$")
_INLINE_SEPARATOR = re.compile(r"\|\s*:?-{3,}:?\s*\|\s*:?-{3,}:?\s*\|")
_ROW_SPLIT = re.compile(r"\|[ \t]+(?=\|)")
_DIGIT = re.compile(r"\d")
# Cheap anchors (literal-prefix patterns, which `re` scans fast): the expensive patterns only run
# in a window around one of these.
_ARROW_AT = tuple(re.compile(re.escape(a)) for a in ("->", "→", "=>", "⟶", "~>", "➡"))
_FROM_AT = (re.compile("from "), re.compile("From "), re.compile("FROM "))
_TIMES_AT = (re.compile(r"x(?!\w)"), re.compile("×"))
_PCT_AT = (re.compile("%"),)
_BOUNDARY = re.compile(r"(?s).*(?:[;,，；|]|\n[ \t]*\n|\n[ \t]*(?:[-*+]|\d+\.)[ \t]|[.!?](?=\s))")
_SPACES = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"\n|[.!?;](?:\s|$)")
_WORD = re.compile(r"[A-Za-z][A-Za-z\-]+")
_GLUE = re.compile(r"[\s:：*`_(]*(?:(?:is|was|of|by|changed|change)[\s:：*`_(]*)?")
_BRACKETS = re.compile(r"\(([^()]*)\)|\[([^\[\]]*)\]")
_PAREN_UNIT = re.compile(r"\(([^()]*)\)\s*$|\[([^\[\]]*)\]\s*$")


@dataclass(slots=True)
class _Metric:
    name: str
    better: str


@dataclass(slots=True)
class ClaimRules:
    """claims.toml compiled: regexes and lookup tables."""

    alias_re: re.Pattern[str]
    aliases: dict[str, _Metric]
    skip_re: re.Pattern[str]
    label_re: re.Pattern[str]
    units: dict[str, tuple[str, str, float]]  # spelling (lower) -> (canonical, class, factor)
    pair_re: re.Pattern[str]
    from_re: re.Pattern[str]
    ratio_re: re.Pattern[str]
    pct_verb_re: re.Pattern[str]
    pct_sign_re: re.Pattern[str]
    cell_re: re.Pattern[str]
    before_re: re.Pattern[str]
    after_re: re.Pattern[str]
    strong_after_re: re.Pattern[str]
    delta_re: re.Pattern[str]
    compare_re: re.Pattern[str]
    up_re: re.Pattern[str]
    down_re: re.Pattern[str]
    context: list[tuple[str, str, list[re.Pattern[str]]]] = field(default_factory=list)
    ab_re: re.Pattern[str] | None = None  # prose that compares two settings ("off vs on", "w/o")
    ab_cells: frozenset[str] = frozenset()  # a table cell that names a setting ("off", "enabled")
    max_anchors: int = 600  # prose anchor hits (arrows, "from", `x`, `%`) examined per body ([limits])
    max_table_lines: int = 800  # table separator and row lines examined per body ([limits])
    max_matches: int = 300  # prose pattern matches examined (each looks up its metric) per body ([limits])
    context_ahead: int = 4000  # characters past the last claim searched for its context ([limits])
    max_claims: int = 100  # claims kept per body ([limits]): bounds the pairwise deduplication


class _Budget:
    """Matches a body may still have examined: the work per body is bounded whatever it holds."""

    __slots__ = ("left", "spent")

    def __init__(self, limit: int) -> None:
        self.left, self.spent = limit, 0

    def take(self) -> bool:
        """Count one match examined; False once the budget is spent (the match is not examined)."""
        if self.left <= 0:
            return False
        self.left -= 1
        self.spent += 1
        return True


def _words(words: list[str]) -> str:
    """An alternation matching any of `words` on word boundaries (longest first)."""
    alts = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    return rf"(?<!\w)(?:{alts})(?!\w)"


def _wre(words: list[str]) -> re.Pattern[str]:
    return re.compile(_words(words), re.I)


def _num(name: str | None = None) -> str:
    """A figure (not part of a version, hash, date, identifier or assignment)."""
    body = f"(?P<{name}>{_NUM_BODY})" if name else f"(?:{_NUM_BODY})"
    return f"{_NUM_BEFORE}{body}{_NUM_AFTER}"


def _figure(i: int | None, unit_re: str) -> str:
    """A figure with optional thousands multiplier and unit; named groups n/m/u + i when i is set."""
    g = (lambda n: f"?P<{n}{i}>") if i else (lambda n: "?:")
    # "150+s": an approximate figure ("150-plus seconds") keeps its unit
    return (rf"{_MARK}~?{_num(f'n{i}' if i else None)}(?:\+(?=[ \t]*[A-Za-zμµ]))?"
            rf"({g('m')}[kKM](?=\s*(?:tok|token|req)))?"
            rf"[ \t]*({g('u')}{unit_re})?{_MARK}")


def _pair_patterns(unit_re: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`a -> b` (chains `a -> b -> c` keep the first and last) and `from a to b`."""
    first, last, mid = _figure(1, unit_re), _figure(2, unit_re), _figure(None, unit_re)
    chain = rf"(?:{_ARROW}{mid}(?={_ARROW}))*"
    return (re.compile(rf"{first}{chain}{_ARROW}{last}", re.I),
            re.compile(rf"\bfrom[ \t]+{first}[ \t]+to[ \t]+{last}", re.I))


def _cue_patterns(ph: dict[str, list[str]]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Prose cues: a stated factor ("up to 2.45x faster"), a verb + percentage, a signed percentage."""
    ratio_re = re.compile(
        rf"(?:(?:up[ \t]+to|about|around|approximately|approx\.?|~|≈|over|nearly|roughly|almost)[ \t]*)?"
        rf"{_MARK}{_num('n1')}[ \t]*[x×](?![\w])(?:{_MARK}[ \t]*(?P<after>{_words(ph['ratio_after'] + ph['ratio_compare'])}))?"
        rf"|(?P<before>{_words(ph['ratio_before'])})[ \t]*(?:of|by|is|was|to|reaches|=|:)?[ \t]*"
        rf"(?:up[ \t]+to|about|around|~|≈|over|nearly)?[ \t]*{_MARK}(?P<n2>\d+(?:\.\d+)?)[ \t]*[x×](?!\w)", re.I)
    verbs = ph["up"] + ph["down"] + ph["improve"]
    pct_verb_re = re.compile(
        rf"(?P<verb>{_words(verbs)})(?P<mid>[^.\n%;]{{0,50}}?)\bby[ \t]+"
        rf"(?:up[ \t]+to|about|around|approximately|~|over|nearly|roughly|almost)?[ \t]*~?{_MARK}"
        rf"(?P<pct>\d+(?:\.\d+)?)[ \t]*%", re.I)
    pct_sign_re = re.compile(r"(?<![\w.])(?P<sign>[+\-−])(?P<pct>\d+(?:\.\d+)?)[ \t]*%", re.I)
    return ratio_re, pct_verb_re, pct_sign_re


def compile_claim_rules(data: dict[str, Any]) -> ClaimRules:
    """Compile a claims.toml table into the rules `extract_claims` applies."""
    aliases = {a.lower(): _Metric(m["name"], m.get("better", "")) for m in data["metric"] for a in m["aliases"]}
    quals = _words(data["qualifiers"])
    alias_re = re.compile(rf"(?:{quals}[ \t]+)*{_words(list(aliases))}", re.I)
    units: dict[str, tuple[str, str, float]] = {}
    for canonical, (cls, factor, *spellings) in data["units"].items():
        for spelling in spellings:
            units[spelling.lower()] = (canonical, cls, float(factor))
    spell = "|".join(re.escape(u) for u in sorted(units, key=len, reverse=True))
    unit_re = rf"(?:{spell})(?![A-Za-z/])"
    pair_re, from_re = _pair_patterns(unit_re)
    ph = data["phrases"]
    ratio_re, pct_verb_re, pct_sign_re = _cue_patterns(ph)
    # A cell may hold an approximate or bounded figure: "~450ms", "<1ms" (the bound is the figure).
    cell_re = re.compile(
        rf"^(?:~|<|≤|&lt;)?\s*(?P<n>[+\-]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?)[ \t]*(?P<m>[kKM](?=\s*(?:tok|token|req)))?"
        rf"[ \t]*(?P<u>{unit_re})?\s*(?:\((?P<paren>[^()]*)\))?\s*$", re.I)
    st = data["states"]
    return ClaimRules(
        alias_re=alias_re, aliases=aliases, skip_re=_wre(data["skip"]["metrics"]),
        label_re=re.compile(rf"{_words(data['skip']['labels'])}|--[\w-]+|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\w+=", re.I),
        units=units, pair_re=pair_re, from_re=from_re, ratio_re=ratio_re,
        pct_verb_re=pct_verb_re, pct_sign_re=pct_sign_re, cell_re=cell_re,
        before_re=_wre(st["before"]), after_re=_wre(st["after"]), strong_after_re=_wre(st["strong_after"]),
        delta_re=_wre(st["delta"]), compare_re=_wre(ph["ratio_compare"]), up_re=_wre(ph["up"]),
        down_re=_wre(ph["down"]),
        context=[(c["key"], c.get("format", "{v}"), [re.compile(p) for p in c["patterns"]])
                 for c in data.get("context", [])],
        ab_re=_wre(data["meaning"]["ab_phrases"]) if data.get("meaning", {}).get("ab_phrases") else None,
        ab_cells=frozenset(c.lower() for c in data.get("meaning", {}).get("ab_cells", [])),
        max_anchors=int(data.get("limits", {}).get("max_anchors", 600)),
        max_table_lines=int(data.get("limits", {}).get("max_table_lines", 800)),
        max_matches=int(data.get("limits", {}).get("max_matches", 300)),
        context_ahead=int(data.get("limits", {}).get("context_ahead", 4000)),
        max_claims=int(data.get("limits", {}).get("max_claims", 100)),
    )


def claim_meaning(claim: PerfClaim, claims: list[PerfClaim] | tuple[PerfClaim, ...],
                  rules: ClaimRules | None = None) -> str:
    """What a figure says: "ab" (two settings compared, e.g. a feature off and on), "sweep" (one row of
    several cases of the same metric), "regression" (worse after), "improvement" (better after), or
    "figure" (direction unknown)."""
    rules = rules or default_claim_rules()
    source = claim.source or ""
    cells = {c.strip().strip("`*").lower() for c in source.split("|")} if "|" in source else set()
    if cells & rules.ab_cells or (rules.ab_re is not None and rules.ab_re.search(source)):
        return "ab"
    same = [c for c in claims if c.metric == claim.metric and c.context != claim.context]
    if same:
        return "sweep"
    if claim.ratio is None:
        return "figure"
    return "improvement" if claim.ratio > 1.0 else "regression" if claim.ratio < 1.0 else "figure"


@cache
def default_claim_rules() -> ClaimRules:
    """The packaged claims.toml, compiled once."""
    path = resources.files("infra_radar") / "defaults" / "rules" / "claims.toml"
    return compile_claim_rules(tomllib.loads(path.read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- small helpers


def _clean(text: str) -> str:
    """Cell/label text without Markdown/HTML markup, on one line."""
    return _SPACES.sub(" ", _MARKUP.sub("", _HTML_TAG.sub("", text))).strip()


def _value(text: str) -> float:
    return float(text.replace(",", ""))


def _unit(rules: ClaimRules, spelling: str | None) -> tuple[str, str, float] | None:
    return rules.units.get(spelling.lower()) if spelling else None


def _metric_info(rules: ClaimRules, metric: str) -> _Metric | None:
    """The metric table entry named by (an alias inside) `metric`."""
    hit = None
    for m in rules.alias_re.finditer(metric):
        hit = m
    if hit is None:
        return None
    words = hit.group(0).lower().split()
    for start in range(len(words)):
        entry = rules.aliases.get(" ".join(words[start:]))
        if entry:
            return entry
    return None


def _display(rules: ClaimRules, metric: str) -> str:
    """Normalised display name: markup and unit brackets removed, acronym aliases upper-cased."""
    text = _clean(metric).strip(" :：-=")
    text = _PAREN_UNIT.sub("", text).strip(" :：-=")

    def upper(m: re.Match[str]) -> str:
        entry = rules.aliases.get(m.group(0).lower())
        return entry.name if entry and entry.name.isupper() and m.group(0).lower() == entry.name.lower() else m.group(0)

    return re.sub(r"[A-Za-z0-9]+", upper, text)


def _direction(rules: ClaimRules, metric: str, unit_class: str) -> str:
    """"lower" or "higher" is better: a time/memory/throughput unit decides, else the metric table."""
    by_unit = {"time": "lower", "memory": "lower", "throughput": "higher"}.get(unit_class)
    if by_unit:
        return by_unit
    entry = _metric_info(rules, metric)
    return entry.better if entry else ""


def _round(x: float) -> float:
    return round(x, 2)


def _make(rules: ClaimRules, metric: str, before: float, after: float, unit: str, unit_class: str,
          ratio: float | None, span: tuple[int, int], source: str) -> PerfClaim:
    """A before/after claim with computed change and (stated or derived) ratio."""
    change = _round((after - before) / before * 100) if before else None
    if ratio is None:
        better = _direction(rules, metric, unit_class)
        if better == "lower" and after:
            ratio = _round(before / after)
        elif better == "higher" and before:
            ratio = _round(after / before)
    return PerfClaim(metric=metric, before=before, after=after, unit=unit, change_pct=change, ratio=ratio,
                     span=span, source=source.strip())


def _convert(rules: ClaimRules, value: float, src: str | None, dst: str | None) -> float | None:
    """`value` in unit `src` expressed in `dst` (same class), or None if the classes differ."""
    a, b = _unit(rules, src), _unit(rules, dst)
    if a is None or b is None or a[0] == b[0]:
        return value
    if a[1] != b[1]:
        return None
    return value * a[2] / b[2]


def _line_at(text: str, start: int, end: int) -> str:
    lo = text.rfind("\n", 0, start) + 1
    hi = text.find("\n", end)
    return text[lo: hi if hi >= 0 else len(text)]


def _window(text: str, pos: int, limit: int = 90) -> tuple[int, str]:
    """The clause before `pos` (cut at punctuation, bullets, blank lines, cells): (offset, text).

    It reaches back into the previous line only when this line has no words of its own before
    `pos` (a hard-wrapped sentence), so a `key=value` line above never names the figure."""
    lo = max(0, pos - limit)
    line_start = text.rfind("\n", lo, pos) + 1
    if line_start and any(w.lower() not in _LABEL_STOP for w in _WORD.findall(text, line_start, pos)):
        lo = line_start
    chunk = text[lo:pos]
    m = _BOUNDARY.match(chunk)
    cut = m.end() if m else 0
    return lo + cut, chunk[cut:]


# --------------------------------------------------------------------------- prose


def _pair_claim(rules: ClaimRules, text: str, m: re.Match[str]) -> PerfClaim | None:
    """A prose `before -> after` match as a claim, or None if it is not a measurement."""
    b, a = _value(m.group("n1")), _value(m.group("n2"))
    u1, u2 = m.group("u1"), m.group("u2")
    if m.group("m1"):
        b *= 1000 if m.group("m1").lower() == "k" else 1e6
    if m.group("m2"):
        a *= 1000 if m.group("m2").lower() == "k" else 1e6
    unit_spelling = u2 or u1
    b2 = _convert(rules, b, u1, unit_spelling)
    if b2 is None:
        return None
    info = _unit(rules, unit_spelling)
    canonical, cls = (info[0], info[1]) if info else ("", "")
    if cls == "ratio":
        return None
    wstart, window = _window(text, m.start())
    metric, mstart = _prose_metric(rules, window, cls)
    if metric is None:
        return None
    start = wstart + mstart if mstart >= 0 else m.start()
    return _make(rules, metric, b2, a, canonical, cls, None, (start, m.end()), _line_at(text, m.start(), m.end()))


def _prose_metric(rules: ClaimRules, window: str, unit_class: str) -> tuple[str | None, int]:
    """The metric named in the clause before a figure: (display name, offset in window) or None."""
    hit = None
    for hit in rules.alias_re.finditer(window):  # noqa: B007 - the last (nearest) one wins
        pass
    if hit is not None:
        tail = window[hit.end():]
        if rules.skip_re.search(tail) or rules.label_re.search(tail) or rules.skip_re.search(hit.group(0)):
            return None, -1
        return _display(rules, hit.group(0)), hit.start()
    if unit_class not in ("time", "throughput", "memory") or rules.skip_re.search(window):
        return None, -1
    if rules.label_re.search(window):
        return None, -1
    label = _label(rules, window)
    if not label:
        return {"time": "latency", "memory": "memory"}.get(unit_class, "throughput"), -1
    return label, window.rfind(label.split()[0]) if label.split()[0] in window else -1


_LABEL_STOP = {"from", "to", "is", "was", "are", "were", "goes", "went", "reduced", "reduces", "dropped",
               "drops", "decreased", "increased", "improved", "improves", "changed", "the", "of", "and",
               "by", "in", "on", "at", "result", "results", "e.g", "eg", "i.e", "ie", "about", "approx",
               "which", "with", "down", "up", "that", "this", "it", "has", "have", "been", "a", "an",
               "reduce", "decrease", "increase", "improve", "drop", "go", "also", "we", "our"}


def _label(rules: ClaimRules, window: str) -> str:
    """Up to four words before a figure that name it ("prefill phase: 623us -> 395us")."""
    text = _clean(window).replace("：", ":")
    if ":" in text.rstrip(" :(") or text.rstrip(" (").endswith(":"):
        head, _, tail = text.rstrip(" (").rstrip(":").rpartition(":")
        text = tail if tail.strip() else head
    words = [w for w in re.findall(r"[A-Za-z][\w\-./]*", text) if not _unit(rules, w)]
    while words and (words[-1].lower() in _LABEL_STOP or words[-1].endswith("ly")):
        words.pop()
    words = words[-4:]
    while words and words[0].lower() in _LABEL_STOP:
        words.pop(0)
    return " ".join(words)


def _prose_pairs(rules: ClaimRules, text: str, taken: list[tuple[int, int]], budget: tuple[_Budget, _Budget]) -> list[PerfClaim]:
    claims: list[PerfClaim] = []
    for regex, anchor in ((rules.pair_re, _ARROW_AT), (rules.from_re, _FROM_AT)):
        for m in _scan(regex, anchor, text, 50, 70, budget):
            if _inside(m.start(), taken):
                continue
            claim = _pair_claim(rules, text, m)
            if claim is not None:
                claims.append(claim)
    return claims


def _anchors(text: str, anchors: tuple[re.Pattern[str], ...], digit_before: bool,
             budget: _Budget) -> Iterator[tuple[int, int]]:
    """(start, end) of anchor hits in text order; with `digit_before`, only hits just after a digit. Every
    hit examined counts against the body's budget, and the hits stop when it is spent."""
    hits = heapq.merge(*(a.finditer(text) for a in anchors), key=lambda m: m.start())
    for m in hits:
        if not budget.take():
            return
        start = m.start()
        if not digit_before or _DIGIT.search(text, max(0, start - 3), start):
            yield start, m.end()


def _scan(pattern: re.Pattern[str], anchors: tuple[re.Pattern[str], ...], text: str, back: int,
          ahead: int, budget: tuple[_Budget, _Budget], digit_before: bool = False) -> Iterator[re.Match[str]]:
    """Matches of `pattern` in windows around anchor hits, each text position matched once. `budget`: the
    body's (anchor hits, matches) left to examine; the scan ends when either is spent."""
    anchor_budget, match_budget = budget
    done = 0
    for start, end in _anchors(text, anchors, digit_before, anchor_budget):
        lo = max(start - back, done)
        if lo > start:
            continue
        hi = min(len(text), end + ahead)
        for m in pattern.finditer(text, lo, hi):
            if m.end() >= hi - 1:  # the window may have cut the match short
                m = pattern.match(text, m.start()) or m
            if m.start() >= done:
                if not match_budget.take():
                    return
                done = m.end()
                yield m


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(lo <= pos < hi for lo, hi in spans)


def _prose_ratios(rules: ClaimRules, text: str, pairs: list[PerfClaim],
                  taken: list[tuple[int, int]], budget: tuple[_Budget, _Budget]) -> list[PerfClaim]:
    """Stated speed-up factors: attached to a pair just before them, else claims of their own."""
    claims: list[PerfClaim] = []
    for m in _scan(rules.ratio_re, _TIMES_AT, text, 60, 40, budget, digit_before=True):
        cue = m.group("after") or m.group("before")
        if not cue or _inside(m.start(), taken):
            continue
        value = float((m.group("n1") or m.group("n2")).replace(",", ""))
        if not 1.0 < value < 10000:
            continue
        near = [c for c in pairs if 0 <= m.start() - c.span[1] <= 40 and not _SENTENCE_END.search(text, c.span[1], m.start())]
        if near:
            near[-1].ratio = value
            continue
        wstart, window = _window(text, m.start())
        metric, mstart = _ratio_metric(rules, window, text[m.end(): m.end() + 40])
        if metric is None or metric == "speedup" and rules.compare_re.fullmatch(cue):
            continue  # "70x less data": a comparison word needs a named metric
        start = wstart + mstart if mstart >= 0 else m.start()
        claims.append(PerfClaim(metric=metric, ratio=value, span=(start, m.end()),
                                source=_line_at(text, m.start(), m.end()).strip()))
    return claims


def _ratio_metric(rules: ClaimRules, window: str, after: str) -> tuple[str | None, int]:
    if rules.skip_re.search(window) or rules.label_re.search(window[-30:]):
        return None, -1
    hit = None
    for hit in rules.alias_re.finditer(window):  # noqa: B007 - nearest wins
        pass
    if hit is not None:
        return _display(rules, hit.group(0)), hit.start()
    ahead = rules.alias_re.match(after.lstrip(" *`")) or rules.alias_re.search(after[:25])
    if ahead is not None and not rules.skip_re.search(after[:25]):
        return _display(rules, ahead.group(0)), -1
    return "speedup", -1


def _prose_changes(rules: ClaimRules, text: str, known: set[str], taken: list[tuple[int, int]],
                   pairs: list[PerfClaim], budget: tuple[_Budget, _Budget]) -> list[PerfClaim]:
    """Stated percentages with a named metric ("improves throughput by 12%", "TTFT -25.68%")."""
    claims: list[PerfClaim] = []
    for m in _scan(rules.pct_verb_re, _PCT_AT, text, 110, 2, budget, digit_before=True):
        if _inside(m.start(), taken):
            continue
        verb, mid = m.group("verb"), m.group("mid")
        wstart, window = _window(text, m.start())
        metric, mstart = _change_metric(rules, mid, window)
        if metric is None or _known(rules, metric, known) or _near_pair(m.start(), m.end(), pairs):
            continue
        pct = _signed(rules, verb, float(m.group("pct")), metric)
        start = wstart + mstart if mstart >= 0 else m.start()
        claims.append(PerfClaim(metric=metric, change_pct=pct, span=(start, m.end()),
                                source=_line_at(text, m.start(), m.end()).strip()))
    for m in _scan(rules.pct_sign_re, _PCT_AT, text, 12, 2, budget, digit_before=True):
        if _inside(m.start(), taken) or _near_pair(m.start(), m.end(), pairs):
            continue
        wstart, window = _window(text, m.start(), 40)
        hit = None
        for hit in rules.alias_re.finditer(window):  # noqa: B007 - nearest wins
            pass
        if hit is None or not _GLUE.fullmatch(window[hit.end():]) or rules.skip_re.search(window):
            continue
        metric = _display(rules, hit.group(0))
        if _known(rules, metric, known):
            continue
        pct = float(m.group("pct")) * (-1 if m.group("sign") in "-−" else 1)
        claims.append(PerfClaim(metric=metric, change_pct=pct, span=(wstart + hit.start(), m.end()),
                                source=_line_at(text, m.start(), m.end()).strip()))
    return claims


def _known(rules: ClaimRules, metric: str, known: set[str]) -> bool:
    """Whether `metric` (or its metric-table entry) already has a before/after claim."""
    entry = _metric_info(rules, metric)
    return metric.lower() in known or (entry is not None and f"={entry.name}" in known)


def _near_pair(start: int, end: int, pairs: list[PerfClaim]) -> bool:
    return any(c.span[0] - 30 <= end and start <= c.span[1] + 30 for c in pairs)


def _change_metric(rules: ClaimRules, mid: str, window: str) -> tuple[str | None, int]:
    if rules.skip_re.search(mid) or rules.skip_re.search(window):
        return None, -1
    inner = rules.alias_re.search(mid)
    if inner is not None:
        return _display(rules, inner.group(0)), -1
    hit = None
    for hit in rules.alias_re.finditer(window):  # noqa: B007 - nearest wins
        pass
    if hit is None:
        return None, -1
    return _display(rules, hit.group(0)), hit.start()


def _signed(rules: ClaimRules, verb: str, pct: float, metric: str) -> float:
    """A stated percentage signed as a change of the metric's value."""
    if rules.down_re.fullmatch(verb):
        return -pct
    if rules.up_re.fullmatch(verb):
        return pct
    return -pct if _direction(rules, metric, "") == "lower" else pct


# --------------------------------------------------------------------------- tables


@dataclass(slots=True)
class _Row:
    cells: list[str]
    start: int
    end: int
    raw: str


@dataclass(slots=True)
class _Table:
    header: list[str]
    rows: list[_Row]
    start: int
    end: int


def _split_cells(line: str, piped: bool = True) -> list[str]:
    """Cells of a table line; without leading pipes a line starting with `|` has an empty first cell."""
    body = line.strip()
    if body.startswith("|") and piped:
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def _lines(text: str) -> list[tuple[int, int]]:
    """Line spans; a line holding a whole flattened table is split into one span per row."""
    spans, pos = [], 0
    for line in text.split("\n"):
        end = pos + len(line)
        if "|" in line and _INLINE_SEPARATOR.search(line) and not _SEPARATOR.match(line):
            lo = pos
            for cut in _ROW_SPLIT.finditer(line):
                spans.append((lo, pos + cut.start() + 1))
                lo = pos + cut.end()
            spans.append((lo, end))
        else:
            spans.append((pos, end))
        pos = end + 1
    return spans


def _tables(text: str, lines: list[tuple[int, int]], budget: _Budget) -> Iterator[_Table]:
    """Markdown tables: header (possibly wrapped), separator, rows (wrapped rows joined). Each separator and
    row line counts against the body's budget; the tables end where it is spent."""
    i = 1
    while i < len(lines):
        line = text[lines[i][0]:lines[i][1]]
        if "-" not in line or not _SEPARATOR.match(line):
            i += 1
            continue
        if not budget.take():
            return
        width = len(_split_cells(line))
        piped = line.strip().startswith("|")
        header, hstart = _header(text, lines, i, width, piped)
        rows, i = _rows(text, lines, i + 1, width, piped, budget)
        if header and rows:
            yield _Table(header, rows, hstart, rows[-1].end)


def _header(text: str, lines: list[tuple[int, int]], sep: int, width: int, piped: bool) -> tuple[list[str], int]:
    j, raw = sep - 1, ""
    while j >= 0 and j >= sep - 3:
        chunk = text[lines[j][0]:lines[j][1]]
        if not chunk.strip() or "|" not in chunk:
            break
        raw = f"{chunk} {raw}" if raw else chunk
        if len(_split_cells(raw, piped)) >= width:
            break
        j -= 1
    cells = _split_cells(raw, piped) if raw else []
    return cells[-width:], lines[max(j, 0)][0]


def _rows(text: str, lines: list[tuple[int, int]], i: int, width: int, piped: bool,
          budget: _Budget) -> tuple[list[_Row], int]:
    rows: list[_Row] = []
    while i < len(lines) and budget.take():
        lo, hi = lines[i]
        chunk = text[lo:hi]
        if not chunk.strip():
            break
        starts_row = chunk.lstrip().startswith("|") if piped else "|" in chunk
        short = bool(rows) and len(_split_cells(rows[-1].raw, piped)) < width
        if not piped and short and chunk.lstrip().startswith("|"):
            starts_row = False  # a wrapped row: its tail went to the next line
        if rows and not starts_row and not chunk.lstrip().startswith("#") and short:
            rows[-1].raw += " " + chunk.strip()
            rows[-1].end = hi
        elif "|" in chunk and (starts_row or not piped):
            rows.append(_Row([], lo, hi, chunk))
        else:
            break
        i += 1
    for row in rows:
        row.cells = _split_cells(row.raw, piped)
    return rows, i


def _role(rules: ClaimRules, header: str) -> str:
    text = _clean(header)
    if rules.strong_after_re.search(text):
        return "after"
    if rules.before_re.search(text):
        return "before"
    if rules.after_re.search(text):
        return "after"
    if rules.delta_re.search(text):
        return "delta"
    return ""


def _residual(rules: ClaimRules, header: str, states: bool = True) -> tuple[str, str | None]:
    """A header minus state words: (metric text, unit spelling from brackets or a trailing unit)."""
    text = _clean(header)
    unit = None
    for m in _BRACKETS.finditer(text):
        inner = (m.group(1) or m.group(2) or "").strip()
        if _unit(rules, inner):
            unit, text = inner, text[: m.start()] + " " + text[m.end():]
            break
    for regex in (rules.strong_after_re, rules.before_re, rules.after_re) if states else ():
        text = regex.sub(" ", text)
    text = re.sub(r"\(\s*\)|\[\s*\]|->|→|=>|\bvs\.?(?!\w)", " ", text)
    words = text.split()
    if words and unit is None and _unit(rules, words[-1]) and len(words) > 1:
        unit = words.pop()
    return " ".join(words).strip(" :-,"), unit


def _cell(rules: ClaimRules, text: str) -> tuple[float, str | None, float | None] | None:
    """A cell holding one figure: (value, unit spelling, stated ratio in brackets) or None."""
    m = rules.cell_re.match(_clean(text))
    if m is None:
        return None
    value = _value(m.group("n"))
    if m.group("m"):
        value *= 1000 if m.group("m").lower() == "k" else 1e6
    ratio = None
    paren = m.group("paren")
    if paren:
        r = re.fullmatch(r"\s*[x×]\s*(\d+(?:\.\d+)?)\s*|\s*(\d+(?:\.\d+)?)\s*[x×]\s*", paren)
        ratio = float(r.group(1) or r.group(2)) if r else None
    return value, m.group("u"), ratio


def _stated_ratio(rules: ClaimRules, cells: list[str], cols: list[int]) -> float | None:
    for c in cols:
        if c < len(cells):
            m = re.fullmatch(r"~?\s*[x×]?\s*(\d+(?:\.\d+)?)\s*[x×]?", _clean(cells[c]))
            if m and ("x" in cells[c].lower() or "×" in cells[c]):
                return float(m.group(1))
    return None


def _table_claim(rules: ClaimRules, metric: str, before: tuple[float, str | None, float | None],
                 after: tuple[float, str | None, float | None], unit_hint: str | None,
                 ratio: float | None, span: tuple[int, int], source: str) -> PerfClaim | None:
    """A claim from two table figures, or None if it is not a performance figure."""
    if re.fullmatch(r"[\d\W_]*", metric):
        metric = ""  # a row labelled by a number (a batch size, a shape): the unit names the metric
    if rules.skip_re.search(metric):
        return None
    spelling = after[1] or before[1] or unit_hint
    b = _convert(rules, before[0], before[1] or unit_hint, spelling)
    if b is None:
        return None
    info = _unit(rules, spelling)
    canonical, cls = (info[0], info[1]) if info else ("", "")
    if cls not in ("time", "memory", "throughput") and (not metric or _metric_info(rules, metric) is None):
        return None
    metric = metric or cls
    return _make(rules, _display(rules, metric), b, after[0], canonical, cls, ratio or after[2], span, source)


def _column_pairs(rules: ClaimRules, header: list[str]) -> list[tuple[int, int, str, str | None]]:
    """(before col, after col, metric text, unit) for a table with state columns."""
    roles = [_role(rules, h) if i else "" for i, h in enumerate(header)]
    befores = [i for i, r in enumerate(roles) if r == "before"]
    afters = [i for i, r in enumerate(roles) if r == "after"]
    free = [i for i, r in enumerate(roles) if i and not r and _clean(header[i])]
    same = _same_metric_pair(rules, header, free) if not befores and not afters else None
    if same is not None:
        # "TTFT(baseline config) | TTFT(new config)": one metric measured in two states, in order
        name = _BRACKETS.sub("", _clean(header[same[0]])).strip()
        return [(same[0], same[1], name, _residual(rules, header[same[1]])[1] or _residual(rules, header[same[0]])[1])]
    elif len(befores) + len(afters) == 1 and len(free) == 1:
        # "Verl (s) | Verl Fix (s)", "enable_switch | baseline": the other value column
        befores, afters = (befores or free), (afters or free)
    elif not befores and not afters and len(free) == 2:
        # "DFlash | Dynamic DFlash": the longer name is the variant under test
        a, b = (_BRACKETS.sub("", _clean(header[i])).strip().lower() for i in free)
        if a == b or (a not in b and b not in a):
            return []
        befores, afters = ([free[0]], [free[1]]) if len(a) < len(b) else ([free[1]], [free[0]])
    if len(befores) == 1 and len(afters) == 1:
        (bname, bunit), (aname, aunit) = _residual(rules, header[befores[0]]), _residual(rules, header[afters[0]])
        return [(befores[0], afters[0], aname if aname.lower() == bname.lower() else "", aunit or bunit)]
    pairs = []
    for b in befores:
        name, unit = _residual(rules, header[b])
        match = [a for a in afters if _residual(rules, header[a])[0].lower() == name.lower()]
        if len(match) == 1:
            pairs.append((b, match[0], name, unit or _residual(rules, header[match[0]])[1]))
    return pairs


def _same_metric_pair(rules: ClaimRules, header: list[str], free: list[int]) -> tuple[int, int] | None:
    """The two columns naming the same known metric with different bracketed states, if exactly two."""
    groups: dict[str, list[int]] = {}
    for i in free:
        text = _clean(header[i])
        found = _BRACKETS.search(text)
        name = _BRACKETS.sub("", text).strip().lower()
        if found and name and _metric_info(rules, name) is not None:
            groups.setdefault(name, []).append(i)
    pairs = [cols for cols in groups.values() if len(cols) == 2]
    return (pairs[0][0], pairs[0][1]) if len(pairs) == 1 and len(groups) == 1 else None


def _label_context(header: list[str], cells: list[str], skip: set[int]) -> dict[str, str]:
    labels = [(_clean(header[i]), _clean(c)) for i, c in enumerate(cells) if i not in skip and i < len(header)]
    labels = [(h, c) for h, c in labels if c and not re.fullmatch(r"[+\-]?[\d.,]+\s*%|[x×][\d.]+|[\d.]+[x×]", c)]
    ctx: dict[str, str] = {}
    for h, c in labels:
        key = next((k for k in ("concurrency", "batch") if k in h.lower()), "case")
        ctx[key] = f"{ctx[key]}, {c}" if key in ctx else (c if key != "case" or not h else f"{h}: {c}")
    return ctx


def _claims_by_columns(rules: ClaimRules, table: _Table) -> list[PerfClaim]:
    """A table with before/after columns: one claim per row (per column pair)."""
    claims: list[PerfClaim] = []
    pairs = _column_pairs(rules, table.header)
    deltas = [i for i, h in enumerate(table.header) if i and _role(rules, h) == "delta"]
    for bcol, acol, name, unit in pairs:
        named = bool(name) and _metric_info(rules, name) is not None
        for row in table.rows:
            if max(bcol, acol) >= len(row.cells):
                continue
            before, after = _cell(rules, row.cells[bcol]), _cell(rules, row.cells[acol])
            if before is None or after is None:
                continue
            labels = [c for i, c in enumerate(row.cells[: len(table.header)]) if i not in (bcol, acol, *deltas)]
            metric, row_unit = (name, None) if named else _residual(rules, next((c for c in labels if _clean(c)), ""), states=False)
            claim = _table_claim(rules, metric, before, after, unit or row_unit,
                                 _stated_ratio(rules, row.cells, deltas),
                                 (row.start, row.end), row.raw)
            if claim is not None:
                skip = {bcol, acol, *deltas} | (set() if named else {row.cells.index(next(
                    (c for c in labels if _clean(c)), row.cells[0]))})
                claim.context.update(_label_context(table.header, row.cells, skip))
                claims.append(claim)
    return claims


def _claims_by_rows(rules: ClaimRules, table: _Table) -> list[PerfClaim]:
    """A table with one row per code state: first baseline row vs the last current/after row."""
    roles = [_role(rules, r.cells[0]) if r.cells else "" for r in table.rows]
    if "before" not in roles:
        return []
    first = roles.index("before")
    later = [i for i in range(first + 1, len(roles)) if roles[i] == "after"]
    if later:
        last = later[-1]
    elif len(roles) == 2 and first == 0:
        last = 1
    else:
        return []
    base, cur = table.rows[first], table.rows[last]
    claims: list[PerfClaim] = []
    for col in range(1, len(table.header)):
        if col >= len(base.cells) or col >= len(cur.cells):
            continue
        before, after = _cell(rules, base.cells[col]), _cell(rules, cur.cells[col])
        if before is None or after is None:
            continue
        name, unit = _residual(rules, table.header[col])
        claim = _table_claim(rules, name, before, after, unit, None, (base.start, cur.end),
                             f"{base.raw.strip()}\n{cur.raw.strip()}")
        if claim is not None:
            between = [r for r in table.rows[first + 1:last] if col < len(r.cells) and r.cells[0].strip()]
            if between:  # states the author measured in between stay visible beside the claim
                claim.context["states"] = "; ".join(f"{_clean(r.cells[0])} {_clean(r.cells[col])}" for r in between)
            claims.append(claim)
    return claims


def _claims_in_cells(rules: ClaimRules, table: _Table) -> list[PerfClaim]:
    """Cells written as `before -> after`: the column header names the metric."""
    claims: list[PerfClaim] = []
    for row in table.rows:
        for col, cell in enumerate(row.cells[: len(table.header)]):
            if not col or "->" not in cell and "→" not in cell:
                continue
            m = rules.pair_re.fullmatch(_clean(cell))
            if m is None:
                continue
            name, unit = _residual(rules, table.header[col])
            b, a = _value(m.group("n1")), _value(m.group("n2"))
            claim = _table_claim(rules, name, (b, m.group("u1"), None), (a, m.group("u2"), None), unit,
                                 None, (row.start, row.end), row.raw)
            if claim is not None:
                claim.context.update(_label_context(table.header, row.cells, set(range(1, len(row.cells)))))
                claims.append(claim)
    return claims


def _table_claims(rules: ClaimRules, text: str, budget: _Budget) -> tuple[list[PerfClaim], list[tuple[int, int]]]:
    claims: list[PerfClaim] = []
    spans: list[tuple[int, int]] = []
    for table in _tables(text, _lines(text), budget):
        spans.append((table.start, table.end))
        found = _claims_by_columns(rules, table) or _claims_by_rows(rules, table)
        claims.extend(found or _claims_in_cells(rules, table))
    return claims, spans


# --------------------------------------------------------------------------- context and entry point


def _context_index(rules: ClaimRules, text: str, last: int) -> dict[str, list[tuple[int, str]]]:
    """Per context key, the matches of its first pattern that matches at all: [(offset, value)], up to the
    first one after `last` (the last claim), at most `max_anchors` of them, and searched no further than
    `context_ahead` characters past `last`."""
    index: dict[str, list[tuple[int, str]]] = {}
    stop = min(len(text), last + rules.context_ahead)
    for key, fmt, patterns in rules.context:
        for pattern in patterns:
            hits = []
            for m in pattern.finditer(text, 0, stop):
                if m.end() >= stop - 1:  # the stop may have cut the match short
                    m = pattern.match(text, m.start()) or m
                hits.append((m.start(), fmt.format(v=m.group("v"))))
                if m.start() >= last or len(hits) >= rules.max_anchors:
                    break
            if hits:
                index[key] = hits
                break
    return index


def _context_at(index: dict[str, list[tuple[int, str]]], pos: int) -> dict[str, str]:
    ctx = {}
    for key, hits in index.items():
        i = bisect_left(hits, pos, key=lambda h: h[0])  # the last hit starting before pos, else the first
        ctx[key] = hits[i - 1][1] if i else hits[0][1]
    return ctx


def _same(a: PerfClaim, b: PerfClaim) -> bool:
    """Same figures up to rounding (a table row restated in prose), or same metric and figures."""
    if a.before is None or b.before is None or a.after is None or b.after is None:
        return (a.metric.lower(), a.ratio, a.change_pct) == (b.metric.lower(), b.ratio, b.change_pct)
    if (a.metric.lower(), a.before, a.after) == (b.metric.lower(), b.before, b.after):
        return True

    return a.unit == b.unit and _rounds(a.before, b.before) and _rounds(a.after, b.after)


def _rounds(x: float, y: float) -> bool:
    """Whether the more precise of two figures rounds to the other (7116.24 vs 7116)."""
    decimals = [len(format_number(v).partition(".")[2]) for v in (x, y)]
    coarse, precise = (x, y) if decimals[0] <= decimals[1] else (y, x)
    return round(precise, min(decimals)) == coarse


def _dedupe(claims: list[PerfClaim], limit: int) -> list[PerfClaim]:
    """Each claim once (first wins: tables, then prose pairs, then ratios and changes), in text order; at most
    `limit` of them, so the pairwise comparison stays bounded."""
    kept: list[PerfClaim] = []
    for claim in claims:
        if len(kept) >= limit:
            break
        if not any(_same(claim, k) for k in kept):
            kept.append(claim)
    return sorted(kept, key=lambda c: c.span)


def _maybe_claims(text: str) -> bool:
    """Cheap pre-check: a digit, and an arrow, a table, an `x` factor, a percentage or "to"."""
    return bool(_DIGIT.search(text)) and any(s in text for s in ("->", "→", "|", "x", "×", "%", "=>", " to "))


def extract_claims(text: str, rules: ClaimRules | None = None) -> list[PerfClaim]:
    """Performance claims in `text` (a PR description), deduplicated, in text order."""
    if not text or not _maybe_claims(text):
        return []
    rules = rules or default_claim_rules()
    # The work per body is bounded by the matches examined (claims.toml [limits]), not by what they find: a
    # body of nothing but figures stops early instead of costing a few µs per figure.
    claims, taken = _table_claims(rules, text, _Budget(rules.max_table_lines)) if "|" in text else ([], [])
    budget = (_Budget(rules.max_anchors), _Budget(rules.max_matches))
    pairs = _prose_pairs(rules, text, taken, budget)
    known = {c.metric.lower() for c in claims + pairs}
    known |= {f"={e.name}" for c in claims + pairs if (e := _metric_info(rules, c.metric))}
    extra = _prose_ratios(rules, text, pairs, taken, budget) + _prose_changes(rules, text, known, taken, pairs, budget)
    found = _dedupe(claims + pairs + extra, rules.max_claims)
    if found:
        index = _context_index(rules, text, max(c.span[0] for c in found))
        for claim in found:
            claim.context = {**_context_at(index, claim.span[0]), **claim.context}
    return found
