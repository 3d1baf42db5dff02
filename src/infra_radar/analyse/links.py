"""Relations between items beyond explicit references: same change, follow-up chains, same mechanism.

- Same-change duplicates: near-identical titles (tags, release-branch and cherry-pick words removed)
  AND overlapping changed files — the same fix opened against main and a release branch.
- Follow-up chains: numbered parts of one split change ("[1/N]", "part 2", "PR 2 of 4").
- Same mechanism elsewhere: items of other repositories sharing rare distinctive terms (identifiers
  in code spans, CamelCase / snake_case names), weighted by an IDF over the store.

Pure functions over titles, file sets and term sets; links.toml holds every threshold and word list.
The store supplies the candidates (store/ledger.py) and the pipeline joins the two.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import chain
from typing import Any

from ..config import Settings, load_rule_file
from ..models import Link

__all__ = ["Change", "ChangeIndex", "Part", "RelationRules", "chain_links", "compile_relation_rules", "distinctive_terms",
           "duplicate_links", "file_overlap", "load_relation_rules", "mechanism_links", "part_of",
           "same_change", "title_key", "title_similarity"]


@dataclass(slots=True)
class RelationRules:
    """The [terms], [duplicates] and [chains] tables of links.toml, compiled."""

    min_length: int
    max_per_item: int
    max_chars: int
    max_df: int
    min_score: float
    min_shared: int
    max_df_title: int
    max_links: int
    stop: frozenset[str]
    min_title_similarity: float
    min_file_overlap: float
    title_noise: re.Pattern[str] | None
    undoes: re.Pattern[str] | None
    min_stem_similarity: float
    min_stem_similarity_open: float
    part_markers: list[re.Pattern[str]]
    common_api: frozenset[str] = frozenset()  # library names every project uses: never evidence alone
    specific_underscores: int = 2  # a snake_case term with this many underscores names one mechanism
    specific_length: int = 14  # ... or a single-word (CamelCase) term this long
    max_per_kind: int = 16  # related items of one kind an item lists (the nearest), the rest counted
    max_compared: int = 64  # similar-titled PRs compared as duplicates of one item at most (the nearest)


def compile_relation_rules(data: Mapping[str, Any]) -> RelationRules:
    """Compile the relation tables of a links.toml."""
    terms, dups, chains = data.get("terms", {}), data.get("duplicates", {}), data.get("chains", {})
    related = data.get("related", {})
    noise = dups.get("title_noise", [])
    return RelationRules(
        min_length=int(terms.get("min_length", 6)), max_per_item=int(terms.get("max_per_item", 40)),
        max_chars=int(terms.get("max_chars", 2000)),
        max_df=int(terms.get("max_df", 20)), min_score=float(terms.get("min_score", 11.0)),
        min_shared=int(terms.get("min_shared", 2)), max_df_title=int(terms.get("max_df_title", 8)),
        max_links=int(terms.get("max_links", 5)),
        stop=frozenset(w.lower() for w in terms.get("stop", [])),
        min_title_similarity=float(dups.get("min_title_similarity", 0.85)),
        min_file_overlap=float(dups.get("min_file_overlap", 0.5)),
        title_noise=re.compile("|".join(f"(?:{p})" for p in noise), re.I) if noise else None,
        undoes=re.compile("|".join(f"(?:{p})" for p in undo), re.I) if (undo := dups.get("undoes", [])) else None,
        min_stem_similarity=float(chains.get("min_stem_similarity", 0.4)),
        min_stem_similarity_open=float(chains.get("min_stem_similarity_open", 0.7)),
        part_markers=[re.compile(p, re.I) for p in chains.get("part_markers", [])],
        common_api=frozenset(w.lower() for w in terms.get("common_api", [])),
        specific_underscores=int(terms.get("specific_underscores", 2)),
        specific_length=int(terms.get("specific_length", 14)),
        max_per_kind=max(1, int(related.get("max_per_kind", 16))),
        max_compared=max(1, int(related.get("max_compared", 64))))


def specific(term: str, rules: RelationRules) -> bool:
    """A term that names one mechanism (`forced_max_seqlen`, `kvcacherecvingthread`), not a library API
    or a common compound (`max_workers`, `threadpoolexecutor`)."""
    if term in rules.common_api:
        return False
    if "_" in term:
        return term.count("_") >= rules.specific_underscores
    return len(term) >= rules.specific_length


def load_relation_rules(settings: Settings) -> RelationRules:
    """links.toml's relation tables (the user's rules_dir copy replacing tables)."""
    return compile_relation_rules(load_rule_file("links", settings))


# --- distinctive terms -----------------------------------------------------------------------------

# CamelCase (FlashComm, KVCacheSpec) or snake_case (npu_fused_infer_attention_score) names, in code spans
# or prose; a name touching "/" or "-" is part of a path, URL or hyphenated word, not an identifier.
_NAME = re.compile(r"(?<![\w/-])(?:[A-Za-z][a-z0-9]*(?:[A-Z][A-Za-z0-9]*)+|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)"
                   r"(?![\w/-])")


def _prose(body: str) -> str:
    """The body without fenced blocks (logs and benchmark output name everything)."""
    return " ".join(body.split("```")[::2]) if "```" in body else body


def distinctive_terms(title: str, body: str, rules: RelationRules) -> list[str]:
    """Candidate mechanism terms of an item (lower-case), title first, at most max_per_item."""
    out: dict[str, None] = {}
    # The description's opening says what the change is about; later text is logs, test commands and
    # long per-file lists that name everything.
    for text in (title, _prose((body or "")[: rules.max_chars])):
        for m in _NAME.finditer(text):  # not findall: a long description stops at max_per_item terms
            word = m.group(0)
            if word.isupper() and "_" not in word:
                continue  # an upper-case word (RUNNING, HTTP2), not a CamelCase name
            term = word.strip("_").lower()
            if len(term) >= rules.min_length and term not in rules.stop:
                out.setdefault(term, None)
                if len(out) >= rules.max_per_item:
                    return list(out)
    return list(out)


def idf(df: int, total: int) -> float:
    """Inverse document frequency of a term found in `df` of `total` items."""
    return math.log((total + 1) / (df + 0.5))


def mechanism_links(own: set[str], title_terms: set[str], candidates: Mapping[tuple[str, int], set[str]],
                    df: Mapping[str, int], total: int, rules: RelationRules,
                    titles: Mapping[tuple[str, int], str] | None = None) -> list[Link]:
    """Items of other repositories sharing rare terms with this one, best first, above the threshold.

    `candidates` maps (repo, number) to the rare terms it shares; `titles` gives their titles."""
    rare = {t for t in own if 2 <= df.get(t, 0) <= rules.max_df}
    titles = titles or {}
    scored = []
    for (repo, number), terms in candidates.items():
        shared = rare & terms
        if not shared:
            continue
        score = sum(idf(df[t], total) for t in shared)
        if len(shared) < rules.min_shared:
            # one term is evidence only when it names both changes: in both titles, and rarer still
            theirs = set(distinctive_terms(titles.get((repo, number), ""), "", rules))
            if any(df[t] <= rules.max_df_title for t in shared & title_terms & theirs):
                scored.append((score, repo, number, sorted(shared)))
        elif score >= rules.min_score and any(specific(t, rules) for t in shared):
            # several shared terms link only when one of them names a mechanism, not a library or a common word
            scored.append((score, repo, number, sorted(shared, key=lambda t: (df[t], t))))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    return [Link("same-mechanism", repo, number, detail=", ".join(shared[:4]))
            for _, repo, number, shared in scored[: rules.max_links]]


# --- same-change duplicates ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Change:
    """A PR as duplicate and chain finding sees it."""

    number: int
    title: str
    files: frozenset[str] = frozenset()


_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]+")
_MIN_EXACT = 12  # shorter normalised titles ("fix typo") are not evidence of the same change
_MAX_KEYS = 1024  # distinct similar titles one duplicate look-up looks at (the real history: at most 42 PRs)


def title_key(title: str, rules: RelationRules) -> str:
    """A title as the change it names: tags, branch and cherry-pick words removed, lower-case."""
    text = title
    for _ in range(2):  # twice: a "type:" prefix is only at the start once the [Tag]s are gone
        text = rules.title_noise.sub(" ", text) if rules.title_noise else text
    return _SPACE.sub(" ", _PUNCT.sub(" ", text.lower())).strip()


def title_similarity(a: str, b: str) -> float:
    """Similarity of two title keys in [0, 1] (difflib ratio)."""
    return SequenceMatcher(None, a, b, autojunk=False).ratio() if a and b else 0.0


def file_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """Jaccard overlap of two sets of changed paths (0 when either is empty)."""
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa and sb else 0.0


def _token_jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def same_change(a: Change, b: Change, rules: RelationRules) -> bool:
    """Near-identical titles and overlapping files (equal titles suffice when files are unknown)."""
    if rules.undoes and bool(rules.undoes.search(a.title)) != bool(rules.undoes.search(b.title)):
        return False  # a revert of a change is not that change again
    ka, kb = title_key(a.title, rules), title_key(b.title, rules)
    if len(ka) < 12 or title_similarity(ka, kb) < rules.min_title_similarity:
        return False
    if not a.files or not b.files:
        return ka == kb
    return file_overlap(a.files, b.files) >= rules.min_file_overlap


def duplicate_links(item: Change, candidates: Iterable[Change], repo: str, rules: RelationRules) -> list[Link]:
    """Candidates (same repository, files loaded) that are the same change as `item`."""
    return [Link("duplicate", repo, other.number, detail=other.title) for other in candidates
            if other.number != item.number and same_change(item, other, rules)]


# --- follow-up chains ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Part:
    """Where a title says it is a part of a split change."""

    index: int
    total: int | None  # None for "N" or unstated
    stem: str  # the title key without the marker
    prefix: str = ""  # the title key of the words before the marker ("clean legacy code path")


def part_of(title: str, rules: RelationRules) -> Part | None:
    """The part marker of a title ("[2/4] ...", "... part 3"), or None."""
    for pattern in rules.part_markers:
        m = pattern.search(title)
        if m is None:
            continue
        total = m.groupdict().get("n")
        if len(m.group("i")) > 6 or (total and len(total) > 6):
            continue  # "[99999999999999999999/2]" is not a part marker
        stem = title_key(title[: m.start()] + " " + title[m.end():], rules)
        prefix = title_key(title[: m.start()], rules)
        return Part(int(m.group("i")), int(total) if total and total.isdigit() else None, stem, prefix)
    return None


def _leading(a: str, b: str) -> int:
    """How many leading words two stems share ("split scheduler move ..." and "split scheduler remove ...")."""
    n = 0
    for x, y in zip(a.split(), b.split(), strict=False):
        if x != y:
            break
        n += 1
    return n


def _same_chain(a: Part, b: Part, rules: RelationRules) -> bool:
    """Same stated total and similar stems; without a shared total, a stricter bar (or the same prefix)."""
    if a.total is not None and b.total is not None and a.total != b.total:
        return False
    if len(a.prefix.split()) >= 2 and a.prefix == b.prefix:
        return True
    ta, tb = set(a.stem.split()), set(b.stem.split())
    if a.total is not None and a.total == b.total:  # one title may only add detail to the other's
        contained = len(ta & tb) / min(len(ta), len(tb)) if ta and tb else 0.0
        return (_token_jaccard(ta, tb) >= rules.min_stem_similarity or _leading(a.stem, b.stem) >= 2
                or (contained >= 0.8 and len(ta & tb) >= 2))
    return _token_jaccard(ta, tb) >= rules.min_stem_similarity_open or _leading(a.stem, b.stem) >= 3


def chain_links(item: Change, pool: Iterable[Change], repo: str, rules: RelationRules) -> list[Link]:
    """The other parts of the split change `item` belongs to, in part order."""
    own = part_of(item.title, rules)
    if own is None:
        return []
    parts = []
    for other in pool:
        theirs = part_of(other.title, rules) if other.number != item.number else None
        if theirs is not None and theirs.index != own.index and _same_chain(own, theirs, rules):
            total = f"/{theirs.total}" if theirs.total else ""
            parts.append((theirs.index, other.number, f"part {theirs.index}{total}: {other.title}"))
    return [Link("follow-up", repo, number, detail=detail) for _, number, detail in sorted(parts)]


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
    """At most `most` links of each kind, the nearest to `number` (same repository first), in their given
    order; and per kind, how many were left out."""
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
            if part.index != own.index and _same_chain(own, part, self.rules):
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
