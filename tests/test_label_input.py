"""Label files and `radar label` / `radar eval` under hostile input (issue 36), on both stores unless marked:

- an import is one transaction whose statements do not grow per label, and every look-up of a label is served
  by an index (time linear in the labels: 2,000 / 8,000 / 32,000 labels took 1.5 s / 7.4 s / 120 s before);
- a bad line (a window with time "NaN", an item number past 2^63, a lone surrogate) is a warning naming the
  file and line, and the rest is imported: never an "unexpected" error, never half an import;
- item references read by the one parser every command uses (models.parse_ref): `#0`, `#2147483648`,
  `../..#1`, fullwidth names and Arabic-Indic digits are refused by the import, `radar eval` and the commands;
- control characters of a note or name never reach an output; a file is read a line at a time under a line
  cap, its warnings capped; `--note` / `--by` capped as the import caps them.
"""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.evaluate import labels as label_file

BAD_REFS = ["acme/infer#0", "acme/infer#2147483648", "../..#1", "ａｃｍｅ/infer#1", "acme/infer#١٢",
            "acme/infer#9223372036854775808", "acme/infer#99999999999999999999"]


def radar(*args: str, ok: bool = True):
    result = CliRunner().invoke(main, list(args))
    if ok:
        assert result.exit_code == 0, result.output
    return result


def write(path: Path, *lines: object) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def listed() -> dict[str, list[str]]:
    return {line.split("\t")[0]: line.split("\t")  # under the header line
            for line in radar("label", "--list").output.splitlines()[1:]}


# --- linear: one transaction, statements that do not grow per label, look-ups an index serves -----------

def _many(path: Path, count: int, start: int = 1) -> Path:
    return write(path, *({"item": f"acme/r{i % 7}#{start + i}", "priority": "P2", "note": f"n{i}"}
                         for i in range(count)))


def _counted(args: list[str]) -> tuple[int, int]:
    """(commits, statements) of one in-process command, on any store."""
    import sqlalchemy as sa
    from sqlalchemy.engine import Engine

    counts = [0, 0]

    def on_commit(_conn) -> None:
        counts[0] += 1

    def on_statement(*_args) -> None:
        counts[1] += 1

    sa.event.listen(Engine, "commit", on_commit)
    sa.event.listen(Engine, "before_cursor_execute", on_statement)
    try:
        radar(*args)
    finally:
        sa.event.remove(Engine, "commit", on_commit)
        sa.event.remove(Engine, "before_cursor_execute", on_statement)
    return counts[0], counts[1]


def test_an_import_is_one_transaction_whose_statements_do_not_grow_per_label(tmp_path):
    radar("label", "acme/r0#1", "--priority", "P1")  # the store exists and is migrated before counting
    small = _counted(["label", "--import", str(_many(tmp_path / "small.jsonl", 100, start=1000))])
    large = _counted(["label", "--import", str(_many(tmp_path / "large.jsonl", 1200, start=5000))])
    again = _counted(["label", "--import", str(_many(tmp_path / "large.jsonl", 1200, start=5000))])
    # each label its own transaction made 1,200 commits here; a look-up and an insert each, 2,400 statements
    assert large[0] == small[0] >= again[0], (small, large, again)  # (nothing changed again: no refit to store)
    assert large[1] <= small[1] + 10 and again[1] <= small[1] + 10, (small, large, again)
    assert len(listed()) == 1 + 100 + 1200


def _plans(conn, statement: str, params) -> list[str]:
    """The plan lines of one captured statement, as the store explains it."""
    if conn.dialect.name == "sqlite":
        return [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params)]
    conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a small table is scanned whatever its indexes
    return [row[0] for row in conn.exec_driver_sql("EXPLAIN " + statement, params)]


def _served_by_an_index(conn, lines: list[str]) -> bool:
    """Whether every access to `labels` in a plan goes through an index on a column its condition names first:
    SQLite SEARCHes (a SCAN reads every row); PostgreSQL scans an index whose first column is in the Index
    Cond (it will otherwise walk a whole (repo, number) index for a condition on the number alone)."""
    if conn.dialect.name == "sqlite":
        return all(not re.match(r"SCAN labels\b", line) for line in lines)
    text = "\n".join(lines)
    if re.search(r"Seq Scan on labels\b", text):
        return False
    first = {name: re.search(r"\((\w+)", definition).group(1) for name, definition in conn.exec_driver_sql(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'labels'")}
    used = re.findall(r"Index (?:Only )?Scan using (\w+) on labels[^\n]*\n\s+Index Cond: \(+([^)]*)", text)
    scans = re.findall(r"Scan using \w+ on labels", text)
    return bool(used) and len(used) == len(scans) and all(first[ix] in cond.split()[0] for ix, cond in used)


def test_every_look_up_of_a_label_is_served_by_an_index(tmp_path):
    import sqlalchemy as sa

    from infra_radar.config import load_settings
    from infra_radar.pipeline.home import open_store
    from infra_radar.store import labels

    engine = open_store(load_settings())
    try:
        for i in range(1, 60):
            labels.set_label(engine, labels.TeamLabel(f"acme/r{i % 5}", i, "P2", None))
        seen: list[tuple[str, object]] = []

        def capture(_conn, _cursor, statement, params, _context, _many) -> None:
            if re.search(r"\bFROM labels\b|^\s*(UPDATE|DELETE FROM) labels\b", statement) and \
                    re.search(r"\bWHERE\b", statement):
                seen.append((statement, params))

        sa.event.listen(engine, "before_cursor_execute", capture)
        labels.set_label(engine, labels.TeamLabel("ACME/R3", 3, "P0", "M", note="again"))  # an update
        labels.set_label(engine, labels.TeamLabel("acme/r1", 4001, "P1", None))  # an insert
        assert labels.remove_label(engine, "Acme/R2", 2)
        sa.event.remove(engine, "before_cursor_execute", capture)
        assert len(seen) >= 3, seen  # the look-ups of both labels, and the removal
        with engine.begin() as conn:
            for statement, params in seen:
                if re.match(r"\s*UPDATE labels\b.*\bWHERE labels\.id = \S+\s*$", statement, re.S):
                    continue  # by primary key
                lines = _plans(conn, statement, params if not isinstance(params, list) else params[0])
                assert _served_by_an_index(conn, lines), (statement, lines)
    finally:
        engine.dispose()


def test_an_import_that_fails_stores_nothing_of_it():
    """One transaction: a label the store refuses half-way leaves the labels and windows as they were."""
    from datetime import UTC, datetime

    import sqlalchemy as sa

    from infra_radar.config import load_settings
    from infra_radar.pipeline.home import open_store
    from infra_radar.store import labels

    engine = open_store(load_settings())
    try:
        labels.set_label(engine, labels.TeamLabel("acme/infer", 1, "P1", None))
        window = {"team": {"since": datetime(2026, 7, 1, tzinfo=UTC), "until": datetime(2026, 7, 2, tzinfo=UTC),
                           "repos": ["acme/infer"]}}
        team = [labels.TeamLabel("acme/infer", 1, "P0", None), labels.TeamLabel("acme/infer", 2, "P2", None),
                labels.TeamLabel("acme/infer", 2**70, "P2", None)]  # past any integer column
        with pytest.raises((OverflowError, sa.exc.SQLAlchemyError)):  # the driver's: what matters is what is left
            labels.set_labels(engine, team, window)
        assert [(lab.ref, lab.priority) for lab in labels.all_labels(engine)] == [("acme/infer#1", "P1")]
        assert labels.label_windows(engine) == {}
    finally:
        engine.dispose()


# --- a bad line is a warning naming its file and line; the rest is imported --------------------------

def test_a_bad_window_line_is_a_warning_and_the_rest_is_imported(tmp_path):
    path = write(tmp_path / "day.jsonl",
                 {"window": {"part": "team-a", "since": "NaN", "until": "2026-07-03T00:00Z", "repos": ["acme/infer"]}},
                 {"window": {"part": "team-b", "since": "2026-07-02", "until": "2026-07-03", "repos": "acme/infer"}},
                 {"window": {"part": "team-c", "since": None, "until": "2026-07-03", "repos": []}},
                 {"window": ["not", "an", "object"]},
                 {"window": {"part": "team-e", "since": "2026-07-02", "until": "2026-07-03", "repos": ["../.."]}},
                 {"item": "acme/infer#7", "priority": "P1", "part": "team-b"})
    result = radar("label", "--import", str(path))
    assert "1 added, 0 updated, 0 unchanged, 1 window(s)" in result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 5, result.output
    for number, words in ((1, "invalid time 'NaN'"), (2, "should be a list"), (3, '"since" must be a time'),
                          (4, "must be an object"), (5, "repository '../..'")):
        assert any(line.startswith(f"warning: {path}:{number}: ") and words in line for line in warnings), words
    from infra_radar.config import load_settings
    from infra_radar.pipeline.home import open_store
    from infra_radar.store import labels

    engine = open_store(load_settings())
    try:  # a window's repos given as one string are that one repository, never its characters
        assert {part: w["repos"] for part, w in labels.label_windows(engine).items()} == {"team-b": ["acme/infer"]}
    finally:
        engine.dispose()


def test_numbers_past_the_store_and_lone_surrogates_are_warnings_not_errors(tmp_path):
    path = write(tmp_path / "hostile.jsonl",
                 {"item": "acme/infer#1", "priority": "P0"},
                 {"item": "acme/infer#9223372036854775808", "priority": "P0"},
                 '{"item": "acme/infer#2", "priority": "P1", "note": "bad \\ud800 note", "by": "\\udc80mei"}',
                 '{"item": "acme/infer#3", "priority": "P1", "perf_claims": [{"metric": "\\ud83d", "after": 1}]}',
                 {"item": "acme/infer#4", "priority": "P2"})
    result = radar("label", "--import", str(path))
    assert "unexpected" not in result.output
    assert "3 added, 0 updated, 0 unchanged" in result.output, result.output
    assert re.search(rf"warning: {re.escape(str(path))}:2: \"item\" must be OWNER/NAME#N", result.output)
    assert f"warning: {path}:3: \"note\" held control characters" in result.output
    assert f"warning: {path}:4: a field holds a lone surrogate" in result.output
    rows = listed()
    assert set(rows) == {"acme/infer#1", "acme/infer#2", "acme/infer#4"}  # the lines before and after: all of them
    assert rows["acme/infer#2"][3] == "mei" and rows["acme/infer#2"][6] == "bad  note"
    # radar eval reads the same file: the same problems, named by file and line, and scores
    scored = radar("eval", str(path), "--no-learning")
    assert "unexpected" not in scored.output
    assert f"label problem: {path}:2: " in scored.output and f"label problem: {path}:4: " in scored.output


# --- one reading of references for every command ------------------------------------------------------

def test_bad_references_are_refused_by_the_import_eval_and_every_command(tmp_path):
    path = write(tmp_path / "refs.jsonl", *({"item": ref, "priority": "P1"} for ref in BAD_REFS),
                 {"item": "acme/infer#12", "priority": "P2"})
    result = radar("label", "--import", str(path))
    assert "1 added" in result.output and "unexpected" not in result.output
    for number, ref in enumerate(BAD_REFS, 1):
        assert f"warning: {path}:{number}: \"item\" must be OWNER/NAME#N" in result.output, ref
    assert list(listed()) == ["acme/infer#12"]  # what was stored can be removed: nothing else was stored
    assert "removed the label of acme/infer#12" in radar("label", "acme/infer#12", "--remove").output
    scored = radar("eval", str(path), "--no-learning")
    assert scored.output.count("label problem:") == len(BAD_REFS) and "unexpected" not in scored.output
    for ref in BAD_REFS:
        for args in (["label", ref, "--priority", "P1"], ["label", ref, "--remove"], ["watch", "add", ref],
                     ["show", ref]):
            out = radar(*args, ok=False)
            assert out.exit_code == 1 and out.output.startswith("error: invalid item reference"), (args, out.output)
            assert len(out.output.strip().splitlines()) == 1


@pytest.mark.no_store
def test_arabic_indic_digits_are_no_reference_in_text_either():
    from infra_radar.analyse.refs import extract_refs
    from infra_radar.models import ref_number

    assert ref_number("١٢") is None and ref_number("1٢") is None and ref_number("12") == 12
    assert [link.number for link in extract_refs("Fixes #1٢ and #7", "acme/infer")] == [7]


# --- what a note or name may carry, and how much of a file is read ------------------------------------

def test_control_characters_never_reach_the_daily_or_the_terminal(tmp_path):
    from tests.test_labels import REPOS, _history

    radar("import-jsonl", *map(str, _history(tmp_path)))
    radar("analyze")
    nasty = "hot\x00 path\x07 \x1b[31mred\x1b[0m"
    path = write(tmp_path / "nasty.jsonl", {"item": "acme/infer#301", "priority": "P0", "note": nasty,
                                             "by": "m\x1bei"})
    imported = radar("label", "--import", str(path))
    radar("label", "acme/infer#302", "--priority", "P1", "--note", "ci\x07 only", "--by", "li\x1b")
    outputs = [radar("label", "--list").output, radar("show", "acme/infer#301", "--lang", "en").output,
               radar("daily", "--since", "2026-07-03T00:00Z", "--until", "2026-07-04T00:00Z", "--repo", REPOS[0],
                     "--lang", "en").output]
    for out in outputs:
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", out), out
    assert "hot path [31mred[0m" in outputs[1] and "mei" in outputs[1] and "mei" in outputs[2]
    assert f"warning: {path}:1: \"note\" held control characters" in imported.output


def test_note_and_by_are_capped_as_the_import_caps_them(tmp_path):
    long_note = "n" * (label_file.NOTE_MAX + 1)
    out = radar("label", "acme/infer#1", "--priority", "P1", "--note", long_note, ok=False)
    assert out.exit_code == 1
    assert out.output == "error: --note is 2,001 characters long; at most 2,000 are kept with a label\n"
    out = radar("label", "acme/infer#1", "--priority", "P1", "--by", "b" * 201, ok=False)
    assert out.exit_code == 1 and "--by is 201 characters long; at most 200" in out.output
    assert radar("label", "--list").output == "ref\tpriority\tgrade\tby\tat\tpart\tnote\n"  # nothing stored
    path = write(tmp_path / "long.jsonl", {"item": "acme/infer#1", "priority": "P1", "note": long_note,
                                            "by": "b" * 201})
    result = radar("label", "--import", str(path))
    assert f"{path}:1: \"note\" is 2,001 characters; its first 2,000 are kept" in result.output
    row = listed()["acme/infer#1"]
    assert len(row[6]) == label_file.NOTE_MAX and len(row[3]) == label_file.BY_MAX


def test_warnings_are_capped_and_a_file_past_the_line_cap_is_refused(tmp_path, monkeypatch):
    bad = write(tmp_path / "bad.jsonl", *(["not json"] * 500), {"item": "acme/infer#5", "priority": "P2"})
    result = radar("label", "--import", str(bad))
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == label_file.PROBLEMS_KEPT + 1, result.output
    assert warnings[-1] == f"warning: {bad}: 480 more problem(s) not shown (the first 20 are above)"
    assert "1 added" in result.output
    monkeypatch.setattr(label_file, "MAX_LINES", 300)
    out = radar("label", "--import", str(bad), ok=False)
    assert out.exit_code == 1 and out.output == (f"error: {bad}: more than 300 lines; a labels file holds at most "
                                                 "that many (split it): none of it was used\n")


@pytest.mark.no_store
def test_a_file_is_read_a_line_at_a_time_in_bounded_memory(tmp_path, monkeypatch):
    """A labels file of 20,000 bad lines (here the line cap) and one line of 8 MB: read with a few hundred KB,
    not the file's size several times over (1M lines took 354 MB), with 20 problems kept and the rest counted."""
    monkeypatch.setattr(label_file, "MAX_LINES", 20_000)
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"item": "acme/infer#1", "note": "' + "x" * 8_000_000 + '"}\n')
        for _ in range(label_file.MAX_LINES - 2):
            fh.write('{"item": "acme/infer#x", "priority": "P1"}\n')
        fh.write('{"item": "acme/infer#2", "priority": "P1"}\n')
    tracemalloc.start()
    try:
        found = label_file.load_labels(path, {"priority": ["P1"]})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [lab.item for lab in found.labels] == ["acme/infer#2"]
    assert found.problems[0] == f"{path}:1: longer than 100,000 characters; line skipped"
    assert len(found.problems) == label_file.PROBLEMS_KEPT and found.problems.more == label_file.MAX_LINES - 2 - 19
    assert peak < 2_000_000, peak
