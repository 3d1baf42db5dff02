"""The read side: items for analysis, analysed items in a window, links, runs, the watch list.

Every query is SQL text that SQLite and PostgreSQL both accept, run through a store/reader.py Reader: each
function takes a Reader or an engine (`store`), so `radar show` runs the same queries over a read-only stdlib
sqlite3 connection that every other command runs through SQLAlchemy.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from ..models import AnalysedItem, Comment, FileChange, Item, Link, Window, github_url
from ..windows import date_only, day_start, owned_days, touches
from .reader import Reader, reading
from .rows import data_analysis

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CHUNK = 900  # ids per IN list: below SQLite's bound-parameter limit
# the items of repository :repo (any case), found through the items' (repo_id, ...) indexes: a join on
# lower(repos.name) made SQLite scan every item of the store (10 ms for a card of a repository with 7 items)
IN_REPO = "items.repo_id IN (SELECT repos.id FROM repos WHERE lower(repos.name) = :repo)"


def repo_names(store) -> list[str]:
    """Names of the repositories in the store."""
    with reading(store) as db:
        return db.column("SELECT repos.name FROM repos ORDER BY repos.name")


def newest_per_repo(store, names: list[str] | None = None) -> list[tuple[str, datetime | None]]:
    """(repository, time of its newest item: merge time, else last update) by name; None for one with no
    dated item. What an empty report window says the store holds."""
    where, params = "", {}
    if names:
        where, params = "WHERE lower(repos.name) IN :repos ", {"repos": [n.lower() for n in names]}
    with reading(store) as db:
        rows = db.rows("SELECT repos.name, MAX(items.when_at) FROM repos LEFT JOIN items ON items.repo_id = repos.id "
                       f"{where}GROUP BY repos.name ORDER BY repos.name", params)
        return [(name, db.time(newest)) for name, newest in rows]


# The schema's migrations in order. store/schema.py pairs each name with its step (and refuses to load when the two
# lists differ), so the read path can tell a store that needs migrating without loading SQLAlchemy.
MIGRATION_NAMES = ("001_initial", "002_fetch_state", "003_ledger", "004_llm_cache", "005_sources",
                   "006_created_index", "007_published_radars", "008_labels",
                   "009_push_deliveries", "010_labels_number", "011_code_facts",
                   "012_published_text")


def applied_migrations(store) -> set[str]:
    """Names of the migrations recorded in `radar_migrations` (the table must exist)."""
    with reading(store) as db:
        return set(db.column("SELECT radar_migrations.name FROM radar_migrations"))


# --- items ---------------------------------------------------------------------------------------

# the columns `_item` reads, in its order; "key" is quoted, as SQLAlchemy quoted it
_ITEM = ('SELECT items.id, items.kind, items."key", items.number, items.title, items.body, items.author, '
         "items.state, items.draft, items.created_at, items.updated_at, items.merged_at, items.closed_at, "
         "items.merge_commit, items.branches, items.labels, items.source, items.named_paths, items.time_source, "
         "items.content_hash, repos.name{extra} FROM items JOIN repos ON repos.id = items.repo_id ")
_ANALYSED = _ITEM.format(extra=", analyses.data") + "JOIN analyses ON analyses.item_id = items.id "
_UNANALYSED = ("(analyses.item_id IS NULL OR analyses.version != :version "
               "OR analyses.content_hash != items.content_hash)")


def _load_children(db: Reader, ids: list[int]) -> tuple[dict[int, list[FileChange]], dict[int, list[Comment]]]:
    by_files: dict[int, list[FileChange]] = defaultdict(list)
    by_comments: dict[int, list[Comment]] = defaultdict(list)
    for start in range(0, len(ids), CHUNK):
        part = {"ids": ids[start:start + CHUNK]}
        # ordered: PostgreSQL returns heap order, SQLite primary-key order; reports must not depend on it
        for item_id, path, additions, deletions, status in db.rows(
                "SELECT files.item_id, files.path, files.additions, files.deletions, files.status FROM files "
                "WHERE files.item_id IN :ids ORDER BY files.item_id, files.path", part):
            by_files[item_id].append(FileChange(path, additions, deletions, status))
        for item_id, author, body, created, is_bot, kind in db.rows(
                "SELECT comments.item_id, comments.author, comments.body, comments.created_at, comments.is_bot, "
                "comments.kind FROM comments WHERE comments.item_id IN :ids ORDER BY comments.seq", part):
            by_comments[item_id].append(Comment(author, body, db.time(created), db.flag(is_bot), kind))
    return by_files, by_comments


def _load_code(db: Reader, ids: list[int]) -> dict[int, dict]:
    """The code facts of these items (those with a diff read), by item id."""
    found: dict[int, dict] = {}
    for start in range(0, len(ids), CHUNK):
        for item_id, data in db.rows("SELECT code_facts.item_id, code_facts.data FROM code_facts "
                                     "WHERE code_facts.item_id IN :ids", {"ids": ids[start:start + CHUNK]}):
            found[item_id] = db.json(data)
    return found


def _items(db: Reader, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Item, str, tuple]]:
    """(item, content hash, the row's columns past the item's) of an `_ITEM` query, files, comments and code
    facts loaded."""
    rows = db.rows(sql, params)
    ids = [r[0] for r in rows]
    by_files, by_comments = _load_children(db, ids)
    code = _load_code(db, ids)
    found = [(_item(db, r, by_files.get(r[0], []), by_comments.get(r[0], [])), r[19], r[21:]) for r in rows]
    for item, _, _ in found:
        item.code = code.get(item.id)
    return found


def _item(db: Reader, row: tuple, files: list[FileChange], comments: list[Comment]) -> Item:
    (id_, kind, key, number, title, body, author, state, draft, created, updated, merged, closed, commit,
     branches, labels, source, named_paths, time_source, _hash, repo) = row[:21]
    return Item(repo=repo, kind=kind, key=key, title=title, number=number, body=body, author=author, state=state,
                draft=db.flag(draft), created_at=db.time(created), updated_at=db.time(updated),
                merged_at=db.time(merged), closed_at=db.time(closed), merge_commit=commit,
                branches=list(db.json(branches)), labels=list(db.json(labels)), files=files, comments=comments,
                source=source, id=id_, named_paths=list(db.json(named_paths) or []), time_source=time_source or "")


def items_to_analyse(store, version: str, batch: int = 1000) -> Iterator[list[tuple[Item, str]]]:
    """Batches of (item, content hash) with no analysis, one from other rules, or changed since analysed."""
    sql = (_ITEM.format(extra="") + "LEFT OUTER JOIN analyses ON analyses.item_id = items.id WHERE " + _UNANALYSED
           + " AND items.id > :last ORDER BY items.id LIMIT :batch")
    last = 0
    while True:
        with reading(store) as db:
            found = _items(db, sql, {"version": version, "last": last, "batch": batch})
        if not found:
            return
        yield [(item, digest) for item, digest, _ in found]
        last = found[-1][0].id


def ids_to_analyse(store, version: str) -> list[int]:
    """Ids of the items `items_to_analyse` would return, in its order."""
    with reading(store) as db:
        return db.column("SELECT items.id FROM items LEFT OUTER JOIN analyses ON analyses.item_id = items.id "
                         "WHERE " + _UNANALYSED + " ORDER BY items.id", {"version": version})


def items_by_id(store, ids: list[int]) -> list[tuple[Item, str]]:
    """(item, content hash) of these item ids (at most 900: one IN list), by id, as `items_to_analyse` gives them."""
    with reading(store) as db:
        found = _items(db, _ITEM.format(extra="") + "WHERE items.id IN :ids ORDER BY items.id", {"ids": ids})
    return [(item, digest) for item, digest, _ in found]


def count_to_analyse(store, version: str) -> int:
    """How many items lack a current analysis."""
    with reading(store) as db:
        return db.scalar("SELECT count(*) FROM items LEFT OUTER JOIN analyses ON analyses.item_id = items.id "
                         "WHERE " + _UNANALYSED, {"version": version})


def _analysed(db: Reader, sql: str, params: dict[str, Any]) -> list[AnalysedItem]:
    return [AnalysedItem(item, data_analysis(db.json(rest[0]))) for item, _, rest in _items(db, sql, params)]


def _window_where(window: Window | None, repos_filter: list[str] | None, state: str, kinds: list[str] | None,
                  opened: bool) -> tuple[str, dict[str, Any]]:
    """The WHERE clause (with its leading keyword, or empty) and parameters of `analysed_in_window`."""
    where, params = [], {}
    if window is not None and opened:
        # touched: merged, closed or last updated in the window, opened in it, or commented on in it (a saved page
        # gives its comments' dates but not the item's every update)
        where.append("(items.when_at >= :start AND items.when_at < :until "
                     "OR items.created_at >= :start AND items.created_at < :until "
                     "OR EXISTS (SELECT 1 FROM comments WHERE comments.item_id = items.id "
                     "AND comments.created_at >= :start AND comments.created_at < :until))")
        params.update(start=day_start(window.since), until=window.until)
    elif window is not None:
        where.append("items.when_at >= :since AND items.when_at < :until")
        params.update(since=window.since, until=window.until)
    if repos_filter:
        where.append("lower(repos.name) IN :repos")
        params["repos"] = [r.lower() for r in repos_filter]
    if state != "all":
        where.append("items.state = :state")
        params["state"] = state
    if kinds:
        where.append("items.kind IN :kinds")
        params["kinds"] = list(kinds)
    return ("WHERE " + " AND ".join(where) if where else ""), params


def _order(when: datetime | None, repo: str, kind: str, key: str) -> tuple:
    # ordered here, not in SQL: ties in time (a tag on its PR's commit) go by name, not by row id, so a store
    # filled in another order (a rerun after a kill, another batch size) gives the same export, and names
    # compare the same on SQLite and under PostgreSQL's collations
    return (when is None, when or _EPOCH, repo, kind, key)


def analysed_in_window(store, window: Window | None, repos_filter: list[str] | None = None,
                       state: str = "all", kinds: list[str] | None = None, opened: bool = False,
                       days: Collection[date] | None = None) -> list[AnalysedItem]:
    """Analysed items whose time (merge time, else last update) falls in the window, oldest first; with no
    window, every analysed item (undated ones included, last). With `opened`, also the PRs and issues opened in
    the window (`opened_at`), and a date-only time counts in the window that holds its day (windows.touches:
    `days`, from windows.owned_days; None: the days the window covers the largest part of)."""
    where, params = _window_where(window, repos_filter, state, kinds, opened)
    with reading(store) as db:
        found = _analysed(db, _ANALYSED + where, params)
    if window is not None and opened:
        days = owned_days(window) if days is None else days
        found = [a for a in found if touched(a.item, window, days)]
    found.sort(key=lambda a: _order(a.item.when, a.item.repo, a.item.kind, a.item.key))
    return found


def analysed_ids_in_window(store, window: Window | None, repos_filter: list[str] | None = None,
                           state: str = "all") -> list[int]:
    """The ids of the items `analysed_in_window(store, window, repos_filter, state)` gives, in its order, read
    without the items themselves (a streamed export reads them a page at a time: `analysed_by_ids`)."""
    where, params = _window_where(window, repos_filter, state, None, False)
    with reading(store) as db:
        rows = db.rows('SELECT items.id, items.when_at, repos.name, items.kind, items."key" FROM items '
                       "JOIN repos ON repos.id = items.repo_id JOIN analyses ON analyses.item_id = items.id "
                       + where, params)
        keyed = [(_order(db.time(when), repo, kind, key), id_) for id_, when, repo, kind, key in rows]
    keyed.sort()
    return [id_ for _, id_ in keyed]


def analysed_by_ids(store, ids: list[int]) -> list[AnalysedItem]:
    """The analysed items of these ids (at most 900: one IN list), in the order of `ids`."""
    with reading(store) as db:
        found = {a.item.id: a for a in _analysed(db, _ANALYSED + "WHERE items.id IN :ids", {"ids": list(ids)})}
    return [found[id_] for id_ in ids if id_ in found]


def touched(item: Item, window: Window, days: Collection[date] | None = None) -> bool:
    """Whether the item was merged, closed, updated, opened or commented on in the window (windows.touches: a
    date-only time counts in the window holding its day, `days`)."""
    days = owned_days(window) if days is None else days
    return (touches(item.when, window, days) or touches(opened_at(item), window, days)
            or any(touches(c.created_at, window, days) for c in item.comments))


def open_before(store, window: Window, repos_filter: list[str] | None, days: int,
                held: Collection[date] | None = None) -> list[AnalysedItem]:
    """PRs and issues opened up to `days` before the window and not known closed before it began, whose activity
    in the window the store cannot date, and that it does not hold otherwise (`touched`): known from a saved page only
    (a page shows no pushes, labels or CI runs), or last updated after the window's end. A PR or issue closed
    unmerged at a time no source gives is left out (it may have been closed before the window), as is one whose
    opening is only bounded (sources/page_dates). Oldest opening first."""
    if days <= 0:
        return []
    start = day_start(window.since)
    where = ["items.kind IN ('pr', 'issue')", "items.created_at >= :lookback", "items.created_at < :start",
             "(items.merged_at IS NULL OR items.merged_at >= :since)",
             "(items.closed_at IS NULL OR items.closed_at >= :since)",
             "(items.source = 'page' OR items.when_at >= :until)"]
    params: dict[str, Any] = {"lookback": start - timedelta(days=days), "start": start, "since": window.since,
                              "until": window.until}
    if repos_filter:
        where.append("lower(repos.name) IN :repos")
        params["repos"] = [r.lower() for r in repos_filter]
    with reading(store) as db:
        found = _analysed(db, _ANALYSED + "WHERE " + " AND ".join(where), params)
    opened = {id(a): opened_at(a.item) for a in found}
    held_days = owned_days(window) if held is None else held
    kept = [a for a in found if opened[id(a)] is not None and opened[id(a)] < window.since
            and not touched(a.item, window, held_days)
            and not (a.item.state == "closed" and a.item.merged_at is None and a.item.closed_at is None)]
    kept.sort(key=lambda a: (opened[id(a)], a.item.repo, a.item.kind, a.item.key))
    return kept


def newest_time(store, repo: str, limit: datetime | None = None) -> datetime | None:
    """The time of the repository's newest stored item (merge time, else last update): where its data ends; with
    `limit` (now plus the clock skew), a record dated later than it is not where the data ends."""
    with reading(store) as db:
        if limit is None:
            return db.time(db.scalar(f"SELECT max(items.when_at) FROM items WHERE {IN_REPO}",
                                     {"repo": repo.lower()}))
        return db.time(db.scalar(f"SELECT max(items.when_at) FROM items WHERE {IN_REPO} AND items.when_at <= :limit",
                                 {"repo": repo.lower(), "limit": limit}))


def opened_at(item: Item) -> datetime | None:
    """When a PR or issue was opened, when that is known: from GitHub or a page (a date); not from git, whose
    `created_at` is the commit's authored time (often days before the PR, or after a rebase), nor a bound
    (sources/page_dates: a page that does not give its opening)."""
    if item.kind not in ("pr", "issue") or item.time_source == "created-bound":
        return None
    return item.created_at if item.source in ("github", "page") or date_only(item.created_at) else None


def analysed_item(store, repo: str, number: int) -> AnalysedItem | None:
    """One analysed PR or issue by repository and number."""
    with reading(store) as db:
        found = _analysed(db, _ANALYSED + f"WHERE {IN_REPO} AND items.number = :number "
                          "ORDER BY items.kind, items.id LIMIT 1", {"repo": repo.lower(), "number": number})
    return found[0] if found else None


def item_exists(store, repo: str, number: int) -> bool:
    """Whether the store holds PR or issue `number` of `repo` (analysed or not)."""
    with reading(store) as db:
        return bool(db.rows(f"SELECT items.id FROM items WHERE {IN_REPO} AND items.number = :number LIMIT 1",
                            {"repo": repo.lower(), "number": number}))


# --- links ---------------------------------------------------------------------------------------

def referenced_by(store, repo: str, number: int) -> list[Link]:
    """Items whose links point at repo#number, as links back to them, oldest first."""
    return referenced_by_many(store, [(repo, number)]).get((repo.lower(), number), [])


def referenced_by_many(store, refs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], list[Link]]:
    """referenced_by for many (repo, number) at once, keyed by (lower-cased repo, number)."""
    wanted = {(repo.lower(), number) for repo, number in refs}
    numbers = sorted({number for _, number in wanted})
    rows = []
    with reading(store) as db:
        for start in range(0, len(numbers), CHUNK):
            rows += [(*r[:6], db.time(r[6]), r[7], r[8]) for r in db.rows(
                "SELECT links.dst_repo, links.dst_number, links.kind, repos.name, items.number, items.title, "
                "items.when_at, items.id, items.kind FROM links JOIN items ON items.id = links.item_id "
                "JOIN repos ON repos.id = items.repo_id WHERE links.dst_number IN :numbers",
                {"numbers": numbers[start:start + CHUNK]})]
    rows.sort(key=lambda r: (r[6] is None, r[6] or "", r[7]))
    out: dict[tuple[str, int], dict[tuple[str, int], Link]] = {}
    for dst_repo, dst_number, kind, src_repo, src_number, title, _when, _id, src_kind in rows:
        key = ((dst_repo or "").lower(), dst_number)
        if key in wanted and src_number is not None:  # the referencing item's kind is known: its page's URL
            out.setdefault(key, {}).setdefault((src_repo, src_number), Link(
                kind=f"referenced-by:{kind}", repo=src_repo, number=src_number,
                url=github_url(src_repo, src_number, src_kind), detail=title))
    return {key: list(found.values()) for key, found in out.items()}


def analysed_referencing(store, repo: str, number: int) -> list[AnalysedItem]:
    """The analysed items whose links point at repo#number (follow-ups, backports, reverts), any time."""
    sql = (_ANALYSED + "WHERE items.id IN (SELECT links.item_id FROM links WHERE lower(links.dst_repo) = :repo "
           "AND links.dst_number = :number) ORDER BY items.id")
    with reading(store) as db:
        return _analysed(db, sql, {"repo": repo.lower(), "number": number})


# --- titles --------------------------------------------------------------------------------------

_TITLE_NOISE = re.compile(r"^\s*(\[[^\]]*\]\s*|\w+(\([^)]*\))?!?:\s*)*|\s*(\(#\d+\)\s*)+$")


def normalise_title(title: str) -> str:
    """A title without `[Tag]` / `type(scope):` prefixes and PR suffixes, lower-cased, for duplicates."""
    return " ".join(_TITLE_NOISE.sub("", title).lower().split())


def title_index(store, repo_list: list[str]) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(repo, normalised title) -> [(number, title)] over the PRs of the given repositories."""
    index: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    with reading(store) as db:
        rows = db.rows("SELECT repos.name, items.number, items.title FROM items JOIN repos ON repos.id = "
                       "items.repo_id WHERE items.repo_id IN (SELECT repos.id FROM repos WHERE lower(repos.name) "
                       "IN :repos) AND items.kind = 'pr' ORDER BY items.id", {"repos": [r.lower() for r in repo_list]})
    for name, number, title in rows:
        key = normalise_title(title)
        if len(key) >= 12:  # short titles ("fix typo") are not evidence of the same change
            index[(name.lower(), key)].append((number, title))
    return index


# --- runs and the watch list ---------------------------------------------------------------------

def last_success(store, kind: str, scope: str) -> tuple[datetime | None, datetime | None] | None:
    """(since, until) of the last successful run of `kind` over `scope`, or None. A run cannot have seen past
    the time it started: a window that ended later (a stored `--until 8999-01-01`) counts as ending then."""
    with reading(store) as db:
        seen = "CASE WHEN runs.until < runs.started_at THEN runs.until ELSE runs.started_at END"
        found = db.rows("SELECT runs.since, runs.until, runs.started_at FROM runs WHERE runs.kind = :kind "
                        f"AND runs.scope = :scope AND runs.status = 'ok' ORDER BY {seen} DESC, runs.id DESC "
                        "LIMIT 1", {"kind": kind, "scope": scope})
        if not found:
            return None
        since, until, started = (db.time(v) for v in found[0])
        return since, min(until, started) if until and started else until


@dataclass(slots=True)
class WatchEntry:
    """One watched item and what the last recheck saw."""

    repo: str
    number: int
    reason: str
    added_at: datetime | None
    last_state: str | None
    last_files: str | None


def watch_list(store) -> list[WatchEntry]:
    """The watch list, oldest first."""
    with reading(store) as db:
        return [WatchEntry(repo, number, reason, db.time(added), state, digest) for repo, number, reason, added,
                state, digest in db.rows("SELECT watch.repo, watch.number, watch.reason, watch.added_at, "
                                         "watch.last_state, watch.last_files FROM watch ORDER BY watch.id")]


def item_kinds(store, refs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """For each stored (repo, number), keyed lower-cased: the item's kind (a PR or an issue) as the store holds
    it, so that a report links a pull request's page and not /issues/N. Refs not in the store are left out."""
    wanted = {(repo.lower(), number) for repo, number in refs if number is not None}
    numbers = sorted({number for _, number in wanted})
    out: dict[tuple[str, int], str] = {}
    with reading(store) as db:
        for start in range(0, len(numbers), CHUNK):
            for name, number, kind in db.rows(
                    "SELECT repos.name, items.number, items.kind FROM items JOIN repos ON repos.id = items.repo_id "
                    "WHERE items.number IN :numbers", {"numbers": numbers[start:start + CHUNK]}):
                if (name.lower(), number) in wanted:
                    out[(name.lower(), number)] = kind
    return out


def neighbours(store, repo: str, number: int, most: int = 3) -> tuple[list, list]:
    """The PRs and issues of `repo` numbered nearest below and above `number` (at most `most` each, nearest
    first), as sources.page_dates.Neighbour: what bounds the opening of an item whose opening is unknown."""
    from ..sources.page_dates import Neighbour

    sql = ("SELECT items.number, items.source, items.created_at, items.merged_at, items.time_source FROM items "
           f"WHERE {IN_REPO} AND items.kind IN ('pr', 'issue') AND items.number {{op}} :number "
           "ORDER BY items.number {order} LIMIT :most")
    out = []
    with reading(store) as db:
        for op, order in (("<", "DESC"), (">", "ASC")):
            rows = db.rows(sql.format(op=op, order=order), {"repo": repo.lower(), "number": number, "most": most})
            found = [(n, source, db.time(created), db.time(merged), ts) for n, source, created, merged, ts in rows]
            # an opening as opened_at knows it: GitHub's, a page's (a date), never a bound
            out.append([Neighbour(n, created if (source in ("github", "page") or date_only(created))
                                  and ts != "created-bound" else None, merged)
                        for n, source, created, merged, ts in found])
    return out[0], out[1]


def bounded_near(store, repo: str, number: int, most: int = 3) -> list[Item]:
    """The items of `repo` whose opening is only bounded (sources.page_dates) among the `most` numbers nearest
    below and above `number`: a newly known opening there may tighten their bounds."""
    sql = (f"SELECT items.id FROM items WHERE {IN_REPO} AND items.kind IN ('pr', 'issue') "
           "AND items.number {op} :number ORDER BY items.number {order} LIMIT :most")
    ids = []
    with reading(store) as db:
        for op, order in (("<", "DESC"), (">", "ASC")):
            ids += [r[0] for r in db.rows(sql.format(op=op, order=order),
                                          {"repo": repo.lower(), "number": number, "most": most})]
    return [item for item, _ in items_by_id(store, ids) if item.time_source == "created-bound"] if ids else []


def commit_time(store, repo: str, sha: str) -> tuple[str, datetime] | None:
    """(full sha, time) of the commit `sha` (a prefix of 7 or more) of `repo` as a clone or an export stored it:
    a squash-merged PR's merge commit, or a commit of its own; None when the store has no such commit."""
    if len(sha) < 7:
        return None
    with reading(store) as db:
        rows = db.rows(f"SELECT items.merge_commit, items.key, items.kind, items.merged_at, items.when_at FROM items "
                       f"WHERE {IN_REPO} AND (items.merge_commit LIKE :sha OR (items.kind = 'commit' AND "
                       "items.key LIKE :sha)) AND items.source <> 'page' LIMIT 2",
                       {"repo": repo.lower(), "sha": sha.lower() + "%"})
        if len(rows) != 1:  # none, or a prefix that names two commits
            return None
        merge_commit, key, kind, merged, when = rows[0]
        at = db.time(merged) or db.time(when)
    return (merge_commit or key, at) if at else None


def known_since_many(store, refs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], datetime | None]:
    """For each stored (repo, number), keyed lower-cased: the earliest time the item is known to have existed
    (when it was opened, where a source tells; else the earliest of its merge, close and update times). A
    report about a window links no item first known after it. Refs not in the store are left out."""
    wanted = {(repo.lower(), number) for repo, number in refs if number is not None}
    numbers = sorted({number for _, number in wanted})
    out: dict[tuple[str, int], datetime | None] = {}
    with reading(store) as db:
        for start in range(0, len(numbers), CHUNK):
            for name, number, kind, source, created, merged, closed, updated in db.rows(
                    "SELECT repos.name, items.number, items.kind, items.source, items.created_at, items.merged_at, "
                    "items.closed_at, items.updated_at FROM items JOIN repos ON repos.id = items.repo_id "
                    "WHERE items.number IN :numbers", {"numbers": numbers[start:start + CHUNK]}):
                key = (name.lower(), number)
                if key not in wanted:
                    continue
                item = Item(repo=name, kind=kind, key=str(number), title="", number=number, source=source,
                            created_at=db.time(created))
                opened = opened_at(item)
                dated = [t for t in (db.time(merged), db.time(closed), db.time(updated)) if t is not None]
                first = opened if opened is not None else (min(dated) if dated else db.time(created))
                if key not in out or (first is not None and (out[key] is None or first < out[key])):
                    out[key] = first
    return out


def repo_summary(store) -> dict[str, tuple[int, datetime | None]]:
    """{lower-case repository name: (items stored, time of its newest item)} for every stored repository:
    what `radar repo list` and `radar doctor` say each configured repository holds."""
    with reading(store) as db:
        rows = db.rows("SELECT repos.name, COUNT(items.id), MAX(items.when_at) FROM repos "
                       "LEFT JOIN items ON items.repo_id = repos.id GROUP BY repos.name")
        return {name.lower(): (int(count), db.time(newest)) for name, count, newest in rows}


def item_state(store, repo: str, number: int) -> str | None:
    """The stored state of PR or issue `number` of `repo` (open, merged, closed, with ", draft"), None when the
    store does not hold it."""
    with reading(store) as db:
        rows = db.rows(f"SELECT items.state, items.draft FROM items WHERE {IN_REPO} AND items.number = :number "
                       "ORDER BY items.kind LIMIT 1", {"repo": repo.lower(), "number": number})
    if not rows:
        return None
    state, draft = rows[0]
    return state + (", draft" if draft and state == "open" else "")
