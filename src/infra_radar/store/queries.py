"""The read side: items for analysis, analysed items in a window, links, runs, the watch list."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..models import AnalysedItem, Comment, FileChange, Item, Link, Window
from ..windows import date_only, day_start, touches
from .db import data_analysis, from_db_time, row_item, to_db_time
from .schema import analyses, comments, files, items, links, repos, runs, watch

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def repo_names(engine: Engine) -> list[str]:
    """Names of the repositories in the store."""
    with engine.connect() as conn:
        return list(conn.execute(sa.select(repos.c.name).order_by(repos.c.name)).scalars())


def _load_children(conn, ids: list[int]) -> tuple[dict[int, list[FileChange]], dict[int, list[Comment]]]:
    by_files: dict[int, list[FileChange]] = defaultdict(list)
    by_comments: dict[int, list[Comment]] = defaultdict(list)
    for start in range(0, len(ids), 900):
        part = ids[start:start + 900]
        # ordered: PostgreSQL returns heap order, SQLite primary-key order; reports must not depend on it
        for r in conn.execute(sa.select(files).where(files.c.item_id.in_(part)).order_by(files.c.item_id, files.c.path)):
            by_files[r.item_id].append(FileChange(r.path, r.additions, r.deletions, r.status))
        for r in conn.execute(sa.select(comments).where(comments.c.item_id.in_(part)).order_by(comments.c.seq)):
            by_comments[r.item_id].append(Comment(r.author, r.body, from_db_time(r.created_at), r.is_bot, r.kind))
    return by_files, by_comments


def _items(conn, query) -> list[tuple[Item, object]]:
    rows = conn.execute(query).all()
    by_files, by_comments = _load_children(conn, [r.id for r in rows])
    return [(row_item(r, r.repo_name, by_files.get(r.id, []), by_comments.get(r.id, [])), r) for r in rows]


def _base_query(*extra):
    return (sa.select(items, repos.c.name.label("repo_name"), *extra)
            .join(repos, repos.c.id == items.c.repo_id))


def _unanalysed(version: str):
    return sa.or_(analyses.c.item_id.is_(None), analyses.c.version != version,
                  analyses.c.content_hash != items.c.content_hash)


def items_to_analyse(engine: Engine, version: str, batch: int = 1000) -> Iterator[list[tuple[Item, str]]]:
    """Batches of (item, content hash) with no analysis, one from other rules, or changed since analysed."""
    stale = _base_query().outerjoin(analyses, analyses.c.item_id == items.c.id).where(
        _unanalysed(version)).order_by(items.c.id)
    last = 0
    while True:
        with engine.connect() as conn:
            found = _items(conn, stale.where(items.c.id > last).limit(batch))
        if not found:
            return
        yield [(item, row.content_hash) for item, row in found]
        last = found[-1][0].id


def ids_to_analyse(engine: Engine, version: str) -> list[int]:
    """Ids of the items `items_to_analyse` would return, in its order."""
    query = (sa.select(items.c.id).outerjoin(analyses, analyses.c.item_id == items.c.id)
             .where(_unanalysed(version)).order_by(items.c.id))
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def items_by_id(engine: Engine, ids: list[int]) -> list[tuple[Item, str]]:
    """(item, content hash) of these item ids (at most 900: one IN list), by id, as `items_to_analyse` gives them."""
    with engine.connect() as conn:
        found = _items(conn, _base_query().where(items.c.id.in_(ids)).order_by(items.c.id))
    return [(item, row.content_hash) for item, row in found]


def count_to_analyse(engine: Engine, version: str) -> int:
    """How many items lack a current analysis."""
    query = (sa.select(sa.func.count()).select_from(items)
             .outerjoin(analyses, analyses.c.item_id == items.c.id)
             .where(_unanalysed(version)))
    with engine.connect() as conn:
        return conn.execute(query).scalar_one()


def _analysed(conn, query) -> list[AnalysedItem]:
    return [AnalysedItem(item, data_analysis(row.data)) for item, row in _items(conn, query)]


def analysed_in_window(engine: Engine, window: Window | None, repos_filter: list[str] | None = None,
                       state: str = "all", kinds: list[str] | None = None, opened: bool = False) -> list[AnalysedItem]:
    """Analysed items whose time (merge time, else last update) falls in the window, oldest first; with no
    window, every analysed item (undated ones included, last). With `opened`, also the PRs and issues opened in
    the window (`opened_at`), and a date-only time counts for its whole day (windows.touches)."""
    query = _base_query(analyses.c.data).join(analyses, analyses.c.item_id == items.c.id)
    if window is not None and opened:
        start, until = to_db_time(day_start(window.since)), to_db_time(window.until)
        query = query.where(sa.or_(sa.and_(items.c.when_at >= start, items.c.when_at < until),
                                   sa.and_(items.c.created_at >= start, items.c.created_at < until)))
    elif window is not None:
        query = query.where(items.c.when_at >= to_db_time(window.since), items.c.when_at < to_db_time(window.until))
    if repos_filter:
        query = query.where(sa.func.lower(repos.c.name).in_([r.lower() for r in repos_filter]))
    if state != "all":
        query = query.where(items.c.state == state)
    if kinds:
        query = query.where(items.c.kind.in_(kinds))
    with engine.connect() as conn:
        found = _analysed(conn, query)
    if window is not None and opened:
        found = [a for a in found if touches(a.item.when, window) or touches(opened_at(a.item), window)]
    # ordered here, not in SQL: ties in time (a tag on its PR's commit) go by name, not by row id, so a store
    # filled in another order (a rerun after a kill, another batch size) gives the same export, and names
    # compare the same on SQLite and under PostgreSQL's collations
    found.sort(key=lambda a: (a.item.when is None, a.item.when or _EPOCH, a.item.repo, a.item.kind, a.item.key))
    return found


def opened_at(item: Item) -> datetime | None:
    """When a PR or issue was opened, when that is known: from GitHub or a page (a date); not from git, whose
    `created_at` is the commit's authored time (often days before the PR, or after a rebase)."""
    if item.kind not in ("pr", "issue"):
        return None
    return item.created_at if item.source in ("github", "page") or date_only(item.created_at) else None


def analysed_item(engine: Engine, repo: str, number: int) -> AnalysedItem | None:
    """One analysed PR or issue by repository and number."""
    query = _base_query(analyses.c.data).join(analyses, analyses.c.item_id == items.c.id).where(
        sa.func.lower(repos.c.name) == repo.lower(), items.c.number == number).order_by(items.c.kind)
    with engine.connect() as conn:
        found = _analysed(conn, query.limit(1))
    return found[0] if found else None


def item_exists(engine: Engine, repo: str, number: int) -> bool:
    """Whether the store holds PR or issue `number` of `repo` (analysed or not)."""
    query = (sa.select(items.c.id).join(repos, repos.c.id == items.c.repo_id)
             .where(sa.func.lower(repos.c.name) == repo.lower(), items.c.number == number))
    with engine.connect() as conn:
        return conn.execute(query.limit(1)).first() is not None


def referenced_by(engine: Engine, repo: str, number: int) -> list[Link]:
    """Items whose links point at repo#number, as links back to them, oldest first."""
    return referenced_by_many(engine, [(repo, number)]).get((repo.lower(), number), [])


def referenced_by_many(engine: Engine, refs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], list[Link]]:
    """referenced_by for many (repo, number) at once, keyed by (lower-cased repo, number)."""
    wanted = {(repo.lower(), number) for repo, number in refs}
    numbers = sorted({number for _, number in wanted})
    rows = []
    with engine.connect() as conn:
        for start in range(0, len(numbers), 900):  # below SQLite's bound-parameter limit
            query = (sa.select(links.c.dst_repo, links.c.dst_number, links.c.kind, repos.c.name, items.c.number,
                               items.c.title, items.c.when_at, items.c.id)
                     .join(items, items.c.id == links.c.item_id).join(repos, repos.c.id == items.c.repo_id)
                     .where(links.c.dst_number.in_(numbers[start:start + 900])))
            rows.extend(conn.execute(query).all())
    rows.sort(key=lambda r: (r.when_at is None, r.when_at or "", r.id))
    out: dict[tuple[str, int], dict[tuple[str, int], Link]] = {}
    for dst_repo, dst_number, kind, src_repo, src_number, title, _when, _id in rows:
        key = ((dst_repo or "").lower(), dst_number)
        if key in wanted and src_number is not None:
            out.setdefault(key, {}).setdefault((src_repo, src_number), Link(
                kind=f"referenced-by:{kind}", repo=src_repo, number=src_number, detail=title))
    return {key: list(found.values()) for key, found in out.items()}


def referencing_in_window(engine: Engine, repo: str, number: int, window: Window) -> list[str]:
    """Refs of items in the window that link to repo#number (new follow-ups of a watched item)."""
    query = (sa.select(repos.c.name, items.c.number).distinct()
             .join(items, items.c.id == links.c.item_id).join(repos, repos.c.id == items.c.repo_id)
             .where(sa.func.lower(links.c.dst_repo) == repo.lower(), links.c.dst_number == number,
                    items.c.when_at >= to_db_time(window.since), items.c.when_at < to_db_time(window.until)))
    with engine.connect() as conn:
        return [f"{name}#{n}" for name, n in conn.execute(query) if n is not None]


_TITLE_NOISE = re.compile(r"^\s*(\[[^\]]*\]\s*|\w+(\([^)]*\))?!?:\s*)*|\s*(\(#\d+\)\s*)+$")


def normalise_title(title: str) -> str:
    """A title without `[Tag]` / `type(scope):` prefixes and PR suffixes, lower-cased, for duplicates."""
    return " ".join(_TITLE_NOISE.sub("", title).lower().split())


def title_index(engine: Engine, repo_list: list[str]) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(repo, normalised title) -> [(number, title)] over the PRs of the given repositories."""
    query = (sa.select(repos.c.name, items.c.number, items.c.title).join(repos, repos.c.id == items.c.repo_id)
             .where(items.c.kind == "pr", sa.func.lower(repos.c.name).in_([r.lower() for r in repo_list])))
    index: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    with engine.connect() as conn:
        for name, number, title in conn.execute(query):
            key = normalise_title(title)
            if len(key) >= 12:  # short titles ("fix typo") are not evidence of the same change
                index[(name.lower(), key)].append((number, title))
    return index


def title_index_of(engine: Engine, item: Item) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """`title_index` for one item's card: only the entry its duplicates are looked up in, read through a
    LIKE on the title key's longest ASCII word instead of normalising every title of the repository."""
    key = normalise_title(item.title)
    if item.kind != "pr" or len(key) < 12:
        return {}
    query = (sa.select(repos.c.name, items.c.number, items.c.title).join(repos, repos.c.id == items.c.repo_id)
             .where(items.c.kind == "pr", sa.func.lower(repos.c.name) == item.repo.lower()))
    ascii_words = [w for w in key.split() if w.isascii()]  # SQLite's lower() folds ASCII only
    if ascii_words:
        query = query.where(sa.func.lower(items.c.title).contains(max(ascii_words, key=len), autoescape=True))
    index: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    with engine.connect() as conn:
        for name, number, title in conn.execute(query):
            if normalise_title(title) == key:
                index[(name.lower(), key)].append((number, title))
    return index


def duplicates_of(index: dict, item: Item) -> list[Link]:
    """Other PRs of the same repository whose normalised title equals this one's."""
    if item.kind != "pr":
        return []
    others = index.get((item.repo.lower(), normalise_title(item.title)), [])
    return [Link(kind="duplicate", repo=item.repo, number=n, detail=t) for n, t in others if n != item.number]


def last_success(engine: Engine, kind: str, scope: str) -> tuple[datetime | None, datetime | None] | None:
    """(since, until) of the last successful run of `kind` over `scope`, or None."""
    query = (sa.select(runs.c.since, runs.c.until).where(runs.c.kind == kind, runs.c.scope == scope,
                                                         runs.c.status == "ok")
             .order_by(runs.c.until.desc(), runs.c.id.desc()).limit(1))
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return (from_db_time(row.since), from_db_time(row.until)) if row else None


@dataclass(slots=True)
class WatchEntry:
    """One watched item and what the last recheck saw."""

    repo: str
    number: int
    reason: str
    added_at: datetime | None
    last_state: str | None
    last_files: str | None


def watch_list(engine: Engine) -> list[WatchEntry]:
    """The watch list, oldest first."""
    with engine.connect() as conn:
        rows = conn.execute(sa.select(watch).order_by(watch.c.id)).all()
    return [WatchEntry(r.repo, r.number, r.reason, from_db_time(r.added_at), r.last_state, r.last_files)
            for r in rows]
