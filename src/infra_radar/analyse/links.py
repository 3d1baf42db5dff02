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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import Settings, load_rule_file, load_rules_in
from ..config import number as checked
from ..models import Link

__all__ = ["Change", "Part", "RelationRules", "chain_links", "compile_relation_rules", "distinctive_terms",
           "duplicate_links", "file_overlap", "load_relation_rules", "mechanism_links", "part_of",
           "same_change", "same_chain", "title_key", "title_similarity"]


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
    """Compile the relation tables of a links.toml; every number checked by name (a finite number in range)."""
    terms, dups, chains = data.get("terms", {}), data.get("duplicates", {}), data.get("chains", {})
    related = data.get("related", {})
    noise = dups.get("title_noise", [])

    def whole(table: Mapping[str, Any], name: str, key: str, default: int, low: int = 0) -> int:
        return int(checked(table.get(key, default), f"[{name}] {key}", "links.toml", low, 10**9, whole=True))

    def share(table: Mapping[str, Any], name: str, key: str, default: float, high: float = 1.0) -> float:
        return checked(table.get(key, default), f"[{name}] {key}", "links.toml", 0.0, high)

    return RelationRules(
        min_length=whole(terms, "terms", "min_length", 6), max_per_item=whole(terms, "terms", "max_per_item", 40),
        max_chars=whole(terms, "terms", "max_chars", 2000), max_df=whole(terms, "terms", "max_df", 20),
        min_score=share(terms, "terms", "min_score", 11.0, 1e9), min_shared=whole(terms, "terms", "min_shared", 2),
        max_df_title=whole(terms, "terms", "max_df_title", 8), max_links=whole(terms, "terms", "max_links", 5),
        stop=frozenset(w.lower() for w in terms.get("stop", [])),
        min_title_similarity=share(dups, "duplicates", "min_title_similarity", 0.85),
        min_file_overlap=share(dups, "duplicates", "min_file_overlap", 0.5),
        title_noise=re.compile("|".join(f"(?:{p})" for p in noise), re.I) if noise else None,
        undoes=re.compile("|".join(f"(?:{p})" for p in undo), re.I) if (undo := dups.get("undoes", [])) else None,
        min_stem_similarity=share(chains, "chains", "min_stem_similarity", 0.4),
        min_stem_similarity_open=share(chains, "chains", "min_stem_similarity_open", 0.7),
        part_markers=[re.compile(p, re.I) for p in chains.get("part_markers", [])],
        common_api=frozenset(w.lower() for w in terms.get("common_api", [])),
        specific_underscores=whole(terms, "terms", "specific_underscores", 2),
        specific_length=whole(terms, "terms", "specific_length", 14),
        max_per_kind=whole(related, "related", "max_per_kind", 16, low=1),
        max_compared=whole(related, "related", "max_compared", 64, low=1))


def specific(term: str, rules: RelationRules) -> bool:
    """A term that names one mechanism (`forced_max_seqlen`, `kvcacherecvingthread`), not a library API
    or a common compound (`max_workers`, `threadpoolexecutor`)."""
    if term in rules.common_api:
        return False
    if "_" in term:
        return term.count("_") >= rules.specific_underscores
    return len(term) >= rules.specific_length


@lru_cache(maxsize=4)
def relation_rules_in(rules_dir: Path | None) -> RelationRules:
    """links.toml's relation tables with `rules_dir`'s tables over them, compiled once per directory (a site
    build writes hundreds of weekly reports)."""
    return compile_relation_rules(load_rules_in("links", rules_dir))


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


def same_chain(a: Part, b: Part, rules: RelationRules) -> bool:
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
        if theirs is not None and theirs.index != own.index and same_chain(own, theirs, rules):
            total = f"/{theirs.total}" if theirs.total else ""
            parts.append((theirs.index, other.number, f"part {theirs.index}{total}: {other.title}"))
    return [Link("follow-up", repo, number, detail=detail) for _, number, detail in sorted(parts)]
