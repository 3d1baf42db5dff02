"""What `radar push` delivered (table push_deliveries, migration 009): a push that failed on message 2 of 2
resumes with message 2, and one that succeeded sends nothing twice. A webhook URL is a secret: only its
sha256 (with the platform) is stored, never the URL. The caller holds the store's writer lock from `delivered_at` to `record_delivery`
(publish/push.py): two pushes at once never both find a message undelivered."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .rows import from_db_time, to_db_time
from .schema import push_deliveries

__all__ = ["delivered_at", "digest", "record_delivery"]


def digest(*parts: str) -> str:
    """sha256 of the parts, each ended by a NUL (so ("ab", "c") and ("a", "bc") differ)."""
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return sha.hexdigest()


def delivered_at(engine: Engine, target: str, report: str, content_sha: str) -> datetime | None:
    """When this message of this report went to this webhook, or None when it never did."""
    query = (sa.select(sa.func.max(push_deliveries.c.delivered_at))
             .where(push_deliveries.c.target == target, push_deliveries.c.report == report[:200],
                    push_deliveries.c.content_sha == content_sha))
    with engine.connect() as conn:
        return from_db_time(conn.execute(query).scalar())


def record_delivery(engine: Engine, target: str, report: str, part: int, parts: int, content_sha: str) -> None:
    """Remember that message `part` of `parts` of `report` reached the webhook `target`."""
    with engine.begin() as conn:
        conn.execute(push_deliveries.insert().values(
            target=target, report=report[:200], part=part, parts=parts, content_sha=content_sha,
            delivered_at=to_db_time(datetime.now(UTC))))
