"""The JSON Lines history export (../shared/data/git format), plain or gzipped, as Items."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, SourceError
from ..models import Item
from .history import BodyCleaner, commit_item, tag_item

DEFAULT_BRANCH = "main"


@dataclass(slots=True)
class JsonlReport:
    """What reading one export found: its repository and branch, and the lines it had to skip."""

    path: str
    repo: str = ""
    branch: str = ""
    commits: int = 0
    tags: int = 0
    skipped: list[str] = field(default_factory=list)  # "file:line: reason"


def _open(path: Path):
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror}") from None
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _header(line: str, path: Path) -> tuple[str, str]:
    try:
        head = json.loads(line)
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("kind") != "repo" or "/" not in str(head.get("full_name", "")):
        raise InputError(f"{path}:1: first line must be {{\"kind\": \"repo\", \"full_name\": \"OWNER/NAME\", ...}}")
    ref = str(head.get("ref") or "HEAD")
    return head["full_name"], DEFAULT_BRANCH if ref == "HEAD" else ref.removeprefix("refs/heads/")


def read_jsonl(path: Path, clean: BodyCleaner, report: JsonlReport) -> Iterator[Item]:
    """Yield the items of one export; malformed lines are skipped and recorded in `report`."""
    with _open(path) as fh:
        try:
            first = fh.readline()
        except (OSError, EOFError) as exc:
            raise SourceError(f"{path}: cannot read: {exc}") from None
        report.repo, report.branch = _header(first, path)
        for lineno, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if rec["kind"] == "commit":
                    item = commit_item(report.repo, rec, report.branch, "jsonl", clean)
                    report.commits += 1
                elif rec["kind"] == "tag":
                    item = tag_item(report.repo, rec, "jsonl")
                    report.tags += 1
                else:
                    raise ValueError(f"unknown kind {rec['kind']!r}")
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                report.skipped.append(f"{path}:{lineno}: {type(exc).__name__}: {exc}"[:300])
                continue
            yield item
