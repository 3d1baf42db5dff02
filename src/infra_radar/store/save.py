"""The write side: idempotent upserts of items, analyses and relation scans, runs and the watch list.

Every function writes one consistent unit in one transaction: an item is never stored without its
files, an analysis never without its links, so a killed run leaves a store a rerun can complete.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .. import killpoint
from ..errors import InputError
from ..models import MAX_NUMBER, Analysis, Item, Window
from .merge import merge_items
from .rows import analysis_data, item_hash, item_row, to_db_time
from .schema import (
    analyses,
    code_facts,
    comments,
    files,
    item_terms,
    items,
    ledger,
    links,
    relation_scans,
    repos,
    runs,
    watch,
)


@dataclass(slots=True)
class SaveStats:
    """What an import changed."""

    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)  # "ref: why" of records the store refused

    def add(self, other: SaveStats) -> None:
        self.inserted += other.inserted
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.skipped += other.skipped


BATCH = int(os.environ.get("RADAR_SAVE_BATCH") or 500)  # items per transaction (the kill tests use a few)
_REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+")


def repo_id(conn: Connection, name: str) -> int:
    """The id of repository `name`, created on first use."""
    found = conn.execute(sa.select(repos.c.id).where(repos.c.name == name)).scalar()
    if found is not None:
        return found
    if not _REPO_NAME.fullmatch(name) or name.split("/")[1] in (".", ".."):
        # names become folders of the site and reports: refuse `..`, spaces and quotes before they are stored
        raise InputError(f"invalid repository name {name!r}: use OWNER/NAME (letters, digits, '-', '_', '.')")
    return conn.execute(repos.insert().values(name=name).returning(repos.c.id)).scalar_one()


def _merge_existing(item: Item, old_branches: list[str], old_merged: datetime | None) -> None:
    """The same item seen on another branch: one item with both branches, the first merge time."""
    item.branches = list(dict.fromkeys([*old_branches, *item.branches]))
    if old_merged is not None and item.merged_at is not None:
        item.merged_at = min(item.merged_at, old_merged.replace(tzinfo=UTC))


def _children(item_id: int, item: Item) -> tuple[list[dict], list[dict]]:
    file_rows = {f.path: {"item_id": item_id, "path": f.path, "additions": f.additions,
                          "deletions": f.deletions, "status": f.status} for f in item.files}
    comment_rows = [{"item_id": item_id, "seq": i, "author": c.author, "created_at": to_db_time(c.created_at),
                     "body": c.body, "is_bot": c.is_bot, "kind": c.kind} for i, c in enumerate(item.comments)]
    return list(file_rows.values()), comment_rows


def _stored_items(conn: Connection, ids: list[int]) -> dict[int, Item]:
    """The stored items with these row ids, whole (files and comments), by id (read in this transaction)."""
    from .queries import items_by_id

    return {item.id: item for start in range(0, len(ids), 900)
            for item, _ in items_by_id(conn, ids[start:start + 900])}


def _save_batch(conn: Connection, repo: int, batch: list[Item], saved: list[int]) -> SaveStats:
    """Upsert one repository's items; the ids of those inserted or changed are appended to `saved`."""
    stats = SaveStats()
    by_key: dict[tuple[str, str], Item] = {}
    for item in batch:  # the same PR twice (main and a release branch): merged, as across batches
        earlier = by_key.pop((item.kind, item.key), None)
        if earlier is not None:
            _merge_existing(item, earlier.branches, earlier.merged_at)
        by_key[(item.kind, item.key)] = item
    existing = {
        (r.kind, r.key): r for r in conn.execute(
            sa.select(items.c.id, items.c.kind, items.c.key, items.c.content_hash, items.c.branches, items.c.merged_at)
            .where(items.c.repo_id == repo, items.c.key.in_([k for _, k in by_key])))
    }
    new_rows, changed, differ = [], [], []
    now = datetime.now(UTC).replace(microsecond=0)
    for key, item in by_key.items():
        old = existing.get(key)
        if old is None:
            if item.when is None:  # nothing undated is lost: the import time places it, marked as such
                item.updated_at, item.time_source = now, "import"
            new_rows.append((item, item_row(item, repo)))
            continue
        _merge_existing(item, list(old.branches), old.merged_at)
        if item_hash(item) == old.content_hash:
            stats.unchanged += 1
        else:
            differ.append((old, item))
    stored = _stored_items(conn, [old.id for old, _ in differ])
    for old, item in differ:  # never downgrade: the stored item's stronger values stand
        merge_items(stored[old.id], item)
        if item.when is None:
            item.updated_at, item.time_source = now, "import"
        if item_hash(item) == old.content_hash:
            stats.unchanged += 1
        else:
            changed.append((old.id, item))
    child_files, child_comments, child_code = [], [], []
    if new_rows:
        ids = _insert_items(conn, repo, [row for _, row in new_rows])
        for item_id, (item, _) in zip(ids, new_rows, strict=True):
            item.id = item_id
            f, c = _children(item_id, item)
            child_files += f
            child_comments += c
            child_code += _code_row(item_id, item)
        stats.inserted = len(new_rows)
    for item_id, item in changed:
        item.id = item_id
        conn.execute(items.update().where(items.c.id == item_id).values(item_row(item, repo)))
        conn.execute(files.delete().where(files.c.item_id == item_id))
        conn.execute(comments.delete().where(comments.c.item_id == item_id))
        conn.execute(code_facts.delete().where(code_facts.c.item_id == item_id))
        f, c = _children(item_id, item)
        child_files += f
        child_comments += c
        child_code += _code_row(item_id, item)
    stats.updated = len(changed)
    saved += [item.id for item, _ in new_rows]
    saved += [item_id for item_id, _ in changed]
    if child_files and conn.dialect.name == "sqlite":  # plain values: the driver's executemany, no per-row binding
        conn.exec_driver_sql(_FILES_SQL, [(f["item_id"], f["path"], f["additions"], f["deletions"], f["status"])
                                          for f in child_files])
    elif child_files:
        conn.execute(files.insert(), child_files)
    if child_comments:
        conn.execute(comments.insert(), child_comments)
    if child_code:
        conn.execute(code_facts.insert(), child_code)
    return stats


def _code_row(item_id: int, item: Item) -> list[dict]:
    code = item.code
    if code is None:
        return []
    return [{"item_id": item_id, "source": str(code.get("source", ""))[:8], "complete": bool(code.get("complete")),
             "data": code}]


_FILES_SQL = "INSERT INTO files (item_id, path, additions, deletions, status) VALUES (?, ?, ?, ?, ?)"


def _insert_items(conn: Connection, repo: int, rows: list[dict]) -> list[int]:
    """Insert new item rows; their ids, in order. SQLite returns ids only one row per statement, so there the
    rows go in one executemany and their ids are read back by key (the same ids: one writer, in order)."""
    if conn.dialect.name != "sqlite":
        return conn.execute(items.insert().returning(items.c.id, sort_by_parameter_order=True), rows).scalars().all()
    conn.execute(items.insert(), rows)
    by_key: dict[tuple[str, str], int] = {}
    keys = [row["key"] for row in rows]
    for start in range(0, len(keys), 900):
        query = sa.select(items.c.id, items.c.kind, items.c.key).where(
            items.c.repo_id == repo, items.c.key.in_(keys[start:start + 900]))
        by_key.update({(r.kind, r.key): r.id for r in conn.execute(query)})
    return [by_key[(row["kind"], row["key"])] for row in rows]


def save_items(engine: Engine, stream: Iterable[Item], batch_size: int | None = None,
               on_saved: Callable[[list[int]], None] | None = None) -> SaveStats:
    """Upsert items (with files and comments), one transaction per batch; unchanged items are skipped.
    `on_saved` gets the ids of each batch's inserted and changed items once the batch is committed."""
    total, batch_size = SaveStats(), batch_size or BATCH
    batch: list[Item] = []
    for item in stream:
        batch.append(item)
        if len(batch) >= batch_size:
            _saved(total, _flush(engine, batch), on_saved)
            batch = []
    if batch:
        _saved(total, _flush(engine, batch), on_saved)
    return total


def _saved(total: SaveStats, flushed: tuple[SaveStats, list[int]], on_saved) -> None:
    stats, ids = flushed
    total.add(stats)
    killpoint.reached("save.batch")
    if on_saved is not None and ids:
        on_saved(ids)


def _flush(engine: Engine, batch: list[Item]) -> tuple[SaveStats, list[int]]:
    from ..sources.records import RecordError, check_item

    stats = SaveStats()
    by_repo: dict[str, list[Item]] = {}
    for item in batch:
        try:  # the last line of the boundary: a record no source checked cannot take its batch down
            check_item(item)
        except RecordError as exc:
            stats.skipped.append(f"{item.repo}@{str(item.key)[:40]}: {exc}")
            continue
        by_repo.setdefault(item.repo, []).append(item)
    ids: list[int] = []
    with engine.begin() as conn:
        for name, group in by_repo.items():
            stats.add(_save_batch(conn, repo_id(conn, name), group, ids))
        killpoint.reached("save.uncommitted")  # written, not committed: a kill here must leave no trace
    return stats, ids


def save_analyses(engine: Engine, results: list[tuple[int, str, Analysis]]) -> None:
    """Store analyses (item id, the item's content hash, analysis) and replace their links."""
    if not results:
        return
    ids = [item_id for item_id, _, _ in results]
    rows = [{"item_id": item_id, "version": a.version, "content_hash": h, "item_kind": a.item_kind,
             "priority": a.priority, "grade": a.grade, "importance": a.importance, "insight": a.insight,
             "data": analysis_data(a)} for item_id, h, a in results]
    link_rows = [{"item_id": item_id, "kind": link.kind, "dst_repo": link.repo, "dst_number": link.number,
                  "url": link.url, "detail": link.detail} for item_id, _, a in results for link in a.links
                 if link.number is None or 0 < link.number <= MAX_NUMBER]  # never a number no PR can have
    with engine.begin() as conn:
        for chunk in range(0, len(ids), 900):  # stay under SQLite's bound-parameter limit
            part = ids[chunk:chunk + 900]
            conn.execute(analyses.delete().where(analyses.c.item_id.in_(part)))
            conn.execute(links.delete().where(links.c.item_id.in_(part)))
        conn.execute(analyses.insert(), rows)
        if link_rows:
            conn.execute(links.insert(), link_rows)


def save_scans(engine: Engine, version: str, results: list) -> None:
    """Replace the ledger rows and terms of the scanned items (store/ledger.py ScanResults) and remember what
    they came from."""
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


def start_run(engine: Engine, kind: str, scope: str, window: Window | None = None) -> int:
    """Record the start of a run; returns its id."""
    values = {"kind": kind, "scope": scope, "status": "running", "detail": {},
              "started_at": to_db_time(datetime.now(UTC)),
              "since": to_db_time(window.since) if window else None,
              "until": to_db_time(window.until) if window else None}
    with engine.begin() as conn:
        run_id = conn.execute(runs.insert().values(values).returning(runs.c.id)).scalar_one()
    killpoint.reached("run.started")
    return run_id


def finish_run(engine: Engine, run_id: int, status: str, detail: dict | None = None) -> None:
    """Mark a run ok or failed, with a detail dict (counts, paths)."""
    killpoint.reached("run.finish")
    with engine.begin() as conn:
        conn.execute(runs.update().where(runs.c.id == run_id).values(
            status=status, detail=detail or {}, finished_at=to_db_time(datetime.now(UTC))))


def watch_add(engine: Engine, repo: str, number: int, reason: str, since: datetime | None = None) -> bool:
    """Add an item to the watch list, watched from `since` (default now: the radars of windows ending later
    recheck it); False if it was already there."""
    with engine.begin() as conn:
        exists = conn.execute(sa.select(watch.c.id).where(watch.c.repo == repo, watch.c.number == number)).scalar()
        if exists:
            return False
        conn.execute(watch.insert().values(repo=repo, number=number, reason=reason,
                                           added_at=to_db_time(since or datetime.now(UTC))))
        return True


def watch_remove(engine: Engine, repo: str, number: int) -> bool:
    """Remove an item from the watch list; False if it was not there."""
    with engine.begin() as conn:
        return conn.execute(watch.delete().where(watch.c.repo == repo, watch.c.number == number)).rowcount > 0
