"""The one-line summary of an item, from the rule tables.

The headline figure is the largest improvement on the change's stated goal, with its condition; a
slowdown is never written as a win, an A/B of two settings is written as a comparison, and the best
row of a sweep says so (`claims.claim_meaning`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..models import PerfClaim, Text
from .claim_rules import flat_phrases_re
from .claims import claim_meaning, format_number
from .matching import words

if TYPE_CHECKING:  # pragma: no cover - types only
    from .facts import Facts
    from .ruleset import RuleSet

__all__: list[str] = []  # used by rules.py only

_LANGS = ("en", "zh")
_SENTENCE_END = re.compile(r"[.!?:](?=\s+[A-Z`(\[*-])|[.!?:]\s*\Z")
_MARKUP = re.compile(r"`+|\*\*+|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")  # code ticks, bold, italics



def _best_claim(claims: Sequence[PerfClaim], goal: set[str] | None = None,
                metric_words: frozenset[str] = frozenset()) -> PerfClaim | None:
    """The headline figure: the largest improvement on the PR's stated goal (a metric sharing a word
    with the title or lead), else the largest improvement; a slowdown only when nothing improved, and
    then it is written as one (the author's first figure). Metrics named with a known word (latency,
    p99, throughput: `metric_words`) come before bare row labels. Without directions, the first figure."""
    better = [c for c in claims if c.ratio is not None and c.ratio > 1.0]
    if better and _win(claims, 1.0):
        named = [c for c in better if set(words(c.metric)) & metric_words] or better
        on_goal = [c for c in named if goal and set(words(c.metric)) & goal]
        return max(on_goal or named, key=lambda c: c.ratio or 0.0)
    paired = [c for c in claims if c.before is not None and c.after is not None]
    if paired:
        return paired[0]
    return next((c for c in claims if c.ratio is not None or c.change_pct is not None), None)


def _win(claims: Sequence[PerfClaim], least: float) -> float:
    """The speed-up of the headline improvement (0 when the figures show none): a sweep whose rows are
    mostly slower is no win even if one row is faster."""
    ratios = sorted(c.ratio for c in claims if c.ratio is not None)
    if not ratios or ratios[len(ratios) // 2] < 1.0 or ratios[-1] < least:
        return 0.0
    return ratios[-1]


def no_gain(claims: Sequence[PerfClaim], text: str = "", big: float = 1.2) -> bool:
    """Whether an item's figures show no gain: a slowdown (every figure has a direction and the sweep is not
    faster), or a result its author calls unchanged ("almost identical", claims.toml [meaning] flat_phrases)
    with no large win among the figures. Such figures are never written as a win nor rank the item."""
    if not claims or _win(claims, big) > 0:
        return False
    if calls_flat(text):
        return True
    return all(c.ratio is not None for c in claims) and _win(claims, 1.0) == 0


def calls_flat(text: str) -> bool:
    """Whether an author calls the measured result unchanged ("almost identical": claims.toml flat_phrases)."""
    flat = flat_phrases_re()
    return bool(flat is not None and text and flat.search(text[:20000]))


def _condition(claim: PerfClaim) -> str:
    """The condition a figure was measured under (model, hardware, concurrency, case), shortly."""
    parts = [str(v) if k.lower() in str(v).lower() or ":" in str(v) else f"{k} {v}"
             for k, v in sorted(claim.context.items()) if v and k != "source"][:2]
    return ", ".join(parts)[:60]


def _claim_text(claim: PerfClaim, lang: str, summary: Mapping[str, Any], short: bool = False,
                claims: Sequence[PerfClaim] = ()) -> str:
    unit = claim.unit or ""
    unit = f" {unit}" if unit[:1].isalnum() else unit
    if claim.before is not None and claim.after is not None:
        key, values = "claim_pair", {"before": format_number(claim.before), "after": format_number(claim.after)}
    elif claim.ratio is not None:
        key, values = "claim_ratio", {"ratio": format_number(claim.ratio)}
    else:
        pct = claim.change_pct or 0.0
        key, values = "claim_pct", {"pct": ("+" if pct > 0 else "") + format_number(pct)}
    meaning = claim_meaning(claim, claims) if key == "claim_pair" else ""
    if meaning == "ab" and "claim_ab" in summary:
        key = "claim_ab"
    elif claim.ratio is not None and claim.ratio < 1.0 and key == "claim_pair" and "claim_slower" in summary:
        key = "claim_slower"
    elif meaning == "sweep" and "claim_best" in summary:
        key = "claim_best"
        values["n"] = str(sum(1 for c in claims if c.metric == claim.metric))
    cond = _condition(claim)
    metric = summary["claim_cond"][lang].format(metric=claim.metric, cond=cond) if cond and "claim_cond" in summary \
        else claim.metric
    text = summary[key][lang].format(metric=metric, unit=unit, **values)
    if short:  # the checklist names the figure without the "(self-reported)" note
        text = re.sub(r"\s*[((][^()()]*[))]\s*$", "", text)
    return text


def _lead(facts: Facts, rules: RuleSet) -> str:
    """The first meaningful sentence of the description when it says what the change does, else the title."""
    prefixes = rules.lead_prefixes
    for paragraph in re.split(r"\n\s*\n", facts.body[:1500])[:3]:
        text = " ".join(line.strip().lstrip("-*+ ").strip() for line in paragraph.splitlines()).strip()
        end = _SENTENCE_END.search(text, 0, 400)
        sentence = _MARKUP.sub("", text[: end.start() if end else 400]).strip().rstrip(".:")
        seq = words(sentence)
        if len(seq) < 4:
            continue
        for prefix in prefixes:
            if seq[: len(prefix)] == prefix:
                sentence = _drop_words(sentence, len(prefix))
                seq = seq[len(prefix):]
                break
        if seq and seq[0] in rules.lead_verbs:
            return sentence[:1].upper() + sentence[1:]
        break
    return facts.title


def _drop_words(sentence: str, n: int) -> str:
    found = list(re.finditer(r"[A-Za-z0-9]+", sentence))
    return sentence[found[n - 1].end():].strip() if len(found) >= n else sentence


def _summary(kind: str, topics: list[str], native: bool, claims: Sequence[PerfClaim], facts: Facts,
             rules: RuleSet) -> Text:
    summary = rules.data["kinds"].get("summary", {})
    names = rules.data["kinds"].get("names", {})
    limit = int(summary.get("max_chars", 120))
    labels = {t.id: t.label for t in rules.topics}
    shown = [t for t in topics if t != kind and not (native and t == rules.profile.topic)][:2]
    lead = _lead(facts, rules)
    best = _best_claim(claims, set(facts.title_words) | set(words(lead)), rules.metric_words)
    out: Text = {}
    for lang in _LANGS:
        kind_name = names.get(kind, {}).get(lang, kind)
        topic_text = summary["topics"][lang].format(topics=summary["topic_sep"][lang].join(
            labels[t][lang] for t in shown)) if shown else ""
        claim = summary["claim_sep"][lang] + _claim_text(best, lang, summary, claims=claims) if best else ""
        room = limit - len(kind_name) - len(topic_text) - len(claim) - 2
        if room < min(len(lead), 48):  # the lead says more than the topic names
            room, topic_text = room + len(topic_text), ""
        out[lang] = summary["line"][lang].format(kind=kind_name, topics=topic_text, lead=_shorten(lead, room),
                                                 claim=claim)
    return out


_CLAUSE = re.compile(r"[,;:]\s|\s[—–-]\s|\s\(|\s(?=(?:to|for|with|when|in|on|via|so that|because)\s)")


def _shorten(text: str, room: int) -> str:
    """`text` in at most about `room` characters of whole clauses, never cut inside one: its first clauses
    that fit, else the first clause whole (a line a little long beats a cut one)."""
    room = max(room, 24)
    if len(text) <= room:
        return text
    cuts = [m.start() for m in _CLAUSE.finditer(text) if 12 <= m.start() <= room
            and text[: m.start()].count("(") <= text[: m.start()].count(")") and text[: m.start()].count("`") % 2 == 0]
    if cuts:
        return text[: cuts[-1]].rstrip(" ,;:-")
    first = next((m.start() for m in _CLAUSE.finditer(text) if m.start() >= 12), len(text))
    return text[:first].rstrip(" ,;:-")
