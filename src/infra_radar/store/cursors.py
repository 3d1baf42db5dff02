"""Fetch state of the live source: per-stream cursors (with the resume point of a cut pass) and ETags.

A stream is one paged listing of one repository (pulls, issues, releases). Its cursor is the update time
from which the next pass must fetch; a pass in progress records, after every fully saved page, the page
token to resume after, so a killed fetch goes on where it stopped instead of starting over.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .rows import from_db_time, to_db_time
from .schema import fetch_cursors, fetch_etags, items, repos


@dataclass(slots=True)
class StreamState:
    """Where one stream stands: its cursor, and the resume point of an unfinished pass (if any)."""

    cursor: datetime | None = None
    resume: str | None = None
    resume_since: datetime | None = None
    resume_high: datetime | None = None


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def read_state(engine: Engine, repo: str, stream: str) -> StreamState:
    """The state of `stream` of `repo` (empty when it was never fetched)."""
    query = sa.select(fetch_cursors).where(fetch_cursors.c.repo == repo.lower(), fetch_cursors.c.stream == stream)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    if row is None:
        return StreamState()
    return StreamState(from_db_time(row.cursor), row.resume, from_db_time(row.resume_since),
                       from_db_time(row.resume_high))


def write_state(engine: Engine, repo: str, stream: str, state: StreamState) -> None:
    """Replace the state of `stream` of `repo`."""
    values = {"cursor": to_db_time(state.cursor), "resume": state.resume,
              "resume_since": to_db_time(state.resume_since), "resume_high": to_db_time(state.resume_high),
              "updated_at": _now()}
    key = (fetch_cursors.c.repo == repo.lower(), fetch_cursors.c.stream == stream)
    with engine.begin() as conn:
        if conn.execute(fetch_cursors.update().where(*key).values(values)).rowcount == 0:
            conn.execute(fetch_cursors.insert().values(repo=repo.lower(), stream=stream, **values))


def read_etag(engine: Engine, url: str) -> str | None:
    """The ETag remembered for `url`, if any."""
    with engine.connect() as conn:
        return conn.execute(sa.select(fetch_etags.c.etag).where(fetch_etags.c.url == url)).scalar()


def write_etag(engine: Engine, url: str, etag: str) -> None:
    """Remember the ETag of `url` (call only once its content is saved)."""
    with engine.begin() as conn:
        if conn.execute(fetch_etags.update().where(fetch_etags.c.url == url)
                        .values(etag=etag, updated_at=_now())).rowcount == 0:
            conn.execute(fetch_etags.insert().values(url=url, etag=etag, updated_at=_now()))


def stored_update(engine: Engine, repo: str, kind: str, number: int) -> datetime | None:
    """The update time the store holds for PR or issue `number` of `repo` (None when absent)."""
    query = (sa.select(items.c.updated_at).join(repos, repos.c.id == items.c.repo_id)
             .where(sa.func.lower(repos.c.name) == repo.lower(), items.c.kind == kind, items.c.number == number))
    with engine.connect() as conn:
        return from_db_time(conn.execute(query.limit(1)).scalar())
