"""The CLI's last net: any unexpected exception as one line naming what failed, never a traceback.

Errors raised on purpose are RadarErrors with their own words; this turns the rest (the operating system
refusing a write, the database failing mid-command, a value out of range) into one line saying what to fix.
Set RADAR_DEBUG=1 to get the traceback instead. Every line is redacted before it is cut. The words are
data: defaults/failures.toml.
"""

from __future__ import annotations

import errno
import tomllib
from functools import cache
from importlib import resources

from .errors import clip, redact


@cache
def _messages() -> tuple[dict[int, str], list[tuple[str, str]]]:
    """defaults/failures.toml: {errno: template}, [(words, what to say)]."""
    data = tomllib.loads((resources.files("infra_radar") / "defaults" / "failures.toml").read_text(encoding="utf-8"))
    by_errno = {getattr(errno, name): text for name, text in data.get("os", {}).items() if hasattr(errno, name)}
    return by_errno, [(d["words"], d["say"]) for d in data.get("database", [])]


def one_line(exc: BaseException, store: str = "") -> str:
    """What failed, in one line without the traceback, the SQL, or any record text the SQL carried.
    `store`: the store's SQLite file, named in a database failure ("" for another database)."""
    if type(exc).__module__.startswith("sqlalchemy"):
        return _database(exc, store)
    if isinstance(exc, OSError):
        path = exc.filename or ""
        template = _messages()[0].get(exc.errno or 0)
        if template:
            return template.format(path=path or "a file", at=f" writing {path}" if path else "")
        return clip(redact(f"{path + ': ' if path else ''}{exc.strerror or exc}"), 300)
    first = (str(exc).strip().splitlines() or [""])[0]
    return clip(redact(f"unexpected {type(exc).__name__}: {first} (please report this; RADAR_DEBUG=1 shows where)"),
                300)


def database_hint(reason: str, store: str = "") -> str | None:
    """What to do about a database's own error message, when it is one of the known ones (naming the
    SQLite file `store` when given)."""
    low = reason.lower()
    say = next((say for words, say in _messages()[1] if words in low), None)
    return None if say is None else say.format(store=f"the store {store}" if store else "the store")


def _database(exc: BaseException, store: str = "") -> str:
    orig = getattr(exc, "orig", None)
    if orig is None and isinstance(exc.__cause__, Exception):
        orig = exc.__cause__
    reason = str(orig if orig is not None else type(exc).__name__)
    hint = database_hint(reason, store)
    if hint:
        return hint
    first = (reason.strip().splitlines() or [type(exc).__name__])[0]  # the SQL and its parameters follow: not shown
    return clip(redact(f"the store failed: {first}"), 300)
