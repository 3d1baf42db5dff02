"""The weekly's themes are named by mechanism (issue 43): a directory's theme keeps the PRs first about the
mechanism most of its PRs are about (a sparse-attention kernel speedup that also touches the fused-MoE directory
is no MoE change), a component tag ("[rollout]") names no theme, the PRs no term holds are themed by the mechanism
they are first about, and in a repository that is not the target's own its PRs written for the target are one
theme first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from infra_radar.models import AnalysedItem, Analysis, FileChange, Item, Window
from infra_radar.render.base import load_strings
from infra_radar.render.clusters import themes
from infra_radar.render.inputs import WeeklyInput
from infra_radar.render.weekly import _themes_with_target

pytestmark = pytest.mark.no_store

WHEN = datetime(2026, 8, 12, tzinfo=UTC)


def _ai(n: int, title: str, topics: list[str], path: str, native: bool = False, priority: str = "P1",
        repo: str = "acme/infer") -> AnalysedItem:
    item = Item(repo=repo, kind="pr", key=str(n), number=n, title=title, body="", state="merged", created_at=WHEN,
                merged_at=WHEN, updated_at=WHEN, files=[FileChange(path, 40, 10)], source="git")
    return AnalysedItem(item, Analysis(item_kind="refactor", topics=topics, priority=priority, native=native))


def test_a_directory_theme_keeps_the_prs_of_its_mechanism():
    moe = "acme/ops/fused_moe/runtime.py"
    items = [_ai(1, "Split runtime dataclasses", ["npu", "moe", "kernels"], moe),
             _ai(2, "Clean up dataclass imports", ["npu", "moe", "quantization"], moe),
             _ai(3, "Align routing replay capture", ["npu", "moe"], moe),
             _ai(4, "Decouple flashcomm and shared expert dp", ["moe", "distributed"], moe),
             # a sparse-attention decode speedup that also drops a downcast in the MoE gate
             _ai(5, "Upgrade msa decode performance", ["npu", "performance", "kernels", "attention", "moe"], moe)]
    # the rest of the week: other mechanisms in other places (MoE is not what every PR of the week is about)
    items += [_ai(10 + i, f"Tune scheduler step {i}", ["scheduling"], f"acme/sched/s{i}.py") for i in range(8)]
    found = themes(items, 20, most=3)
    holding = [th for th in found if any(ai.item.number == 1 for ai in th.members)]
    assert holding and 5 not in [ai.item.number for ai in holding[0].members], [
        (th.key, [ai.item.number for ai in th.members]) for th in found]


def test_a_directory_of_no_one_mechanism_names_no_theme():
    where = "acme/workers/rollout/engine.py"
    items = [_ai(1, "Fix weight sync", ["moe"], where), _ai(2, "FP8 ignored layers", ["quantization"], where),
             _ai(3, "Profiler crash on other nodes", ["distributed"], where)]
    assert not [th for th in themes(items, 10, most=3) if th.key.startswith("d:")]


def test_a_component_tag_names_no_theme_and_the_mechanism_does():
    zh = load_strings("zh")
    items = [_ai(1, "[rollout] fix: MoE weight sync for FSDP", ["rl-training", "moe"], "acme/a/b/x.py"),
             _ai(2, "[rollout] fix: MoE weight sync for FSDP (backport)", ["rl-training", "moe"], "acme/c/d/y.py"),
             _ai(3, "[rollout] feat: log MoE load-balance metrics", ["moe", "rl-training"], "acme/e/f/z.py"),
             _ai(4, "[rollout] fix: tokenizer class for a VLM", ["multimodal"], "acme/g/h/w.py")]
    items += [_ai(10 + i, f"Tune step {i}", ["scheduling" if i % 2 else "padding"], f"acme/s/t/s{i}.py", priority="P2")
              for i in range(4)]
    inp = WeeklyInput(repo="acme/infer", window=Window(WHEN, WHEN), week_label="2026-W33", items=items, previous=[],
                      key_prs=8, adapted=[], target="ascend")
    found = _themes_with_target(items, len(items), None, inp, zh)
    assert all(th.label.lower() != "rollout" for th in found), [th.label for th in found]
    moe = [th for th in found if th.key in ("c:moe", "w:moe")]  # the mechanism, as a title word or a topic
    assert moe and sorted(ai.item.number for ai in moe[0].members) == [1, 2, 3], [(th.key, th.label) for th in found]


def test_the_targets_own_work_is_one_theme_first_in_a_repository_not_its_own():
    zh = load_strings("zh")
    tagged = [_ai(n, f"[fully_async] feat: Adapt vLLM 0.{n}+ for Ascend NPU", ["npu", "rl-training"],
                  f"acme/vllm/p{n}.py", native=True) for n in (1, 2, 3)]
    others = [_ai(4, "[fully_async] fix: partial rollout", ["rl-training"], "acme/x/y/a.py"),
              _ai(5, "[fully_async] fix: teacher temperature", ["rl-training"], "acme/x/y/b.py")]
    items = tagged + others
    inp = WeeklyInput(repo="acme/trainer", window=Window(WHEN, WHEN), week_label="2026-W27", items=items,
                      previous=[], key_prs=8, adapted=[], target="ascend")
    found = _themes_with_target(items, 5, [], inp, zh)
    assert found[0].kind == "target" and [ai.item.number for ai in found[0].members] == [1, 2, 3]
    assert found[0].label == "NPU 适配" and found[0].before == 0
    assert all(ai.item.number not in (1, 2, 3) for th in found[1:] for ai in th.members)


def test_cheap_to_reuse_is_not_said_of_changes_whose_diff_was_not_read():
    """A movement's takeaway agrees with what was read: grade-S PRs whose diff was never read are not "cheap to
    reuse" (the sample weekly said so beside "diff not read")."""
    from infra_radar.render.clusters import Theme
    from infra_radar.render.weekly_risks import Found
    from infra_radar.render.weekly_story import takeaway

    zh = load_strings("zh")
    members = [_ai(n, f"Tune scheduler step {n}", ["scheduling"], f"acme/sched/s{n}.py") for n in (1, 2)]
    said = takeaway(Theme("c:scheduling", "调度", members), Found(), zh, native=False)
    assert said == zh["weekly"]["take_unread"] and "复用成本低" not in said
