"""Commit records (from a git clone or a JSON Lines export) -> Items: squash PRs, merges, direct commits."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ..analyse.refs import pr_number_from_subject
from ..analyse.rules import strip_noise
from ..models import COMMIT, MERGED, PR, RELEASE, FileChange, Item, utc

_LAST_PR = re.compile(r"\s*\(#\d+\)\s*$")
_MERGE_PR = re.compile(r"^Merge pull request #(\d+) from \S+")
_NOREPLY = re.compile(r"^(?:\d+\+)?([A-Za-z0-9-]+(?:\[bot\])?)@users\.noreply\.github\.com$")


class BodyCleaner:
    """Deletes the noise of rules/bots.toml [noise] (trailers, separators, bot text) from bodies."""

    def __init__(self, patterns: list[re.Pattern[str]]):
        self._patterns = patterns

    def __call__(self, body: str) -> str:
        return strip_noise(body, self._patterns) if body else ""


def login(name: str, email: str) -> str:
    """The GitHub login when the email is a noreply address, else the author name."""
    found = _NOREPLY.match(email or "")
    return found.group(1) if found else (name or email or "unknown")


def parse_time(text: str | None) -> datetime | None:
    """ISO-8601 with offset (or Z) -> aware UTC datetime."""
    return utc(datetime.fromisoformat(text)) if text else None


def commit_item(repo: str, rec: dict[str, Any], branch: str, source: str, clean: BodyCleaner) -> Item:
    """One first-parent commit as a PR item (squash or merge commit) or a direct commit."""
    subject, body = rec["subject"].strip(), rec.get("body") or ""
    number, _earlier = pr_number_from_subject(subject)
    # only the last "(#N)" is this PR; an earlier one (a cherry-pick's origin) stays in the title
    title = _LAST_PR.sub("", subject) if number is not None else subject
    merge = _MERGE_PR.match(subject)
    if number is None and merge:
        number = int(merge.group(1))
        first, _, rest = body.strip().partition("\n")
        title, body = (first.strip() or subject), rest
    merged = parse_time(rec["committed_at"])
    files = [FileChange(f["path"], f.get("additions"), f.get("deletions")) for f in rec.get("files", [])]
    return Item(
        repo=repo, kind=PR if number is not None else COMMIT,
        key=str(number) if number is not None else rec["sha"], number=number, title=title,
        body=clean(body), author=login(rec.get("author_name", ""), rec.get("author_email", "")),
        # a PR's creation time is not in history (a squash commit's authored time is its merge time): none;
        # a direct commit was created when it was authored
        state=MERGED, created_at=None if number is not None else parse_time(rec.get("authored_at")),
        updated_at=merged, merged_at=merged,
        closed_at=merged, merge_commit=rec["sha"], branches=[branch], files=files, source=source,
    )


def tag_item(repo: str, rec: dict[str, Any], source: str) -> Item:
    """A tag as a release item."""
    created = parse_time(rec.get("created_at"))
    message = rec.get("message") or ""
    return Item(
        repo=repo, kind=RELEASE, key=rec["name"], title=rec["name"], body=message.strip(),
        author=rec.get("tagger") or "", state="published", created_at=created, updated_at=created,
        merge_commit=rec.get("target"), source=source,
    )
