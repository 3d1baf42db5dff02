"""Performance claims an author reported in a PR description: prose pairs, ratios, changes, tables.

Decisions (documented here because renderers and tests rely on them):

- `change_pct` is (after - before) / before * 100 rounded to 2 decimals whenever both values are
  known (the computed figure wins over a stated one, so signs are consistent); for a claim with
  only a percentage it is the stated figure, signed by its verb ("reduced by 20%" -> -20).
- `ratio` follows from the claim's own values whenever both are known: derived as a speed-up
  (before/after for lower-is-better metrics such as time, memory, latency; after/before for
  higher-is-better ones such as throughput, TPS), or, when the direction is unknown, the one of the two
  a stated factor ("2.45x", a speed-up column) matches. A stated factor its values do not give (a "35x"
  written next to "0.92 s -> 0.47 s") measures something else and is dropped. Without both values the
  ratio is the stated factor, or None (e.g. "%" figures).
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
from bisect import bisect_left
from collections.abc import Iterator

from ..models import PerfClaim, format_number  # format_number: re-exported, where it was first
from .claim_rules import (
    _ARROW_AT,
    _DIGIT,
    _FROM_AT,
    _GLUE,
    _LABEL_STOP,
    _PCT_AT,
    _SENTENCE_END,
    _TIMES_AT,
    ClaimRules,
    _Budget,
    _clean,
    _convert,
    _direction,
    _display,
    _line_at,
    _make,
    _metric_info,
    _unit,
    _value,
    _window,
    compile_claim_rules,
    default_claim_rules,
    own_ratio,
)
from .claim_tables import _table_claims

__all__ = ["ClaimRules", "claim_meaning", "compile_claim_rules", "default_claim_rules", "extract_claims",
           "format_number"]


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
        if near:  # the pair's own factor when the stated one is it; else the factor measures something else
            pair = near[-1]
            if pair.before is not None and pair.after is not None:
                pair.ratio = own_ratio(pair.before, pair.after, value) or pair.ratio
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


# what joins a figure to the condition that follows it in the same clause: "2.81x on Qwen3.5-27B", "for B200"
_CONDITION_AFTER = re.compile(r"[ \t]*+(?:\*\*|__)?[ \t]*+(?:on|for|with|using|at|in)[ \t]++(?:the[ \t]++|a[ \t]++)?"
                              r"(?:\*\*|__|`)?", re.I)


def _context_at(index: dict[str, list[tuple[int, str]]], span: tuple[int, int], text: str) -> dict[str, str]:
    """Per context key, the condition of the claim at `span`: the one its own clause names right after the figure
    ("2.81x on Qwen3.5-27B"), else the last named before it, else the first."""
    pos, end = span
    ctx = {}
    for key, hits in index.items():
        i = bisect_left(hits, pos, key=lambda h: h[0])  # the last hit starting before pos, else the first
        after = next((h for h in hits[i:i + 4] if end <= h[0] <= end + 40), None)
        if after is not None and (m := _CONDITION_AFTER.match(text, end, after[0])) and m.end() == after[0]:
            ctx[key] = after[1]
        else:
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
            claim.context = {**_context_at(index, claim.span, text), **claim.context}
    return found
