"""Evidence records of risk labels: the sentence, files or state a label rests on (render/evidence.py lists every
record of an item; the weekly's risks read these too, so this module depends on neither)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from ..analyse.assertions import own_names, sentences, why_not
from ..config import rule_data, rules_cache
from ..models import AnalysedItem


@dataclass(frozen=True, slots=True)
class Evidence:
    statement: str
    source: str
    field: str
    text: str
    rule: str

    def json(self) -> dict[str, str]:
        return asdict(self)


def _source(ai: AnalysedItem) -> str:
    return ai.item.source or "store"


# --------------------------------------------------------------------------- risks


def _phrase_re(phrase: str) -> str:
    if not re.search(r"[a-z0-9]", phrase.lower()):
        return re.escape(phrase)
    out, gap = [], False
    for token in phrase.lower().split():
        if token == "...":
            gap = True
            continue
        # separators and words (alphanumeric runs joined by underscores) are each taken whole (possessive):
        # linear whatever the text ("remove" and a run of underscores used to be split every way)
        body = r"[\W_]*+".join(re.escape(w) for w in re.findall(r"[a-z0-9]+", token))
        if token.endswith("*"):
            body += r"[^\W_]*+"
        out.append((r"(?:[\W_]++[^\W_]++(?:_++[^\W_]++)*+){0,4}[\W_]++" if gap else r"[\W_]++") + body if out else body)
        gap = False
    return r"(?<![a-z0-9])" + "".join(out) + (r"(?![a-z0-9])" if not phrase.endswith("*") else "")


@rules_cache
def _risk_words() -> dict[str, dict[str, Any]]:
    """risks.toml [words]: each word risk's title, body and not-this phrases."""
    return dict(rule_data("risks").get("words", {}))


@rules_cache
def _compiled_risks() -> dict[str, tuple[Any, ...] | None]:
    """The word risks compiled so far (a memo, emptied when the rules change)."""
    return {}


def _risk_patterns(rid: str) -> tuple[Any, ...] | None:
    """(title pattern, description pattern, not-this pattern, extra, not-this-unless pattern) of word risk `rid`,
    compiled the first time an item carries it (a card compiles its own labels' only); None for an engine check."""
    memo = _compiled_risks()
    if rid not in memo:
        entry = _risk_words().get(rid)

        def comp(words: list[str]) -> re.Pattern[str] | None:
            return re.compile("|".join(_phrase_re(w) for w in words), re.I) if words else None
        memo[rid] = None if entry is None else (
            comp(entry.get("title", [])), comp(entry.get("body", [])), comp(entry.get("not_this", [])),
            entry.get("extra"), comp(entry.get("not_this_unless", [])))
    return memo[rid]


def risk_evidence(ai: AnalysedItem, rid: str, t: dict[str, Any] | None = None) -> Evidence | None:
    """The record of one risk label: the sentence that asserts it (title, prose), the files or the state that
    set it; None when no sentence of the item says it (a negated "off by default" is no default change)."""
    from .base import name

    item, src = ai.item, _source(ai)
    statement = name(t, "risks", rid) if t else rid
    rule = f"risks.toml:{rid}"
    if rid in ("core-path", "large-change", "no-test"):
        if not item.files and item.named_paths:
            return Evidence(statement, src, "named_paths", ", ".join(item.named_paths[:3]), rule)
        paths = [f.path for f in item.files][:3]
        lines = sum((f.additions or 0) + (f.deletions or 0) for f in item.files)
        return Evidence(statement, src, "files", f"{len(item.files)} files, {lines} lines: {', '.join(paths)}", rule)
    if rid == "draft":
        return Evidence(statement, src, "state", "draft" if item.draft else item.title, rule)
    patterns = _risk_patterns(rid)
    if patterns is None:  # an engine check (platform paths, external references): the analysis' own flags
        flags = [f for f in ai.analysis.features if rid in f or f.startswith("risk:")]
        return Evidence(statement, src, "analysis", ", ".join(flags) or rid, rule)
    title_re, body_re, not_re, extra, unless_re = patterns
    own = own_names(item.repo)
    for where, text, regex in (("title", item.title, title_re), ("body", item.body[:20000], body_re)):
        if regex is None:
            continue
        for sentence in (sentences(text) if where == "body" else [text]):
            if not_re is not None and not_re.search(sentence) and not (unless_re and unless_re.search(sentence)):
                continue
            for m in regex.finditer(sentence):
                if not why_not(sentence, m.start(), m.end(), own):
                    return Evidence(statement, src, where, sentence, rule)
    low = [lb for lb in item.labels if regex_any(patterns, lb)]
    if low:
        return Evidence(statement, src, "labels", low[0], rule)
    if extra:  # set by an engine check (platform paths, external references): the files or flags it read
        paths = [f.path for f in item.files if extra == "platform-paths"][:3]
        return Evidence(statement, src, "files" if paths else "analysis", ", ".join(paths) or extra, f"{rule} ({extra})")
    return None


def stated_risks(ai: AnalysedItem) -> list[str]:
    """The item's risk labels that have an evidence record: the ones a report may state."""
    return [rid for rid in ai.analysis.risk_labels if risk_evidence(ai, rid) is not None]


def regex_any(patterns: tuple[re.Pattern[str] | None, ...], text: str) -> bool:
    return any(p is not None and p.search(text) for p in patterns[:2])
