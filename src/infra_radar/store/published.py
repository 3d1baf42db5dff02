"""Records of the published daily radars: what each one showed, read and written whole.

A record is one radar's window, its repositories and the items it showed (table rows and recheck lines), each
with the judgment, state, merge commit, files, figures and comment count shown, whether it was deep-dived, and
whether the radar carries it on. There is one record per end of window: a rerun replaces it in one transaction,
and a rerun that shows the same leaves the stored record untouched (not even its publication time changes).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .. import killpoint
from .reader import reading
from .rows import to_db_time
from .schema import carry_dropped, published_items, published_radars

__all__ = ["RadarRecord", "ShownItem", "drop_carry", "dropped_carries", "figure", "files_digest", "last_shown",
           "held_before", "last_window", "windows_around", "record_at", "published_days", "latest_until", "load_records", "save_records"]


@dataclass(slots=True)
class ShownItem:
    """One item as a published radar showed it."""

    repo: str
    number: int
    kind: str
    title: str
    state: str  # at the window's end
    priority: str
    grade: str
    decision: str
    in_table: bool = False
    rechecked: bool = False
    deep: bool = False
    reasons: list[str] = field(default_factory=list)  # why this radar starts carrying it (deep, p0, a decision)
    origin_until: datetime | None = None  # the end of the radar whose carry it is on; None: not carried
    carry: bool = False  # carried on to the next radar
    merge_commit: str | None = None
    files: list[str] | None = None  # changed paths; None: not known as of the window's end
    files_digest: str | None = None  # of the paths with their line counts (store.published.files_digest)
    figures: list[list] | None = None  # [metric, before, after, unit]; None: not known as of the window's end
    comments: int = 0

    @property
    def key(self) -> tuple[str, int]:
        return self.repo.lower(), self.number

    @property
    def ref(self) -> str:
        return f"{self.repo}#{self.number}"

    def content(self) -> tuple:
        """Everything shown, comparable: equal contents mean a rerun changes nothing."""
        return (self.repo, self.number, self.kind, self.title, self.state, self.priority, self.grade, self.decision,
                self.in_table, self.rechecked, self.deep, tuple(self.reasons), self.origin_until, self.carry,
                self.merge_commit, None if self.files is None else tuple(self.files), self.files_digest,
                None if self.figures is None else tuple(tuple(f) for f in self.figures), self.comments)


@dataclass(slots=True)
class RadarRecord:
    """What one published daily radar showed."""

    since: datetime
    until: datetime
    repos: list[str]
    items: list[ShownItem] = field(default_factory=list)
    published_at: datetime | None = None
    text: str | None = None  # the radar as published (Markdown); None: recorded without it (a site backfill)
    lang: str | None = None

    def content(self) -> tuple:
        return (self.since, self.until, tuple(self.repos),
                tuple(sorted((i.content() for i in self.items), key=lambda c: (c[0].lower(), c[1]))))

    def day(self) -> str:
        """The radar's date: the day of its window's last instant (a morning run ending 02:12Z is that day)."""
        from datetime import timedelta

        return (self.until - timedelta(microseconds=1)).astimezone(UTC).date().isoformat()


def files_digest(files) -> str:
    """A digest of changed files (FileChange) with their line counts: new commits on a PR move it."""
    payload = sorted((f.path, f.additions, f.deletions) for f in files)
    return hashlib.sha1(json.dumps(payload).encode()).hexdigest()


def figure(metric: str, before, after, unit: str) -> list:
    """A figure as a record keeps it: [metric, before, after, unit], a value that is not a finite number None."""
    def finite(value):
        return value if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) else None
    return [metric, finite(before), finite(after), unit]


_ITEM_COLUMNS = ("repo", "number", "kind", "title", "state", "priority", "grade", "decision", "in_table", "rechecked",
                 "deep", "reasons", "origin_until", "carry", "merge_commit", "files", "files_digest", "figures",
                 "comments")


def _load(db, where: str, params: dict) -> dict[int, RadarRecord]:
    """The records matching `where` (over published_radars), by row id, oldest first, items in stored order."""
    radars = db.rows("SELECT published_radars.id, published_radars.since, published_radars.until, "
                     f"published_radars.repos, published_radars.published_at FROM published_radars {where} "
                     "ORDER BY published_radars.until", params)
    records = {rid: RadarRecord(db.time(since), db.time(until), list(db.json(repos)), [], db.time(at))
               for rid, since, until, repos, at in radars}
    cols = ", ".join(f"published_items.{c}" for c in _ITEM_COLUMNS)
    rows = db.rows(f"SELECT published_items.radar_id, {cols} FROM published_items JOIN published_radars ON "
                   f"published_radars.id = published_items.radar_id {where} ORDER BY published_items.radar_id, "
                   "published_items.id", params)
    for (rid, repo, number, kind, title, state, priority, grade, decision, in_table, rechecked, deep, reasons,
         origin, carry, commit, files, digest, figures, comments) in rows:
        figures, files = db.json(figures), db.json(files)  # an unknown list is stored as JSON null
        records[rid].items.append(ShownItem(
            repo, number, kind, title, state, priority, grade, decision, db.flag(in_table), db.flag(rechecked),
            db.flag(deep), list(db.json(reasons)), db.time(origin), db.flag(carry), commit,
            None if files is None else list(files), digest,
            None if figures is None else [list(f) for f in figures], comments))
    return records


def _bounds(before: datetime | None, since: datetime | None, before_id: int | None) -> tuple[str, dict]:
    """The WHERE clause (or "") and parameters of published radars ending before `before` and at or after `since`,
    published before the radar of row id `before_id`: each bound only when given."""
    parts, params = [], {}
    if before_id is not None:
        parts.append("published_radars.id < :bid")
        params["bid"] = before_id
    if before is not None:
        parts.append("published_radars.until < :before")
        params["before"] = before
    if since is not None:
        parts.append("published_radars.until >= :since")
        params["since"] = since
    return ("WHERE " + " AND ".join(parts) if parts else ""), params


def load_records(store, before: datetime | None = None, since: datetime | None = None,
                 before_id: int | None = None) -> list[RadarRecord]:
    """The published records whose window ends before `before` and at or after `since` (each bound only when
    given; with `before_id`, only those published before the radar of that row id), oldest first."""
    where, params = _bounds(before, since, before_id)
    with reading(store) as db:
        return list(_load(db, where, params).values())


def latest_until(store, before: datetime | None = None, before_id: int | None = None) -> datetime | None:
    """The end of the last published radar (ending before `before`, and published before the radar of row id
    `before_id`, when given); None when there is none."""
    where, params = _bounds(before, None, before_id)
    with reading(store) as db:
        return db.time(db.scalar(f"SELECT max(published_radars.until) FROM published_radars {where}", params))


def last_shown(store, keys: Iterable[tuple[str, int]], before: datetime, before_id: int | None = None
               ) -> dict[tuple[str, int], tuple[RadarRecord, ShownItem]]:
    """For each (lower-cased repo, number) of `keys`, the last radar ending before `before` that showed it (the
    record without its other items) and how it showed it: one query over the index of (repo, number), which
    reads each item's latest showing, never the records in between."""
    wanted = set(keys)
    if not wanted:
        return {}
    cols = ", ".join(f"published_items.{c}" for c in _ITEM_COLUMNS)
    found: dict[tuple[str, int], tuple[RadarRecord, ShownItem]] = {}
    with reading(store) as db:
        lowered = {repo for repo, _ in wanted}
        # each repository as the store spells it (a record keeps the item's spelling): the index is on
        # (repo, number), which lower(repo) could not use
        repos = sorted(lowered | {n for n in db.column("SELECT repos.name FROM repos") if n.lower() in lowered})
        numbers = sorted({number for _, number in wanted})
        latest = ("SELECT published_items.repo AS repo, published_items.number AS number, "
                  "max(published_radars.until) AS until FROM published_items JOIN published_radars ON "
                  "published_radars.id = published_items.radar_id WHERE published_radars.until < :before AND "
                  f"{'published_radars.id < :bid AND ' if before_id is not None else ''}"
                  "published_items.repo IN :repos AND published_items.number IN :numbers "
                  "GROUP BY published_items.repo, published_items.number")
        rows = db.rows("SELECT published_radars.since, published_radars.until, published_radars.repos, "
                       f"published_radars.published_at, {cols} FROM published_items JOIN published_radars ON "
                       f"published_radars.id = published_items.radar_id JOIN ({latest}) latest ON "
                       "latest.repo = published_items.repo AND latest.number = published_items.number AND "
                       "latest.until = published_radars.until",
                       {"before": before, "repos": repos, "numbers": numbers, "bid": before_id})
        for since, until, repos_shown, at, *item in rows:
            shown = _shown(db, *item)
            if shown.key not in wanted:
                continue
            record = RadarRecord(db.time(since), db.time(until), list(db.json(repos_shown)), [], db.time(at))
            old = found.get(shown.key)
            if old is None or old[0].until < record.until:
                found[shown.key] = (record, shown)
    return found


def _shown(db, repo, number, kind, title, state, priority, grade, decision, in_table, rechecked, deep, reasons,
           origin, carry, commit, files, digest, figures, comments) -> ShownItem:
    figures, files = db.json(figures), db.json(files)  # an unknown list is stored as JSON null
    return ShownItem(repo, number, kind, title, state, priority, grade, decision, db.flag(in_table),
                     db.flag(rechecked), db.flag(deep), list(db.json(reasons)), db.time(origin), db.flag(carry),
                     commit, None if files is None else list(files), digest,
                     None if figures is None else [list(f) for f in figures], comments)


def _item_row(radar_id: int, i: ShownItem) -> dict:
    return {"radar_id": radar_id, **{c: getattr(i, c) for c in _ITEM_COLUMNS},
            "reasons": list(i.reasons), "origin_until": to_db_time(i.origin_until),
            "figures": None if i.figures is None else [figure(*f) for f in i.figures]}


def save_records(engine: Engine, records: list[RadarRecord]) -> int:
    """Store the records in one transaction. A published radar is immutable: a record whose window's end is
    already recorded is left as it is (its items, text and publication time), whatever the rerun would show
    now; a rerun shows the stored text instead (record_at). Returns how many were written."""
    written = 0
    now = to_db_time(datetime.now(UTC).replace(microsecond=0))
    with engine.begin() as conn:
        for record in records:
            with reading(conn) as db:
                found = db.rows("SELECT published_radars.id FROM published_radars WHERE published_radars.until = "
                                ":until", {"until": record.until})
            if found:
                continue
            values = {"since": to_db_time(record.since), "until": to_db_time(record.until),
                      "repos": list(record.repos), "published_at": now, "text": record.text, "lang": record.lang}
            radar_id = conn.execute(published_radars.insert().values(values).returning(
                published_radars.c.id)).scalar_one()
            if record.items:
                conn.execute(published_items.insert(), [_item_row(radar_id, i) for i in record.items])
            written += 1
            killpoint.reached("record.written")  # written, not committed: a kill here must leave no trace
    return written


def record_at(store, until: datetime) -> tuple[int, RadarRecord] | None:
    """(row id, record with its text) of the published radar whose window ends at `until`, or None."""
    with reading(store) as db:
        rows = db.rows("SELECT published_radars.id, published_radars.text, published_radars.lang FROM "
                       "published_radars WHERE published_radars.until = :until", {"until": until})
        if not rows:
            return None
        rid, text, lang = rows[0]
        record = _load(db, "WHERE published_radars.id = :rid", {"rid": rid})[rid]
    record.text, record.lang = text, lang
    return rid, record


def published_days(store) -> dict:
    """{date of the radar: (since, until, text, lang, repos)} of every published radar (a radar's date is the day
    of its window's last instant; of two the same day, the later one), oldest first."""
    from datetime import timedelta

    with reading(store) as db:
        out = {}
        for since, until, text, lang, repos in db.rows(
                "SELECT published_radars.since, published_radars.until, published_radars.text, "
                "published_radars.lang, published_radars.repos FROM published_radars "
                "ORDER BY published_radars.until", {}):
            until = db.time(until)
            out[(until - timedelta(microseconds=1)).astimezone(UTC).date()] = (
                db.time(since), until, text, lang, list(db.json(repos)))
        return out


def drop_carry(engine: Engine, repo: str, number: int, origin_until: datetime) -> None:
    """End the carry of repo#number begun by the radar ending at `origin_until` (`radar watch remove`)."""
    with engine.begin() as conn:
        key = {"repo": repo, "number": number, "origin_until": to_db_time(origin_until)}
        exists = conn.execute(sa.select(carry_dropped.c.repo).where(
            *(carry_dropped.c[k] == v for k, v in key.items()))).first()
        if exists is None:
            conn.execute(carry_dropped.insert().values(**key, dropped_at=to_db_time(datetime.now(UTC))))


def dropped_carries(store) -> set[tuple[str, int, datetime]]:
    """(lower-cased repo, number, origin end) of every carry dropped by hand."""
    with reading(store) as db:
        return {(repo.lower(), number, db.time(origin)) for repo, number, origin in db.rows(
            "SELECT carry_dropped.repo, carry_dropped.number, carry_dropped.origin_until FROM carry_dropped")}


def held_before(store, at: datetime, before: datetime) -> bool:
    """Whether a published radar whose window ends at or before `before` held the moment `at` (since <= at <
    until): one indexed look-up, however many radars were published."""
    with reading(store) as db:
        return bool(db.rows(
            "SELECT 1 FROM published_radars WHERE published_radars.until <= :before "
            "AND published_radars.since <= :at AND published_radars.until > :at LIMIT 1",
            {"before": before, "at": at}))


def windows_around(store, start: datetime, end: datetime, repos: Iterable[str] | None = None,
                   before_id: int | None = None) -> list[tuple[datetime, datetime]]:
    """(since, until) of the published radars overlapping [start, end) that covered any of `repos` (all radars
    when None; with `before_id`, those published before the radar of that row id), in order of their end."""
    wanted = None if repos is None else {r.lower() for r in repos}
    bound = "" if before_id is None else " AND published_radars.id < :bid"
    with reading(store) as db:
        rows = db.rows("SELECT published_radars.since, published_radars.until, published_radars.repos FROM "
                       "published_radars WHERE published_radars.until > :start AND published_radars.since < :end"
                       f"{bound} ORDER BY published_radars.until", {"start": start, "end": end, "bid": before_id})
        return [(db.time(since), db.time(until)) for since, until, covered in rows
                if wanted is None or wanted & {r.lower() for r in db.json(covered)}]


def last_window(store, repos: Iterable[str] | None = None) -> tuple[datetime, datetime] | None:
    """(since, until) of the published radar whose window ends last, or None when none was published: where
    the next daily window starts, and the radar `radar push daily` sends by default. With `repos`, windows are
    per repository: of each repository's last published radar (one that covered it), the one ending first, so
    that a radar published for some repositories never moves the window of the others."""
    with reading(store) as db:
        if repos is None:
            rows = db.rows("SELECT published_radars.since, published_radars.until FROM published_radars "
                           "ORDER BY published_radars.until DESC LIMIT 1", {})
            return (db.time(rows[0][0]), db.time(rows[0][1])) if rows else None
        wanted = {r.lower() for r in repos}
        last: dict[str, tuple[datetime, datetime]] = {}
        # newest first: each repository's first hit is its last radar (one pass over the records)
        for since, until, covered in db.rows("SELECT published_radars.since, published_radars.until, "
                                             "published_radars.repos FROM published_radars "
                                             "ORDER BY published_radars.until DESC", {}):
            for name in {r.lower() for r in db.json(covered)} & wanted:
                last.setdefault(name, (db.time(since), db.time(until)))
            if len(last) == len(wanted):
                break
        return min(last.values(), key=lambda w: w[1]) if last else None
