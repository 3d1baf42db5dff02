"""Relations across items in the store: the adaptation ledger, distinctive terms, related-item look-ups.

Rows are rebuilt per item whenever the item's content or the relation rules change (`relation_scans`
remembers both), in one transaction per batch, like analyses (store/save.py `save_scans`). The reads are SQL
text run through a store/reader.py Reader, as in store/queries.py: `store` is a Reader or an engine.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from ..models import Link, Window
from .queries import CHUNK, IN_REPO
from .reader import Reader, reading

__all__ = ["LedgerEntry", "ScanItem", "ScanResult", "adapted_in", "adapted_in_window", "count_stale",
           "files_of", "item_id", "ledger_size", "pr_titles", "stale_ids", "stale_items",
           "term_neighbours", "TermIndex"]


@dataclass(slots=True)
class ScanItem:
    """What the relation scan reads of one item."""

    id: int
    repo: str
    number: int | None
    kind: str
    title: str
    body: str
    content_hash: str
    files: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ScanResult:
    """An item's ledger entries (upstream repo, number, files, how) and distinctive terms."""

    item_id: int
    content_hash: str
    adaptations: list[tuple[str, int, list[str], str]] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LedgerEntry:
    """Upstream PR up_repo#up_number was adapted to by downstream PR down_repo#down_number."""

    up_repo: str
    up_number: int
    down_repo: str
    down_number: int
    down_title: str
    when: datetime | None
    files: list[str]
    how: str

    @property
    def up_ref(self) -> str:
        return f"{self.up_repo}#{self.up_number}"

    def down_link(self) -> Link:
        """The downstream PR, as a link from the upstream one."""
        return Link("adapted-in", self.down_repo, self.down_number, detail=self.down_title)

    @property
    def down_ref(self) -> str:
        return f"{self.down_repo}#{self.down_number}"


_STALE = ("(relation_scans.item_id IS NULL OR relation_scans.version != :version "
          "OR relation_scans.content_hash != items.content_hash)")
_SCANNED = "FROM items LEFT OUTER JOIN relation_scans ON relation_scans.item_id = items.id WHERE " + _STALE


def count_stale(store, version: str) -> int:
    """How many items lack relations computed from their current content under these rules."""
    with reading(store) as db:
        return db.scalar("SELECT count(*) " + _SCANNED, {"version": version})


def stale_ids(store, version: str) -> set[int]:
    """Ids of the items `stale_items` would return."""
    with reading(store) as db:
        return set(db.column("SELECT items.id " + _SCANNED, {"version": version}))


def stale_items(store, version: str, with_files: set[str], batch: int = 2000) -> Iterator[list[ScanItem]]:
    """Batches of items to rescan; changed paths are loaded for PRs of the `with_files` repositories."""
    sql = ("SELECT items.id, repos.name, items.number, items.kind, items.title, items.body, items.content_hash "
           "FROM items JOIN repos ON repos.id = items.repo_id "
           "LEFT OUTER JOIN relation_scans ON relation_scans.item_id = items.id WHERE " + _STALE
           + " AND items.id > :last ORDER BY items.id LIMIT :batch")
    wanted = {r.lower() for r in with_files}
    last = 0
    while True:
        with reading(store) as db:
            found = [ScanItem(*row) for row in db.rows(sql, {"version": version, "last": last, "batch": batch})]
            need = [s.id for s in found if s.kind == "pr" and s.repo.lower() in wanted]
            paths = _paths(db, need)
        if not found:
            return
        for scan in found:
            scan.files = paths.get(scan.id, [])
        yield found
        last = found[-1].id


def _paths(db: Reader, ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    for start in range(0, len(ids), CHUNK):
        for item, path in db.rows("SELECT files.item_id, files.path FROM files WHERE files.item_id IN :ids",
                                  {"ids": ids[start:start + CHUNK]}):
            out[item].append(path)
    return out


# --- the ledger ------------------------------------------------------------------------------------

_LEDGER = ("SELECT ledger.up_repo, ledger.up_number, ledger.files, ledger.how, repos.name, items.number, "
           "items.title, items.when_at FROM ledger JOIN items ON items.id = ledger.item_id "
           "JOIN repos ON repos.id = items.repo_id ")


def _entries(db: Reader, sql: str, params: dict | None = None) -> list[LedgerEntry]:
    return [LedgerEntry(up_repo, up_number, name, number, title, db.time(when), list(db.json(paths) or []), how)
            for up_repo, up_number, paths, how, name, number, title, when in db.rows(sql, params)]


def adapted_in(store, repo: str, number: int) -> list[LedgerEntry]:
    """Where upstream PR repo#number was adapted downstream, oldest first."""
    with reading(store) as db:
        return _entries(db, _LEDGER + "WHERE lower(ledger.up_repo) = :repo AND ledger.up_number = :number "
                        "ORDER BY items.when_at, items.id", {"repo": repo.lower(), "number": number})


def adapted_by_upstream(store) -> dict[tuple[str, int], list[LedgerEntry]]:
    """The whole ledger keyed by (lower-cased upstream repo, number), each list oldest first: for batches."""
    out: dict[tuple[str, int], list[LedgerEntry]] = defaultdict(list)
    with reading(store) as db:
        for entry in _entries(db, _LEDGER + "ORDER BY items.when_at, items.id"):
            out[(entry.up_repo.lower(), entry.up_number)].append(entry)
    return dict(out)


def adapted_in_window(store, downstream: str, window: Window) -> list[LedgerEntry]:
    """Ledger entries of downstream PRs of `downstream` merged (or updated) in the window."""
    with reading(store) as db:
        return _entries(db, _LEDGER + "WHERE lower(repos.name) = :repo AND items.when_at >= :since "
                        "AND items.when_at < :until ORDER BY items.when_at, items.id, ledger.id",
                        {"repo": downstream.lower(), "since": window.since, "until": window.until})


def ledger_size(store) -> int:
    """Number of upstream -> downstream links in the ledger."""
    with reading(store) as db:
        return db.scalar("SELECT count(*) FROM ledger")


# --- related-item look-ups -------------------------------------------------------------------------

def item_id(store, repo: str, number: int) -> int | None:
    """The row id of PR or issue `number` of `repo`."""
    with reading(store) as db:
        return db.scalar(f"SELECT items.id FROM items WHERE {IN_REPO} AND items.number = :number "
                         "ORDER BY items.kind, items.id LIMIT 1", {"repo": repo.lower(), "number": number})


def pr_titles(store, repo: str) -> list[tuple[int, str]]:
    """(number, title) of every PR of `repo`, in the store's order (by row id)."""
    with reading(store) as db:
        return [(n, t) for n, t in db.rows(
            f"SELECT items.number, items.title FROM items WHERE {IN_REPO} AND items.kind = 'pr' "
            "AND items.number IS NOT NULL ORDER BY items.id", {"repo": repo.lower()})]


def files_of(store, repo: str, numbers: list[int] | None) -> dict[int, frozenset[str]]:
    """Changed paths of PRs `numbers` of `repo` (None: of every PR of it, in one query)."""
    out: dict[int, set[str]] = defaultdict(set)
    sql = ("SELECT items.number, files.path FROM items JOIN files ON files.item_id = items.id "
           f"WHERE {IN_REPO} AND items.kind = 'pr'")
    chunks = [{}] if numbers is None else [{"numbers": numbers[start:start + CHUNK]}
                                            for start in range(0, len(numbers), CHUNK)]
    with reading(store) as db:
        for chunk in chunks:
            for number, path in db.rows(sql + (" AND items.number IN :numbers" if chunk else ""),
                                        {"repo": repo.lower(), **chunk}):
                out[number].add(path)
    return {n: frozenset(p) for n, p in out.items()}


@dataclass(slots=True)
class Neighbours:
    """An item's terms with their store frequencies, and the items of other repositories sharing them."""

    terms: list[str]
    df: dict[str, int]
    total: int
    candidates: dict[tuple[str, int], set[str]]
    titles: dict[tuple[str, int], str] = field(default_factory=dict)


_HOLDERS = ("SELECT repos.name, items.number, item_terms.term, items.title FROM item_terms "
            "JOIN items ON items.id = item_terms.item_id JOIN repos ON repos.id = items.repo_id WHERE ")


def term_neighbours(store, item: int, repo: str, max_df: int) -> Neighbours:
    """Terms of item `item` and, for its terms in at most `max_df` items, the other repositories' items."""
    with reading(store) as db:
        own = db.column("SELECT item_terms.term FROM item_terms WHERE item_terms.item_id = :item", {"item": item})
        if not own:
            return Neighbours([], {}, 0, {})
        total = db.scalar("SELECT count(*) FROM relation_scans")
        df = dict(db.rows("SELECT item_terms.term, count(*) FROM item_terms WHERE item_terms.term IN :terms "
                          "GROUP BY item_terms.term", {"terms": own}))
        rare = [t for t in own if 2 <= df.get(t, 0) <= max_df]
        candidates: dict[tuple[str, int], set[str]] = defaultdict(set)
        titles: dict[tuple[str, int], str] = {}
        if rare:
            for name, number, term, title in db.rows(
                    _HOLDERS + "item_terms.term IN :terms AND lower(repos.name) != :repo AND items.number IS NOT NULL",
                    {"terms": rare, "repo": repo.lower()}):
                candidates[(name, number)].add(term)
                titles[(name, number)] = title
    return Neighbours(own, df, total, dict(candidates), titles)


class TermIndex:
    """Every item's terms and the store's term frequencies, read in three queries, for term_neighbours on
    many items (an export, a daily radar): the same answers without three queries per item."""

    def __init__(self, store, max_df: int) -> None:
        with reading(store) as db:
            self.total = db.scalar("SELECT count(*) FROM relation_scans")
            self.terms: dict[int, list[str]] = defaultdict(list)
            for item_id, term in db.rows("SELECT item_terms.item_id, item_terms.term FROM item_terms"):
                self.terms[item_id].append(term)
            # items holding each term ((item, term) is the table's key, so each item counts once)
            self.df: dict[str, int] = Counter(term for terms in self.terms.values() for term in terms)
            rare = {t for t, n in self.df.items() if 2 <= n <= max_df}
            self.holders: dict[str, list[tuple[str, int]]] = defaultdict(list)  # rare term -> items having it
            self.titles: dict[tuple[str, int], str] = {}
            for name, number, term, title in db.rows(_HOLDERS + "items.number IS NOT NULL"):
                if term in rare:
                    self.holders[term].append((name, number))
                    self.titles[(name, number)] = title
        self.max_df = max_df

    def neighbours(self, item: int, repo: str) -> Neighbours:
        """What term_neighbours(store, item, repo, max_df) returns."""
        own = self.terms.get(item, [])
        if not own:
            return Neighbours([], {}, 0, {})
        df = {t: self.df[t] for t in own if t in self.df}
        candidates: dict[tuple[str, int], set[str]] = defaultdict(set)
        titles: dict[tuple[str, int], str] = {}
        for term in own:
            if 2 <= df.get(term, 0) <= self.max_df:
                for key in self.holders.get(term, ()):
                    if key[0].lower() != repo.lower():
                        candidates[key].add(term)
                        titles[key] = self.titles[key]
        return Neighbours(list(own), df, self.total, dict(candidates), titles)
