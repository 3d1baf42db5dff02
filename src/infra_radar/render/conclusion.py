"""The one-line conclusion of an item: what changed (in the PR's own identifiers), where, the headline
number with its direction and condition, and what to do. Never the title again; shortened only at
sentence or clause boundaries.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ..analyse.porting import Applied
from ..models import AnalysedItem, PerfClaim
from .base import change_text, context_text, name, pick, with_unit
from .escape import Md, code, fmt, join
from .explain import (
    DEBRIS,
    clip,
    code_module,
    doing_sentence,
    explain_body,
    explain_rules,
    file_role,
    identifiers,
    sentences,
)

_WORD = re.compile(r"[a-z0-9]+")
_ENV = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


_TAGS = re.compile(r"\[[^\]]*\]")


def bare_title(title: str) -> str:
    """The title without its bracketed tags ("[Feature][Ops] …")."""
    return _TAGS.sub(" ", title).strip()


def echoes(text: str, title: str) -> bool:
    """True when `text` says little beyond the title: most of its words are the title's words."""
    words, head = _words(text), _words(bare_title(title))
    if not words:
        return True
    return len(words - head) <= max(2, len(words) // 4)


def central_identifiers(ai: AnalysedItem, limit: int) -> list[str]:
    """The identifiers the description is about: the most mentioned first, then by first mention."""
    explained = explain_body(ai.item.body)
    text = " ".join(t for _, t in explained.mechanism + explained.motivation)
    found = identifiers(text)
    if not found:
        return []
    counts = Counter()
    body = ai.item.body[:20000]
    for ident in found:
        counts[ident] = body.count(ident)
    order = {ident: i for i, ident in enumerate(found)}
    # a dotted or code-span name that contains a shorter one already listed says the same thing
    def weight(x: str) -> int:  # env vars, Class.attr and key=value name the change more exactly
        exact = bool(_ENV.match(x)) or "=" in x
        return min(counts[x], 5) + (2 if exact else 1 if "." in x[1:] else 0)

    ranked = sorted(found, key=lambda x: (-weight(x), order[x]))
    picked: list[str] = []
    for ident in ranked:
        inside = next((i for i, p in enumerate(picked) if p in ident), None)
        if inside is not None:  # the longer name says more: `forced_max_seqlen` over `forced_max`
            picked[inside] = ident
            continue
        if any(ident in p for p in picked):
            continue
        picked.append(ident)
    # what the title already names goes last: the conclusion should add to the title, not repeat it
    title = ai.item.title.lower()
    return sorted(picked, key=lambda x: x.lower() in title)[:limit]


def headline_claim(claims: list[PerfClaim]) -> PerfClaim | None:
    """The figure to quote: the author's first one when it moved ≥ 10%, else the largest relative change."""
    usable = [c for c in claims if c.change_pct is not None or c.ratio is not None]
    if not usable:
        return claims[0] if claims else None
    if usable[0].change_pct is not None and abs(usable[0].change_pct) >= 10:
        return usable[0]
    return max(usable, key=lambda c: abs(c.change_pct or 0))


def claim_text(c: PerfClaim, t: dict[str, Any]) -> str:
    """A figure with direction and condition: "Total Step Time 534.13 s → 397.71 s(−25.5%,Qwen3.5-35B-A3B)"."""
    if c.before is not None and c.after is not None:
        body = f"{c.metric} {with_unit(c.before, c.unit)} → {with_unit(c.after, c.unit)}"
    elif c.after is not None:
        body = f"{c.metric} {with_unit(c.after, c.unit)}"
    else:
        body = c.metric
    extra = [change_text(c)] if change_text(c) != "—" else []
    context = context_text(c.context, t)
    extra += [context] if context else []
    return body + (t["common"]["paren"].format(t["common"]["comma"].join(extra)) if extra else "")


def conclusion(ai: AnalysedItem, t: dict[str, Any], porting: list[Applied]) -> Md:
    """One line: mechanism (identifiers), where, headline number, what to do."""
    what, rest = conclusion_parts(ai, t, porting)
    return join(what + rest, t["common"]["semi"])


def conclusion_parts(ai: AnalysedItem, t: dict[str, Any], porting: list[Applied],
                     short: bool = False) -> tuple[list[Md], list[Md]]:
    """The conclusion's parts: (what changed: the author's sentence and identifiers, or the kind; the rest:
    where, headline number, what to do). Model prose may say the first better; the rest are the rules' facts.
    `short`, for the short table's one-line note: a shorter quote, no module and no porting caveat."""
    c, e = t["common"], t["explain"]
    limits = dict(explain_rules()["limits"])
    if short:
        limits["conclusion_mechanism"] = limits.get("short_mechanism", 80)
    item, a = ai.item, ai.analysis
    parts: list[Md] = []
    ids = central_identifiers(ai, int(limits["identifiers"]))
    doing = doing_sentence(item.body, item.title)
    if doing and not echoes(doing, item.title):
        quote = clip(doing, int(limits["conclusion_mechanism"]))
        parts.append(fmt(e["what_quote"], text=quote))
        extra = [i for i in ids if i not in quote][: 2 if identifiers(quote) else 3]
        if extra:
            parts.append(fmt(e["what_ids"], ids=join([code(i) for i in extra], c["sep"])))
    elif ids:
        parts.append(fmt(e["what_ids"], ids=join([code(i) for i in ids], c["sep"])))
    else:
        lead = next((s for _, block in explain_body(item.body).mechanism for s in sentences(block)
                     if not echoes(s, item.title) and not DEBRIS.search(s)), "")
        if lead:
            parts.append(fmt(e["what_quote"], text=clip(lead, int(limits["conclusion_mechanism"]))))
        else:  # no description: the files it changes say what it touches
            code_files = [f for f in item.files if file_role(f.path) not in ("tests", "docs", "config")]
            names = [f.path.rsplit("/", 1)[-1] for f in sorted(  # a version bump touches only config: name it
                code_files or item.files, key=lambda f: (-((f.additions or 0) + (f.deletions or 0)), f.path))[:3]]
            if names:
                parts.append(fmt(e["what_ids"], ids=join([code(n) for n in names], c["sep"])))
    what = len(parts)
    module = code_module(item.files) if item.files and not short else ""
    if module:
        parts.append(fmt(e["where"], module=module))
    claim = headline_claim(a.perf_claims)
    if claim:
        parts.append(fmt(e["number"], claim=claim_text(claim, t)))
    gpu = [p for p in porting if p.entry.id != "npu-native"]
    action = fmt(e["action"], decision=name(t, "decisions", a.decision))
    if gpu and not a.native and not short:  # a change already made for the target has no GPU mechanism left
        caveat = pick(gpu[0].caveat, t["lang"])
        first = re.split(r"[;；]", caveat, maxsplit=1)[0]
        action = Md(action + fmt(c["paren"], f"{pick(gpu[0].entry.name, t['lang'])}{c['colon']}{first}"))
    parts.append(action)
    if len(parts) == 1:  # nothing of its own to say: name the kind and what kind of files
        parts.insert(0, fmt(e["kind_only"], kind=name(t, "kinds", a.item_kind)))
        what = 1
    return parts[:what], parts[what:]
