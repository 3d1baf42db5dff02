"""The compiled claims.toml (metrics, units, cue words, limits) and the small helpers every claim finder uses:
numbers, units, directions, text windows. The finders are in claims.py (prose) and claim_tables.py."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..config import rule_data, rules_cache
from ..models import PerfClaim

_NUM_BODY = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_NUM_BEFORE, _NUM_AFTER = r"(?<![\w.=/:#@$\-–+])", r"(?![\w.,]*\d)"
_ARROW = r"\s*(?:->|-->|→|⟶|=>|➡️?|~>)\s*"
_MARK = r"[`*_~]*+"  # possessive: a run of marks is taken whole, never split with what follows
_HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_MARKUP = re.compile(r"[`*~]+|(?<!\w)_+|_+(?!\w)")
_SEPARATOR = re.compile(r"^\s*+\|?\s*+:?-{2,}+:?\s*+(?:\|\s*+:?-{2,}+:?\s*+)++\|?\s*+$")
_INLINE_SEPARATOR = re.compile(r"\|\s*+:?-{3,}+:?\s*+\|\s*+:?-{3,}+:?\s*+\|")
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
    flat_re: re.Pattern[str] | None = None  # prose calling the measured result unchanged ("almost identical")
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
    return (rf"{_MARK}~?{_num(f'n{i}' if i else None)}(?:\+(?=[ \t]*+[A-Za-zμµ]))?"
            rf"({g('m')}[kKM](?=\s*(?:tok|token|req)))?"
            rf"[ \t]*+({g('u')}{unit_re})?{_MARK}")


def _pair_patterns(unit_re: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`a -> b` (chains `a -> b -> c` keep the first and last) and `from a to b`."""
    first, last, mid = _figure(1, unit_re), _figure(2, unit_re), _figure(None, unit_re)
    chain = rf"(?:{_ARROW}{mid}(?={_ARROW}))*"
    return (re.compile(rf"{first}{chain}{_ARROW}{last}", re.I),
            re.compile(rf"\bfrom[ \t]++{first}[ \t]*+(?<=[ \t])to[ \t]++{last}", re.I))


def _cue_patterns(ph: dict[str, list[str]]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Prose cues: a stated factor ("up to 2.45x faster"), a verb + percentage, a signed percentage."""
    ratio_re = re.compile(
        rf"(?:(?:up[ \t]++to|about|around|approximately|approx\.?|~|≈|over|nearly|roughly|almost)[ \t]*+)?"
        rf"{_MARK}{_num('n1')}[ \t]*+[x×](?![\w])(?:{_MARK}[ \t]*+(?P<after>{_words(ph['ratio_after'] + ph['ratio_compare'])}))?"
        rf"|(?P<before>{_words(ph['ratio_before'])})[ \t]*+(?:of|by|is|was|to|reaches|=|:)?[ \t]*+"
        rf"(?:up[ \t]++to|about|around|~|≈|over|nearly)?[ \t]*+{_MARK}(?P<n2>\d+(?:\.\d+)?)[ \t]*+[x×](?!\w)", re.I)
    verbs = ph["up"] + ph["down"] + ph["improve"]
    pct_verb_re = re.compile(
        rf"(?P<verb>{_words(verbs)})(?P<mid>[^.\n%;]{{0,50}}?)\bby[ \t]++"
        rf"(?:up[ \t]++to|about|around|approximately|~|over|nearly|roughly|almost)?[ \t]*+~?{_MARK}"
        rf"(?P<pct>\d+(?:\.\d+)?)[ \t]*+%", re.I)
    pct_sign_re = re.compile(r"(?<![\w.])(?P<sign>[+\-−])(?P<pct>\d+(?:\.\d+)?)[ \t]*+%", re.I)
    return ratio_re, pct_verb_re, pct_sign_re


def compile_claim_rules(data: dict[str, Any]) -> ClaimRules:
    """Compile a claims.toml table into the rules `extract_claims` applies."""
    aliases = {a.lower(): _Metric(m["name"], m.get("better", "")) for m in data["metric"] for a in m["aliases"]}
    quals = _words(data["qualifiers"])
    alias_re = re.compile(rf"(?:{quals}[ \t]++)*{_words(list(aliases))}", re.I)
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
        rf"^(?:~|<|≤|&lt;)?\s*+(?P<n>[+\-]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?)[ \t]*+(?P<m>[kKM](?=\s*(?:tok|token|req)))?"
        rf"[ \t]*+(?P<u>{unit_re})?\s*+(?:\((?P<paren>[^()]*+)\))?\s*+$", re.I)
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
        flat_re=_wre(data["meaning"]["flat_phrases"]) if data.get("meaning", {}).get("flat_phrases") else None,
        max_anchors=int(data.get("limits", {}).get("max_anchors", 600)),
        max_table_lines=int(data.get("limits", {}).get("max_table_lines", 800)),
        max_matches=int(data.get("limits", {}).get("max_matches", 300)),
        context_ahead=int(data.get("limits", {}).get("context_ahead", 4000)),
        max_claims=int(data.get("limits", {}).get("max_claims", 100)),
    )


@rules_cache
def default_claim_rules() -> ClaimRules:
    """claims.toml (the active rules directory's tables over the packaged ones), compiled once."""
    return compile_claim_rules(rule_data("claims"))


@rules_cache
def flat_phrases_re() -> re.Pattern[str] | None:
    """claims.toml [meaning] flat_phrases alone ("almost identical"), compiled without the other claim rules (a
    card asks whether its figure is called unchanged; it extracts no claims)."""
    phrases = rule_data("claims").get("meaning", {}).get("flat_phrases")
    return _wre(phrases) if phrases else None


_LABEL_STOP = {"from", "to", "is", "was", "are", "were", "goes", "went", "reduced", "reduces", "dropped",
               "drops", "decreased", "increased", "improved", "improves", "changed", "the", "of", "and",
               "by", "in", "on", "at", "result", "results", "e.g", "eg", "i.e", "ie", "about", "approx",
               "which", "with", "down", "up", "that", "this", "it", "has", "have", "been", "a", "an",
               "reduce", "decrease", "increase", "improve", "drop", "go", "also", "we", "our",
               # a verb that opens the clause before a figure is not part of its name: "reducing the
               # operation cost from 313us to 76us" names "operation cost"
               "reducing", "decreasing", "increasing", "improving", "lowering", "cutting", "boosting",
               "raising", "shrinking", "dropping", "bringing", "speeding", "saving", "cuts", "lowers",
               "boosts", "raises", "brings", "saves", "speeds"}


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


def own_ratio(before: float, after: float, stated: float | None, slack: float = 0.15) -> float | None:
    """The factor a before/after pair gives, matching a stated one: the pair's own before/after or after/before
    (whichever the stated factor is, within `slack` for the author's rounding), computed from the values; None
    when nothing was stated, when the stated factor is neither (it measures something else), or when a value is
    not positive (no factor follows from it)."""
    if stated is None or before <= 0 or after <= 0:
        return None
    own = min((before / after, after / before), key=lambda x: abs(x - stated))
    return _round(own) if abs(own - stated) <= slack * own else None


def _make(rules: ClaimRules, metric: str, before: float, after: float, unit: str, unit_class: str,
          ratio: float | None, span: tuple[int, int], source: str) -> PerfClaim:
    """A before/after claim with computed change and (stated or derived) ratio. A stated ratio stands only
    when the claim's own values give it (either way round, up to rounding): a factor written near a pair
    may measure something else ("0.92 s -> 0.47 s, 35x less memory"), and the pair's values win."""
    change = _round((after - before) / before * 100) if before else None
    ratio = own_ratio(before, after, ratio)
    if ratio is None and before > 0 and after > 0:
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
