"""Opening the store: engine, SQLite pragmas, migrations, and row <-> record conversion."""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..errors import StoreError
from ..models import Analysis, Comment, FileChange, Item, Link, PerfClaim
from .lock import writer_lock
from .schema import MIGRATIONS, migrate, migrations_table


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")  # first: even switching a fresh file to WAL may meet a lock
    cur.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
    cur.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints; safe with WAL
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()
    # pysqlite runs DDL outside any transaction: a kill mid-migration left half a schema. Let SQLAlchemy
    # issue BEGIN itself (see _sqlite_begin) so every migration commits whole or not at all.
    dbapi_conn.isolation_level = None


def _sqlite_begin(conn) -> None:
    conn.exec_driver_sql("BEGIN")


def open_engine(url: str, *, writer: bool = False, wait: float | None = None) -> Engine:
    """Create the engine for `url`, creating the SQLite file's folder and applying migrations.

    Migrations run under the store's writer lock (two processes opening a fresh store do not both migrate).
    With `writer`, the lock is taken first, waiting up to `wait` seconds for another writer, and stays held
    until `writer_lock(engine).release()` or the end of the process.
    """
    lock = None
    try:
        if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
            Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url)
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", _sqlite_pragmas)
            sa.event.listen(engine, "begin", _sqlite_begin)
        if writer:
            lock = writer_lock(engine)
            lock.acquire(wait)
        if writer or pending_migrations(engine):
            with writer_lock(engine).hold(wait), engine.begin() as conn:
                migrate(conn)  # looks again under the lock: another process may have migrated meanwhile
    except BaseException as exc:
        if lock is not None:
            lock.release()
        if isinstance(exc, sa.exc.ArgumentError):
            raise StoreError(f"invalid database URL: {exc}") from None
        if isinstance(exc, sa.exc.DBAPIError):  # server down, no such schema, no permission...
            reason = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
            raise StoreError(f"cannot open the store: {reason}") from None
        if isinstance(exc, ModuleNotFoundError):
            raise StoreError(f"database driver missing ({exc.name}); for PostgreSQL install infra-radar[postgres]"
                             ) from None
        raise
    return engine


def pending_migrations(engine: Engine) -> list[str]:
    """Names of the migrations the store has not applied (read-only: creates nothing)."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(migrations_table.name):
            return [name for name, _ in MIGRATIONS]
        done = set(conn.execute(sa.select(migrations_table.c.name)).scalars())
    return [name for name, _ in MIGRATIONS if name not in done]


def to_db_time(dt: datetime | None) -> datetime | None:
    """Aware datetime -> naive UTC for storage."""
    return dt.astimezone(UTC).replace(tzinfo=None) if dt is not None else None


def from_db_time(dt: datetime | None) -> datetime | None:
    """Naive UTC from storage -> aware UTC."""
    return dt.replace(tzinfo=UTC) if dt is not None else None


def item_hash(item: Item) -> str:
    """A digest of everything an item holds: equal digests mean an upsert changes nothing."""
    payload = [
        item.title, item.body, item.author, item.state, item.draft, item.number,
        *(to_db_time(t).isoformat() if t else None for t in
          (item.created_at, item.updated_at, item.merged_at, item.closed_at)),
        item.merge_commit, sorted(item.branches), sorted(item.labels), item.source,
        [(f.path, f.additions, f.deletions, f.status) for f in item.files],
        [(c.author, c.body, to_db_time(c.created_at).isoformat() if c.created_at else None, c.is_bot, c.kind)
         for c in item.comments],
    ]
    if item.named_paths or item.time_source:  # appended only when set: older items keep their digests
        payload += [item.named_paths, item.time_source]
    return hashlib.sha1(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def item_row(item: Item, repo_id: int) -> dict:
    """The `items` row of an item."""
    return {
        "repo_id": repo_id, "kind": item.kind, "key": item.key, "number": item.number,
        "title": item.title, "body": item.body, "author": item.author, "state": item.state,
        "draft": item.draft, "created_at": to_db_time(item.created_at),
        "updated_at": to_db_time(item.updated_at), "merged_at": to_db_time(item.merged_at),
        "closed_at": to_db_time(item.closed_at), "when_at": to_db_time(item.when),
        "merge_commit": item.merge_commit, "branches": item.branches, "labels": item.labels,
        "source": item.source, "content_hash": item_hash(item), "named_paths": item.named_paths,
        "time_source": item.time_source,
    }


def row_item(row, repo: str, files: list[FileChange], comments: list[Comment]) -> Item:
    """An Item from an `items` row and its files and comments."""
    return Item(
        repo=repo, kind=row.kind, key=row.key, title=row.title, number=row.number, body=row.body,
        author=row.author, state=row.state, draft=row.draft, created_at=from_db_time(row.created_at),
        updated_at=from_db_time(row.updated_at), merged_at=from_db_time(row.merged_at),
        closed_at=from_db_time(row.closed_at), merge_commit=row.merge_commit,
        branches=list(row.branches), labels=list(row.labels), files=files, comments=comments,
        source=row.source, id=row.id, named_paths=list(row.named_paths or []), time_source=row.time_source or "",
    )


_ANALYSIS_FIELDS = [f.name for f in fields(Analysis)]
_CLAIM_FIELDS = [f.name for f in fields(PerfClaim)]
_LINK_FIELDS = [f.name for f in fields(Link)]


def analysis_data(analysis: Analysis) -> dict:
    """An Analysis as a JSON-able dict (by hand: dataclasses.asdict deep-copies and is 10x slower)."""
    data = {name: getattr(analysis, name) for name in _ANALYSIS_FIELDS}
    data["perf_claims"] = [{n: getattr(c, n) for n in _CLAIM_FIELDS} for c in analysis.perf_claims]
    data["links"] = [{n: getattr(link, n) for n in _LINK_FIELDS} for link in analysis.links]
    return data


def data_analysis(data: dict) -> Analysis:
    """An Analysis from its JSON dict."""
    data = dict(data)
    data["perf_claims"] = [PerfClaim(**{**c, "span": tuple(c.get("span", (0, 0)))}) for c in data.get("perf_claims", [])]
    data["links"] = [Link(**link) for link in data.get("links", [])]
    return Analysis(**data)


def files_digest(item: Item) -> str:
    """A digest of an item's changed files and line counts, to tell whether they moved."""
    payload = sorted((f.path, f.additions, f.deletions) for f in item.files)
    return hashlib.sha1(json.dumps(payload).encode()).hexdigest()
