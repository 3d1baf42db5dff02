"""Records <-> store rows: times, item rows and digests, analyses as JSON. No database access here (and no
SQLAlchemy): the read side (store/queries.py) and the write side (store/save.py) both convert through it."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import fields
from datetime import UTC, datetime

from ..models import Analysis, Item, Link, PerfClaim


def to_db_time(dt: datetime | None) -> datetime | None:
    """Aware datetime -> naive UTC for storage."""
    return dt.astimezone(UTC).replace(tzinfo=None) if dt is not None else None


def from_db_time(dt: datetime | None) -> datetime | None:
    """Naive UTC from storage -> aware UTC."""
    return dt.replace(tzinfo=UTC) if dt is not None else None


def item_hash(item: Item) -> str:
    """A digest of everything an item holds: equal digests mean an upsert changes nothing."""
    payload = [
        item.title, item.body, item.author, item.state, item.draft, item.number,
        *(to_db_time(t).isoformat() if t else None for t in
          (item.created_at, item.updated_at, item.merged_at, item.closed_at)),
        item.merge_commit, sorted(item.branches), sorted(item.labels), item.source,
        [(f.path, f.additions, f.deletions, f.status) for f in item.files],
        [(c.author, c.body, to_db_time(c.created_at).isoformat() if c.created_at else None, c.is_bot, c.kind)
         for c in item.comments],
    ]
    if item.named_paths or item.time_source:  # appended only when set: older items keep their digests
        payload += [item.named_paths, item.time_source]
    if item.code is not None:  # likewise: an item without code facts keeps its digest
        payload.append(item.code)
    return hashlib.sha1(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def item_row(item: Item, repo_id: int) -> dict:
    """The `items` row of an item."""
    return {
        "repo_id": repo_id, "kind": item.kind, "key": item.key, "number": item.number,
        "title": item.title, "body": item.body, "author": item.author, "state": item.state,
        "draft": item.draft, "created_at": to_db_time(item.created_at),
        "updated_at": to_db_time(item.updated_at), "merged_at": to_db_time(item.merged_at),
        "closed_at": to_db_time(item.closed_at), "when_at": to_db_time(item.when),
        "merge_commit": item.merge_commit, "branches": item.branches, "labels": item.labels,
        "source": item.source, "content_hash": item_hash(item), "named_paths": item.named_paths,
        "time_source": item.time_source,
    }


_READ_TIME = ("label", "rules", "learned")  # the team's judgment, laid over an analysis when it is read
_ANALYSIS_FIELDS = [f.name for f in fields(Analysis) if f.name not in _READ_TIME]
_CLAIM_FIELDS = [f.name for f in fields(PerfClaim)]
_LINK_FIELDS = [f.name for f in fields(Link)]


def _finite(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def analysis_data(analysis: Analysis) -> dict:
    """An Analysis as a JSON-able dict (by hand: dataclasses.asdict deep-copies and is 10x slower)."""
    data = {name: getattr(analysis, name) for name in _ANALYSIS_FIELDS}
    # a figure too large for a float ("9" x 400 in a table) is inf/nan: JSON has no such number (PostgreSQL
    # refuses the row), so it is stored as unknown
    data["perf_claims"] = [{n: _finite(getattr(c, n)) for n in _CLAIM_FIELDS} for c in analysis.perf_claims]
    data["links"] = [{n: getattr(link, n) for n in _LINK_FIELDS} for link in analysis.links]
    return data


def data_analysis(data: dict) -> Analysis:
    """An Analysis from its JSON dict."""
    data = {k: v for k, v in data.items() if k not in _READ_TIME}
    data["perf_claims"] = [PerfClaim(**{**c, "span": tuple(c.get("span", (0, 0)))}) for c in data.get("perf_claims", [])]
    data["links"] = [Link(**link) for link in data.get("links", [])]
    return Analysis(**data)

