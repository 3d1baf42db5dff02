"""The pieces every weekly sentence is built from: a PR's reference (linked at its first mention), its gist
(a short, whole phrase of its own title, else its identifiers), a reported figure, a theme's reader name.

Author text reaches the report only through render/escape.py: a title piece as `text`, an identifier or a
path as `code`; what these functions return is `Md`. Nothing is ever cut with "…": a phrase too long is
replaced by a shorter one built another way.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models import AnalysedItem, PerfClaim
from .base import change_text, name, with_unit
from .clusters import Theme, _junk, _title_parts, weekly_rules
from .conclusion import central_identifiers
from .escape import Md, code, link, plain, text
from .explain import code_module

_CLAUSE = re.compile(r"\s*(?:[;；:：,，]|\s-\s|\s—\s|\s\(|\b(?:and|with|for|to avoid|when|caused by|leading to|due to|"
                     r"so that|in order to|via|by|which|that|to prevent|to fix|from|instead of)\b)\s*", re.I)


def bare_title(title: str) -> str:
    """A title without its tags and conventional-commit prefix ("[MRV2][Feature] …", "fix(x): …")."""
    return " ".join(_title_parts(title)[1].split()).strip(" .:-")


def title_phrase(title: str, limit: int) -> str:
    """The title without tags when it fits `limit`, else its first whole clause that does (or "")."""
    bare = bare_title(title)
    if len(bare) <= limit:
        return bare
    head = _CLAUSE.split(bare, maxsplit=1)[0].strip(" .")
    return head if 12 <= len(head) <= limit else ""


@dataclass
class Refs:
    """References as the report shows them: the first mention of a PR is a link, later ones plain `#N`."""

    linked: set[str] = field(default_factory=set)

    def __call__(self, ai: AnalysedItem) -> Md:
        short = f"#{ai.item.number}" if ai.item.number is not None else ai.item.key[:10]
        if ai.item.ref in self.linked:
            return Md(short)
        self.linked.add(ai.item.ref)
        return link(short, ai.item.url)

    def many(self, items: list[AnalysedItem], sep: str) -> Md:
        return Md(sep.join(self(ai) for ai in items))

    def plain(self, ai: AnalysedItem) -> Md:
        """The reference without a link (a long listing links its first few only)."""
        return Md(f"#{ai.item.number}" if ai.item.number is not None else ai.item.key[:10])

    def capped(self, links: int) -> Callable[[AnalysedItem], Md]:
        """A reference maker that links at most `links` first mentions, plain `#N` after."""
        left = [links]

        def make(ai: AnalysedItem) -> Md:
            if ai.item.ref in self.linked or left[0] <= 0:
                return self.plain(ai)
            left[0] -= 1
            return self(ai)
        return make


def fitted(refs: Refs, limit: int, tries: list[Callable[[Refs], Md]]) -> Md:
    """The first of `tries` whose text fits in `limit` characters (the last one whatever its length); only
    the links of the one kept count as mentioned."""
    made = Md("")
    for attempt in tries:
        trial = Refs(set(refs.linked))
        made = attempt(trial)
        if len(plain(made)) <= limit:  # its length as a reader sees it (escapes apart)
            break
    refs.linked = trial.linked
    return made


_NAMED: dict[int, tuple[AnalysedItem, list[str]]] = {}


def _named(ai: AnalysedItem) -> list[str]:
    """The two identifiers a PR's description is most about, junk left out; remembered per item object (a
    report asks again in every round of fitting itself to its length)."""
    hit = _NAMED.get(id(ai))
    if hit is not None and hit[0] is ai:
        return hit[1]
    if len(_NAMED) > 8192:
        _NAMED.clear()
    junk = _junk(None)
    found = [i for i in central_identifiers(ai, 4) if len(i) <= 40 and not junk.pattern.search(i)
             and i.lower() not in junk.words][:2]
    _NAMED[id(ai)] = (ai, found)
    return found


def gist(ai: AnalysedItem, t: dict[str, Any], limit: int = 60, title_ok: bool = False) -> Md:
    """What a PR does in a few words: a whole phrase of its title (in zh its title read into a Chinese clause,
    as the daily radar reads it), else its identifiers, else its module. In zh a title the rules cannot say in
    Chinese is never spliced into a sentence: it stands as a title only where `title_ok` (a key PR's own
    line), else the PR's identifiers or module say what it touches."""
    from .conclusion import Titled

    if t["lang"] == "zh":
        said = _read_zh(ai, t, limit)
        if said and not isinstance(said, Titled):
            return said
    phrase = title_phrase(ai.item.title, limit) if t["lang"] != "zh" or title_ok else ""
    if phrase:
        return text(phrase)
    ids = _named(ai)
    if ids:
        return Md(t["common"]["sep"].join(code(i) for i in ids))
    module = code_module(ai.item.files) if ai.item.files else ""
    if module and len(module) <= limit:
        return code(module)
    return text(name(t, "kinds", ai.analysis.item_kind))


def _read_zh(ai: AnalysedItem, t: dict[str, Any], limit: int) -> Md:
    """The PR's title read into one Chinese clause (render/conclusion.mechanism), the richest that fits in about
    `limit` display columns; "" when the title says nothing the rules can read."""
    from .conclusion import Titled, mechanism, title_actions, width

    read_as = title_actions(ai)
    if not read_as[0] and not read_as[1]:
        return Md("")
    said = Md("")
    for most, mods in ((6, 1), (5, 0), (4, 0), (3, 0)):
        said = mechanism(ai, t, most, mods, 1, read_as)
        if isinstance(said, Titled):  # no Chinese clause: the caller decides whether a title may stand
            return said
        if width(said) <= limit + limit // 2:
            return said
    return said


def figure(c: PerfClaim, t: dict[str, Any], context: bool = True) -> Md:
    """A reported figure: "EAGER 2475 tokens/s → 2904 tokens/s（+17.3%，Qwen3-8B）"; the model or hardware it
    was measured on when `context` (and short)."""
    metric = c.metric if len(c.metric) <= 40 else ""
    if c.before is not None and c.after is not None:
        body = f"{with_unit(c.before, c.unit)} → {with_unit(c.after, c.unit)}"
    elif c.after is not None:
        body = with_unit(c.after, c.unit)
    else:
        body = ""
    extra = [change_text(c)] if change_text(c) != "—" else []
    where = next((c.context[k] for k in ("model", "hardware") if c.context.get(k)), "") if context else ""
    if where and len(where) <= 40:
        extra.append(where)
    inner = t["common"]["paren"].format(t["common"]["comma"].join(str(text(x)) for x in extra)) if extra else ""
    head = " ".join(str(x) for x in (text(metric) if metric else "", text(body) if body else "") if x)
    return Md(f"{head}{inner}" if head else inner.strip("（）()"))


def gloss(term: str, lang: str, rules_dir: Path | None = None) -> str:
    """The glossary's reader name of a term ("MRV2" -> "Model Runner V2"), or ""."""
    entry = weekly_rules(rules_dir).get("glossary", {}).get(term.lower().strip("/").rsplit("/", 1)[-1])
    return (entry.get(lang) or entry.get("en", "")) if isinstance(entry, dict) else ""


_MOVES = ("feature", "bugfix", "refactor", "perf", "model-support", "docs", "test", "ci", "deps", "revert")


def movement(members: list[AnalysedItem], t: dict[str, Any]) -> str:
    """What the theme's PRs mostly are, as a noun: "重构", "新功能与修复", "features and fixes"."""
    w = t["weekly"]
    kinds = Counter(ai.analysis.item_kind for ai in members)
    top = [k for k, _ in sorted(kinds.items(), key=lambda kv: (-kv[1], _MOVES.index(kv[0])
                                                               if kv[0] in _MOVES else 99))]
    nouns = w["move_nouns"]
    first = nouns.get(top[0], nouns["other"])
    if kinds[top[0]] >= 0.6 * len(members) or len(top) == 1:
        return first
    second = nouns.get(top[1], nouns["other"])
    return w["move_two"].format(a=first, b=second) if second != first else first


def term_md(th: Theme) -> Md:
    """A theme's term as the report writes it: a path or identifier as code, a word as text."""
    if th.kind == "ref":
        return text(th.label.rsplit("/", 1)[-1])
    if th.kind in ("dir", "file") or "_" in th.label or "." in th.label[1:] or "/" in th.label:
        return code(th.label)
    return text(th.label)


def theme_name(th: Theme, t: dict[str, Any], rules_dir: Path | None = None,
               ubiquitous: frozenset[str] = frozenset()) -> tuple[Md, Md]:
    """A theme's name, short and whole: its shared term with the term's gloss or the topic most of its PRs
    share ("MRV2（Model Runner V2）"), and that with what they mostly are ("…：新功能与修复")."""
    w, lang = t["weekly"], t["lang"]
    term = term_md(th)
    if th.kind in ("target", "topic"):  # the target's own work, or a mechanism: its name says it ("NPU 适配")
        return term, Md(f"{term}{t['common']['colon']}{movement(th.members, t)}")
    said = gloss(th.label, lang, rules_dir)
    if not said:
        topics = Counter(x for ai in th.members for x in dict.fromkeys(ai.analysis.topics))
        common = [k for k, n in sorted(topics.items(), key=lambda kv: (-kv[1], kv[0]))
                  if n >= 0.6 * len(th.members) and k not in _PLATFORM and k not in ubiquitous]
        said = name(t, "topics", common[0]) if common else ""
    if th.kind in ("dir", "file") and not gloss(th.label, lang, rules_dir):
        # a directory names where, not what: the mechanism its PRs share leads (a glossed name stays)
        shared = _shared_topic(th, ubiquitous)
        said = name(t, "topics", shared) if shared else said
    if said.lower() == th.label.lower():
        said = ""  # "attention (attention)" says nothing more
    if said and th.kind in ("dir", "file"):
        head = Md(f"{text(said)}{t['common']['paren'].format(term)}")
        return head, Md(f"{head}{t['common']['colon']}{movement(th.members, t)}")
    frame = w[f"theme_{th.kind}"]
    head = Md(frame.format(term=term, gloss=t["common"]["paren"].format(text(said)) if said else ""))
    return head, Md(f"{head}{t['common']['colon']}{movement(th.members, t)}")


def _shared_topic(th: Theme, ubiquitous: frozenset[str]) -> str:
    """The topic (mechanism) most of a theme's PRs share, at least 60% of them, else ""."""
    topics = Counter(x for ai in th.members for x in dict.fromkeys(ai.analysis.topics))
    common = [k for k, n in sorted(topics.items(), key=lambda kv: (-kv[1], kv[0]))
              if n >= 0.6 * len(th.members) and k not in _PLATFORM and k not in ubiquitous]
    return common[0] if common else ""


# a platform tag names no theme: every PR of a platform's own repository carries it
_PLATFORM = frozenset({"npu", "ci", "docs"})
