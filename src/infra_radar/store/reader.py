"""One query text, two readers: how the read side runs its SQL.

Every read query of the store (store/queries.py, store/ledger.py) is written once, as SQL text that SQLite
and PostgreSQL both accept, with named `:param` parameters. It runs through a `Reader`, of which there are
two: `SqliteReader` over a stdlib `sqlite3` connection opened read-only (what `radar show` uses on a SQLite
store that is ready, so the command never imports SQLAlchemy: its import alone is 0.15 s), and `SqlaReader`
over a SQLAlchemy connection (every other command, and PostgreSQL). Query functions take either a Reader or
an engine (`reading` opens a connection of the engine for them).

Values differ by driver, so they are converted here and nowhere else: SQLAlchemy stores a DateTime on SQLite
as text ('2026-07-01 10:00:00.000000') and PostgreSQL returns naive datetimes (both become aware UTC, as
store/rows.py `from_db_time` gives); JSON columns come back as text on SQLite and parsed on PostgreSQL;
booleans as 0/1 or bool. Parameters go the other way: a datetime becomes the stored text on SQLite.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from .rows import from_db_time, to_db_time

__all__ = ["Reader", "SqlaReader", "SqliteReader", "expand_in", "open_sqlite", "reading", "sqlite_file"]

_PARAM = re.compile(r"(?<![:\w]):(\w+)")


def expand_in(sql: str, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """A list or tuple parameter (`x IN :ids`) as one parameter per value: `x IN (:ids_0, :ids_1)`; an empty
    one as `(NULL)`, which no value equals (write `IN`, never `NOT IN`, with it)."""
    out: dict[str, Any] = {}
    lists: dict[str, str] = {}
    for name, value in (params or {}).items():
        if isinstance(value, list | tuple):
            names = [f"{name}_{i}" for i in range(len(value))]
            out.update(zip(names, value, strict=True))
            lists[name] = "(" + ", ".join(f":{n}" for n in names) + ")" if names else "(NULL)"
        else:
            out[name] = value
    if lists:
        sql = _PARAM.sub(lambda m: lists.get(m.group(1), m.group(0)), sql)
    return sql, out


def _stored_time(value: datetime) -> str:
    """A datetime as SQLAlchemy's DateTime stores it on SQLite (naive UTC, microseconds always written)."""
    if value.tzinfo is not None:
        value = to_db_time(value)
    return (f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
            f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}")


class Reader:
    """Runs read queries (SQL text, `:name` parameters) and converts the values they return."""

    sqlite = True  # the store is SQLite: times and JSON come back as text

    def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple]:
        raise NotImplementedError

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        """Every row of the query, as tuples of the driver's values (convert them with `time`, `json`, `flag`)."""
        sql, flat = expand_in(sql, params)
        return self._execute(sql, {k: self.param(v) for k, v in flat.items()})

    def column(self, sql: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        """The first value of every row."""
        return [row[0] for row in self.rows(sql, params)]

    def scalar(self, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        """The first value of the first row, or None."""
        found = self.rows(sql, params)
        return found[0][0] if found else None

    def param(self, value: Any) -> Any:
        """A parameter as the store compares it: a datetime as naive UTC (text on SQLite)."""
        if not isinstance(value, datetime):
            return value
        if self.sqlite:
            return _stored_time(value)
        return to_db_time(value) if value.tzinfo is not None else value

    def time(self, value: Any) -> datetime | None:
        """A DateTime column's value as an aware UTC datetime (None stays None)."""
        return from_db_time(datetime.fromisoformat(value) if isinstance(value, str) else value)

    def json(self, value: Any) -> Any:
        """A JSON column's value, parsed (SQLite returns the text; PostgreSQL's driver parses it)."""
        return json.loads(value) if self.sqlite and isinstance(value, str) else value

    @staticmethod
    def flag(value: Any) -> bool:
        """A Boolean column's value (0/1 on SQLite)."""
        return bool(value)


class SqliteReader(Reader):
    """A Reader over a stdlib sqlite3 connection (see `open_sqlite`)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple]:
        return self.conn.execute(sql, params).fetchall()

    def close(self) -> None:
        self.conn.close()


class SqlaReader(Reader):
    """A Reader over a SQLAlchemy connection (SQLite or PostgreSQL): the same SQL text, through `sa.text`."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.sqlite = conn.dialect.name == "sqlite"

    def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple]:
        import sqlalchemy as sa

        return [tuple(row) for row in self.conn.execute(sa.text(sql), params)]


@contextmanager
def reading(store) -> Iterator[Reader]:
    """A Reader for `store`: the store itself when it is one, else a connection of the SQLAlchemy engine (or the
    SQLAlchemy connection) it is, for the block."""
    if isinstance(store, Reader):
        yield store
        return
    import sqlalchemy as sa  # loaded already: `store` is an engine or connection of it

    if isinstance(store, sa.Connection):  # inside the caller's transaction
        yield SqlaReader(store)
        return
    with store.connect() as conn:
        yield SqlaReader(conn)


BUSY_TIMEOUT = 30.0  # seconds, as the SQLAlchemy engine's busy_timeout pragma (store/db.py)
MMAP_SIZE = 1 << 30  # bytes of the file read through a memory map: half the time of read() calls for a card


def open_sqlite(path: str | Path) -> SqliteReader:
    """The SQLite file at `path`, opened read-only (never created, never written, no writer lock taken).

    A WAL database needs its `-shm` index file; in a folder this process cannot write, with none left there
    (the last connection removed it), SQLite cannot read it read-only, so it is opened as immutable: with no
    `-wal` file beside it nothing is waiting to be checkpointed, and nobody without write access to the
    folder can start one. sqlite3.Error when the file cannot be read as a database.
    """
    file = Path(path).absolute()
    try:
        return _connect(f"{file.as_uri()}?mode=ro")
    except sqlite3.OperationalError:
        wal = file.with_name(file.name + "-wal")
        if not file.is_file() or wal.exists() or os.access(file.parent, os.W_OK):
            raise
    return _connect(f"{file.as_uri()}?mode=ro&immutable=1")


def _connect(uri: str) -> SqliteReader:
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT)
    try:
        conn.execute(f"PRAGMA mmap_size={MMAP_SIZE}")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()  # reads the header: fails here, not later
    except BaseException:
        conn.close()
        raise
    return SqliteReader(conn)


def sqlite_file(url: str) -> Path | None:
    """The file of a `sqlite:///PATH` store URL that names it literally, else None (another database, an
    in-memory one, or a URL with a query, %-escapes or `~`, which SQLAlchemy reads its own way)."""
    path = url.removeprefix("sqlite:///")
    if path == url or not path or path == ":memory:" or path.startswith(("~", "file:")) or any(
            c in path for c in "?%"):
        return None
    return Path(path)
