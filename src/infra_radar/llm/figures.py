"""Figures in prose read as claims, for grounding: a value with its unit, a ratio, a percentage, a range of
either, the direction a word gives it and the conditions it is stated under; digits, English number words
and Chinese numerals alike ("a thousand times", "ten-fold", "一千倍", "百分之三十", "halved", "减半").

Both sides of grounding read text with this module: the model's sentence, and the source its prompt was
built from (each line, table row and sentence of it, and each performance claim with its before/after,
from which ratios and percentages follow as the radar's own figures do). The words and patterns are data:
defaults/prompts/grounding.toml ([figures], [numbers], [[condition]]) and the units of
defaults/rules/claims.toml. Every pass is a regular-expression scan: linear in the text.
"""

from __future__ import annotations

import math
import re
import tomllib
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from ..analyse.claim_rules import default_claim_rules
from ..models import PerfClaim

__all__ = ["Claim", "Figure", "Reading", "Segment", "claim_segment", "match", "read", "segments"]

_WORD_SLACK = 0.1  # "halved", "doubled", "翻倍": within 10% of what they round
_REF = re.compile(r"(?<![\w/.-])(?:[A-Za-z0-9][\w.-]*/[\w.-]+)?#\d+\b")
_CLAUSE = re.compile(r"[,;:，；：。!?！？\n]|[.](?=\s|$)")


@dataclass(frozen=True, slots=True)
class Figure:
    """One reading of a written figure: its kind, value (a quantity in its class's base unit, e.g. seconds),
    how far the written precision lets it be from the true value, its unit class, and whether a word calls
    it a gain (True), a loss (False) or neither (None)."""

    kind: str  # quantity | ratio | percent
    value: float
    tol: float = 0.0
    cls: str = ""
    better: bool | None = None
    trend: str | None = None  # "up" | "down": what a word or the before/after says the value did
    topic: str | None = None  # a ratio's or percentage's measure: "speed" | "memory" (None: not said)


@dataclass(slots=True)
class Claim:
    """A figure as written: one end (or two, for a range), each with its readings ("halved": a ratio of 2 or
    50%), and where it stands in the text."""

    ends: tuple[tuple[Figure, ...], ...]
    start: int
    end: int


@dataclass(slots=True)
class Reading:
    """What a text states: its figures, the plain numbers that are no figure (counts), its conditions."""

    claims: list[Claim] = field(default_factory=list)
    counts: set[str] = field(default_factory=set)
    conditions: set[tuple[str, str]] = field(default_factory=set)


@dataclass(slots=True)
class Segment:
    """A unit of the source that states figures together: a line, table row or sentence, or a claim."""

    figures: list[Figure]
    conditions: set[tuple[str, str]]


# --- the rules -------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Rules:
    token: re.Pattern[str]
    plain_token: re.Pattern[str]  # the same without English words: most text has none, and is read faster
    vocabulary: frozenset[str]  # English words that are numbers or figures
    starts: re.Pattern[str]  # what a figure or count without English words starts with
    after: re.Pattern[str]
    percent_before: re.Pattern[str]
    range_gap: re.Pattern[str]
    units: dict[str, tuple[str, float]]  # spelling (lower) -> (class, factor to the class base unit)
    words: dict[str, tuple[float, float]]  # "halved" -> (ratio, percent)
    better: re.Pattern[str]
    worse: re.Pattern[str]
    up: re.Pattern[str]
    down: re.Pattern[str]
    topic: re.Pattern[str]
    hardware: re.Pattern[str]
    en_small: dict[str, int]
    en_scales: dict[str, int]
    en_not_counts: frozenset[str]
    zh_digits: dict[str, int]
    zh_units: dict[str, int]
    zh_big: dict[str, int]
    zh_measure: re.Pattern[str]
    zh_not_counts: frozenset[float]
    conditions: list[tuple[str, re.Pattern[str], list[re.Pattern[str]]]]  # key, guard, patterns
    any_condition: re.Pattern[str]  # any guard: most sentences state no condition


def _alt(items: Iterable[str]) -> str:
    return "|".join(sorted(items, key=len, reverse=True))


@lru_cache(maxsize=1)
def grounding_rules() -> dict:
    """The packaged defaults/prompts/grounding.toml."""
    text = (resources.files("infra_radar") / "defaults" / "prompts" / "grounding.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@lru_cache(maxsize=1)
def rules() -> _Rules:
    """grounding.toml's [figures], [numbers] and [[condition]] with claims.toml's units, compiled once."""
    data = grounding_rules()
    fig, en, zh = data["figures"], data["numbers"]["en"], data["numbers"]["zh"]
    units: dict[str, tuple[str, float]] = {}
    for spelling, (_canonical, cls, factor) in default_claim_rules().units.items():
        if cls not in ("percent", "ratio"):
            units[spelling] = (cls, factor)
    for spelling, canonical in fig["units_zh"].items():
        units[spelling] = units[canonical.lower()]
    unit_re = _alt(re.escape(u) for u in units)
    en_words = [*en["small"], *en["scales"]]
    word = rf"(?:{_alt(en_words)})"
    words = {k.lower(): (float(v[0]), float(v[1])) for k, v in fig["words"].items()}
    zh_chars = "".join([*zh["digits"], *zh["units"], *zh["big"]])
    digits = rf"(?P<d>(?:(?<![\d.])\d{{1,3}}(?:,\d{{3}})+|(?<![\d.,])\d+)(?:\.\d+)?(?![\d])(?P<db>[{''.join(zh['big'])}])?)"
    chinese = rf"(?P<z>[{zh_chars}]+)"
    token = re.compile(
        rf"{digits}|(?P<w>\b(?:a\s+(?={_alt(en['scales'])}\b))?{word}(?:(?:\s+and\s+|[\s-]+){word})*)"
        rf"(?:(?P<fold>fold)\b|\b)|(?P<m>(?<![A-Za-z]){_alt(re.escape(w) for w in words)}(?![A-Za-z]))|{chinese}", re.I)
    vocabulary = frozenset([*(w.lower() for w in en_words), *(f"{w.lower()}fold" for w in en_words),
                            *(w for w in words if w.isascii())])
    ratio, percent, tenths = _alt(fig["ratio"]), _alt(fig["percent"]), _alt(fig["tenths"])
    after = re.compile(rf"[ \t]*(?:(?P<ratio>{ratio})|(?P<percent>{percent})|(?P<tenths>{tenths})"
                       rf"|(?P<unit>(?:{unit_re})(?![A-Za-z/])))", re.I)
    return _Rules(
        token=token,
        plain_token=re.compile(f"{digits}|(?P<w>(?!))(?P<fold>(?!))|(?P<m>{_alt(w for w in words if not w.isascii())})"
                               f"|{chinese}"),
        vocabulary=vocabulary, starts=re.compile(rf"\d|[{zh_chars}]|{_alt(re.escape(w) for w in words if not w.isascii())}"),
        after=after, percent_before=re.compile(rf"(?:{_alt(fig['percent_before'])})[ \t]*$"),
        range_gap=re.compile(rf"^(?:{_alt(fig['range'])})$", re.I), units=units, words=words,
        better=re.compile(_alt(fig["direction"]["better"]), re.I),
        worse=re.compile(_alt(fig["direction"]["worse"]), re.I),
        up=re.compile(_alt(fig["trend"]["up"]), re.I), down=re.compile(_alt(fig["trend"]["down"]), re.I),
        topic=re.compile("|".join(f"(?P<{k}>{_alt(v)})" for k, v in fig["topic"].items()), re.I),
        hardware=re.compile(rf"[ \t]*(?:{_alt(fig['devices_after'])})"),
        en_small={k.lower(): int(v) for k, v in en["small"].items()},
        en_scales={k.lower(): int(v) for k, v in en["scales"].items()},
        en_not_counts=frozenset(w.lower() for w in en.get("not_counts", [])),
        zh_digits=dict(zh["digits"]), zh_units=dict(zh["units"]), zh_big=dict(zh["big"]),
        zh_measure=re.compile(rf"[ \t]*(?:{_alt(re.escape(m) for m in zh['measure'])})"),
        zh_not_counts=frozenset(float(v) for v in zh.get("not_counts", [])),
        conditions=[(c["key"], re.compile(c.get("guard", "")), [re.compile(p) for p in c["patterns"]])
                    for c in data.get("condition", [])],
        any_condition=re.compile("|".join(f"(?:{c.get('guard', '').removeprefix('(?i)')})"
                                          for c in data.get("condition", [])) or "(?!)", re.I),
    )


# --- numbers ---------------------------------------------------------------------------------------

def normalise(value: float) -> str:
    """One spelling per value, as grounding.normalise spells a written number (12, 0.5, 1048.64)."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _en_value(text: str, r: _Rules) -> float | None:
    total, current = 0, 0
    for part in re.split(r"[\s-]+", text.lower()):
        if part in ("and", "a", ""):
            current = current or (1 if part == "a" else current)
            continue
        if part in r.en_small:
            current += r.en_small[part]
        elif part in r.en_scales:
            scale = r.en_scales[part]
            if scale >= 1000:
                total += (current or 1) * scale
                current = 0
            else:
                current = (current or 1) * scale
        else:
            return None
    return float(total + current)


def _zh_value(text: str, r: _Rules) -> float | None:
    """A Chinese numeral: 十五, 二十, 一百零五, 一千, 两千三百, 三万, 一亿; None for what is no numeral."""
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in r.zh_digits:
            if digit is not None:  # two digits in a row: 一二 is not a number of this shape
                return None
            digit = r.zh_digits[ch]
        elif ch in r.zh_units:
            section += (1 if digit is None else digit) * r.zh_units[ch]
            digit = None
        elif ch in r.zh_big:
            total = (total + section + (digit or 0)) * r.zh_big[ch]
            section, digit = 0, None
        else:
            return None
    return float(total + section + (digit or 0))


def _decimals(written: str) -> int:
    return len(written.split(".", 1)[1]) if "." in written else 0


class _Words:
    """Where the words that give a figure its direction are in a text, and where its clauses end: found in
    one pass each, so a figure's direction is a lookup (linear in the text however many figures it has)."""

    def __init__(self, text: str, r: _Rules) -> None:
        self.cuts = [m.start() for m in _CLAUSE.finditer(text)]
        self.hits = {name: [m.start() for m in pattern.finditer(text)]
                     for name, pattern in (("better", r.better), ("worse", r.worse), ("up", r.up), ("down", r.down))}
        for m in r.topic.finditer(text):
            self.hits.setdefault(str(m.lastgroup), []).append(m.start())
        self.topics = [name for name, _ in r.topic.groupindex.items()]

    def _any(self, name: str, lo: int, hi: int) -> bool:
        found = self.hits[name]
        i = bisect_left(found, lo)
        return i < len(found) and found[i] < hi

    def direction(self, start: int, end: int) -> tuple[bool | None, str | None, str | None]:
        """Whether the clause around a figure (at most 60 characters either side) calls it a gain or a loss,
        whether it says the value went up or down, and what it measures (speed or memory); None: neither, or
        both."""
        i = bisect_left(self.cuts, start)
        lo = max(start - 60, self.cuts[i - 1] + 1 if i else 0)
        j = bisect_left(self.cuts, end)
        hi = min(end + 60, self.cuts[j] if j < len(self.cuts) else end + 60)
        better, worse = self._any("better", lo, hi), self._any("worse", lo, hi)
        up, down = self._any("up", lo, hi), self._any("down", lo, hi)
        topics = [t for t in self.topics if t in self.hits and self._any(t, lo, hi)]
        return ((better if better != worse else None), ("up" if up else "down") if up != down else None,
                topics[0] if len(topics) == 1 else None)


class _Lazy:
    """_Words made on the first figure that needs a direction (most sentences have none)."""

    def __init__(self, text: str, r: _Rules) -> None:
        self.text, self.r, self.words = text, r, None

    def direction(self, start: int, end: int) -> tuple[bool | None, str | None, str | None]:
        if self.words is None:
            self.words = _Words(self.text, self.r)
        return self.words.direction(start, end)


_DIGIT = re.compile(r"\d")
_ALPHA = re.compile(r"[A-Za-z]+")


def conditions(text: str) -> set[tuple[str, str]]:
    """The conditions `text` states: (key, value) such as ("batch", "32"), ("parallel:tp", "4")."""
    r = rules()
    found: set[tuple[str, str]] = set()
    if not r.any_condition.search(text):
        return found
    for key, guard, patterns in r.conditions:
        if not guard.search(text):
            continue
        for m in (m for pattern in patterns for m in pattern.finditer(text)):
            pattern = m.re
            kind = m.group("k").lower() if "k" in pattern.groupindex and m.group("k") else ""
            name = f"{key}:{kind if len(kind) <= 2 else kind[0] + 'p'}" if kind else key  # tensor -> tp
            found.add((name, m.group("v").lower()))
    return found


def read(text: str) -> Reading:
    """The figures, counts and conditions of `text` (item references `#N` are no numbers)."""
    r = rules()
    text = _REF.sub(lambda m: " " * len(m.group()), text) if "#" in text else text
    english = not r.vocabulary.isdisjoint(w.lower() for w in _ALPHA.findall(text))
    if not english and not r.starts.search(text):
        return Reading()  # no digit, numeral or number word: nothing to read
    out = Reading(conditions=conditions(text) if _DIGIT.search(text) else set())
    words = _Lazy(text, r)
    pending: tuple[int, int, float, float] | None = None  # a plain number that may open a range
    for m in (r.token if english else r.plain_token).finditer(text):
        start, end = m.start(), m.end()
        if m.group("m"):
            ratio, pct = r.words[m.group("m").lower()]
            better, trend, topic = words.direction(start, end)  # a round figure: "halved" for 2.05x or -51%
            out.claims.append(Claim(((Figure("ratio", ratio, ratio * _WORD_SLACK, "", better, trend, topic),
                                      Figure("percent", pct, pct * _WORD_SLACK, "", better, trend, topic)),),
                                    start, end))
            pending = None
            continue
        if m.group("d"):
            written = m.group("d")[:-1] if m.group("db") else m.group("d")
            value = float(written.replace(",", ""))
            tol = 0.5 * 10 ** -_decimals(written)
            if m.group("db"):
                value, tol = value * r.zh_big[m.group("db")], tol * r.zh_big[m.group("db")]
            kind = "d"
        elif m.group("w"):
            found = _en_value(m.group("w"), r)
            if found is None:
                continue
            value, tol, kind = found, 0.5, "w"
            if m.group("fold"):
                better, trend, topic = words.direction(start, end)
                out.claims.append(Claim(((Figure("ratio", value, tol, "", better, trend, topic),),), start, end))
                pending = None
                continue
        else:
            found = _zh_value(m.group("z"), r)
            if found is None:
                continue
            value, tol, kind = found, 0.5, "z"
        after = r.after.match(text, end)
        if after is not None and after.group("ratio") and r.hardware.match(text, after.end()):
            after = None  # 8x H100, 4×Atlas: how many devices, not a ratio
        pct_before = bool(r.percent_before.search(text, max(0, start - 8), start))
        if after is None and not pct_before:
            if kind == "z" and not r.zh_measure.match(text, end):
                continue  # 统一, 十分, 一些: no numeral here
            if (kind == "w" and m.group("w").lower() in r.en_not_counts) or (kind == "z" and value in r.zh_not_counts):
                pending = None
                continue
            out.counts.add(normalise(value))
            pending = (start, end, value, tol)
            continue
        if pct_before or after.group("percent"):
            figure = Figure("percent", value, tol)
        elif after.group("tenths"):
            figure = Figure("percent", value * 10, tol * 10)
        elif after.group("ratio"):
            figure = Figure("ratio", value, tol)
            if after.group("ratio") == "倍":  # 提升了一倍 is 2x (+100%); 提升三倍 is said for 3x and for 4x
                alts = (Figure("ratio", value + 1, tol), Figure("percent", value * 100, tol * 100))
        else:
            cls, factor = r.units[after.group("unit").lower()]
            figure = Figure("quantity", value * factor, tol * factor, cls)
        stop = after.end() if after else end
        ends = [figure]
        extra: tuple[Figure, ...] = alts if after is not None and after.group("ratio") == "倍" else ()
        if pending and r.range_gap.match(text[pending[1]:start]):  # 5-10x, 5 to 10 ms: the first end too
            low = Figure(figure.kind, pending[2] * (figure.value / value if value else 1),
                         pending[3] * (figure.tol / tol if tol else 1), figure.cls)
            ends.insert(0, low)
            out.counts.discard(normalise(pending[2]))
            start = pending[0]
        better, trend, topic = words.direction(start, stop) if figure.kind != "quantity" else (None, None, None)
        out.claims.append(Claim(tuple(tuple(Figure(f.kind, f.value, f.tol, f.cls, better, trend, topic)
                                            for f in (end, *(extra if i == len(ends) - 1 else ())))
                                      for i, end in enumerate(ends)), start, stop))
        pending = None
    return out


# --- the source side ---------------------------------------------------------------------------------

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")
_SENTENCE = re.compile(r"(?<=[。！？；])|(?<=[.!?;])\s+")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _segment(text: str, extra: set[tuple[str, str]] | None = None, counts: set[str] | None = None) -> Segment:
    reading = read(text)
    if counts is not None:
        counts |= reading.counts
    figures = [f for claim in reading.claims for end in claim.ends for f in end]
    return Segment(figures, reading.conditions | (extra or set()))


def segments(text: str, rows: dict[str, set[tuple[str, str]]] | None = None,
             counts: set[str] | None = None) -> list[Segment]:
    """The source as units that state figures together: each sentence of a paragraph (hard-wrapped lines
    joined), and each table row with the conditions its header names (a `batch` column's 32, also put in
    `rows` by the row's text, for the claims read from that row; the plain numbers go in `counts`). A
    figure and a condition in two sentences are not stated together."""
    out: list[Segment] = []
    header: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            joined = " ".join(para)
            out.extend(_segment(s, None, counts) for s in _SENTENCE.split(joined) if s.strip())
            para.clear()

    for line in text.splitlines():
        if _TABLE_ROW.match(line):
            flush()
            if _TABLE_RULE.match(line):
                continue
            cells = _cells(line)
            if not header or not any(ch.isdigit() for ch in line):
                header = cells
                continue
            named = set()
            for name, value in zip(header, cells, strict=False):
                named |= conditions(f"{name} {value}")
            out.append(_segment(line, named, counts))
            if rows is not None and named:
                rows[line.strip()] = named
            continue
        header = [] if line.strip() == "" else header
        if not line.strip():
            flush()
        else:
            para.append(line.strip())
    flush()
    return out


def _unit_class(unit: str) -> tuple[str, float] | None:
    return rules().units.get(unit.lower()) if unit else None


def _claim_topic(claim: PerfClaim, unit: tuple[str, float] | None) -> str | None:
    """What a claim measures: speed (a time or throughput) or memory; None when neither is known."""
    if unit:
        return "memory" if unit[0] == "memory" else "speed" if unit[0] in ("time", "throughput") else None
    found = rules().topic.search(claim.metric)
    return found.lastgroup if found else None


_LABEL_UNIT = re.compile(r"[(\[]\s*([^()\[\]\s]{1,12})\s*[)\]]")


def claim_segment(claim: PerfClaim, rows: dict[str, set[tuple[str, str]]] | None = None) -> Segment:
    """A performance claim of the source as a segment: its before and after (in the unit it has, or the one
    its label gives: "TTFT (ms): 5 -> 4"), its stated ratio and change, and what follows from its
    before/after (the speed-up, the change against before, the speed-up as a percentage; for a stated factor
    or change alone, its other form), with its conditions: those its line, its metric ("bs32" as a column)
    and its context state, and those the header of its table rows names (`rows`). What it measures (speed
    or memory) comes with its ratios and percentages."""
    figures: list[Figure] = []
    unit = _unit_class(claim.unit)
    if unit is None and not claim.unit:
        label = next((_unit_class(m.group(1)) for m in _LABEL_UNIT.finditer(claim.source)
                      if _unit_class(m.group(1))), None)
        unit = label
    gain = None if claim.ratio is None or claim.ratio == 1 else claim.ratio > 1
    b, a = claim.before, claim.after
    trend = None if b is None or a is None or a == b else "up" if a > b else "down"
    if trend is None and claim.change_pct:
        trend = "up" if claim.change_pct > 0 else "down"
    if unit:
        figures += [Figure("quantity", v * unit[1], 0.0, unit[0]) for v in (claim.before, claim.after) if v is not None]
    ratios: list[float] = []
    percents: list[float] = []
    if b and a:  # a before and an after: the speed-up and the change, as the radar's own figures are computed
        big, small = max(abs(b), abs(a)), min(abs(b), abs(a))
        if small:
            ratios.append(big / small)
            percents += [abs(a - b) / abs(b) * 100, (big / small - 1) * 100]
    else:
        if claim.ratio and claim.ratio > 0 and claim.ratio != 1:  # 2x faster: 50% less time, 100% more per second
            percents += [abs(claim.ratio - 1) * 100, abs(1 - 1 / claim.ratio) * 100]
        if claim.change_pct is not None and claim.change_pct:  # -20% of a time is a 1.25x speed-up
            p = abs(claim.change_pct)
            ratios.append(1 / (1 - p / 100) if claim.change_pct < 0 and p < 100 else 1 + p / 100)
    if claim.ratio:
        ratios.append(claim.ratio)
    if claim.change_pct is not None:
        percents.append(abs(claim.change_pct))
    topic = _claim_topic(claim, unit)
    figures += [Figure("ratio", v, 0.0, better=gain, trend=trend, topic=topic) for v in ratios if math.isfinite(v)]
    figures += [Figure("percent", v, 0.0, better=gain, trend=trend, topic=topic) for v in percents if math.isfinite(v)]
    found = conditions(claim.source) | conditions(claim.metric)
    for line in claim.source.splitlines() if rows else ():
        found |= rows.get(line.strip(), set())
    for key, value in claim.context.items():  # batch 32, concurrency 64, TP=4, 8x H100 the claim was run with
        found |= conditions(f"{key} {value}")
    own = _segment(claim.source)  # the row or line it came from states its other figures with it
    return Segment(figures + own.figures, found | own.conditions)


# --- matching ----------------------------------------------------------------------------------------

def match(written: Figure, source: Figure) -> bool:
    """Whether a written figure says what a source figure says: same kind (and unit class), the value within
    the written precision, no contrary direction (gain or loss, up or down) and no other measure (a memory
    ratio does not make anything faster)."""
    if written.kind != source.kind or written.cls != source.cls:
        return False
    if written.better is not None and source.better is not None and written.better != source.better:
        return False
    if written.trend is not None and source.trend is not None and written.trend != source.trend:
        return False
    if written.topic is not None and source.topic is not None and written.topic != source.topic:
        return False
    slack = written.tol + 1e-9 * max(abs(written.value), abs(source.value), 1.0)  # the writer's precision only
    return abs(written.value - source.value) <= slack
