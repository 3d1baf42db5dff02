"""`radar export` streamed: JSON Lines and CSV beside the JSON array, the store read a page of items at a time."""

from __future__ import annotations

import csv
import io
import json

from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.pipeline import export as export_mod
from infra_radar.store import queries


def _export(*args: str) -> str:
    result = CliRunner().invoke(main, ["export", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_jsonl_and_csv_hold_the_same_items_as_the_array(sample_store):
    array = json.loads(_export())
    assert len(array) > 10
    lines = _export("--format", "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == array  # one object a line, the same objects in the same order
    rows = list(csv.reader(io.StringIO(_export("--format", "csv"))))
    assert tuple(rows[0]) == export_mod.CSV_COLUMNS
    assert [(r[0], r[1], r[4]) for r in rows[1:]] == [(o["repo"], str(o["number"] or ""), o["title"]) for o in array]
    first = dict(zip(rows[0], rows[1], strict=True))
    assert first["topics"] == ";".join(array[0]["topics"])
    assert first["files"] == str(len(array[0]["files"]))


def test_the_array_is_written_as_json_dumps_of_the_list_would(sample_store):
    out = _export("--repo", "acme/infer-npu")
    objects = json.loads(out)
    assert out == json.dumps(objects, ensure_ascii=False, indent=2) + "\n"
    assert _export("--repo", "acme/infer-npu", "--since", "2001-01-01", "--until", "2001-01-02") == "[]\n"


def test_export_holds_one_page_of_items_at_a_time(sample_store, monkeypatch):
    """Counted, not timed: the items are read from the store at most PAGE at a time, and the first line is written
    before the last page is read (the old export read every item in one query, then wrote one array)."""
    monkeypatch.setattr(export_mod, "PAGE", 4, raising=False)
    reads: list[int] = []
    real = queries._items

    def counted(db, sql, params=None):
        found = real(db, sql, params)
        if "analyses.data" in sql:  # an analysed-item read (not the analysis stage's own)
            reads.append(len(found))
        return found

    monkeypatch.setattr(queries, "_items", counted)
    written_after: list[int] = []

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            written_after.append(len(reads))
            return super().write(text)

    out = Out()
    objects = export_mod.export_objects(_settings(), sample_store, None)
    export_mod.write_jsonl(objects, out, lambda n: None)
    total = len(out.getvalue().splitlines())
    assert total > 3 * 4
    assert max(reads) <= 4 and sum(reads) == total
    assert written_after[0] == 1  # the first object went out after one page was read
    assert len(reads) == -(-total // 4)


def _settings():
    from infra_radar.config import load_settings

    return load_settings()
