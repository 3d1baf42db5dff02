"""Opening the store through SQLAlchemy: engine, SQLite pragmas, migrations (records <-> rows: store/rows.py)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..errors import StoreError
from .lock import writer_lock
from .queries import applied_migrations
from .schema import MIGRATIONS, migrate, migrations_table, newer_message, newer_migrations


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
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        folder = Path(url.removeprefix("sqlite:///")).expanduser().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file in the way, no permission, a full disk: the folder and the real cause
            why = "a file is in the way" if exc.errno in (errno.EEXIST, errno.ENOTDIR) else _os_reason(exc)
            raise StoreError(f"cannot create the store's folder {exc.filename or folder}: {why} "
                             f"(check the path of {_where(url)})") from None
    try:
        try:
            engine = sa.create_engine(url)
        except ValueError:  # a host or port SQLAlchemy cannot read (http://[::1): the URL is not shown
            raise StoreError("invalid database URL: its host or port cannot be read (check db_url / RADAR_DB_URL "
                             "/ --db)") from None
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", _sqlite_pragmas)
            sa.event.listen(engine, "begin", _sqlite_begin)
        writer_lock(engine).refusal = None  # looked at again below, on every open
        if writer:
            lock = writer_lock(engine)
            lock.acquire(wait)
        pending, unknown = _schema_state(engine)
        if unknown:  # a newer radar's store: read as it is, never migrated nor written (store.lock refuses)
            if lock is not None:
                lock.release()
                lock = None
            writer_lock(engine).refusal = newer_message(_store_name(engine), unknown)
            if writer:
                raise StoreError(writer_lock(engine).refusal)
        elif writer or pending:
            with writer_lock(engine).hold(wait), engine.begin() as conn:
                # looks again under the lock: another process may have migrated meanwhile
                migrate(conn, _store_name(engine))
    except BaseException as exc:
        if lock is not None:
            lock.release()
        if isinstance(exc, sa.exc.ArgumentError):
            raise StoreError(f"invalid database URL: {exc}") from None
        if isinstance(exc, sa.exc.DBAPIError):  # server down, no such schema, no permission...
            reason = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
            raise StoreError(f"cannot open the store: {_why(url, reason)}") from None
        if isinstance(exc, OSError):  # writing beside the store (its lock file): the file and the real cause
            raise StoreError(f"cannot write the store {exc.filename or _where(url)}: {_os_reason(exc)}") from None
        if isinstance(exc, ModuleNotFoundError):
            raise StoreError(f"database driver missing ({exc.name}); for PostgreSQL install infra-radar[postgres]"
                             ) from None
        raise
    return engine


def _os_reason(exc: OSError) -> str:
    """The operating system's reason, with what to do about a full disk."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{exc.strerror or 'no space left'} (the disk is full: free space and rerun)"
    return exc.strerror or str(exc) or type(exc).__name__


def _store_name(engine: Engine) -> str:
    """The store as a message names it: the SQLite file, else the URL without its password."""
    url = engine.url
    if url.get_backend_name() == "sqlite":
        return str(Path(url.database or ":memory:").expanduser())
    return url.render_as_string(hide_password=True)


def _schema_state(engine: Engine) -> tuple[list[str], list[str]]:
    """(migrations the store has not applied, applied migrations this code does not know)."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(migrations_table.name):
            return [name for name, _ in MIGRATIONS], []
        done = applied_migrations(conn)
    return [name for name, _ in MIGRATIONS if name not in done], newer_migrations(done)


def _where(url: str) -> str:
    return url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else "the database URL"


def _why(url: str, reason: str) -> str:
    """SQLite's reason for not opening a file, with what to check (its own words name no path)."""
    from ..failures import database_hint

    if not url.startswith("sqlite:///") or url == "sqlite:///:memory:":
        return reason
    path = Path(url.removeprefix("sqlite:///")).expanduser()
    if "unable to open" not in reason and "readonly" not in reason:
        return database_hint(reason) or reason
    if "unable to open" in reason or "readonly" in reason:
        if path.is_dir():
            return f"{path} is a directory, not a database file"
        if path.exists() and not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
            return f"{path} is read-only (the store needs write access to the file and its folder)"
        return f"{reason}: {path}"
    return reason


def pending_migrations(engine: Engine) -> list[str]:
    """Names of the migrations the store has not applied (read-only: creates nothing)."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(migrations_table.name):
            return [name for name, _ in MIGRATIONS]
        done = applied_migrations(conn)
    return [name for name, _ in MIGRATIONS if name not in done]
