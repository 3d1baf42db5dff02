"""Relations across items in the store: the adaptation ledger, distinctive terms, related-item look-ups.

Rows are rebuilt per item whenever the item's content or the relation rules change (`relation_scans`
remembers both), in one transaction per batch, like analyses.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..models import MAX_NUMBER, Link, Window
from .db import from_db_time, to_db_time
from .schema import files, item_terms, items, ledger, relation_scans, repos

__all__ = ["LedgerEntry", "ScanItem", "ScanResult", "adapted_in", "adapted_in_window", "count_stale",
           "files_of", "item_id", "ledger_size", "pr_titles", "save_scans", "stale_ids", "stale_items",
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


def _stale(version: str):
    return sa.or_(relation_scans.c.item_id.is_(None), relation_scans.c.version != version,
                  relation_scans.c.content_hash != items.c.content_hash)


def count_stale(engine: Engine, version: str) -> int:
    """How many items lack relations computed from their current content under these rules."""
    query = (sa.select(sa.func.count()).select_from(items)
             .outerjoin(relation_scans, relation_scans.c.item_id == items.c.id).where(_stale(version)))
    with engine.connect() as conn:
        return conn.execute(query).scalar_one()


def stale_ids(engine: Engine, version: str) -> set[int]:
    """Ids of the items `stale_items` would return."""
    query = (sa.select(items.c.id).outerjoin(relation_scans, relation_scans.c.item_id == items.c.id)
             .where(_stale(version)))
    with engine.connect() as conn:
        return set(conn.execute(query).scalars())


def stale_items(engine: Engine, version: str, with_files: set[str], batch: int = 2000) -> Iterator[list[ScanItem]]:
    """Batches of items to rescan; changed paths are loaded for PRs of the `with_files` repositories."""
    query = (sa.select(items.c.id, repos.c.name, items.c.number, items.c.kind, items.c.title, items.c.body,
                       items.c.content_hash)
             .join(repos, repos.c.id == items.c.repo_id)
             .outerjoin(relation_scans, relation_scans.c.item_id == items.c.id)
             .where(_stale(version)).order_by(items.c.id))
    wanted = {r.lower() for r in with_files}
    last = 0
    while True:
        with engine.connect() as conn:
            rows = conn.execute(query.where(items.c.id > last).limit(batch)).all()
            found = [ScanItem(*row) for row in rows]
            need = [s.id for s in found if s.kind == "pr" and s.repo.lower() in wanted]
            paths = _paths(conn, need)
        if not found:
            return
        for scan in found:
            scan.files = paths.get(scan.id, [])
        yield found
        last = found[-1].id


def _paths(conn, ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    for start in range(0, len(ids), 900):
        part = ids[start:start + 900]
        for item, path in conn.execute(sa.select(files.c.item_id, files.c.path).where(files.c.item_id.in_(part))):
            out[item].append(path)
    return out


def save_scans(engine: Engine, version: str, results: list[ScanResult]) -> None:
    """Replace the ledger rows and terms of the scanned items and remember what they came from."""
    if not results:
        return
    ids = [r.item_id for r in results]
    ledger_rows = [{"item_id": r.item_id, "up_repo": up, "up_number": n, "files": fs, "how": how}
                   for r in results for up, n, fs, how in r.adaptations if 0 < n <= MAX_NUMBER]
    term_rows = [{"item_id": r.item_id, "term": t[:120]} for r in results for t in dict.fromkeys(r.terms)]
    scan_rows = [{"item_id": r.item_id, "version": version, "content_hash": r.content_hash} for r in results]
    with engine.begin() as conn:
        for start in range(0, len(ids), 900):  # SQLite's bound-parameter limit
            part = ids[start:start + 900]
            for table in (ledger, item_terms, relation_scans):
                conn.execute(table.delete().where(table.c.item_id.in_(part)))
        for table, rows in ((ledger, ledger_rows), (item_terms, term_rows), (relation_scans, scan_rows)):
            if rows:
                conn.execute(table.insert(), rows)


# --- the ledger ------------------------------------------------------------------------------------

def _entries(conn, query) -> list[LedgerEntry]:
    return [LedgerEntry(r.up_repo, r.up_number, r.name, r.number, r.title, from_db_time(r.when_at),
                        list(r.files or []), r.how) for r in conn.execute(query)]


def _ledger_query():
    return (sa.select(ledger.c.up_repo, ledger.c.up_number, ledger.c.files, ledger.c.how, repos.c.name,
                      items.c.number, items.c.title, items.c.when_at)
            .join(items, items.c.id == ledger.c.item_id).join(repos, repos.c.id == items.c.repo_id))


def adapted_in(engine: Engine, repo: str, number: int) -> list[LedgerEntry]:
    """Where upstream PR repo#number was adapted downstream, oldest first."""
    query = (_ledger_query().where(sa.func.lower(ledger.c.up_repo) == repo.lower(), ledger.c.up_number == number)
             .order_by(items.c.when_at, items.c.id))
    with engine.connect() as conn:
        return _entries(conn, query)


def adapted_by_upstream(engine: Engine) -> dict[tuple[str, int], list[LedgerEntry]]:
    """The whole ledger keyed by (lower-cased upstream repo, number), each list oldest first: for batches."""
    out: dict[tuple[str, int], list[LedgerEntry]] = defaultdict(list)
    with engine.connect() as conn:
        for entry in _entries(conn, _ledger_query().order_by(items.c.when_at, items.c.id)):
            out[(entry.up_repo.lower(), entry.up_number)].append(entry)
    return dict(out)


def adapted_in_window(engine: Engine, downstream: str, window: Window) -> list[LedgerEntry]:
    """Ledger entries of downstream PRs of `downstream` merged (or updated) in the window."""
    query = (_ledger_query().where(sa.func.lower(repos.c.name) == downstream.lower(),
                                   items.c.when_at >= to_db_time(window.since),
                                   items.c.when_at < to_db_time(window.until))
             .order_by(items.c.when_at, items.c.id, ledger.c.id))
    with engine.connect() as conn:
        return _entries(conn, query)


def ledger_size(engine: Engine) -> int:
    """Number of upstream -> downstream links in the ledger."""
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(ledger)).scalar_one()


# --- related-item look-ups -------------------------------------------------------------------------

def item_id(engine: Engine, repo: str, number: int) -> int | None:
    """The row id of PR or issue `number` of `repo`."""
    query = (sa.select(items.c.id).join(repos, repos.c.id == items.c.repo_id)
             .where(sa.func.lower(repos.c.name) == repo.lower(), items.c.number == number)
             .order_by(items.c.kind).limit(1))
    with engine.connect() as conn:
        return conn.execute(query).scalar()


def pr_titles(engine: Engine, repo: str) -> list[tuple[int, str]]:
    """(number, title) of every PR of `repo`."""
    query = (sa.select(items.c.number, items.c.title).join(repos, repos.c.id == items.c.repo_id)
             .where(sa.func.lower(repos.c.name) == repo.lower(), items.c.kind == "pr",
                    items.c.number.is_not(None)))
    with engine.connect() as conn:
        return [(n, t) for n, t in conn.execute(query)]


def files_of(engine: Engine, repo: str, numbers: list[int] | None) -> dict[int, frozenset[str]]:
    """Changed paths of PRs `numbers` of `repo` (None: of every PR of it, in one query)."""
    out: dict[int, set[str]] = defaultdict(set)
    query = (sa.select(items.c.number, files.c.path).join(files, files.c.item_id == items.c.id)
             .join(repos, repos.c.id == items.c.repo_id)
             .where(sa.func.lower(repos.c.name) == repo.lower(), items.c.kind == "pr"))
    with engine.connect() as conn:
        chunks = [query] if numbers is None else [query.where(items.c.number.in_(numbers[start:start + 900]))
                                                  for start in range(0, len(numbers), 900)]
        for chunk in chunks:
            for number, path in conn.execute(chunk):
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


def term_neighbours(engine: Engine, item: int, repo: str, max_df: int) -> Neighbours:
    """Terms of item `item` and, for its terms in at most `max_df` items, the other repositories' items."""
    with engine.connect() as conn:
        own = list(conn.execute(sa.select(item_terms.c.term).where(item_terms.c.item_id == item)).scalars())
        if not own:
            return Neighbours([], {}, 0, {})
        total = conn.execute(sa.select(sa.func.count()).select_from(relation_scans)).scalar_one()
        df = dict(conn.execute(sa.select(item_terms.c.term, sa.func.count()).where(item_terms.c.term.in_(own))
                               .group_by(item_terms.c.term)).all())
        rare = [t for t in own if 2 <= df.get(t, 0) <= max_df]
        candidates: dict[tuple[str, int], set[str]] = defaultdict(set)
        titles: dict[tuple[str, int], str] = {}
        if rare:
            query = (sa.select(repos.c.name, items.c.number, item_terms.c.term, items.c.title)
                     .join(items, items.c.id == item_terms.c.item_id).join(repos, repos.c.id == items.c.repo_id)
                     .where(item_terms.c.term.in_(rare), sa.func.lower(repos.c.name) != repo.lower(),
                            items.c.number.is_not(None)))
            for name, number, term, title in conn.execute(query):
                candidates[(name, number)].add(term)
                titles[(name, number)] = title
    return Neighbours(own, df, total, dict(candidates), titles)


class TermIndex:
    """Every item's terms and the store's term frequencies, read in three queries, for term_neighbours on
    many items (an export, a daily radar): the same answers without three queries per item."""

    def __init__(self, engine: Engine, max_df: int) -> None:
        with engine.connect() as conn:
            self.total = conn.execute(sa.select(sa.func.count()).select_from(relation_scans)).scalar_one()
            self.terms: dict[int, list[str]] = defaultdict(list)
            for item_id, term in conn.execute(sa.select(item_terms.c.item_id, item_terms.c.term)):
                self.terms[item_id].append(term)
            # items holding each term ((item, term) is the table's key, so each item counts once)
            self.df: dict[str, int] = Counter(term for terms in self.terms.values() for term in terms)
            rare = {t for t, n in self.df.items() if 2 <= n <= max_df}
            self.holders: dict[str, list[tuple[str, int]]] = defaultdict(list)  # rare term -> items having it
            self.titles: dict[tuple[str, int], str] = {}
            query = (sa.select(repos.c.name, items.c.number, item_terms.c.term, items.c.title)
                     .join(items, items.c.id == item_terms.c.item_id).join(repos, repos.c.id == items.c.repo_id)
                     .where(items.c.number.is_not(None)))
            for name, number, term, title in conn.execute(query):
                if term in rare:
                    self.holders[term].append((name, number))
                    self.titles[(name, number)] = title
        self.max_df = max_df

    def neighbours(self, item: int, repo: str) -> Neighbours:
        """What term_neighbours(engine, item, repo, max_df) returns."""
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
