"""Judgement like the team's radar, over the whole shared history (skipped without ../shared/data):

- the labelled set passes `radar eval --check`: tune and held-out priority/grade floors, and the `team`
  part (every item the team's 2026-07-02 radar ranks, history items and pasted pages imported at test
  time) reaches the P0/P1 recall and grade floors with few unlisted merged PRs ranked P0/P1;
- the reason invariants of docs/labelling.md hold on every analysed item.

One store is built for the module: importing and analysing all history takes a while on 2 cores.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.config import load_settings

pytestmark = pytest.mark.one_store  # the judgment's figures on real history: the same read from either store

DEV_SET = Path(__file__).resolve().parents[1] / "data" / "labels" / "dev.jsonl"
HOUSEKEEPING = {"docs", "ci", "test"}
LIGHT_PHRASES = ("docs/tests/CI/config only", "documentation only", "CI / build images only",
                 "configuration files only", "tests only")
CODE_SUFFIXES = (".py", ".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".cuh")


@pytest.fixture(scope="module")
def store(full_store):
    """(db url, settings, analysed items, home) of the session's store of all shared history and pages."""
    home, url = full_store
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.delenv("RADAR_DB_URL", raising=False)
        settings = load_settings(db_url=url)
        from infra_radar.pipeline.home import open_store
        from infra_radar.store import queries

        engine = open_store(settings)
        analysed = [a for a in queries.analysed_in_window(engine, None) if a.item.number is not None]  # one read
        engine.dispose()
        yield url, settings, [a for a in analysed if a is not None], home


def test_labelled_set_and_team_part_pass_their_floors(store):
    url, _, _, home = store
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        result = CliRunner().invoke(main, ["--db", url, "eval", str(DEV_SET), "--check"])
    assert result.exit_code == 0, result.output
    assert "missing from the store" not in result.output
    team = result.output[result.output.index("[team]"):]
    recall = re.search(r"P0/P1 recall (\d\.\d+)", team)
    assert recall and float(recall.group(1)) >= 0.9, team
    assert re.search(r"unlisted merged PRs ranked P0/P1 0\.\d+", team), team
    # the team's items that `radar daily` of that window holds: 21 of 26 when this was written (11 before
    # the window counted opened items and date-only days); 19 since a date-only day belongs to the window covering
    # most of it (issue 42): three pages dated 07-02 are the next morning's (tests/test_team_table.py)
    held = re.search(r"team items in the radar's window (\d\.\d+)  \((\d+)/(\d+)\)", team)
    assert held and float(held.group(1)) >= 0.7, team


def test_no_irrelevance_reason_on_a_watched_item(store):
    _, settings, analysed, _ = store
    focus = set(settings.focus)
    bad = [a.item.ref for a in analysed
           if set(a.analysis.topics) & focus and ("not relevant to the focus" in a.analysis.decision_reason["en"]
                                                   or "outside the watched field" in a.analysis.decision_reason["en"])]
    assert bad == []
    # a "none" decision names the priority rule that decided it
    nones = [a for a in analysed if a.analysis.priority == "none"]
    assert nones and all(a.analysis.decision_reason["en"].startswith("ranked none (") for a in nones)


def test_docs_are_never_adapt_now(store):
    _, _, analysed, _ = store
    docs = [a for a in analysed if a.analysis.item_kind == "docs"]
    assert len(docs) > 100
    assert [a.item.ref for a in docs if a.analysis.decision == "adapt-now"] == []


def test_no_light_files_reason_when_code_changed(store):
    _, _, analysed, _ = store
    bad = [a.item.ref for a in analysed
           if any(f.path.endswith(CODE_SUFFIXES) for f in a.item.files)
           and any(p in a.analysis.grade_reason["en"] for p in LIGHT_PHRASES)]
    assert bad == []


def test_no_grade_reason_covers_more_than_a_fifth(store):
    _, _, analysed, _ = store
    # the reason's wording without its evidence (the parenthesised files and words)
    shapes = Counter(re.sub(r"\([^()]*\)", "()", a.analysis.grade_reason["en"]) for a in analysed)
    shape, count = shapes.most_common(1)[0]
    assert count <= 0.2 * len(analysed), (shape, count, len(analysed))
    assert len(shapes) >= 20


def test_no_grade_reason_says_a_word_twice_in_a_row(store):
    """A signal label that ends with the word its template puts after it ("设备执行路径" before "路径", "... logic"
    before "logic") says it once."""
    _, _, analysed, _ = store
    for a in analysed:
        zh, en = a.analysis.grade_reason["zh"], a.analysis.grade_reason["en"]
        assert not re.search(r"([\u4e00-\u9fff]{2,})\1", zh.split("（", 1)[0]), zh
        assert not re.search(r"\b([A-Za-z]{3,}) \1\b", en.split("(", 1)[0]), en


def test_no_docs_ci_or_test_change_is_asked_for_a_training_run(store):
    """A docs, CI or test change of a training repository gets no training-parity or re-measure step (VeOmni's
    list of supported NPU hardware once got "同 seed 与数据下做训练对齐")."""
    from infra_radar.render.checklist import item_checklist

    _, _, analysed, _ = store
    house = [a for a in analysed if a.analysis.item_kind in HOUSEKEEPING
             and a.item.repo in ("verl-project/verl", "THUDM/slime", "ByteDance-Seed/VeOmni")]
    assert len(house) > 20
    for a in house:
        for step in item_checklist(a, "en", "Ascend NPU", []):
            assert "Training parity" not in step and not step.startswith("Re-measure"), (a.item.ref, step)


def test_housekeeping_ranks_below_code_of_the_same_priority(store):
    _, _, analysed, _ = store
    for priority in ("P0", "P1", "P2"):
        same = [a.analysis for a in analysed if a.analysis.priority == priority]
        house = [a.importance for a in same if a.item_kind in HOUSEKEEPING]
        code = [a.importance for a in same if a.item_kind not in HOUSEKEEPING]
        if house and code:
            assert max(house) < min(code), priority


def test_the_window_ranks_a_radar_of_the_teams_size(store):
    """2026-06-29T02:00Z..2026-07-02T02:12Z: a handful of P0s (the team's verl P0s among them), a P1
    table of about the team's size, not dozens."""
    from datetime import UTC, datetime

    _, _, analysed, _ = store
    since, until = datetime(2026, 6, 29, 2, 0, tzinfo=UTC), datetime(2026, 7, 2, 2, 12, tzinfo=UTC)
    window = [a for a in analysed if a.item.when and since <= a.item.when < until]
    ranks = Counter(a.analysis.priority for a in window)
    assert 1 <= ranks["P0"] <= 12 and ranks["P1"] <= 40, ranks
    p0 = {a.item.ref for a in window if a.analysis.priority == "P0"}
    assert {"verl-project/verl#6901", "verl-project/verl#6886"} <= p0


# --- learning ---------------------------------------------------------------------------------------------

def test_eval_prints_and_checks_the_cross_validated_figures(store):
    """`radar eval --check` above holds the floors with learning too (check_all); here the figures themselves:
    the cross-validated team part keeps the floors and is no worse than the rules alone."""
    import json

    url, _, _, home = store
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        data = json.loads(CliRunner().invoke(main, ["--db", url, "eval", str(DEV_SET), "--json"]).output)
    assert data["failures"] == []
    rules, learned = data["parts"]["team"], data["learning"]["cross_validated"]["parts"]["team"]
    assert learned["high_recall"] >= 0.9 and learned["grade"]["accuracy"] >= 0.85
    assert learned["unlisted_high_share"] <= 0.30
    assert learned["grade"]["accuracy"] >= rules["grade"]["accuracy"]
    assert learned["high_recall"] >= rules["high_recall"]
    assert set(data["learning"]["folds"]) == {"team", *(f"fold-{i}" for i in range(5))}


def test_earlier_labels_make_later_days_no_worse(store):
    """Real history split by time: the calibration fitted on the labels of the earlier two thirds of the
    labelled items (by merge time) judges the later third and the team's day at least as well as the rules."""
    from infra_radar.analyse.judge import Judge
    from infra_radar.analyse.learn import fit, limits_of
    from infra_radar.evaluate.labels import load_labels
    from infra_radar.evaluate.learning import examples_of, judged
    from infra_radar.pipeline.home import open_store
    from infra_radar.pipeline.judgment import judging_tables
    from infra_radar.store import queries

    url, settings, _, _ = store
    engine = open_store(settings)
    labels = load_labels(DEV_SET)
    found = {}
    for label in labels.labels:
        analysed = queries.analysed_item(engine, label.repo, label.number)
        if analysed is not None and analysed.item.when is not None:
            found[f"{label.repo.lower()}#{label.number}"] = analysed
    engine.dispose()
    dev = sorted((lab for lab in labels.labels if lab.split in ("tune", "holdout")
                  and f"{lab.repo.lower()}#{lab.number}" in found),
                 key=lambda lab: found[f"{lab.repo.lower()}#{lab.number}"].item.when)
    cut = len(dev) * 2 // 3
    tables = judging_tables(settings)
    model = fit(examples_of(dev[:cut], found), limits_of(tables["learning"]))
    judge = Judge(tables, settings.focus_weights, settings.focus)
    later = dev[cut:] + [lab for lab in labels.labels if lab.split == "team"]

    def right(field: str, learned: bool) -> int:
        total = 0
        for lab in later:
            ai = found.get(f"{lab.repo.lower()}#{lab.number}")
            if ai is None or field not in lab.values:
                continue
            a = judged(ai, judge, model).analysis if learned else ai.analysis
            total += getattr(a, field) in lab.values[field]
        return total

    assert model.labels == cut
    for field in ("priority", "grade"):
        assert right(field, True) >= right(field, False), field
