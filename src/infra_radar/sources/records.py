"""The source boundary: raw records -> typed, range-checked values, or a RecordError saying why not.

Every source (JSON Lines, git, pages, the GitHub API) checks its input here before the store sees it, so
SQLite and PostgreSQL accept exactly the same records: numbers are ints in range (bools are not numbers),
line counts ints >= 0 or null, strings are strings, times are real times, and text holds no NUL and no lone
surrogate (PostgreSQL refuses both; they are removed, not the record). A record that fails is skipped by the
caller with its place (`file:line`, the API object) and the reason; the rest of its batch is kept.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from ..models import COMMIT, ISSUE, MAX_NUMBER, PR, RELEASE, Comment, FileChange, Item

__all__ = ["RecordError", "check_item", "clean_text", "count", "number", "text", "time"]

_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")  # NUL and lone surrogates (valid pairs are single code points)
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+")
_MIN_TIME, _MAX_TIME = datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)
_KINDS = (PR, ISSUE, RELEASE, COMMIT)
_STATES = ("open", "closed", "merged", "published")
_LIMITS = {"key": 200, "author": 200, "branch": 200, "label": 200, "path": 4096, "state": 16, "status": 16,
           "merge_commit": 64, "title": 10_000}


class RecordError(ValueError):
    """A record that cannot be stored as it is: `field: why`."""


def clean_text(value: str) -> str:
    """`value` without NUL characters and lone surrogates (linear; the common case is one scan)."""
    return _BAD_CHARS.sub("", value) if _BAD_CHARS.search(value) else value


def text(value: Any, name: str, *, required: bool = False, limit: int | None = None) -> str:
    """A string field: None is "", anything else that is not a string is an error."""
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise RecordError(f"{name}: expected a string, got {type(value).__name__}")
    value = clean_text(value)
    if required and not value.strip():
        raise RecordError(f"{name}: empty")
    if limit is not None and len(value) > limit:
        raise RecordError(f"{name}: {len(value)} characters (at most {limit})")
    return value


def number(value: Any, name: str, *, required: bool = False) -> int | None:
    """A PR/issue number: an int in 1..MAX_NUMBER (strings and bools are not numbers)."""
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{name}: expected an integer, got {type(value).__name__}")
    if not 0 < value <= MAX_NUMBER:
        raise RecordError(f"{name}: {_short(value)} is out of range 1..{MAX_NUMBER}")
    return value


def count(value: Any, name: str) -> int | None:
    """A line count: an int in 0..MAX_NUMBER, or None (binary files)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{name}: expected an integer or null, got {type(value).__name__} {_short(value)}")
    if not 0 <= value <= MAX_NUMBER:
        raise RecordError(f"{name}: {_short(value)} is out of range 0..{MAX_NUMBER}")
    return value


def time(value: Any, name: str) -> datetime | None:
    """An ISO-8601 time (naive = UTC) within 1970..2200, or None."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise RecordError(f"{name}: not an ISO-8601 time: {_short(value)}") from None
    else:
        raise RecordError(f"{name}: expected a time string, got {type(value).__name__}")
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    if not _MIN_TIME <= when < _MAX_TIME:
        raise RecordError(f"{name}: {when.isoformat()} is out of range")
    return when


def _moment(value: Any, name: str) -> datetime | None:
    """A record's time field: a datetime in range, or None (strings were converted by the source)."""
    if value is not None and not isinstance(value, datetime):
        raise RecordError(f"{name}: expected a time, got {type(value).__name__}")
    return time(value, name)


def _short(value: Any) -> str:
    shown = repr(value) if not isinstance(value, int) else (str(value) if value.bit_length() < 200 else
                                                            f"a {value.bit_length()}-bit integer")
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _strings(values: Any, name: str, limit: int) -> list[str]:
    if not isinstance(values, list):
        raise RecordError(f"{name}: expected a list, got {type(values).__name__}")
    return [text(v, name, required=True, limit=limit) for v in values]


def check_item(item: Item) -> Item:
    """`item` with every field checked and its text cleaned (in place); RecordError when it cannot be stored."""
    if not isinstance(item.repo, str) or not _REPO.fullmatch(item.repo):
        raise RecordError(f"repo: {_short(item.repo)} is not OWNER/NAME")
    if item.kind not in _KINDS:
        raise RecordError(f"kind: {_short(item.kind)} is not one of {', '.join(_KINDS)}")
    item.key = text(item.key, "key", required=True, limit=_LIMITS["key"])
    item.number = number(item.number, "number")
    item.title = text(item.title, "title", limit=_LIMITS["title"])
    item.body = text(item.body, "body")
    item.author = text(item.author, "author", limit=_LIMITS["author"])
    if item.state not in _STATES:
        raise RecordError(f"state: {_short(item.state)} is not one of {', '.join(_STATES)}")
    if not isinstance(item.draft, bool):
        raise RecordError(f"draft: expected true or false, got {type(item.draft).__name__}")
    for name in ("created_at", "updated_at", "merged_at", "closed_at"):
        setattr(item, name, _moment(getattr(item, name), name))
    if item.merge_commit is not None:
        item.merge_commit = text(item.merge_commit, "merge_commit", limit=_LIMITS["merge_commit"]) or None
    item.branches = _strings(item.branches, "branches", _LIMITS["branch"])
    item.labels = _strings(item.labels, "labels", _LIMITS["label"])
    item.named_paths = _strings(item.named_paths, "named_paths", _LIMITS["path"])
    if not isinstance(item.files, list) or not isinstance(item.comments, list):
        raise RecordError("files/comments: expected lists")
    for f in item.files:
        if not isinstance(f, FileChange):
            raise RecordError(f"files: expected a file change, got {type(f).__name__}")
        f.path = text(f.path, "files.path", required=True, limit=_LIMITS["path"])
        f.additions, f.deletions = count(f.additions, "files.additions"), count(f.deletions, "files.deletions")
        f.status = text(f.status, "files.status", limit=_LIMITS["status"]) or None
    for c in item.comments:
        if not isinstance(c, Comment):
            raise RecordError(f"comments: expected a comment, got {type(c).__name__}")
        c.author = text(c.author, "comments.author", limit=_LIMITS["author"])
        c.body = text(c.body, "comments.body")
        c.created_at = _moment(c.created_at, "comments.created_at")
        if not isinstance(c.is_bot, bool) or c.kind not in ("comment", "review"):
            raise RecordError("comments: is_bot must be true/false and kind comment or review")
    return item
