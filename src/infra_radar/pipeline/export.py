"""`radar export`: every analysed item of a window as its export object, streamed from the store a page at a time.

The items' ids are read first (a few numbers each) and put in the export's order; the items themselves, their
judgment and their links are then read `PAGE` at a time, so memory holds one page of items however large the
store. The JSON array, JSON Lines and CSV are written from the same stream.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from typing import IO, Any

from ..config import Settings
from ..models import Window
from ..store import queries

PAGE = 200  # items read, judged and linked at once

# the columns of `--format csv`: one row an item, the export object's plain fields (lists joined with ";")
CSV_COLUMNS = ("repo", "number", "kind", "state", "title", "url", "author", "created_at", "merged_at",
               "closed_at", "item_kind", "topics", "priority", "importance", "grade", "decision", "risk_labels",
               "additions", "deletions", "files", "summary")


def export_objects(settings: Settings, engine, window: Window | None, names: list[str] | None = None,
                   state: str = "all", total: Callable[[int], None] | None = None) -> Iterator[dict[str, Any]]:
    """The export contract, streamed: one JSON object per analysed item in the window (of the repositories
    `names`, checked by reports.report_repos, or all), oldest first, with the same links as its card (references,
    items referencing it, duplicates, chain parts, same-mechanism items, adaptations). `total` is told the number
    of items before the first is read."""
    from ..render.markdown import card_json
    from .analysis import analyze
    from .card import card_of
    from .judgment import judging
    from .relations import batch_cache

    analyze(settings, engine)
    ids = queries.analysed_ids_in_window(engine, window, names, state)
    if total is not None:
        total(len(ids))
    if not ids:
        return
    overlay = judging(settings, engine)
    cache = batch_cache(engine)
    from ..llm.shown import model_evidence

    for start in range(0, len(ids), PAGE):
        found = overlay(queries.analysed_by_ids(engine, ids[start:start + PAGE]))
        back = queries.referenced_by_many(engine, [(a.item.repo, a.item.number) for a in found if a.item.number])
        # a configured model's cached sentences, each with the records it cites (`source: model`); nothing is sent
        model = model_evidence(settings, engine, [a for a in found if a.item.number is not None], settings.lang)
        for a in found:
            obj = card_json(card_of(settings, engine, a, cache,
                                    back.get((a.item.repo.lower(), a.item.number), []) if a.item.number else []))
            if model.get(a.item.ref):
                obj["evidence"] = [*obj["evidence"], *model[a.item.ref]]
            yield obj


def write_json(objects: Iterator[dict[str, Any]], out: IO[str], done: Callable[[int], None]) -> None:
    """The objects as one JSON array, byte for byte what `json.dumps(list(objects), indent=2)` gives, written an
    object at a time."""
    first = True
    for obj in objects:
        text = json.dumps(obj, ensure_ascii=False, indent=2).replace("\n", "\n  ")
        out.write(("[\n  " if first else ",\n  ") + text)
        first = False
        done(1)
    out.write("[]\n" if first else "\n]\n")


def write_jsonl(objects: Iterator[dict[str, Any]], out: IO[str], done: Callable[[int], None]) -> None:
    """The objects as JSON Lines: one object a line."""
    for obj in objects:
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        done(1)


def csv_row(obj: dict[str, Any]) -> list[str]:
    """The `CSV_COLUMNS` of one export object: lists joined with ";", sizes summed over its files, null empty."""
    files = obj.get("files") or []
    plain = {**obj, "additions": sum(f.get("additions") or 0 for f in files),
             "deletions": sum(f.get("deletions") or 0 for f in files), "files": len(files)}
    row = []
    for column in CSV_COLUMNS:
        value = plain.get(column)
        row.append(";".join(str(v) for v in value) if isinstance(value, list)
                   else "" if value is None else str(value))
    return row


def write_csv(objects: Iterator[dict[str, Any]], out: IO[str], done: Callable[[int], None]) -> None:
    """The objects as CSV: a header of `CSV_COLUMNS`, then a row an object."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for obj in objects:
        writer.writerow(csv_row(obj))
        done(1)


WRITERS = {"json": write_json, "jsonl": write_jsonl, "csv": write_csv}
