"""One change, wherever it landed: items of one report that are the same story, and which is which.

A PR on main and its backport on a release branch, a `[cherry-pick]` of it, a revert and what it reverts,
two PRs with the same title: the report shows them together, the original first. Members are found among
the report's own items by
- explicit links: a cherry-pick / backport reference from one to the other (refs, links.toml);
- the title as the change it names (links.title_key: tags, branch and cherry-pick words removed), equal;
- a revert ("Revert \"Title\"", links.toml [duplicates] undoes) whose inner title is another member's;
- a revert naming the commit it reverts ("This reverts commit SHA", git revert's message).

Roles: `revert` (the title undoes, or it names the reverted commit), `backport` (on a release branch only, or marked as a pick, while
another member is on the default branch), `original` (the first member on the default branch), `same-title`
(the rest). Pure: no store. The undo words and title noise come from links.toml; the "(from #N)" and
"This reverts commit" forms are the tools' own fixed output, kept here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..models import AnalysedItem
from .links import RelationRules, title_key

__all__ = ["Story", "one_per_story", "stories"]

DEFAULT_BRANCHES = ("main", "master")
_QUOTED = re.compile(r'^\W*(?:\[[^\]]*\]\s*)*(?:revert|reapply|re-land|reland)\b\s*:?\s*["“\'`]?(?P<inner>.+?)["”\'`]?'
                     r'\s*$', re.I)
_PICK = re.compile(r"\bcherry[- ]?pick(?:ed)?\b|\bback[- ]?port(?:ed)?\b", re.I)
# vllm-ascend's picks name their origin in the title: "[Cherry-pick][releases/v0.23.0] Fix x (from #14167)"
_FROM = re.compile(r"\(\s*(?:from|of|cherry[- ]?picked from|backport of)\s+#(\d{1,10})\s*\)", re.I)
_PICK_LINKS = ("cherry-pick", "backport")
_REVERTS_SHA = re.compile(r"\bThis reverts commit ([0-9a-f]{7,40})\b")  # git revert's own message
_MIN_KEY = 12  # shorter title keys ("fix typo") are not evidence of one change


@dataclass(slots=True)
class Story:
    """The members of one story (refs in display order, the original first) and each member's role."""

    refs: list[str] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)
    branches: dict[str, list[str]] = field(default_factory=dict)
    most: int = 0  # how many members a row names (links.toml [related] max_per_kind; 0: all)

    def listed(self) -> tuple[list[str], int]:
        """The members a row names (the first `most`, the original first) and how many others there are: a
        story of four hundred same-titled PRs costs each of its rows a short line, not four hundred names."""
        if not self.most or len(self.refs) <= self.most:
            return self.refs, 0
        return self.refs[: self.most], len(self.refs) - self.most


def _on_default(ai: AnalysedItem) -> bool:
    return not ai.item.branches or any(b in DEFAULT_BRANCHES for b in ai.item.branches)


def _role(ai: AnalysedItem, undoes: re.Pattern[str] | None, linked_pick: bool, any_default: bool,
          reverts: bool = False) -> str:
    if reverts or (undoes is not None and undoes.search(ai.item.title)):
        return "revert"
    if any_default and (not _on_default(ai) or linked_pick or _PICK.search(ai.item.title)):
        return "backport"
    return "same-title"


def stories(items: list[AnalysedItem], rules: RelationRules) -> dict[str, Story]:
    """Each item ref of `items` that belongs to a story of two or more members -> its Story (shared)."""
    changes = [ai for ai in items if ai.item.number is not None and ai.item.kind in ("pr", "commit")]
    by_ref = {ai.item.ref: ai for ai in changes}
    parent = {ref: ref for ref in by_ref}

    def root(ref: str) -> str:
        while parent[ref] != ref:
            parent[ref] = parent[parent[ref]]
            ref = parent[ref]
        return ref

    def join(a: str, b: str) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra

    picked: set[str] = set()
    reverting: set[str] = set()
    by_key: dict[tuple[str, str], str] = {}
    by_sha = {(ai.item.repo.lower(), ai.item.merge_commit[:7]): ref for ref, ai in by_ref.items() if ai.item.merge_commit}
    for ref, ai in by_ref.items():
        for link in ai.analysis.links:
            other = f"{link.repo}#{link.number}" if link.repo and link.number is not None else ""
            if link.kind in _PICK_LINKS and other in by_ref and other != ref:
                join(other, ref)
                picked.add(ref)
        for m in _REVERTS_SHA.finditer(ai.item.body[:20_000]):
            undone = by_sha.get((ai.item.repo.lower(), m.group(1)[:7]))
            if undone is not None and undone != ref:
                join(undone, ref)
                reverting.add(ref)
        origin = _FROM.search(ai.item.title)
        other = f"{ai.item.repo}#{origin.group(1)}" if origin else ""
        if other in by_ref and other != ref:
            join(other, ref)
            picked.add(ref)
        inner = _QUOTED.match(ai.item.title) if rules.undoes is not None and rules.undoes.search(ai.item.title) \
            else None
        key = title_key(_FROM.sub(" ", inner["inner"] if inner else ai.item.title), rules)
        if len(key) >= _MIN_KEY:  # reverts join by the title they undo
            found = by_key.setdefault((ai.item.repo.lower(), key), ref)
            if found != ref:
                join(found, ref)
    groups: dict[str, list[str]] = {}
    for ref in by_ref:
        groups.setdefault(root(ref), []).append(ref)
    out: dict[str, Story] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        any_default = any(_on_default(by_ref[r]) for r in members)
        roles = {r: _role(by_ref[r], rules.undoes, r in picked, any_default, r in reverting) for r in members}
        firsts = sorted((r for r in members if roles[r] == "same-title"),
                        key=lambda r: (not _on_default(by_ref[r]), _when(by_ref[r]), r))
        if firsts:
            roles[firsts[0]] = "original"
        order = {"original": 0, "same-title": 1, "backport": 2, "revert": 3}
        refs = sorted(members, key=lambda r: (order[roles[r]], _when(by_ref[r]), r))
        story = Story(refs, roles, {r: list(by_ref[r].item.branches) for r in members}, rules.max_per_kind)
        for r in members:
            out[r] = story
    return out


def _when(ai: AnalysedItem) -> str:
    return ai.item.when.isoformat() if ai.item.when else "9999"


def one_per_story(items: list[AnalysedItem], story_of: dict[str, Story]
                  ) -> tuple[list[AnalysedItem], dict[str, list[AnalysedItem]]]:
    """(the items, one per story: the first of each in `items`' order, and every item of none; ref of each kept
    item -> the other members of its story that follow it in `items`)."""
    kept: list[AnalysedItem] = []
    others: dict[str, list[AnalysedItem]] = {}
    lead: dict[int, str] = {}
    for ai in items:
        story = story_of.get(ai.item.ref)
        if story is None or id(story) not in lead:
            kept.append(ai)
            if story is not None:
                lead[id(story)] = ai.item.ref
        else:
            others.setdefault(lead[id(story)], []).append(ai)
    return kept, others

