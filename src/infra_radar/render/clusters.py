"""Weekly themes by what their PRs share, each named after that shared thing.

Every PR carries terms: the tags and distinctive words of its title, the identifiers its description is
about, the code directories and files it changes, the PRs and issues it links to (`carried`). A theme is
the PRs that share one term: each round takes the term the most still-unthemed PRs carry (weighted by
where they carry it: a title tag says more than a path segment), so every PR of a theme carries the term
the theme is named after. No theme holds more than `max_share` of the week's merged PRs, so a repository's
own name or platform tag never becomes a theme; junk (abbreviations, key=value settings, version strings,
generic words) never names one (defaults/rules/weekly.toml).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..models import AnalysedItem
from .conclusion import central_identifiers
from .explain import file_role

# --- the rules file --------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def weekly_rules(rules_dir: Path | None = None) -> dict[str, Any]:
    """defaults/rules/weekly.toml, its tables replaced by the user's rules_dir copy."""
    text = (resources.files("infra_radar") / "defaults" / "rules" / "weekly.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    user = rules_dir / "weekly.toml" if rules_dir else None
    if user is not None and os.path.lexists(user):
        from ..guard.files import RULES_BYTES, read_toml
        from ..guard.patterns import check_rule_data

        user_data = read_toml(user, RULES_BYTES)
        check_rule_data(user_data, user)
        data.update(user_data)
    return data


@dataclass(frozen=True)
class _Junk:
    words: frozenset[str]
    segments: frozenset[str]
    pattern: re.Pattern[str]


@lru_cache(maxsize=4)
def _junk(rules_dir: Path | None) -> _Junk:
    junk = weekly_rules(rules_dir).get("junk", {})
    patterns = "|".join(f"(?:{p})" for p in junk.get("patterns", [])) or r"(?!)"
    return _Junk(frozenset(w.lower() for w in junk.get("words", [])),
                 frozenset(s.lower() for s in junk.get("segments", [])), re.compile(patterns, re.I))


# --- the terms a PR carries ------------------------------------------------------------------------

# where a PR carries a term, strongest first
SOURCES = ("tag", "title", "ref", "file", "ident", "dir", "word", "family", "path")
_LEAD = re.compile(r"^\s*(?:(?P<tags>(?:\[[^\]\n]{1,60}\]\s*)+)|(?P<cc>[a-z]+)\((?P<scope>[^)\n]{1,60})\)!?:)")
_TAG = re.compile(r"\[([^\]\n]{1,60})\]")
_CONVENTIONAL = re.compile(r"^\s*(?:feat|fix|chore|docs?|refactor|perf|test|ci|build|style|misc)!?:\s*", re.I)
_COMPOUND = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z]")
_PART = re.compile(r"[_.\-]")
_FAMILY = re.compile(r"^([a-z]{3,})\d")
_DIGITS = re.compile(r"^[\d.]+$|^v\d+(?:\.\d+)*$")


@dataclass
class Carried:
    """The terms one PR carries: key -> (source, reader form)."""

    terms: dict[str, tuple[str, str]] = field(default_factory=dict)

    def add(self, key: str, source: str, surface: str) -> None:
        old = self.terms.get(key)
        if old is None or SOURCES.index(source) < SOURCES.index(old[0]):
            self.terms[key] = (source, surface)


def _words(text: str, junk: _Junk, segment: bool = False) -> list[tuple[str, str, str]]:
    """(key, surface, how) of a text's terms: each compound ("dsa_v1", "Qwen3.5", "MiniMax-M3") as `whole`,
    its parts ("dsa", "qwen3") as `part` and the family of a name with a number ("qwen" of "qwen3") as
    `family`; junk and short pieces left out."""
    stop = junk.segments | junk.words if segment else junk.words
    out: list[tuple[str, str, str]] = []
    for m in _COMPOUND.finditer(text):
        whole = m[0].rstrip(".")
        parts = [p for p in _PART.split(whole) if p]
        pieces = [(whole, "whole")] + ([(p, "part") for p in parts] if len(parts) > 1 else [])
        for piece, how in pieces:
            low = piece.lower()
            if len(low) < 3 or low in stop or _DIGITS.match(low) or junk.pattern.search(piece):
                continue
            out.append((low, piece, how))
            fam = _FAMILY.match(low)
            if fam and fam[1] not in stop:
                out.append((fam[1], piece[: len(fam[1])], "family"))
    return out


def _plain(surface: str) -> bool:
    """A dictionary word ("mapping", "precision"), not a name ("DSpark", "qwen3", "dsa_v1", "EPLB")."""
    return surface.isalpha() and surface.lower() == surface


def _title_parts(title: str) -> tuple[list[str], str]:
    """A title's tags ("[MRV2][Feature]", "[trainer, rollout]", "feat(rollout):") and the rest of it."""
    tags: list[str] = []
    rest = title
    m = _LEAD.match(title)
    if m and m["tags"]:
        tags = [t.strip() for tag in _TAG.findall(m["tags"]) for t in re.split(r"[,/|]", tag) if t.strip()]
        rest = title[m.end():]
    elif m and m["scope"]:
        tags = [t.strip() for t in m["scope"].split(",") if t.strip()]
        rest = title[m.end():]
    rest = _CONVENTIONAL.sub("", rest)
    # tags inside the title ("... [v0.23.0]") are tags too
    tags += [t.strip() for tag in _TAG.findall(rest) for t in re.split(r"[,/|]", tag) if t.strip()]
    return tags, _TAG.sub(" ", rest)


def _identifier(ident: str) -> str:
    """An identifier without call parentheses, `self.` and a trailing colon."""
    name = re.sub(r"\(.*$", "", ident.strip("` :")).removeprefix("self.")
    return name


def _module(path: str, depth: int) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) + "/" if parts else ""


_SEEN: dict[tuple[int, Path | None], tuple[AnalysedItem, Carried]] = {}


def carried(ai: AnalysedItem, rules_dir: Path | None = None) -> Carried:
    """The terms `ai` carries (see the module docstring); remembered per item object, as a weekly report
    asks for the same items' terms in every round of fitting itself to its length."""
    key = (id(ai), rules_dir)
    hit = _SEEN.get(key)
    if hit is not None and hit[0] is ai:
        return hit[1]
    if len(_SEEN) > 8192:
        _SEEN.clear()
    found = _carried(ai, rules_dir)
    _SEEN[key] = (ai, found)
    return found


def _carried(ai: AnalysedItem, rules_dir: Path | None) -> Carried:
    junk = _junk(rules_dir)
    depth = int(weekly_rules(rules_dir).get("themes", {}).get("module_depth", 3))
    out = Carried()
    tags, rest = _title_parts(ai.item.title[:400])
    for tag in tags:
        for key, surface, how in _words(tag, junk):
            out.add(f"w:{key}", "family" if how == "family" else "word" if how == "part" and _plain(surface)
                    else "tag", surface)
    for key, surface, how in _words(rest, junk):
        source = "family" if how == "family" else "word" if _plain(surface) else "title"
        out.add(f"w:{key}", source, surface)
    for ident in central_identifiers(ai, 6):
        name = _identifier(ident)
        if len(name) < 4 or junk.pattern.search(name) or name.lower() in junk.words or "/" in name:
            continue
        out.add(f"w:{name.lower()}", "ident", name)
        if "." in name.strip("."):
            tail = name.rsplit(".", 1)[1]
            if len(tail) >= 4 and not junk.pattern.search(tail) and tail.lower() not in junk.words:
                out.add(f"w:{tail.lower()}", "ident", tail)
    code = [f for f in ai.item.files if file_role(f.path) not in ("tests", "docs", "config")]
    for f in ai.item.files:
        for key, surface, _how in _words(f.path.replace("/", " "), junk, segment=True):
            out.add(f"w:{key}", "path", surface)
    for f in code:
        module = _module(f.path, depth)
        while module.count("/") >= 2:  # "vllm_ascend/" alone is the whole package, never a theme
            out.add(f"d:{module}", "dir", module)
            module = module[: module[:-1].rfind("/") + 1]
    for f in sorted(code, key=lambda f: (-((f.additions or 0) + (f.deletions or 0)), f.path))[:2]:
        out.add(f"f:{f.path}", "file", f.path)
    own = f"{ai.item.repo}#{ai.item.number}" if ai.item.number is not None else ""
    if own:
        out.add(f"r:{own}", "ref", own)
    for link in ai.analysis.links:
        if link.ref and link.ref != own and link.kind in ("references", "cherry-pick", "follow-up", "duplicate",
                                                          "fixes", "backport", "supersedes"):
            out.add(f"r:{link.ref}", "ref", link.ref)
    return out


# --- themes ----------------------------------------------------------------------------------------


@dataclass
class Theme:
    """PRs sharing one term: its key ("w:mrv2", "d:vllm_ascend/attention/", "f:…", "r:owner/name#N"; "t:ascend",
    the PRs written for the target in a repository that is not its own; "c:moe", PRs first about one mechanism
    that no term holds), the
    reader form of the term, the members (ranked order kept) and the PRs of the week before carrying it."""

    key: str
    label: str
    members: list[AnalysedItem]
    before: int | None = None  # None: no week before to compare with
    also: list[str] = field(default_factory=list)  # other terms most members share

    @property
    def kind(self) -> str:
        return {"w": "word", "d": "dir", "f": "file", "r": "ref", "t": "target", "c": "topic"}[self.key[0]]


_PRIORITY = {"P0": 1.5, "P1": 1.2, "P2": 0.8}


def _score(key: str, free: list[int], bags: list[Carried], items: list[AnalysedItem], weights: dict[str, float],
           named: float, depth: int) -> float:
    if key[2:] in _COMPONENTS[0]:
        return 0.0  # a component ("rollout", "megatron") says where a change is, not what mechanism it changes
    sources = [bags[i].terms[key][0] for i in free]
    if key.startswith("w:") and sum(s not in ("path", "dir") for s in sources) < named * len(sources):
        return 0.0  # a word only some file names carry: the directory or file says it better
    total = sum(weights.get(s, 1.0) * _PRIORITY.get(items[i].analysis.priority, 0.5)
                for s, i in zip(sources, free, strict=True))
    if key.startswith("d:"):  # a shallow directory ("pkg/worker/") says less than a deep one
        total *= min(1.0, (key.count("/") - 1) / max(depth - 1, 1))
    if key.startswith("w:") and _model_word(key[2:]):  # a model's name says whose, not what changed
        total *= _MODEL_FACTOR[0]
    return total


_MODEL_FACTOR = [1.0]
_COMPONENTS: list[frozenset[str]] = [frozenset()]
_MODELS: set[str] = set()


def _model_word(word: str) -> bool:
    """Whether a theme term is a model family's name or a numbered member of one ("qwen", "qwen3", "minimax")
    (checklists.toml model_families)."""
    if not _MODELS:
        from ..config import rule_data

        _MODELS.update(f.lower() for f in rule_data("checklists").get("model_families", []))
    base = re.sub(r"[\d.\-_]+.*$", "", word)
    return word in _MODELS or base in _MODELS


def _label(key: str, members: list[int], bags: list[Carried]) -> str:
    """The reader form of a term: its most common surface among the members, titles first."""
    forms = Counter()
    for i in members:
        source, surface = bags[i].terms[key]
        forms[surface] += 3 if source in ("tag", "title") else 1
    return max(forms.items(), key=lambda kv: (kv[1], kv[0]))[0]


def themes(items: list[AnalysedItem], merged: int, before: list[AnalysedItem] | None = None,
           rules_dir: Path | None = None, most: int | None = None) -> list[Theme]:
    """Disjoint themes over `items` (ranked order kept inside each), in the order they were found.

    `merged` is the week's merged-PR count a theme's share is measured against; `before` the previous
    week's items, counted per theme term for the week-over-week figure.
    """
    rules = weekly_rules(rules_dir).get("themes", {})
    share, least = float(rules.get("max_share", 0.4)), int(rules.get("min_size", 2))
    weights = {k: float(v) for k, v in rules.get("weights", {}).items()}
    _MODEL_FACTOR[0] = float(rules.get("model_factor", 1.0))
    _COMPONENTS[0] = frozenset(x.lower() for x in rules.get("components", []))
    named = float(rules.get("named_share", 0.5))
    depth = int(rules.get("module_depth", 3))
    floor = float(rules.get("min_score", 5.0))
    if most is None:
        per = max(int(rules.get("prs_per_theme", 10)), 1)
        most = max(int(rules.get("least", 2)), min(int(rules.get("most", 6)), len(items) // per))
    cap = int(share * (merged or len(items)))  # below `least` (a week of four PRs): no theme at all
    bags = [carried(ai, rules_dir) for ai in items]
    index: dict[str, list[int]] = {}
    for i, bag in enumerate(bags):
        for key in bag.terms:
            if not key.startswith("r:") or sum(1 for b in bags if key in b.terms) >= least:
                index.setdefault(key, []).append(i)
    assigned: set[int] = set()
    found: list[Theme] = []
    spread = Counter(x for ai in items for x in set(ai.analysis.topics))
    ubiquitous = frozenset(k for k, n in spread.items() if n > 0.4 * len(items))
    while len(found) < most:
        best: tuple[float, int, int, str] | None = None
        for key, members in index.items():
            free = [i for i in members if i not in assigned]
            if len(free) < least or len(free) > cap:
                continue
            score = _score(key, free, bags, items, weights, named, depth)
            rank = (score, len(free), -SOURCES.index(bags[free[0]].terms[key][0]), key)
            if score >= floor and (best is None or rank > best):
                best = rank
        if best is None:
            break
        key = best[3]
        free = [i for i in index[key] if i not in assigned]
        if key[:2] in ("d:", "f:"):  # a directory holds several mechanisms: its theme keeps the one most share
            free = _one_mechanism(free, items, rules, ubiquitous, least)
            if not free:  # no mechanism most of its PRs are about: where they are is no story
                del index[key]
                continue
        assigned.update(free)
        also = Counter(k for i in free for k in bags[i].terms if k != key and k.startswith("w:"))
        found.append(Theme(key, _label(key, free, bags), [items[i] for i in free],
                           also=[bags[free[0]].terms[k][1] for k, n in also.most_common(3) if n >= 2
                                 and n >= 0.6 * len(free) and k in bags[free[0]].terms]))
    if before is not None:
        prior = [carried(ai, rules_dir) for ai in before]
        for th in found:
            th.before = sum(1 for bag in prior if th.key in bag.terms)
    return found


def primary_topic(ai: AnalysedItem, generic: frozenset[str]) -> str:
    """The mechanism a PR is first about: its first topic that is no platform, no kind of work and no property
    every change may have (weekly.toml [themes] platform_topics, generic_topics); "" when it has none."""
    return next((x for x in ai.analysis.topics if x not in generic), "")


def generic_topics(rules: dict[str, Any]) -> frozenset[str]:
    return frozenset([*rules.get("platform_topics", ["npu", "ci", "docs"]), *rules.get("generic_topics", [])])


def _one_mechanism(free: list[int], items: list[AnalysedItem], rules: dict[str, Any], ubiquitous: frozenset[str],
                   least: int) -> list[int]:
    """The members of a directory's theme whose mechanism (their first topic that says one, `primary_topic`) is
    the one most of them are first about, when at least `mechanism_share` of them are: a sparse-attention
    operator whose change also touches the fused-MoE directory is not a MoE change. The others stay free for
    another theme. None when no mechanism is that common (the directory names no theme), all of them when
    none of them is about a mechanism."""
    generic = generic_topics(rules) | ubiquitous
    firsts = Counter(p for i in free if (p := primary_topic(items[i], generic)))
    if not firsts:
        return free  # none says a mechanism (docs, CI): the directory is all there is to name them by
    topic, n = max(firsts.items(), key=lambda kv: (kv[1], kv[0]))
    if n < float(rules.get("mechanism_share", 0.6)) * len(free) or n < least:
        return []
    return [i for i in free if primary_topic(items[i], generic) == topic]


def shares_term(ai: AnalysedItem, theme: Theme, rules_dir: Path | None = None) -> bool:
    """Whether `ai` carries the term `theme` is named after (tests and checks use it)."""
    return theme.key in carried(ai, rules_dir).terms


def subgroups(th: Theme, rules_dir: Path | None = None, most: int = 3) -> list[tuple[str, list[AnalysedItem]]]:
    """Within a theme, PRs that share a second term ("SFA" among the MRV2 PRs), largest first: (the term's
    reader form, its PRs). Terms carried only in file paths, and the theme's own term, do not count."""
    bags = [carried(ai, rules_dir) for ai in th.members]
    own = th.key.removeprefix("w:")
    index: dict[str, list[int]] = {}
    for i, bag in enumerate(bags):
        for key, (source, _) in bag.terms.items():
            word = key.removeprefix("w:")
            if key.startswith("w:") and source in ("tag", "title") and own not in word and word not in own:
                index.setdefault(key, []).append(i)
    taken: set[int] = set()
    out: list[tuple[str, list[AnalysedItem]]] = []
    while len(out) < most:
        # a name ("SFA", "DeepseekV32IndexerCache") before a dictionary word of the titles ("runner")
        best = max(((len(free), sum(bags[i].terms[k][0] != "word" for i in free), k) for k, m in index.items()
                    if (free := [i for i in m if i not in taken])), default=(0, 0, ""))
        if best[0] < 2 or best[0] == len(th.members):
            break
        free = [i for i in index[best[2]] if i not in taken]
        taken.update(free)
        out.append((_label(best[2], free, bags), [th.members[i] for i in free]))
    # groups that leave most PRs outside them describe the theme worse than its PRs one by one
    return out if 2 * len(taken) >= len(th.members) else []
