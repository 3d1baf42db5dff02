"""The team's labels in the store: one current label per item, the windows of the team's radars they came
with, and the calibration fitted from them (cached by the digest of what it was fitted on).

Labels live apart from the analyses (schema 008), so re-analysing, or analysing with new rules, never touches
them. Reads are SQL text run through a store/reader.py Reader (`radar show` reads them over stdlib sqlite3);
writes go through SQLAlchemy, imported inside the functions that write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..models import one_line_text
from .reader import reading
from .rows import to_db_time

__all__ = ["TeamLabel", "all_labels", "label_windows", "labelled_analyses", "labelled_versions", "remove_label",
           "save_model",
           "set_label", "set_labels", "stored_model", "window_items"]


@dataclass(slots=True)
class TeamLabel:
    """The team's judgment of one item, who gave it and when."""

    repo: str
    number: int
    priority: str | None
    grade: str | None
    note: str = ""
    by: str = ""
    at: datetime | None = None
    source: str = "cli"
    part: str = ""

    @property
    def ref(self) -> str:
        return f"{self.repo}#{self.number}"

    @property
    def key(self) -> tuple[str, int]:
        return self.repo.lower(), self.number

    def shown(self) -> dict[str, Any]:
        """What outputs show of it (Analysis.label, the export's `label` object)."""
        return {"priority": self.priority, "grade": self.grade, "by": self.by, "note": self.note,
                "at": self.at.strftime("%Y-%m-%dT%H:%M:%SZ") if self.at else None, "part": self.part or None}


_LABELS = ("SELECT labels.repo, labels.number, labels.priority, labels.grade, labels.note, labels.labelled_by, "
           "labels.labelled_at, labels.source, labels.part FROM labels ")


def all_labels(store) -> list[TeamLabel]:
    """Every label, by repository and number."""
    with reading(store) as db:
        rows = db.rows(_LABELS + "ORDER BY lower(labels.repo), labels.number")
        # note and who as one line of text, whatever an older radar stored: no control character reaches a report
        return [TeamLabel(r, int(n), p, g, one_line_text(note or "")[0], one_line_text(by or "")[0], db.time(at),
                          src or "", part or "")
                for r, n, p, g, note, by, at, src, part in rows]


def label_windows(store) -> dict[str, dict[str, Any]]:
    """The windows of the team's labelled radars: part -> since, until, repos."""
    with reading(store) as db:
        return {part: {"since": db.time(since), "until": db.time(until), "repos": list(db.json(repos) or [])}
                for part, since, until, repos in db.rows(
                    "SELECT label_windows.part, label_windows.since, label_windows.until, label_windows.repos "
                    "FROM label_windows ORDER BY label_windows.part")}


# From the labels outwards (SQLite keeps the order of CROSS JOINs): a few hundred labels, each found through the
# items' (repo_id, number) index, instead of a scan of every item
_LABELLED = ("FROM labels CROSS JOIN repos CROSS JOIN items CROSS JOIN analyses "
             "WHERE lower(repos.name) = lower(labels.repo) AND items.repo_id = repos.id "
             "AND items.number = labels.number AND items.kind IN ('pr', 'issue') AND analyses.item_id = items.id "
             "ORDER BY lower(labels.repo), labels.number, items.id")


def labelled_versions(store) -> list[tuple[str, int, str, str]]:
    """(repo, number, analysis version, content hash) of every labelled PR or issue the store has analysed:
    what the calibration's digest is made of, without reading the analyses."""
    with reading(store) as db:
        rows = db.rows("SELECT labels.repo, labels.number, analyses.version, analyses.content_hash " + _LABELLED)
        return [(r, int(n), version, digest) for r, n, version, digest in rows]


def labelled_analyses(store) -> list[tuple[str, int, Any]]:
    """(repo, number, analysis data) of every labelled PR or issue the store has analysed."""
    with reading(store) as db:
        rows = db.rows("SELECT labels.repo, labels.number, analyses.data " + _LABELLED)
        return [(r, int(n), db.json(data)) for r, n, data in rows]


def window_items(store, since: datetime, until: datetime, repos: list[str]) -> list[tuple[str, int, Any]]:
    """(repo, number, analysis data) of the PRs merged in [since, until) in `repos` (every repository if none)."""
    where = "items.kind = 'pr' AND items.state = 'merged' AND items.merged_at >= :since AND items.merged_at < :until"
    params: dict[str, Any] = {"since": since, "until": until}
    if repos:
        where += " AND lower(repos.name) IN :repos"
        params["repos"] = [r.lower() for r in repos]
    with reading(store) as db:
        rows = db.rows("SELECT repos.name, items.number, analyses.data FROM items "
                       "JOIN repos ON repos.id = items.repo_id JOIN analyses ON analyses.item_id = items.id "
                       f"WHERE {where} ORDER BY repos.name, items.number", params)
        return [(r, int(n), db.json(data)) for r, n, data in rows]


def stored_model(store, digest: str) -> dict[str, Any] | None:
    """The calibration stored under `digest`, if any."""
    with reading(store) as db:
        found = db.scalar("SELECT label_models.data FROM label_models WHERE label_models.digest = :digest",
                          {"digest": digest})
        return db.json(found) if found is not None else None


# --- writes ----------------------------------------------------------------------------------------

def set_label(engine, label: TeamLabel) -> str:
    """Store `label` as the item's current label: "added", "updated" or "unchanged" (same priority, grade and
    note: who and when stay those of the first)."""
    return set_labels(engine, [label])[0]


_LOOKUP = 500  # numbers per look-up of existing labels


def set_labels(engine, team: list[TeamLabel], windows: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Store each of `team` as its item's current label, in order, and replace the `windows` (part -> since,
    until, repos): all in ONE transaction, so an import stores its whole file or nothing. What became of each
    label, in order: "added", "updated" or "unchanged" (as set_label; a later label of the same item in `team`
    counts against the earlier one).

    The existing labels are looked up by number through ix_labels_number (schema 010), _LOOKUP numbers a
    statement, and compared by repository case-insensitively here; new labels are inserted in one batch: the
    statements and the work grow linearly with the labels (a look-up by lower(repo) scanned every label)."""
    import sqlalchemy as sa

    from .schema import label_windows as window_table
    from .schema import labels

    now = to_db_time(datetime.now(UTC))
    done: list[str] = []
    with engine.begin() as conn:
        current: dict[tuple[str, int], dict[str, Any]] = {}  # (lower repo, number) -> the label's row as it stands
        numbers = sorted({label.number for label in team})
        for start in range(0, len(numbers), _LOOKUP):
            chunk = numbers[start:start + _LOOKUP]
            for row in conn.execute(sa.select(labels.c.id, labels.c.repo, labels.c.number, labels.c.priority,
                                              labels.c.grade, labels.c.note).where(labels.c.number.in_(chunk))):
                current.setdefault((row.repo.lower(), int(row.number)),
                                   {"id": row.id, "priority": row.priority, "grade": row.grade, "note": row.note})
        added: dict[tuple[str, int], dict[str, Any]] = {}
        updated: dict[int, dict[str, Any]] = {}
        for label in team:
            values = {"repo": label.repo, "number": label.number, "priority": label.priority,
                      "grade": label.grade, "note": label.note, "labelled_by": label.by,
                      "labelled_at": to_db_time(label.at) if label.at else now, "source": label.source,
                      "part": label.part}
            old = current.get(label.key)
            if old is None:
                done.append("added")
                added[label.key] = values
            elif (old["priority"], old["grade"], old["note"]) == (label.priority, label.grade, label.note):
                done.append("unchanged")
                continue
            else:
                done.append("updated")
                if old.get("id") is None:  # added earlier in this call: the insert carries the newer values
                    added[label.key] = values
                else:
                    updated[old["id"]] = values
            current[label.key] = {"id": old.get("id") if old else None, **values}
        if added:
            conn.execute(labels.insert(), list(added.values()))
        if updated:
            conn.execute(labels.update().where(labels.c.id == sa.bindparam("row_id")),
                         [{"row_id": row_id, **values} for row_id, values in updated.items()])
        for part, window in (windows or {}).items():
            conn.execute(window_table.delete().where(window_table.c.part == part))
            conn.execute(window_table.insert().values(part=part, since=to_db_time(window["since"]),
                                                      until=to_db_time(window["until"]),
                                                      repos=list(window["repos"]), labelled_at=now))
    return done


def remove_label(engine, repo: str, number: int) -> bool:
    """Remove an item's label; False if it had none."""
    import sqlalchemy as sa

    from .schema import labels

    with engine.begin() as conn:
        # the number first: ix_labels_number serves it (the unique (repo, number) index cannot serve lower(repo))
        return conn.execute(labels.delete().where(labels.c.number == number,
                                                  sa.func.lower(labels.c.repo) == repo.lower())).rowcount > 0


def save_model(engine, digest: str, data: dict[str, Any]) -> None:
    """Keep the calibration fitted on the inputs of `digest` (the only one kept: older fits are dropped)."""
    from .schema import label_models

    with engine.begin() as conn:
        conn.execute(label_models.delete())
        conn.execute(label_models.insert().values(digest=digest, data=data,
                                                  fitted_at=to_db_time(datetime.now(UTC))))
