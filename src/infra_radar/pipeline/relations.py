"""The relation stage: the adaptation ledger's parser (analyse/ledger.py) and the cross-item link finders
(analyse/links.py) joined with the store (store/ledger.py).

`update_relations` (run by the analysis stage) rebuilds the ledger rows and distinctive terms of changed
items; `related_of` gathers an item's duplicates, chain parts, same-mechanism items and adaptations for the
card and the daily radar. The ledger parser is imported only where items are scanned: a card never compiles
its patterns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ..analyse.links import (
    Change,
    RelationRules,
    distinctive_terms,
    load_relation_rules,
    mechanism_links,
)
from ..analyse.related import ChangeIndex
from ..analyse.versions import scan_version
from ..config import Settings
from ..models import AnalysedItem, Analysis, Item, Link
from ..store import ledger as store
from ..store import queries as store_queries

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from ..analyse.ledger import LedgerRules
    from ..store.reader import Reader

__all__ = ["Related", "RelationScan", "batch_cache", "related_links", "related_of", "update_relations",
           "upstream_stub"]

def _scan(item: store.ScanItem, rules: LedgerRules, relations: RelationRules) -> store.ScanResult:
    from ..analyse.ledger import parse_adaptations

    result = store.ScanResult(item.id, item.content_hash)
    if item.number is None:
        return result  # commits and releases: nothing can link to them by number
    result.terms = distinctive_terms(item.title, item.body, relations)
    if item.kind == "pr":
        found = parse_adaptations(item.title, item.body, item.repo, rules, item.files)
        result.adaptations = [(a.upstream, a.number, a.files, a.how) for a in found]
    return result


@dataclass(slots=True)
class RelationScan:
    """The relation rules compiled once and their version: scans items for the ledger and terms."""

    rules: LedgerRules
    relations: RelationRules
    version: str
    wanted: set[str]  # downstream repositories (lower case): their PRs' changed paths complete ledger files

    @classmethod
    def load(cls, settings: Settings) -> RelationScan:
        from ..analyse.ledger import load_ledger_rules

        rules = load_ledger_rules(settings)
        return cls(rules, load_relation_rules(settings), scan_version(settings, rules.version),
                   {p.downstream.lower() for p in rules.pairs})

    def of_item(self, item: Item, content_hash: str) -> store.ScanResult:
        """The scan of a whole stored item, as `update_relations` would make it from the store's rows."""
        paths = [f.path for f in item.files] if item.kind == "pr" and item.repo.lower() in self.wanted else []
        scan = store.ScanItem(item.id or 0, item.repo, item.number, item.kind, item.title, item.body,
                              content_hash, paths)
        return _scan(scan, self.rules, self.relations)


def update_relations(settings: Settings, engine: Engine, scan: RelationScan | None = None) -> int:
    """Rebuild ledger entries and distinctive terms of items whose content or rules changed; how many."""
    from ..store.save import save_scans

    scan = scan or RelationScan.load(settings)
    if store.count_stale(engine, scan.version) == 0:
        return 0
    count = 0
    for batch in store.stale_items(engine, scan.version, scan.wanted):
        save_scans(engine, scan.version, [_scan(item, scan.rules, scan.relations) for item in batch])
        count += len(batch)
    return count


@dataclass(slots=True)
class Related:
    """What the store says about an item beyond its own references."""

    duplicates: list[Link] = field(default_factory=list)  # same change, e.g. on a release branch
    chain: list[Link] = field(default_factory=list)  # other parts of a split change
    mechanism: list[Link] = field(default_factory=list)  # same mechanism in other repositories
    adapted: list[store.LedgerEntry] = field(default_factory=list)  # where this upstream PR was adapted
    more: dict[str, int] = field(default_factory=dict)  # link kind -> related items beyond the listed ones


def _change_index(db: Engine | Reader, repo: str, relations: RelationRules, cache: dict,
                  item: Change | None = None) -> ChangeIndex:
    """The repository's PR titles indexed (with the store's exact titles, queries.normalise_title): all of
    them for a batch, only `item`'s possible matches for one card."""
    from ..store.queries import normalise_title

    if "terms" not in cache and item is not None:  # one card: key only the titles that could match
        return ChangeIndex.around(repo, [Change(n, t) for n, t in store.pr_titles(db, repo)], relations, item,
                                  normalise_title)
    key = repo.lower()
    if key not in cache:
        cache[key] = ChangeIndex(repo, [Change(n, t) for n, t in store.pr_titles(db, repo)], relations,
                                 normalise_title)
    return cache[key]


def _duplicates(db: Engine | Reader, item: Item, index: ChangeIndex, relations: RelationRules, cache: dict,
                exact: bool) -> tuple[list[Link], int]:
    """The item's duplicates, the `max_per_kind` nearest, and how many similar titles more there are: the
    similar titles (with `exact`, the same exact title too) are compared nearest first until `max_per_kind`
    duplicates are found or `max_compared` were compared; the ones past that are counted, not compared."""
    own = Change(item.number or 0, item.title, frozenset(f.path for f in item.files))
    found = index.candidates(own, relations.max_compared, exact)
    if not found.nearest:
        return [], 0
    if "terms" in cache:  # a batch: every PR's paths of the repository, read once
        key = ("files", item.repo.lower())
        if key not in cache:
            cache[key] = store.files_of(db, item.repo, None)
        paths = cache[key]
    else:
        paths = store.files_of(db, item.repo, found.nearest)
    shown: list[int] = []
    compared = 0
    for n in found.nearest:  # nearest first, until max_per_kind are found
        if len(shown) == relations.max_per_kind:
            break
        compared += 1
        if n in found.exact or index.same_change(own, n, paths.get(n, frozenset())):
            shown.append(n)
    more = found.total - compared  # similar titles not listed: the ones past the list, compared or not
    # as listed before the cap: the exact-title ones in the store's order, then the similar ones by number
    shown.sort(key=lambda n: (0, index.order[n]) if n in found.exact else (1, n))
    return [Link("duplicate", item.repo, n, detail=index.changes[n].title) for n in shown], more


def batch_cache(db: Engine | Reader) -> dict:
    """A cache for calling related_of on many items: the ledger, the terms and (per repository) the PR
    titles and paths are read once instead of once per item."""
    return {"ledger": store.adapted_by_upstream(db), "terms": None}


def related_of(settings: Settings, db: Engine | Reader, item: Item, cache: dict | None = None,
               exact: bool = False) -> Related:
    """Duplicates, chain parts, same-mechanism items and adaptations of one stored item or upstream ref: at
    most `max_per_kind` of each kind, the nearest, the rest counted in `more`. With `exact`, the duplicates
    include the PRs of the same normalised title (as the card and the export list them)."""
    cache = {} if cache is None else cache
    if "relations" not in cache:
        cache["relations"] = load_relation_rules(settings)
    relations = cache["relations"]
    if not item.number:
        adapted = []
    elif "ledger" in cache:  # a batch: the whole ledger was read once
        adapted = cache["ledger"].get((item.repo.lower(), item.number), [])
    else:
        adapted = store.adapted_in(db, item.repo, item.number)
    related = Related(adapted=adapted[: relations.max_per_kind])
    if len(adapted) > relations.max_per_kind:  # the oldest adaptations, the rest counted
        related.more["adapted-in"] = len(adapted) - relations.max_per_kind
    if item.kind == "pr" and item.number is not None:
        index = _change_index(db, item.repo, relations, cache, Change(item.number, item.title))
        related.duplicates, more = _duplicates(db, item, index, relations, cache, exact)
        related.chain, parts = index.capped_chain(Change(item.number, item.title), relations.max_per_kind)
        related.more.update({k: n for k, n in (("duplicate", more), ("follow-up", parts)) if n})
    if item.id is not None:
        if "terms" in cache:
            if cache["terms"] is None:
                cache["terms"] = store.TermIndex(db, relations.max_df)
            near = cache["terms"].neighbours(item.id, item.repo)
        else:
            near = store.term_neighbours(db, item.id, item.repo, relations.max_df)
        title_terms = set(distinctive_terms(item.title, "", relations))
        related.mechanism = mechanism_links(set(near.terms), title_terms, near.candidates, near.df, near.total,
                                            relations, near.titles)
    return related


def related_links(settings: Settings, db: Engine | Reader, found: list[AnalysedItem],
                  until: datetime | None = None, cache: dict | None = None) -> dict[str, list[Link]]:
    """For the daily radar: each item's duplicates, chain parts, same-mechanism items and adaptations; with
    `until` (the window's end), only the items known to exist by then: a radar never links what came later.
    `cache`: a batch_cache kept across calls (a site build asks for every day)."""
    cache = batch_cache(db) if cache is None else cache
    out = {}
    for ai in found:
        rel = related_of(settings, db, ai.item, cache)
        links = [*rel.duplicates, *rel.chain, *rel.mechanism, *(e.down_link() for e in rel.adapted)]
        if links:
            out[ai.item.ref] = links
    if until is not None and out:
        known = store_queries.known_since_many(db, [(lk.repo, lk.number) for links in out.values()
                                                    for lk in links if lk.repo and lk.number is not None])

        def then(lk: Link) -> bool:
            if not lk.repo or lk.number is None:
                return True
            first = known.get((lk.repo.lower(), lk.number))
            return first is None or first < until
        out = {ref: kept for ref, links in out.items() if (kept := [lk for lk in links if then(lk)])}
    return out


def upstream_stub(repo: str, number: int) -> AnalysedItem:
    """A placeholder for an upstream PR that is not in the store: only its reference is known."""
    item = Item(repo=repo, kind="pr", key=str(number), title="", number=number, state="unknown")
    return AnalysedItem(item, Analysis(item_kind="unknown", grade="", decision=""))
