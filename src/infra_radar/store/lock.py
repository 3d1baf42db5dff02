"""The store-wide writer lock: one writing command at a time per store; readers never take it.

A writing command (imports, fetch, analyze, daily, weekly, watch add/remove, migrations) holds the lock
from before it opens the store until it exits. A second writer waits for it, saying once on stderr who
holds it, up to `lock_timeout` seconds (`--wait`, RADAR_LOCK_TIMEOUT), then fails with one line naming the
holder. Readers (show, export, eval, site build, push) analyse pending items only when the lock is free
and otherwise show what is already analysed, so they never wait for a writer. `radar push` takes the lock for
each message it delivers (the "already delivered" check, the post and its record), so two pushes at once
never post a message twice.

The lock dies with its holder, so a killed run never leaves a stale lock:

- SQLite: `flock` on the database file itself, so the lock is keyed on the file's identity (device and
  inode): one store reached through two paths or hard links has one writer. And `flock` on `<database>.lock`
  beside the path used, which holds the holder's command, pid, host and start time (JSON), rewritten by
  every new holder and emptied on release. (flock and SQLite's own POSIX locks do not meet on a local file
  system. The database file's descriptor is opened once per process and never closed: closing any descriptor
  of a file drops every POSIX lock the process holds on it, SQLite's included.)
- PostgreSQL: a session-level `pg_advisory_lock` on a dedicated connection, keyed by database and schema
  (so stores in different schemas of one database do not block each other); the holder is described in
  that session's `application_name`, which `pg_stat_activity` shows next to the lock in `pg_locks`.

The lock is reentrant within a process: an analysis inside `radar daily` finds the lock already held.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StoreBusyError, StoreError

if TYPE_CHECKING:  # imported where used: `radar analyze` takes the lock of a ready store without SQLAlchemy
    import sqlalchemy as sa
    from sqlalchemy.engine import Engine

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux/macOS: SQLite stores are not locked
    fcntl = None  # type: ignore[assignment]

DEFAULT_WAIT = 600.0  # seconds a writer waits for another one (cron runs should queue, not fail)
ENV_WAIT = "RADAR_LOCK_TIMEOUT"
COMMAND = "radar"  # what this process says it is doing; the CLI sets it to e.g. "radar import-jsonl"
_POLL = (0.05, 1.0)  # first and longest pause between attempts, in seconds


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds the lock: command, process id, host, since when (UTC)."""

    command: str
    pid: int | None
    host: str
    since: datetime | None

    def describe(self) -> str:
        since = f", since {self.since:%Y-%m-%dT%H:%M:%SZ}" if self.since else ""
        return f"`{self.command}` (pid {self.pid or '?'} on {self.host or '?'}{since})"


def _me(command: str) -> Holder:
    return Holder(command, os.getpid(), socket.gethostname(), datetime.now(UTC).replace(microsecond=0))


def _parse_time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text).astimezone(UTC) if text else None
    except ValueError:
        return None


class _NoLock:
    """A store nothing else can open (SQLite in memory), or a platform without flock."""

    def try_lock(self, me: Holder) -> bool:
        return True

    def unlock(self) -> None:
        return None

    def holder(self) -> Holder | None:
        return None


_DATABASE_FDS: dict[tuple[int, int], int] = {}  # (device, inode) -> a descriptor of that database, never closed


def database_identity(database: Path) -> tuple[tuple[int, int], int]:
    """(device, inode) of the SQLite database file and this process's descriptor of it (created empty when
    missing: an empty file is an empty SQLite database), opened once per file and kept open (see above)."""
    try:
        st = os.stat(database)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise StoreError(f"cannot read the store's file {database}: {exc.strerror}") from None
    if st is not None and (st.st_dev, st.st_ino) in _DATABASE_FDS:
        key = (st.st_dev, st.st_ino)
        return key, _DATABASE_FDS[key]
    try:  # first look at this file in this process: no lock of ours on it can be lost by the open
        fd = os.open(database, (os.O_RDONLY if st is not None else os.O_RDWR | os.O_CREAT) | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot open the store's file {database}: {exc.strerror}") from None
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    if key in _DATABASE_FDS:  # pragma: no cover - created between the two looks: keep the first descriptor
        return key, _DATABASE_FDS[key]
    _DATABASE_FDS[key] = fd
    return key, fd


def forget_database(database: Path) -> None:
    """Close this process's descriptor of the database file: only once no connection of the process has the
    file open any more (the command's engine disposed), and the writer lock is not held through it. The CLI
    does this as a command ends, so a process running many commands (a test session) keeps no descriptor."""
    try:
        st = os.stat(database)
    except OSError:
        return
    key = (st.st_dev, st.st_ino)
    for lock in _LOCKS.values():
        backend = getattr(lock, "_backend", None)
        if lock.held and getattr(backend, "identity", None) == key:
            return
    fd = _DATABASE_FDS.pop(key, None)
    if fd is not None:
        for lock in _LOCKS.values():  # a later lock of this file opens it again
            backend = getattr(lock, "_backend", None)
            if getattr(backend, "database_fd", None) == fd:
                backend.database_fd, backend.identity = None, None
        os.close(fd)


class _FileLock:
    """flock on the SQLite database file (its identity) and on a file beside the path used to reach it; that
    file's content describes the holder."""

    def __init__(self, path: Path, database: Path | None = None):
        self.path, self.fd = path, None
        self.database = database  # flocked too: the same file through another path or hard link waits
        self.database_fd: int | None = None
        self.identity: tuple[int, int] | None = None

    def try_lock(self, me: Holder) -> bool:
        if self.fd is None:
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
            try:
                fd = os.open(self.path, flags, 0o644)  # a planted symlink is refused, never truncated through
            except OSError as exc:
                why = "it is a symbolic link (remove it)" if exc.errno == errno.ELOOP else exc.strerror
                raise StoreError(f"cannot create the store's lock file {self.path}: {why}") from None
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise StoreError(f"the store's lock file {self.path} is not a regular file: remove it")
            self.fd = fd
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if self.database is not None and self.database_fd is None:
            try:
                self.identity, self.database_fd = database_identity(self.database)
            except StoreError:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
                raise
        if self.database_fd is not None:
            try:
                fcntl.flock(self.database_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # the same database, reached through another path, has a writer
                fcntl.flock(self.fd, fcntl.LOCK_UN)
                return False
        info = {"command": me.command, "pid": me.pid, "host": me.host, "since": me.since.isoformat()}
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, (json.dumps(info) + "\n").encode(), 0)
        except OSError as exc:  # a full disk, a quota: give the lock back and name the file and the cause
            if self.database_fd is not None:
                fcntl.flock(self.database_fd, fcntl.LOCK_UN)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            full = " (the disk is full: free space and rerun)" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
            raise StoreError(f"cannot write the store's lock file {self.path}: {exc.strerror or exc}{full}") from None
        return True

    def unlock(self) -> None:
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)  # released cleanly: no holder to describe
                if self.database_fd is not None:
                    fcntl.flock(self.database_fd, fcntl.LOCK_UN)  # the descriptor itself stays open
                fcntl.flock(self.fd, fcntl.LOCK_UN)  # even if a forked child still has the descriptor
            finally:
                os.close(self.fd)
                self.fd = None

    def holder(self) -> Holder | None:
        try:
            info = json.loads(self.path.read_text(encoding="utf-8") or "null")
        except (OSError, ValueError):
            return None
        if not isinstance(info, dict):
            return None
        pid, host = info.get("pid"), str(info.get("host") or "")
        if isinstance(pid, int) and host == socket.gethostname() and not _alive(pid):
            return None  # what a killed holder left: its lock died with it
        return Holder(str(info.get("command") or "radar"), pid if isinstance(pid, int) else None, host,
                      _parse_time(info.get("since")))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _AdvisoryLock:
    """A session-level PostgreSQL advisory lock on a connection of its own, keyed by database and schema."""

    def __init__(self, engine: Engine):
        import sqlalchemy as sa

        self.engine = sa.create_engine(engine.url, poolclass=sa.pool.NullPool)
        self.conn: sa.Connection | None = None
        self.key = 0

    def _connect(self) -> sa.Connection:
        import sqlalchemy as sa

        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        where = conn.execute(sa.text("SELECT current_database(), current_schema()")).one()
        digest = hashlib.sha1(f"infra-radar writer {where[0]} {where[1]}".encode()).digest()
        self.key = int.from_bytes(digest[:8], "big", signed=True)
        return conn

    def try_lock(self, me: Holder) -> bool:
        import sqlalchemy as sa

        if self.conn is None:  # kept between attempts; closed when the lock is given back
            self.conn = self._connect()
        conn = self.conn
        if not conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar():
            return False
        name = f"{me.command}|{me.pid}|{me.since:%Y-%m-%dT%H:%M:%SZ}|{me.host}"[:63]  # NAMEDATALEN - 1
        conn.execute(sa.text("SELECT set_config('application_name', :n, false)"), {"n": name})
        return True

    def unlock(self) -> None:
        import sqlalchemy as sa

        if self.conn is not None:
            try:
                # Released here, before close: the server ends a closed session (and frees its locks) a
                # moment after the client has gone, so a check right after close could still see us holding it
                self.conn.execute(sa.text("SELECT pg_advisory_unlock_all()"))
            except sa.exc.SQLAlchemyError:
                pass  # a broken connection: closing it ends the session, and with it the lock
            try:
                self.conn.close()
            finally:
                self.conn = None
                self.engine.dispose()

    def holder(self) -> Holder | None:
        import sqlalchemy as sa

        query = sa.text(
            "SELECT a.application_name, l.pid FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND l.classid::bigint = :hi AND l.objid::bigint = :lo")
        conn = self.conn or self._connect()  # a waiter asks on its own session; others on a short one
        try:
            unsigned = self.key & 0xFFFF_FFFF_FFFF_FFFF  # pg_locks shows a bigint key as two oids
            row = conn.execute(query, {"hi": unsigned >> 32, "lo": unsigned & 0xFFFF_FFFF}).first()
        finally:
            if conn is not self.conn:
                conn.close()
                self.engine.dispose()
        if row is None:
            return None
        command, pid, since, host = ((row[0] or "").split("|", 3) + ["", "", ""])[:4]
        if not pid.isdigit():  # not one of ours, or its name is hidden from us
            return Holder("another session", None, f"PostgreSQL backend {row[1]}", None)
        return Holder(command, int(pid), host, _parse_time(since))


def _backend(engine: Engine):
    url = engine.url
    if url.get_backend_name() == "postgresql":
        return _AdvisoryLock(engine)
    if url.get_backend_name() == "sqlite" and fcntl is not None:
        database = url.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            return _sqlite_lock(Path(database))
    return _NoLock()


def _sqlite_lock(database: Path) -> _FileLock:
    path = database.expanduser().resolve()
    return _FileLock(path.with_name(path.name + ".lock"), path)


@contextmanager
def sqlite_writer(database: Path, command: str | None = None) -> Iterator[bool]:
    """The writer lock of the SQLite store file `database`, taken without opening the store (no SQLAlchemy):
    yields whether it was free (and is now ours until the block ends); never waits. False where flock is
    missing. StoreError when the lock file cannot be made (the SQLAlchemy path then says why)."""
    if fcntl is None:
        yield False
        return
    lock = _sqlite_lock(database)
    mine = lock.try_lock(_me(command or COMMAND))
    try:
        yield mine
    finally:
        if mine:
            lock.unlock()
        elif lock.fd is not None:
            os.close(lock.fd)


def _say(line: str) -> None:
    print(f"radar: {line}", file=sys.stderr, flush=True)


class WriterLock:
    """The writer lock of one store, reentrant within this process (see the module docstring)."""

    def __init__(self, engine: Engine):
        self._backend = _backend(engine)
        self.depth = 0
        self.refusal: str | None = None  # why this store is never written (a newer radar's schema: store/db.py)

    @property
    def held(self) -> bool:
        return self.depth > 0

    def holder(self) -> Holder | None:
        """Who holds the lock now (this process included), when it can be told."""
        return self._backend.holder()

    def try_acquire(self, command: str | None = None) -> bool:
        """Take the lock if it is free (or already ours); never waits. StoreError when the store is never to be
        written by this code (`refusal`)."""
        if self.refusal:
            raise StoreError(self.refusal)
        if self.depth == 0 and not self._backend.try_lock(_me(command or COMMAND)):
            return False
        self.depth += 1
        identity = getattr(self._backend, "identity", None)
        if identity is not None:  # found by the file's identity from now on, whatever path reaches it
            key = f"sqlite:{identity[0]}:{identity[1]}"
            known = _LOCKS.get(key)
            # a lock left under this identity by a deleted store whose inode this file now has is replaced: kept,
            # the next writer_lock() of this store would drop it as stale and make a second lock of the file,
            # which then waits for the first (held by this very process) until its limit
            if known is None or (known is not self and not known.held):
                _LOCKS[key] = self
        return True

    def acquire(self, wait: float | None = None, command: str | None = None,
                say: Callable[[str], None] = _say) -> None:
        """Take the lock, waiting up to `wait` seconds for another writer (one line on stderr per holder)."""
        wait = DEFAULT_WAIT if wait is None else wait
        start = time.monotonic()
        deadline, pause, told = start + wait, _POLL[0], ()
        while not self.try_acquire(command):
            holder = self.holder()
            now = time.monotonic()
            if now >= deadline:
                raise StoreBusyError(_busy_message(holder, wait))
            who = (holder.pid, holder.host) if holder else None
            if who != told and (holder is not None or (told == () and now - start > 1)):
                told = who  # the holder is written just after it locks: name it once it is readable
                say(f"waiting for {holder.describe() if holder else 'another radar process'} to finish writing "
                    f"the store (up to {_seconds(deadline - now)}; --wait SECONDS sets the limit)")
            time.sleep(min(pause, max(0.0, deadline - now)))
            pause = min(pause * 2, _POLL[1])

    def release(self) -> None:
        """Give back one acquisition; the lock is free when the last one is given back."""
        if self.depth == 0:
            return
        self.depth -= 1
        if self.depth == 0:
            self._backend.unlock()

    @contextmanager
    def hold(self, wait: float | None = None, command: str | None = None) -> Iterator[None]:
        """`with lock.hold(wait):` the lock for the block (waiting for it as `acquire` does)."""
        self.acquire(wait, command)
        try:
            yield
        finally:
            self.release()

    @contextmanager
    def attempt(self, command: str | None = None) -> Iterator[bool]:
        """`with lock.attempt() as mine:` the lock for the block if it is free, else mine is False (also for a
        store this code never writes: a reader shows what is there)."""
        mine = not self.refusal and self.try_acquire(command)
        try:
            yield mine
        finally:
            if mine:
                self.release()


def _seconds(value: float) -> str:
    value = max(0.0, value)
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.0f} min"


def _busy_message(holder: Holder | None, wait: float) -> str:
    who = holder.describe() if holder else "another radar process"
    return (f"the store is busy: {who} is writing it and did not finish within {_seconds(wait)}; rerun when it "
            f"has finished, or wait longer with --wait SECONDS ({ENV_WAIT}, lock_timeout in radar.toml)")


_LOCKS: dict[str, WriterLock] = {}


def writer_lock(engine: Engine) -> WriterLock:
    """The writer lock of the store `engine` points at (one object per store and process)."""
    key = engine.url.render_as_string(hide_password=False)  # in memory only, never shown
    database = engine.url.database
    if engine.url.get_backend_name() == "sqlite" and database not in (None, "", ":memory:"):
        path = Path(database).expanduser().resolve()
        try:
            st = os.stat(path)
            key = f"sqlite:{st.st_dev}:{st.st_ino}"  # the file itself, however it is reached
        except OSError:  # not made yet: by its path until it is (try_acquire adds its identity)
            key = "sqlite:" + str(path)
    lock = _LOCKS.get(key)
    if lock is not None and not lock.held and key.startswith("sqlite:") and not _still_reaches(lock, key):
        lock = None  # made for a file since deleted, whose inode a new store now has: not this store's lock
    if lock is None:
        lock = _LOCKS[key] = WriterLock(engine)
    return lock


def _still_reaches(lock: WriterLock, key: str) -> bool:
    """Whether the path `lock` was made for still reaches the file `key` names (`sqlite:DEV:INO`). A process
    that runs many commands (a test session) deletes stores, and the system gives a new file the inode of a
    deleted one: the lock of the deleted store must not stand in for the new store's."""
    database = getattr(lock._backend, "database", None)
    if database is None or key == "sqlite:" + str(database):
        return True
    try:
        st = os.stat(database)
    except OSError:
        return False
    return key == f"sqlite:{st.st_dev}:{st.st_ino}"

