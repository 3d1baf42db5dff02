"""Figures in the shapes authors write them, beyond `before -> after` (claims.py keeps those): A vs B, a figure
against a reference ("WER 1.83% vs the official 2.02%"), ranges ("68–495 s"), growth across a variable ("6 ms/step
at 4k history, 47 ms/step at 28k"), error bounds ("max abs error 4.88e-4") and single measured values with their
unit and condition. Also whether a description was cut, so a report says "the description is cut" rather than
anything about what the author gave.

Only prose is read: fenced and indented code, command lines, logs and stack traces are skipped (their figures are
a reproduction's, not a result the author reports). The words are data (`defaults/rules/claims_figures.toml`).
Every scan is one pass of a compiled pattern over each prose line: linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..config import rule_data, rules_cache
from .claim_rules import default_claim_rules

SHAPES = ("before_after", "ratio", "change", "versus", "reference", "range", "growth", "bound", "value",
          "transition")

_NUM = r"(?<![\w.=/:#@$\-])[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.,]*\d)"
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_MARKUP = re.compile(r"[`*]+")


@dataclass(slots=True)
class Figure:
    """One figure the description reports, in the shape it was written."""

    shape: str  # one of SHAPES
    text: str  # the figure as the author wrote it (markup removed), e.g. "WER 1.83% vs the official 2.02%"
    line: str  # the source line (markup removed)
    span: tuple[int, int] = (0, 0)
    context: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class FigureRules:
    versus_re: re.Pattern[str]
    range_re: re.Pattern[str]
    growth_re: re.Pattern[str]
    bound_re: re.Pattern[str]
    value_re: re.Pattern[str]
    metric_re: re.Pattern[str]  # a metric name ending where a figure starts
    transition_re: re.Pattern[str]  # a quality metric's move written as an arrow
    versus_gate: tuple[str, ...]
    bound_gate: tuple[str, ...]
    not_prose_starts: tuple[str, ...]
    not_prose_re: re.Pattern[str] | None


def _alts(words: list[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


def compile_figure_rules(data: dict[str, Any]) -> FigureRules:
    claims = default_claim_rules()
    units = _alts([u for u in claims.units if u not in ("x", "×", "g")] + ["%"])
    unit = rf"(?:{units})(?![A-Za-z/])"
    perf_unit = _alts([u for u, (_, cls, _f) in claims.units.items() if cls in ("time", "memory", "throughput")
                       and u not in ("g",)])
    quality = _alts(data["quality_metrics"])
    metric = rf"(?:{quality}|{claims.alias_re.pattern})"
    fig = rf"{_NUM}[ \t]*+(?:{unit})?"
    refs = _alts(data["reference_words"])
    vs = _alts(data["versus"])
    cond = rf"(?:{_alts(data['condition_words'])})"
    # "WER 1.83% vs the official 2.02%", "TTFT 120ms vs 150ms (baseline)": the metric is looked up before it
    versus_re = re.compile(
        rf"(?P<a>{fig})[\s*`]*+(?:{vs})[\s*`]++(?:(?:the|our|an?)\s++)?"
        rf"(?P<ref>(?:{refs})\b[\w\- ]{{0,20}}?[\s:：=(]*)?(?P<b>{fig})", re.I)
    # "68–495 s", "3-4 s per expert tensor", "between 2 and 5 GB"
    range_re = re.compile(
        rf"(?:(?P<lo>{_NUM})[ \t]*+(?:{perf_unit}|%)?[ \t]*+(?:–|—|~|-|to)[ \t]*+(?P<hi>{_NUM})[ \t]*+(?P<u>{perf_unit}|%)"
        rf"|\bbetween[ \t]++{_NUM}[ \t]*+(?:{perf_unit}|%)?[ \t]*+(?<=[ \t])and[ \t]++{_NUM}[ \t]*+(?:{perf_unit}|%))"
        # what the range is of, in whole words: "3–4 s per expert tensor", "1–3% of parameter bytes"
        rf"(?![A-Za-z/])(?:[ \t]++(?:per|each|of)(?:[ \t]++(?![A-Za-z]+ly\b|and\b|or\b)[A-Za-z][\w\-]*){{1,3}})?", re.I)
    # "6 ms/step at 4k history, 47 ms/step at 28k"
    growth_re = re.compile(
        rf"(?P<a>{_NUM})[ \t]*+(?P<u1>{perf_unit}|%)[ \t]++{cond}[ \t]++(?P<c1>[^,;.\n]{{0,25}}?\d[^,;.\n]{{0,25}}?)"
        rf"[ \t]*+(?:,|;|，|；|\band\b|\bbut\b|\bwhile\b|->|→)[ \t]*+(?:and[ \t]++|but[ \t]++|to[ \t]++)?"
        rf"(?P<b>{_NUM})[ \t]*+(?P<u2>{perf_unit}|%)[ \t]++{cond}[ \t]++(?P<c2>[^,;.\n]{{0,25}}?\d\w*(?:\.\d+)?)", re.I)
    # "max abs error 4.8828125e-4", "atol=1e-3", "最大误差 1e-5"
    bound_re = re.compile(
        rf"(?P<label>{_alts(data['bound_labels'])})(?![A-Za-z])[\s:：=*`]*+(?:of|is|was|at|<=|<|≤|within|below|under)?"
        rf"[\s:：=*`]*+(?P<v>{_NUM})", re.I)
    # "TTFT 120 ms on H100", "throughput 1517 tok/s at concurrency 64": the metric is looked up before it
    value_re = re.compile(
        rf"(?P<v>{_NUM})[ \t]*+(?P<u>{perf_unit}|%)(?![A-Za-z/])[ \t]*+"
        rf"(?:[(（][^)）\n>→]{{1,40}}[)）]|{cond}[ \t]++[^,;.\n]{{1,40}})", re.I)
    metric_re = re.compile(rf"(?:{metric})[\s:：=*`]*+(?:of|is|was|reaches|reached|at|=)?[\s:：=*`]*$", re.I)
    # "val acc 0.75 -> 0.90", "accuracy: 72% → 75%": a quality metric moved, written as an arrow (a perf claim
    # with a unit is claims.py's; a version "0.19 -> 0.20" names no metric)
    transition_re = re.compile(
        rf"(?<![A-Za-z])(?:{quality})(?![A-Za-z])[\s:：=*`]*+(?:from[ \t]++)?(?P<a>{_NUM})[ \t]*+%?[ \t]*+(?:->|→|=>|⇒)"
        rf"[ \t]*+(?P<b>{_NUM})[ \t]*+%?", re.I)
    np = data.get("not_prose", {})
    pats = np.get("line_patterns", [])
    return FigureRules(
        versus_re=versus_re, range_re=range_re, growth_re=growth_re, bound_re=bound_re, value_re=value_re,
        metric_re=metric_re, versus_gate=tuple(w.lower() for w in data["versus"]),
        bound_gate=tuple(w.lower() for w in data["bound_gate"]), transition_re=transition_re,
        not_prose_starts=tuple(np.get("line_starts", [])),
        not_prose_re=re.compile("|".join(f"(?:{p})" for p in pats)) if pats else None)


@rules_cache
def figure_rules_data() -> dict[str, Any]:
    return rule_data("claims_figures")


@rules_cache
def default_figure_rules() -> FigureRules:
    return compile_figure_rules(figure_rules_data())


@cache
def _line_rules() -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    """The [not_prose] rules alone (what every prose reader needs), without compiling the figure patterns."""
    np = figure_rules_data().get("not_prose", {})
    pats = np.get("line_patterns", [])
    return tuple(np.get("line_starts", [])), (re.compile("|".join(f"(?:{p})" for p in pats)) if pats else None)


def is_prose_line(line: str, rules: FigureRules | None = None) -> bool:
    """Whether a line is the author's prose: not a command, log line or stack-trace frame."""
    starts, regex = (rules.not_prose_starts, rules.not_prose_re) if rules is not None else _line_rules()
    body = line.lstrip(" \t-*+>").lstrip()
    if body.startswith(starts) or line.startswith(starts):
        return False
    if body.endswith("\\"):  # a continued command line
        return False
    return not (regex is not None and regex.match(line))


def prose_lines(text: str, rules: FigureRules | None = None, digits: bool = False) -> Iterator[tuple[int, str]]:
    """(offset, line) of the prose lines of `text`: outside fenced or indented code, not commands or logs.
    A line after one ending with a backslash continues that command and is skipped too."""
    pos, fenced, continued = 0, False, False
    for line in text.split("\n"):
        start, pos = pos, pos + len(line) + 1
        if _FENCE.match(line):
            fenced = not fenced
            continue
        was_continued, continued = continued, line.rstrip().endswith("\\")
        if fenced or was_continued or line.startswith(("    ", "\t")) and not line.lstrip().startswith(("-", "*", "|")):
            continue
        if digits and not any(ch.isdigit() for ch in line):
            continue
        if line.strip() and is_prose_line(line, rules):
            yield start, line


def _clean(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).split()).strip(" :：,，;")


def extract_figures(text: str, rules: FigureRules | None = None,
                    taken: list[tuple[int, int]] | None = None) -> list[Figure]:
    """The figures of `text` in the shapes of this module, in text order; each text position belongs to one figure
    (transition, growth, then range, versus, bound, value), and none to the spans in `taken` (the perf claims'
    own)."""
    if not text or not any(ch.isdigit() for ch in text):
        return []
    rules = rules or default_figure_rules()
    found: list[Figure] = []
    claimed = sorted(taken or [])
    for start, line in prose_lines(text, rules, digits=True):
        low = line.lower()
        used = [(a - start, b - start) for a, b in claimed if a < start + len(line) and start < b]
        scans = [("growth", rules.growth_re), ("range", rules.range_re)]
        if "->" in line or "→" in line or "=>" in line or "⇒" in line:
            scans.insert(0, ("transition", rules.transition_re))
        if any(w in low for w in rules.versus_gate):
            scans.append(("versus", rules.versus_re))
        if any(w in low for w in rules.bound_gate):
            scans.append(("bound", rules.bound_re))
        scans.append(("value", rules.value_re))
        context = None  # the line cleaned, once: a one-line description of 300 KB holds thousands of figures
        for shape, regex in scans:
            for m in regex.finditer(line):
                lo, hi = m.span()
                if any(a < hi and lo < b for a, b in used) or hi - lo < 3:
                    continue
                kind = shape
                if shape == "range" and re.search(r"\bfrom\s*$", line[max(0, lo - 8):lo], re.I):
                    continue  # "from 110s to 37s": a before -> after, claims.py's
                if shape in ("versus", "value"):
                    named = rules.metric_re.search(line, max(0, lo - 60), lo)
                    if named is None and (shape == "value" or not re.search(r"[A-Za-z%]", m.group("a") + m.group("b"))):
                        continue  # no metric named: a version, an index, a setting, not a measurement
                    if named is not None and not any(a < lo and named.start() < b for a, b in used):
                        lo = named.start()
                    if shape == "versus":
                        kind = "reference" if m.group("ref") else "versus"
                used.append((lo, hi))
                context = _clean(line) if context is None else context
                found.append(Figure(kind, _clean(line[lo:hi]), context, (start + lo, start + hi)))
    return sorted(found, key=lambda f: f.span)


def figure_shapes(claims: list[Any], figures: list[Figure]) -> dict[str, int]:
    """How many figures of each shape: perf claims (before_after, ratio, change) and the shapes above."""
    counts = dict.fromkeys(SHAPES, 0)
    for c in claims:
        counts["before_after" if c.before is not None and c.after is not None
               else "ratio" if c.ratio is not None else "change"] += 1
    for f in figures:
        counts[f.shape] += 1
    return counts


# --------------------------------------------------------------------------- a cut description

_OPENERS = {"(": ")", "[": "]", "{": "}", "（": "）"}


def description_cut(text: str) -> bool:
    """Whether a description ends mid-word or mid-sentence (a clipped page or export): an open code fence, a
    last line ending in a continuation, an unclosed bracket or backtick, a dangling list mark, or prose that
    stops without closing punctuation mid-paragraph."""
    body = text.rstrip()
    if not body:
        return False
    if sum(1 for line in body.split("\n") if _FENCE.match(line)) % 2:
        return True
    last = body.rsplit("\n", 1)[-1].strip()
    if last in ("-", "*", "+", "|") or last.endswith(("\\", ",", "，", "(", "[", "（", "—", " a", " the", " an")):
        return True
    # the last paragraph (a hard-wrapped one spans lines): a backtick or bracket it opens and never closes
    para = re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)])\s)", body)[-1]
    if para.count("`") % 2:
        return True
    if any(para.count(o) > para.count(c) for o, c in _OPENERS.items()):
        return True
    if last.startswith(("#", "|", "</", "<!--", "```")) or last.endswith((">", "|", "-->")):
        return False
    if re.match(r"(?:[-*+]|\d+[.)])\s", last):
        return False  # a list item: ends where the author stopped it
    # a prose line ending in a word with no closing punctuation, in a paragraph of several sentences
    return bool(re.search(r"[A-Za-z]$", last)) and bool(re.search(r"[.!?。](?:\s|$)", last)) and len(last) > 60


def figure_subject(figure: Figure) -> str:
    """What the figure was measured on, as its line says it ("vector-add Triton sanity" for "... vector-add
    Triton sanity passed with max error 0.0"): the words between the line's last ":" or ")" before the figure
    and the first stop word (claims_figures.toml [subject]); "" when none or too long."""
    rules = figure_rules_data().get("subject", {})
    at = figure.line.find(figure.text)
    # a metric bound ("max error 0.0") names its metric: what it was measured on is the phrase before it; a
    # range or a comparison reads its subject from its own words, and a table row is not a sentence
    if (at <= 0 or figure.shape != "bound" or not figure.text[:1].isalpha()
            or figure.line.lstrip().startswith("|")):
        return ""
    before = figure.line[:at]
    start = max(before.rfind(":"), before.rfind(")"), before.rfind("- ") + 1 if before.lstrip().startswith("- ") else -1)
    words = before[start + 1:].split()
    stops = {w.lower() for w in rules.get("stops", [])}
    cut = next((i for i, w in enumerate(words) if w.lower().strip(",;") in stops), len(words))
    words = words[:cut]
    if (not words or len(words) > int(rules.get("subject_words", 6))
            or words[0].lower() in {w.lower() for w in rules.get("not_first", [])}
            or any(ch in w for w in words for ch in "|()~=<>;")
            or any(_NUMBER_WORD.match(w) for w in words)):
        return ""
    return " ".join(words).strip(",; ")


_NUMBER_WORD = re.compile(r"^[+\-~]?\d[\d.,:/×x%–\-]*[A-Za-z]{0,3}$")  # "8.3s", "2×", "10K": a figure, not a name


# a measurement-looking number: a signed percentage ("+17.49%"), a spread ("13.98 ± 0.22"), a number with a time,
# memory or throughput unit ("9.88s", "512 MB", "1517 tok/s"): what a description reports even in a shape (a
# table of runs) this module does not read as a figure
_MEASURED = re.compile(r"(?<![\w.])(?:[+\-−]\d+(?:\.\d+)?\s?%|\d+(?:\.\d+)?\s?±\s?\d+(?:\.\d+)?"
                       r"|\d+(?:\.\d+)?\s?(?:ms|us|µs|s|sec|seconds|GB|GiB|MB|MiB|tok/s|tokens/s|it/s|req/s)(?![\w/]))")


_CELL_NUMBER = re.compile(r"\|\s{0,8}(\d{1,9}(?:\.\d{1,9})?)\s{0,8}(?=\|)")


def unread_figure(text: str) -> tuple[str, str]:
    """(the first measurement-looking number of the description's prose and tables, its line), or ("", "") when
    there is none: a description that holds one is never said to hold no figure, even when no shape read it."""
    rows: list[tuple[str, str]] = []  # (a number, its line) of table rows with a figure cell
    for _, line in prose_lines(text, digits=True):
        m = _MEASURED.search(line)
        if m:
            return m.group(0).strip(), _clean(line)
        if line.lstrip().startswith("|") and (cell := _CELL_NUMBER.search(line)):
            rows.append((cell.group(1), _clean(line)))
    # a table of runs whose cells are bare numbers (an accuracy, a score): figures all the same
    return rows[0] if len(rows) >= 2 else ("", "")

