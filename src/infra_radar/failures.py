"""The CLI's last net: any unexpected exception as one line naming what failed, never a traceback.

Errors raised on purpose are RadarErrors with their own words; this turns the rest (the operating system
refusing a write, the database failing mid-command, a value out of range) into one line saying what to fix.
Set RADAR_DEBUG=1 to get the traceback instead. Every line is redacted before it is cut.
"""

from __future__ import annotations

import errno

from .errors import clip, redact

_OS = {
    errno.ENOSPC: "the disk is full{at}: free space and rerun (every committed batch is kept)",
    errno.EDQUOT: "the disk quota is spent{at}: free space and rerun (every committed batch is kept)",
    errno.EFBIG: "the file size limit was reached{at} (ulimit -f): raise it and rerun",
    errno.ENOTDIR: "{path}: a part of this path is a file, not a folder: choose another path",
    errno.EEXIST: "{path}: a file is in the way of a folder: choose another path",
    errno.EACCES: "{path}: permission denied: choose a path you can write, or fix its permissions",
    errno.EPERM: "{path}: operation not permitted: choose a path you can write",
    errno.EROFS: "{path}: the file system is read-only: choose a writable path",
    errno.EISDIR: "{path}: is a folder, not a file",
    errno.ENOENT: "{path}: no such file or folder",
    errno.ELOOP: "{path}: a symbolic link is in the way (not followed, for safety): remove it",
}

_DB = [  # (words in the database's message, what to say)
    ("disk is full", "the disk holding the store is full: free space and rerun (every committed batch is kept)"),
    ("database is locked", "another program holds the SQLite store locked past the busy timeout (30 s): "
                           "wait for it to finish, or stop it, and rerun"),
    ("readonly database", "the store is read-only: give write access to the database file and its folder"),
    ("unable to open database file", "the store cannot be opened: check that its path is a writable folder"),
    ("file is not a database", "the store file is not an SQLite database: check db_url / --db"),
    ("disk i/o error", "the store could not be written (disk I/O error): check free space, the file size limit "
                       "(ulimit -f) and the disk, then rerun (every committed batch is kept)"),
    ("could not extend file", "the disk holding the PostgreSQL store is full: free space and rerun"),
    ("no space left", "the disk holding the store is full: free space and rerun (every committed batch is kept)"),
    ("too large to convert", "a number is too large for the store (PR and issue numbers stay below 10^18)"),
]


def one_line(exc: BaseException) -> str:
    """What failed, in one line without the traceback, the SQL, or any record text the SQL carried."""
    if type(exc).__module__.startswith("sqlalchemy"):
        return _database(exc)
    if isinstance(exc, OSError):
        path = exc.filename or ""
        template = _OS.get(exc.errno or 0)
        if template:
            return template.format(path=path or "a file", at=f" writing {path}" if path else "")
        return clip(redact(f"{path + ': ' if path else ''}{exc.strerror or exc}"), 300)
    first = (str(exc).strip().splitlines() or [""])[0]
    return clip(redact(f"unexpected {type(exc).__name__}: {first} (please report this; RADAR_DEBUG=1 shows where)"),
                300)


def database_hint(reason: str) -> str | None:
    """What to do about a database's own error message, when it is one of the known ones."""
    low = reason.lower()
    return next((say for words, say in _DB if words in low), None)


def _database(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    if orig is None and isinstance(exc.__cause__, Exception):
        orig = exc.__cause__
    reason = str(orig if orig is not None else type(exc).__name__)
    hint = database_hint(reason)
    if hint:
        return hint
    first = (reason.strip().splitlines() or [type(exc).__name__])[0]  # the SQL and its parameters follow: not shown
    return clip(redact(f"the store failed: {first}"), 300)
