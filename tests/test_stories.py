"""One change, wherever it landed: backports, cherry-picks, reverts and same-title PRs shown together."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from infra_radar.analyse.links import load_relation_rules
from infra_radar.analyse.stories import stories
from infra_radar.models import AnalysedItem, Analysis, Item, Link


def ai(number: int, title: str, branches=("main",), day: int = 1, links=()) -> AnalysedItem:
    item = Item(repo="acme/x", kind="pr", key=str(number), number=number, title=title, branches=list(branches),
                merged_at=datetime(2026, 7, day, tzinfo=UTC), source="jsonl")
    return AnalysedItem(item, Analysis(item_kind="feature", priority="P1", links=list(links)))


def test_roles_of_one_story(settings):
    rules = load_relation_rules(settings)
    items = [
        ai(10, "[Core] Speed up the block allocator for long prompts", day=1),
        ai(11, "[Core] Speed up the block allocator for long prompts", branches=("release/v1",), day=2),
        ai(12, '[Core] Revert "[Core] Speed up the block allocator for long prompts"', day=3),
        ai(13, "[cherry-pick] Speed up the block allocator for long prompts", branches=("main",), day=4,
           links=[Link("backport", "acme/x", 10)]),
        ai(20, "Unrelated change to the scheduler queue", day=1),
        ai(21, "[Cherry-pick][releases/v1][BugFix] Lower the log level (from #20)", branches=("releases/v1",)),
        ai(30, "Fix typo", day=1), ai(31, "Fix typo", day=2),  # short titles are no evidence
    ]
    found = stories(items, rules)
    story = found["acme/x#10"]
    assert story is found["acme/x#11"] is found["acme/x#12"] is found["acme/x#13"]
    assert story.roles == {"acme/x#10": "original", "acme/x#11": "backport", "acme/x#12": "revert",
                           "acme/x#13": "backport"}
    assert story.refs[0] == "acme/x#10" and story.refs[-1] == "acme/x#12"
    assert "acme/x#30" not in found
    assert found["acme/x#21"].roles == {"acme/x#20": "original", "acme/x#21": "backport"}  # "(from #20)"


def test_a_revert_found_by_the_commit_it_reverts(settings):
    original = ai(40, "Enable the fused sampler by default")
    original.item.merge_commit = "abcdef1234567890" * 2 + "abcdef12"
    revert = ai(41, "Back out the sampler default", day=2)
    revert.item.body = "This reverts commit abcdef1234567890abcdef1234567890abcdef12.\n\nIt broke greedy decoding."
    found = stories([original, revert], load_relation_rules(settings))
    assert found["acme/x#41"].roles == {"acme/x#40": "original", "acme/x#41": "revert"}


def test_same_title_pair_on_main(settings):
    found = stories([ai(1, "Add FP8 support to the fused MoE kernel"), ai(2, "Add FP8 support to the fused MoE kernel",
                                                                        day=3)], load_relation_rules(settings))
    assert found["acme/x#1"].roles == {"acme/x#1": "original", "acme/x#2": "same-title"}


def test_daily_names_a_backport_in_its_originals_row(settings, shared_data, tmp_path):
    """verl#6886 on main and #6881 on release/v0.8.0 are one change; the daily radar says which is which."""
    from infra_radar.pipeline.home import open_store
    from infra_radar.pipeline.imports import import_jsonl
    from infra_radar.pipeline.reports import daily

    from .conftest import export_rows

    exports = []
    for name in ("verl-project+verl.jsonl.gz", "verl-project+verl@release+v0.8.0.jsonl.gz"):
        rows = export_rows(name)
        keep = [r for r in rows[1:] if r.get("kind") == "commit" and "2026-06-30" <= r["committed_at"][:10] <= "2026-07-02"]
        path = tmp_path / name.replace(".gz", "")
        path.write_text("\n".join(json.dumps(r) for r in [rows[0], *keep]) + "\n", encoding="utf-8")
        exports.append(path)
    engine = open_store(settings)
    import_jsonl(settings, engine, exports)
    settings.lang = "en"
    text = daily(settings, engine, datetime(2026, 7, 1, tzinfo=UTC), datetime(2026, 7, 3, tzinfo=UTC)).text
    lines = [line for line in text.splitlines() if line.startswith("| ") and ("#6886]" in line or "#6881]" in line)]
    if len(lines) < 2:
        pytest.skip("the two PRs are not ranked in this window")
    # the original holds the P0/P1 row and names the backport; the backport is a short-table row of its own
    top = text.split("## P0 / P1\n", 1)[1].split("\n## ", 1)[0]
    short = text.split("## Short table\n", 1)[1].split("\n## ", 1)[0]
    assert "#6886]" in top and "#6881]" not in top and "#6881]" in short
    original = next(line for line in lines if "#6886]" in line)
    assert "#6886 original (main)" in original and "#6881 backport (release/v0.8.0)" in original
