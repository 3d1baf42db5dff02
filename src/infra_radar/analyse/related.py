"""Related PRs of one repository found without comparing every pair: the PR titles indexed once (grouped by
title key and exact title, the token index over keys), an item's nearest duplicate candidates and chain parts
found by bisection, and the caps that keep what an item lists linear (links.toml [related]).

The comparisons themselves (same_change, same_chain) are links.py's; this module decides which PRs get
compared, and counts the rest from group sizes.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

from ..models import Link
from .links import Change, Part, RelationRules, file_overlap, part_of, same_chain, title_key, title_similarity

__all__ = ["Candidates", "ChangeIndex", "cap_links", "nearest"]

_MIN_EXACT = 12  # shorter normalised titles ("fix typo") are not evidence of the same change
_MAX_KEYS = 1024  # distinct similar titles one duplicate look-up looks at (the real history: at most 898)


def nearest(numbers: Sequence[int], own: int, most: int) -> list[int]:
    """The `most` numbers of the sorted `numbers` closest to `own` (itself left out), closest first, the lower
    one first on a tie: found by bisection, so a group of thousands costs `most` steps, not its size."""
    at = bisect_left(numbers, own)
    low, high = at - 1, at
    while high < len(numbers) and numbers[high] == own:
        high += 1
    out: list[int] = []
    while len(out) < most and (low >= 0 or high < len(numbers)):
        if high >= len(numbers) or (low >= 0 and own - numbers[low] <= numbers[high] - own):
            out.append(numbers[low])
            low -= 1
        else:
            out.append(numbers[high])
            high += 1
    return out


def cap_links(links: Iterable[Link], number: int | None, most: int) -> tuple[list[Link], dict[str, int]]:
    """At most `most` links of each kind, the nearest to `number` by number, in their given order; and per
    kind, how many were left out."""
    links = list(links)
    by_kind: dict[str, list[int]] = {}
    for i, lk in enumerate(links):
        by_kind.setdefault(lk.kind, []).append(i)
    keep: set[int] = set()
    rest: dict[str, int] = {}
    for kind, places in by_kind.items():
        if len(places) > most:
            own = number if number is not None else 0
            near = sorted(places, key=lambda i: (abs((links[i].number or 0) - own), i))
            keep.update(near[:most])
            rest[kind] = len(places) - most
        else:
            keep.update(places)
    return [lk for i, lk in enumerate(links) if i in keep], rest


@dataclass(slots=True)
class Candidates:
    """The PRs a duplicate look-up compares: the nearest first (at most max_compared), how many candidates
    there are in all, and which of them share the item's exact title (duplicates without comparing)."""

    nearest: list[int]
    total: int
    exact: frozenset[int] = frozenset()


class ChangeIndex:
    """The PR titles of one repository, indexed once for duplicate and chain look-ups of many items.

    PRs are grouped by title key (and by `exact` key, the store's normalised title, when given), and the token
    index holds keys, not PRs: four hundred PRs with one title are one group, looked up once, and an item's
    duplicates are the nearest members of its similar groups, found by bisection. Parts of split changes are
    grouped the same way by their part signature."""

    def __init__(self, repo: str, changes: Iterable[Change], rules: RelationRules,
                 exact: Callable[[str], str] | None = None) -> None:
        self.repo, self.rules, self.exact = repo, rules, exact
        self._undo: dict[str, bool] = {}  # title -> whether it undoes another (same_change's caches)
        self._keys: dict[str, str] = {}  # title -> title key
        self._similar: dict[tuple[str, str], bool] = {}  # (key, key) -> similar enough
        self.changes = {c.number: c for c in changes}
        self.order = {n: i for i, n in enumerate(self.changes)}  # the order the store gave them in
        self.key_of = {n: title_key(c.title, rules) for n, c in self.changes.items()}
        groups: dict[str, list[int]] = defaultdict(list)
        for number, key in self.key_of.items():
            groups[key].append(number)
        self.members = {key: sorted(numbers) for key, numbers in groups.items()}
        self.key_tokens = {key: frozenset(key.split()) for key in self.members}
        self.by_token: dict[str, list[str]] = defaultdict(list)
        for key, tokens in self.key_tokens.items():
            for token in tokens:
                self.by_token[token].append(key)
        self.exact_of: dict[int, str] = {}
        self.exact_members: dict[str, list[int]] = {}
        self.joint: dict[str, Counter[str]] = defaultdict(Counter)  # exact key -> title key -> PRs having both
        if exact is not None:
            same: dict[str, list[int]] = defaultdict(list)
            for number, change in self.changes.items():
                key = exact(change.title)
                if len(key) >= _MIN_EXACT:
                    self.exact_of[number] = key
                    same[key].append(number)
                    self.joint[key][self.key_of[number]] += 1
            self.exact_members = {key: sorted(numbers) for key, numbers in same.items()}
        signed: dict[tuple, list[int]] = defaultdict(list)
        for c in self.changes.values():
            part = part_of(c.title, rules)
            if part is not None:
                signed[(part.index, part.total, part.stem, part.prefix)].append(c.number)
        self.part_groups = [(Part(*sig), sorted(numbers)) for sig, numbers in signed.items()]

    @property
    def parts(self) -> list[Change]:
        """Every PR whose title marks it a part of a split change."""
        return [self.changes[n] for _, numbers in self.part_groups for n in numbers]

    @classmethod
    def around(cls, repo: str, changes: Iterable[Change], rules: RelationRules, item: Change,
               exact: Callable[[str], str] | None = None) -> ChangeIndex:
        """An index of only the PRs that could be similar to `item` or parts of its chain: what one card needs.

        A title key's tokens are substrings of the lower-cased title, so a PR sharing the `need` tokens a
        match requires contains them as substrings: a cheap test that spares keying thousands of titles.
        `similar_titles` and `chain` of `item` answer as over the whole repository (and with `exact`, so
        does the exact-title group).
        """
        tokens = set(title_key(item.title, rules).split())
        need = math.ceil(0.6 * len(tokens) - 1e-9)
        chained = part_of(item.title, rules) is not None
        same = exact(item.title) if exact is not None else None
        word = max(same.split(), key=len, default="") if same else ""  # an exact-title match holds it
        keep = []
        for c in changes:
            low = c.title.lower()
            if (tokens and sum(t in low for t in tokens) >= need) or (
                    chained and any(p.search(c.title) for p in rules.part_markers)) or (
                    same and word in low and exact(c.title) == same):
                keep.append(c)
        return cls(repo, keep, rules, exact)

    def similar_keys(self, item: Change, limit: int | None = None) -> list[str]:
        """Title keys whose tokens overlap the item's enough to be worth a closer look (its own included)."""
        return self._similar_keys(item, limit)[0]

    def _similar_keys(self, item: Change, limit: int | None = None) -> tuple[list[str], int]:
        """similar_keys, looking at no more than `limit` candidate keys; and how many PRs hold the candidate
        keys left unlooked at (0 when every one was looked at)."""
        tokens = frozenset(self._key(item.title).split())
        # Jaccard ≥ 0.6 needs |a ∩ b| ≥ 0.6·|a|, so a match holds at least one of the item's
        # |a| - ⌈0.6·|a|⌉ + 1 rarest tokens: only their keys are candidates (prefix filtering), which
        # spares looking at the thousands of titles sharing a "fix" or an "npu".
        need = math.ceil(0.6 * len(tokens) - 1e-9)
        rarest = sorted(tokens, key=lambda t: (len(self.by_token.get(t, ())), t))[: len(tokens) - need + 1]
        seen = list(dict.fromkeys(chain.from_iterable(self.by_token.get(token, ()) for token in rarest)))
        unchecked = 0
        if limit is not None and len(seen) > limit:
            # thousands of titles that differ in a word: the first `limit` are looked at, the PRs of the others
            # are counted as similar titles not compared
            unchecked = sum(map(len, map(self.members.__getitem__, seen[limit:])))
            seen = seen[:limit]
        # Jaccard |a ∩ b| / |a ∪ b| ≥ 0.6, in whole numbers: 8·|a ∩ b| ≥ 3·(|a| + |b|)
        size, kt = len(tokens), self.key_tokens
        return [key for key in seen if 8 * len(tokens & kt[key]) >= 3 * (size + len(kt[key]))], unchecked

    def similar_titles(self, item: Change) -> list[Change]:
        """PRs whose title tokens overlap the item's enough to be worth a closer look, by number."""
        numbers = sorted(n for key in self.similar_keys(item) for n in self.members[key])
        return [self.changes[n] for n in numbers if n != item.number]

    def candidates(self, item: Change, most: int, exact: bool = False) -> Candidates:
        """The duplicate candidates of `item`: PRs of similar titles (and, with `exact`, of the same exact
        title), the `most` nearest by number first, and how many there are in all, counted from group sizes."""
        keys, unchecked = self._similar_keys(item, _MAX_KEYS)
        groups = [self.members[key] for key in keys]
        same = self.exact(item.title) if exact and self.exact is not None else None
        if same not in self.exact_members:
            same = None
        total = sum(len(g) for g in groups) + unchecked  # the title-key groups are disjoint
        if same is not None:  # the exact-title group, less the PRs the similar groups hold already
            groups.append(self.exact_members[same])
            held, keyset = self.joint[same], set(keys)
            total += len(self.exact_members[same]) - (sum(n for key, n in held.items() if key in keyset)
                                                      if len(held) < len(keys) else sum(held[key] for key in keys))
        if item.number in self.changes and (self.key_of[item.number] in keys or
                                            (same is not None and self.exact_of.get(item.number) == same)):
            total -= 1  # the item itself
        found: set[int] = set()
        if len(groups) <= 8:  # a few groups (a title repeated hundreds of times is one): bisect each
            for numbers in groups:
                found.update(nearest(numbers, item.number, most))
        else:  # many small groups: their union, sorted once
            found.update(nearest(sorted(set().union(*groups)), item.number, most))
        ordered = sorted(found, key=lambda n: (abs(n - item.number), n))[:most]
        exact_set = frozenset(n for n in ordered if same is not None and self.exact_of.get(n) == same)
        return Candidates(ordered, max(total, len(ordered)), exact_set)

    def same_change(self, item: Change, number: int, files: frozenset[str]) -> bool:
        """`same_change(item, PR number with `files`)`, its title key, revert test and title similarity
        remembered: comparing an item with hundreds of copies of one title costs a look-up each."""
        rules = self.rules
        if self._undoes(item.title) != self._undoes(self.changes[number].title):
            return False  # a revert of a change is not that change again
        ka, kb = self._key(item.title), self.key_of[number]
        if len(ka) < 12:
            return False
        if ka != kb:
            close = self._similar.get((ka, kb))
            if close is None:
                close = self._similar[(ka, kb)] = title_similarity(ka, kb) >= rules.min_title_similarity
            if not close:
                return False
        if not item.files or not files:
            return ka == kb
        return file_overlap(item.files, files) >= rules.min_file_overlap

    def _undoes(self, title: str) -> bool:
        found = self._undo.get(title)
        if found is None:
            found = self._undo[title] = bool(self.rules.undoes and self.rules.undoes.search(title))
        return found

    def _key(self, title: str) -> str:
        found = self._keys.get(title)
        if found is None:
            found = self._keys[title] = title_key(title, self.rules)
        return found

    def chain(self, item: Change, most: int | None = None) -> list[Link]:
        """The other parts of the item's split change, in part order (the `most` nearest when given)."""
        return self.capped_chain(item, most)[0]

    def capped_chain(self, item: Change, most: int | None = None) -> tuple[list[Link], int]:
        """The other parts of the item's split change, the `most` nearest by number in part order, and how
        many parts were left out. Parts with one signature are judged once, whatever their number."""
        own = part_of(item.title, self.rules)
        if own is None:
            return [], 0
        matched: list[tuple[Part, list[int]]] = []
        for part, numbers in self.part_groups:
            if part.index != own.index and same_chain(own, part, self.rules):
                matched.append((part, numbers))
        total = sum(len(numbers) - (item.number in numbers) for _, numbers in matched)
        keep = total if most is None else most
        near: set[int] = set()
        for _, numbers in matched:
            near.update(n for n in nearest(numbers, item.number, keep) if n != item.number)
        chosen = set(sorted(near, key=lambda n: (abs(n - item.number), n))[:keep])
        parts = []
        for part, numbers in matched:
            total_text = f"/{part.total}" if part.total else ""
            for n in numbers:
                if n in chosen:
                    parts.append((part.index, n, f"part {part.index}{total_text}: {self.changes[n].title}"))
        links = [Link("follow-up", self.repo, number, detail=detail) for _, number, detail in sorted(parts)]
        return links, total - len(links)
