"""The weekly's risks are the code's and the description's own (issue 43): a default the diff sets in code the
change adds or moves is no default change, a fix of a crash is no silent-accuracy fix, and a change whose own
description says it breaks something is a risk, with that sentence in `radar show --evidence`."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from infra_radar.analyse.code_facts import ChangeFacts, load_code_rules
from infra_radar.models import AnalysedItem, Analysis, FileChange, Item
from infra_radar.render.base import load_strings
from infra_radar.render.evidence import item_evidence
from infra_radar.render.weekly_risks import Found, accuracy_fix, find, risk_lines
from infra_radar.render.weekly_words import Refs
from infra_radar.sources.diffs import feed_patch

pytestmark = pytest.mark.no_store

WHEN = datetime(2026, 8, 12, tzinfo=UTC)


def _ai(title: str, kind: str, body: str = "", patch: str = "", added: int = 3, deleted: int = 0,
        labels: tuple[str, ...] = ()) -> AnalysedItem:
    code = None
    if patch:
        facts = ChangeFacts(load_code_rules())
        feed_patch(facts, "acme/ops/moe_args.py", patch)
        code = facts.facts("git")
    item = Item(repo="acme/infer", kind="pr", key="7", number=7, title=title, body=body, code=code, state="merged",
                created_at=WHEN, merged_at=WHEN, updated_at=WHEN,
                files=[FileChange("acme/ops/moe_args.py", added, deleted)], source="git")
    return AnalysedItem(item, Analysis(item_kind=kind, risk_labels=list(labels)))


SET_ON = "@@ -0,0 +1,2 @@\n+class Args:\n+    use_bf16: bool = True\n"


def test_a_default_in_code_the_change_adds_or_moves_is_no_default_change():
    moved = _ai("Split fused MoE runtime dataclasses", "refactor", patch=SET_ON)
    new_module = _ai("Add MiniMax M3 model core support", "model-support", patch=SET_ON, added=1067)
    switched = _ai("Use bf16 for MXFP by default", "feature", patch=SET_ON, added=2)
    assert find([moved, new_module, switched]).defaults == [switched]


@pytest.mark.parametrize(("body", "silent"), [
    ("With TP=2 and MTP the server crashed with a RuntimeError at the first step.", False),
    ("The outputs were silently wrong on 310P: the cache was read at the wrong offset.", True),
    ("", True),
])
def test_a_fix_of_a_crash_is_no_silent_accuracy_fix(body, silent):
    ai = _ai("Fix MTP overlay prefixcache precision on 310P", "bugfix", body=body, added=12, deleted=4,
             labels=("silent-accuracy",))
    assert accuracy_fix(ai) is silent


def test_a_change_saying_it_breaks_something_is_a_risk_with_its_sentence_in_the_evidence():
    said = "These issues will cause runtime errors and break FP8/MXFP quantization."
    ai = _ai("Refactor token dispatcher routing initialization", "refactor",
             body=f"This consolidates the routing init.\n\nHowever it omits `active_num`. {said}", added=20, deleted=24)
    fix = _ai("Fix the padded batch", "bugfix", body="Previously the padded batch breaks graph capture.",
              added=5, deleted=2)
    found = find([ai, fix])
    assert found.breaks == [ai]
    lines = risk_lines(Found(breaks=found.breaks), Refs(), load_strings("zh"))
    assert len(lines) == 1 and "描述自称的破坏" in lines[0] and "FP8/MXFP 量化" in lines[0], lines
    records = [e for e in item_evidence(ai, "zh", "ascend") if e.rule.startswith("weekly.toml [risks] breaks")]
    assert records and records[0].text == said


def test_a_class_kept_as_an_alias_is_no_removal():
    from infra_radar.render.weekly_risks import removed

    patch = "@@ -1,3 +1,1 @@\n-class OldRunner:\n-    pass\n-\n+OldRunner = NewRunner\n"
    alias = _ai("Rename OldRunner to NewRunner", "refactor", patch=patch, added=1, deleted=3,
                body="`OldRunner` is kept as an alias of `NewRunner` for backward compatibility.")
    # the code itself keeps the name (`OldRunner = NewRunner`): no removal whatever the description says
    kept = _ai("Rename OldRunner to NewRunner", "refactor", patch=patch, added=1, deleted=3,
               body="Renames the runner.")
    gone = _ai("Remove OldRunner", "refactor", patch="@@ -1,3 +0,0 @@\n-class OldRunner:\n-    pass\n-\n",
               added=0, deleted=3, body="Removes the runner.")
    assert removed(alias) is None and removed(kept) is None
    assert str(removed(gone)) == "`OldRunner`"
