"""The JSON Lines history export (../shared/data/git format), plain or gzipped, as Items."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, SourceError
from ..models import Item, repo_problem
from . import records
from .history import BodyCleaner, commit_item, tag_item
from .records import RecordError, check_item

DEFAULT_BRANCH = "main"
MAX_LINE_BYTES = 32 << 20  # the longest line read (RADAR_MAX_LINE_BYTES): the longest real commit line is ~150 KB
MAX_LINE_ENV = "RADAR_MAX_LINE_BYTES"
_CHUNK = 1 << 20  # an over-long line is passed over in pieces of this size, never held whole


def max_line_bytes() -> int:
    """The line cap: RADAR_MAX_LINE_BYTES (checked by config.check_env before any command runs), else 32 MiB."""
    raw = os.environ.get(MAX_LINE_ENV, "").strip()
    return int(float(raw)) if raw else MAX_LINE_BYTES


@dataclass(slots=True)
class JsonlReport:
    """What reading one export found: its repository and branch, and the lines it had to skip."""

    path: str
    repo: str = ""
    branch: str = ""
    commits: int = 0
    tags: int = 0
    skipped: list[str] = field(default_factory=list)  # "file:line: reason"
    line: int = 0  # the line the item last yielded came from (file:line of a record dated later than now)


def _open(path: Path):
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror}") from None
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _lines(fh, cap: int) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of each line, read at most `cap` bytes at a time: a longer line is passed over in
    pieces and given as (number, None), so one 2 GiB line costs a chunk of memory, not the line."""
    lineno = 0
    while True:
        lineno += 1
        raw = fh.readline(cap + 1)
        if not raw:
            return
        if len(raw) > cap and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(_CHUNK)
            yield lineno, None
            continue
        yield lineno, raw.decode("utf-8", errors="replace")


def _header(line: str, path: Path) -> tuple[str, str]:
    try:
        head = json.loads(line)
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("kind") != "repo" or "/" not in str(head.get("full_name", "")):
        raise InputError(f"{path}:1: first line must be {{\"kind\": \"repo\", \"full_name\": \"OWNER/NAME\", ...}}")
    if repo_problem(head["full_name"]):
        raise InputError(f"{path}:1: full_name {str(head['full_name'])[:80]!r} is {repo_problem(head['full_name'])}")
    ref = str(head.get("ref") or "HEAD")
    return head["full_name"], DEFAULT_BRANCH if ref == "HEAD" else ref.removeprefix("refs/heads/")


def read_jsonl(path: Path, clean: BodyCleaner, report: JsonlReport) -> Iterator[Item]:
    """Yield the items of one export; malformed lines are skipped and recorded in `report`."""
    cap = max_line_bytes()
    too_long = f"line longer than {cap:,} bytes (the line cap, {MAX_LINE_ENV}): skipped"
    with _open(path) as fh:
        lines = _lines(fh, cap)
        try:
            _, first = next(lines, (1, ""))
        except (OSError, EOFError) as exc:
            raise SourceError(f"{path}: cannot read: {exc}") from None
        if first is None:
            raise InputError(f"{path}:1: {too_long.removesuffix(': skipped')}; the first line must be "
                             "{\"kind\": \"repo\", \"full_name\": \"OWNER/NAME\", ...}")
        report.repo, report.branch = _header(first, path)
        for lineno, line in lines:
            if line is None:
                report.skipped.append(f"{path}:{lineno}: {too_long}")
                continue
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise RecordError(f"expected a JSON object, got {type(rec).__name__}")
                kind = rec.get("kind")
                if kind == "commit":
                    item = check_item(commit_item(report.repo, _commit(rec), report.branch, "jsonl", clean))
                    report.commits += 1
                elif kind == "tag":
                    item = check_item(tag_item(report.repo, _tag(rec), "jsonl"))
                    report.tags += 1
                else:
                    raise RecordError(f"kind: unknown kind {str(kind)[:40]!r}")
            except RecordError as exc:
                report.skipped.append(f"{path}:{lineno}: {exc}"[:300])
                continue
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
                report.skipped.append(f"{path}:{lineno}: {type(exc).__name__}: {exc}"[:300])
                continue
            report.line = lineno
            yield item


def _commit(rec: dict) -> dict:
    """A commit record with every field of the export format checked (see ../shared/data/README.md)."""
    files = rec.get("files") or []
    if not isinstance(files, list):
        raise RecordError(f"files: expected a list, got {type(files).__name__}")
    checked = []
    for f in files:
        if not isinstance(f, dict):
            raise RecordError(f"files: expected objects, got {type(f).__name__}")
        checked.append({"path": records.text(f.get("path"), "files.path", required=True),
                        "additions": records.count(f.get("additions"), "files.additions"),
                        "deletions": records.count(f.get("deletions"), "files.deletions")})
    out = {name: records.text(rec.get(name), name) for name in
           ("author_name", "author_email", "committer_name", "committer_email", "body")}
    out["sha"] = records.text(rec.get("sha"), "sha", required=True, limit=64)
    out["subject"] = records.text(rec.get("subject"), "subject", required=True)
    for name in ("authored_at", "committed_at"):
        when = records.time(rec.get(name), name)
        out[name] = when.isoformat() if when else None
    if out["committed_at"] is None:
        raise RecordError("committed_at: missing")
    out["files"] = checked
    return out


def _tag(rec: dict) -> dict:
    when = records.time(rec.get("created_at"), "created_at")
    return {"name": records.text(rec.get("name"), "name", required=True, limit=200),
            "target": records.text(rec.get("target"), "target", limit=64) or None,
            "created_at": when.isoformat() if when else None,
            "tagger": records.text(rec.get("tagger"), "tagger"), "message": records.text(rec.get("message"), "message")}
