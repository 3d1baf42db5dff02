"""Renderers: daily radar, weekly report and item card in zh and en, checked whole against golden files.

Regenerate the golden files on purpose with `RADAR_UPDATE_GOLDEN=1 pytest tests/test_render.py` and read
the diff before committing it.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from infra_radar.models import (
    COMMIT,
    ISSUE,
    MERGED,
    OPEN,
    PR,
    RELEASE,
    AnalysedItem,
    Analysis,
    FileChange,
    Item,
    Link,
    PerfClaim,
    Window,
)
from infra_radar.render.context import (
    CardInput,
    DailyInput,
    WatchRecheck,
    WeeklyInput,
    load_strings,
    mechanism,
    rank,
)
from infra_radar.render.markdown import card_json, render_card, render_daily, render_weekly

from .conftest import check_golden as golden
from .conftest import export_commits

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "render"
GOLDEN = HERE / "golden"
REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "git"
GENERATED = datetime(2026, 7, 4, 2, 14, tzinfo=UTC)
DAY = Window(datetime(2026, 7, 3, 2, 11, 27, tzinfo=UTC), datetime(2026, 7, 4, 2, 14, tzinfo=UTC))


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def both(en: str, zh: str) -> dict[str, str]:
    return {"en": en, "zh": zh}


def make(repo: str, number: int | None, title: str, *, kind: str = PR, state: str = MERGED,
         when: str = "2026-07-03T12:00:00", body: str = "", author: str = "dev",
         files: list[tuple[str, int | None, int | None]] = (), **analysis) -> AnalysedItem:
    """An invented item with a hand-written analysis."""
    t = at(when)
    item = Item(repo=repo, kind=kind, key=str(number) if number is not None else title, title=title,
                number=number, body=body, author=author, state=state, created_at=t - timedelta(days=2),
                updated_at=t, merged_at=t if state == MERGED and kind == PR else None,
                files=[FileChange(p, a, d) for p, a, d in files], branches=["main"])
    return AnalysedItem(item, Analysis(**{"item_kind": "feature", **analysis}))


# --- daily fixture ---------------------------------------------------------------------------------

def daily_items() -> list[AnalysedItem]:
    kv = make(
        "acme/infer", 4821, "[Perf] Paged KV reuse for long prompts", state=OPEN, author="ada",
        body=(DATA / "infer-4821.md").read_text(encoding="utf-8"),
        files=[("infer/core/kv_cache.py", 210, 40), ("infer/attention/backends/paged.py", 120, 30),
               ("infer/core/block_pool.py", 50, 10), ("tests/core/test_kv_cache.py", 25, 0),
               ("infer/config/cache.py", 5, 6), ("docs/features/prefix_cache.md", 2, 2)],
        item_kind="perf", topics=["kv-cache", "performance", "attention"], priority="P0", importance=5,
        insight=4, grade="M",
        grade_reason=both("Python scheduling layer (`kv_cache.py`); the gain depends on the paged attention "
                          "kernel honouring the block table.",
                          "逻辑在 Python 调度层（`kv_cache.py`），收益取决于 paged attention 内核对块表的支持。"),
        decision="validate-first",
        decision_reason=both("Still open upstream; reproduce the A/B on the target first.",
                             "上游仍 open；需在目标平台复现 A/B 后再跟进。"),
        risk_labels=["core-path"],
        perf_claims=[PerfClaim("TTFT p50", 0.88, 0.51, "s", -42.045, 1.725,
                               {"model": "Model-X 70B", "hardware": "2×GPU-A", "concurrency": "16"},
                               source="| this PR | 0.51s |")],
        links=[Link("references", "acme/infer", 4790, detail="Prefix hashing RFC")],
        summary=both("Reuses prefix KV blocks; the author reports TTFT 0.88s → 0.51s.",
                     "复用前缀 KV 块，作者自报 TTFT 0.88s → 0.51s；收益依赖设备侧 attention 接口。"),
        checklist=[both("Fixed request set: compare TTFT/TPOT p50/p99 with and without reuse",
                        "固定请求集，比较开关前后的 TTFT/TPOT p50/p99"),
                   both("Cover empty batches and very long prompts", "覆盖空 batch、超长 prompt")])
    jit = make(
        "acme/infer", 4830, "[Kernel] Warm up JIT kernels for cold shapes", state=OPEN,
        files=[("infer/kernels/jit_warmup.py", 140, 3)], item_kind="perf", topics=["kernels", "performance"],
        priority="P1", importance=3, insight=3, grade="L",
        grade_reason=both("Depends on GPU JIT compilation. Track the mechanism only.",
                          "依赖 GPU JIT 编译。只跟踪机制。"),
        summary=both("Compiles kernels for unseen shapes at start-up.", "启动时为未见过的形状预编译内核。"))
    pipe = make(
        "acme/infer", 4835, "[Bugfix] Fix `int | None` hints in tool-call parser",
        files=[("infer/entrypoints/tool_parser.py", 12, 4)], item_kind="bugfix", topics=["frontend"],
        priority="P2", importance=2, insight=1, grade="S",
        grade_reason=both("Pure Python parser change | no device code.", "纯 Python 解析器改动 | 无设备代码。"),
        summary=both("Accepts `int | None` type hints.", "支持 `int | None` 类型标注。"))
    doc = make("acme/infer", 4840, "[Doc] Typo in README", files=[("README.md", 1, 1)], item_kind="docs")
    mtp = make(
        "acme/infer", 4844, "[Spec Decode] MTP acceptance with padded batches | part 2", author="bo",
        files=[("infer/spec_decode/mtp.py", 88, 20), ("tests/spec_decode/test_mtp.py", 40, 0)],
        item_kind="perf", topics=["spec-decode", "padding"], priority="P1", importance=4, insight=3, grade="M",
        grade_reason=both("Python-level acceptance logic; padding interacts with device graphs.",
                          "接受逻辑在 Python 层；padding 与设备图交互。"),
        decision="validate-first", decision_reason=both("No numbers on the target yet.", "目标平台尚无数据。"),
        risk_labels=["silent-accuracy"], perf_claims=[PerfClaim("throughput", ratio=1.8, unit="x")],
        summary=both("Keeps MTP acceptance correct when batches are padded.", "batch 被 padding 时保持 MTP 接受率正确。"))
    npu_doc = make(
        "acme/infer-npu", 1207, "Fix NPU quick-start doc", files=[("docs/quick_start.md", 8, 3)],
        item_kind="docs", topics=["npu", "docs"], priority="P2", importance=1, insight=1, native=True,
        summary=both("Quick-start doc fix.", "快速上手文档修正。"))
    chunk = make(
        "acme/infer-npu", 1210, "[Feature] Support chunked prefill on NPU", author="chen",
        body=(DATA / "npu-1210.md").read_text(encoding="utf-8"),
        files=[("infer_npu/core/scheduler.py", 96, 12), ("infer_npu/attention/chunked.py", 150, 0),
               ("tests/npu/test_chunked.py", 60, 0)],
        item_kind="feature", topics=["npu", "scheduling"], priority="P0", importance=4, insight=3, grade="S",
        native=True, grade_reason=both("Native NPU code (`infer_npu/`).", "目标平台原生代码（`infer_npu/`）。"),
        decision="adapt-now", decision_reason=both("Merged and native.", "已合入且为原生代码。"),
        risk_labels=["core-path", "platform-specific"],
        links=[Link("references", "acme/infer", 4821)],
        summary=both("Chunked prefill now runs on NPU.", "NPU 支持 chunked prefill。"),
        checklist=[both("Run the chunked-prefill e2e suite on NPU", "在 NPU 上运行 chunked prefill 端到端用例")])
    pad = make(
        "acme/trainer", 903, "Pad micro-batches to one shape", author="dee",
        body=(DATA / "trainer-903.md").read_text(encoding="utf-8"),
        files=[("trainer/data/collate.py", 40, 12), ("trainer/workers/actor.py", 22, 9)],
        item_kind="perf", topics=["padding", "rl-training", "performance"], priority="P1", importance=4, insight=4,
        grade="M", grade_reason=both("Plan caching depends on the device attention API.",
                                     "plan 缓存依赖设备侧 attention 接口。"),
        decision="validate-first", decision_reason=both("A/B on the target first.", "先在目标平台 A/B。"),
        perf_claims=[PerfClaim("Step time", 512.4, 401.2, "s", -21.7, None, {"hardware": "8×GPU-A"})],
        summary=both("One micro-batch shape avoids plan rebuilds; step time 512.4s → 401.2s (reported).",
                     "统一 micro-batch 形状以减少 plan 重建；Step time 512.4s → 401.2s（自报）。"),
        checklist=[both("A/B on/off: step time and peak memory", "开关 A/B：记录 step time、峰值显存")])
    release = make("acme/trainer", None, "v0.3.0", kind=RELEASE, when="2026-07-03T08:00:00",
                   item_kind="release")
    return [doc, pipe, release, pad, jit, npu_doc, mtp, chunk, kv]


def daily_input(items: list[AnalysedItem] | None = None, limit: int = 3) -> DailyInput:
    watch = [
        WatchRecheck("acme/trainer#880", "https://github.com/acme/trainer/pull/880", "Async weight sync",
                     OPEN, MERGED, "3f2a9c1d8e7b6a5f", False, ["acme/trainer#911"], origin_day="2026-07-02",
                     reasons=["deep", "p0"], last_day="2026-07-03", rechecks_before=1,
                     files=[FileChange("trainer/sync/async_weights.py", 120, 30), FileChange("tests/test_sync.py", 40, 0),
                            FileChange("docs/sync.md", 5, 1)],
                     last_recheck=True, related=[("acme/trainer#911", "follow-up"), ("acme/trainer#915", "backport")]),
        WatchRecheck("acme/infer#4700", "https://github.com/acme/infer/pull/4700", "CPU offload | v2",
                     None, OPEN, None, None, [], hand="waiting for `v2` <review>"),
    ]
    return DailyInput(DAY, ["acme/infer", "acme/infer-npu", "acme/trainer"],
                      daily_items() if items is None else items, watch, limit, False, GENERATED)


# --- weekly fixture --------------------------------------------------------------------------------

WEEK = Window(at("2026-07-27T00:00:00"), at("2026-08-03T00:00:00"))
PREVIOUS = Window(at("2026-07-20T00:00:00"), at("2026-07-27T00:00:00"))


def weekly_items() -> list[AnalysedItem]:
    """Ten merged PRs, one open PR, one direct commit and one issue of acme/infer in week 31."""
    spec = [  # number, title, author, kind, topics, priority, imp, ins, grade, risks, files
        (4821, "Paged KV reuse for long prompts", "ada", "perf", ["kv-cache", "performance"], "P0", 5, 4, "M",
         ["core-path"], [("infer/core/kv_cache.py", 210, 40), ("infer/core/scheduler.py", 10, 2)]),
        (4833, "Schedule decode before prefill under memory pressure", "bo", "feature", ["scheduling"],
         "P1", 4, 4, "S", ["core-path", "no-test", "new-default"], [("infer/core/scheduler.py", 80, 30)]),
        (4836, "Drop the legacy `--swap-space` flag", "ada", "refactor", ["kv-cache"], "P2", 3, 2, "S",
         ["breaking"], [("infer/config/cache.py", 2, 40), ("infer/core/kv_cache.py", 1, 20)]),
        (4838, "Fix FP8 scale | dtype mismatch in attention", "cy", "bugfix", ["attention", "quantization"],
         "P1", 4, 3, "L", ["silent-accuracy", "core-path"], [("infer/attention/backends/flash.py", 6, 2)]),
        (4841, "Fix scheduler crash on empty batch", "bo", "bugfix", ["scheduling"], "P2", 3, 2, "S",
         ["core-path"], [("infer/core/scheduler.py", 9, 1), ("tests/core/test_scheduler.py", 30, 0)]),
        (4842, "Bump tokenizer dependency", "dee", "deps", [], "none", 1, 1, "S", [], [("pyproject.toml", 1, 1)]),
        (4845, "Add MTP draft head for Model-Z", "cy", "model-support", ["spec-decode"], "P1", 3, 3, "M",
         ["large-change"], [("infer/models/model_z.py", 900, 0), ("infer/spec_decode/mtp.py", 40, 4)]),
        (4847, "Document the scheduler knobs", "eve", "docs", ["scheduling", "docs"], "P2", 2, 1, "S", [],
         [("docs/scheduler.md", 120, 10)]),
        (4849, "Split the CI GPU job", "eve", "ci", ["ci"], "none", 1, 1, "S", [], [(".ci/gpu.yaml", 20, 8)]),
        (4850, "Per-request KV budget for the NPU backend", "fay", "feature", ["kv-cache", "npu"], "P0", 4, 3,
         "S", ["platform-specific"], [("infer/platforms/npu.py", 60, 5), ("infer/core/kv_cache.py", 8, 2)]),
    ]
    items = []
    for i, (num, title, author, kind, topics, prio, imp, ins, grade, risks, files) in enumerate(spec):
        items.append(make(
            "acme/infer", num, title, author=author, when=(WEEK.since + timedelta(days=i % 7, hours=10)).strftime("%Y-%m-%dT%H:%M:%S"), files=files,
            item_kind=kind, topics=topics, priority=prio, importance=imp, insight=ins, grade=grade,
            risk_labels=risks, decision="adapt-now" if num == 4850 else "validate-first",
            grade_reason=both(f"Reason for #{num}.", f"#{num} 的理由。"),
            decision_reason=both(f"Decision for #{num}.", f"#{num} 的处理理由。"),
            summary=both(f"Summary of #{num}.", f"#{num} 的结论。"),
            perf_claims=[PerfClaim("TTFT p50", 0.88, 0.51, "s", -42.0)] if num == 4821 else [],
            # a label is stated only with the sentence that asserts it (its evidence record)
            body="The scheduler now defaults to decode-first under memory pressure." if num == 4833 else ""))
    items.append(make("acme/infer", 4851, "WIP: new sampler", state=OPEN, when="2026-07-30T10:00:00",
                      item_kind="feature", topics=["performance"], priority="P2", importance=2, insight=2))
    items.append(make("acme/infer", None, "hotfix: pin wheel version", kind=COMMIT, when="2026-07-31T10:00:00",
                      files=[("setup.py", 1, 1)], item_kind="deps"))
    items.append(make("acme/infer", 4852, "Crash with empty prompt", kind=ISSUE, state=OPEN,
                      item_kind="issue-bug", priority="P1", importance=5, insight=5))
    return items


def previous_items() -> list[AnalysedItem]:
    """Eight merged PRs of week 30."""
    kinds = ["bugfix", "bugfix", "bugfix", "perf", "perf", "feature", "docs", "ci"]
    return [make("acme/infer", 4800 + i, f"Old change {i}", when="2026-07-22T10:00:00", item_kind=kind,
                 priority="P2", importance=3, insight=2) for i, kind in enumerate(kinds)]


def weekly_input(items: list[AnalysedItem] | None = None, label: str | None = "2026-W31") -> WeeklyInput:
    return WeeklyInput("acme/infer", WEEK, label, weekly_items() if items is None else items,
                       previous_items() if items is None else [], key_prs=4)


def card_input() -> CardInput:
    kv = next(ai for ai in daily_items() if ai.item.number == 4821)
    kv.item.merge_commit = None
    kv.item.labels = ["performance", "ready"]
    return CardInput(kv, referenced_by=[Link("follow-up", "acme/infer-npu", 1210, detail="NPU port")],
                     duplicates=[Link("duplicate", "acme/infer", 4799)],
                     related=[Link("same-mechanism", "acme/trainer", 870)])


# --- golden comparison ----------------------------------------------------------------------------

def check_golden(name: str, text: str) -> None:
    golden(GOLDEN / name, text, name)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_daily_golden(lang: str) -> None:
    check_golden(f"daily.{lang}.md", render_daily(daily_input(), lang))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_weekly_golden(lang: str) -> None:
    check_golden(f"weekly.{lang}.md", render_weekly(weekly_input(), lang))


def test_themes_group_by_mechanism_each_item_once() -> None:
    """Themes are disjoint groups of PRs sharing a term (here the file they change), named after it; the
    executive summary names the first theme with its PR, and no theme holds more than 40% of the merged PRs."""
    text = render_weekly(weekly_input(), "en")
    changes = text.split("## Key changes\n", 1)[1].split("\n## ", 1)[0]
    headings = re.findall(r"^### \d+\. (.+?) \((\d+)\)$", changes, re.M)
    # named by the mechanism its PRs share first, the file after it; the PRs no term holds that are first about
    # one mechanism (scheduling) are a theme of it
    assert headings == [("KV cache (`infer/core/kv_cache.py`): features and refactors", "3"),
                        ("scheduling: features and fixes", "3")], changes
    listed = re.findall(r"#(\d+)", changes.split("\n\n", 2)[1].splitlines()[0])
    assert listed == ["4821", "4850", "4836"]  # each PR once, every one of them changes the file
    summary = text.split("## Executive summary\n", 1)[1].split("\n## ", 1)[0]
    assert "**KV cache (`infer/core/kv_cache.py`)**" in summary and "#4821" in summary
    assert all(int(n) <= 0.4 * 10 for _, n in headings)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_card_golden(lang: str) -> None:
    check_golden(f"card.{lang}.md", render_card(card_input(), lang))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_empty_daily_golden(lang: str) -> None:
    inp = daily_input(items=[])
    inp.watch, inp.first_run = [], True
    check_golden(f"daily-empty.{lang}.md", render_daily(inp, lang))


# --- structure -------------------------------------------------------------------------------------

def section_titles(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.M)


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("items", [None, []], ids=["full", "empty"])
def test_daily_has_seven_sections_in_order(lang: str, items: list | None) -> None:
    d = load_strings(lang)["daily"]
    expected = [d[k] for k in ("scope", "top", "deep", "watch", "short", "checklist", "refs")]
    assert section_titles(render_daily(daily_input(items), lang)) == expected


def test_english_headings_mirror_formats() -> None:
    text = render_daily(daily_input(), "en")
    assert section_titles(text) == ["Scope", "P0 / P1", "Deep dives", "Tracked items", "Short table",
                                    "Verification checklist", "References"]
    weekly = section_titles(render_weekly(weekly_input(), "en"))
    assert weekly[:6] == ["Executive summary", "Key changes", "Trends", "Risks", "Key PRs", "Recommendations"]


def test_empty_window_says_so_in_every_section() -> None:
    inp = daily_input(items=[])
    inp.watch = []
    text = render_daily(inp, "en")
    for line in ("No P0 / P1 items in this window.", "Nothing to explain in depth in this window.",
                 "No tracked items.", "No other ranked items.", "No P0 / P1 items to verify.",
                 "No items in this window.", "Items: 0 scanned, 0 ranked"):
        assert line in text
    assert "|" not in text


def table_rows(text: str, section: str) -> list[list[str]]:
    """Cells of the table rows in `## section`, split on unescaped pipes."""
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in body.splitlines() if ln.startswith("|") and not ln.startswith("|---")]
    return [re.split(r"(?<!\\)\|", ln)[1:-1] for ln in rows]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_pipe_in_title_keeps_table_shape(lang: str) -> None:
    text = render_daily(daily_input(limit=0), lang)
    top, short = table_rows(text, "P0 / P1"), table_rows(text, load_strings(lang)["daily"]["short"])
    assert {len(r) for r in top} == {5} and {len(r) for r in short} == {4}
    assert any("MTP acceptance with padded batches \\| part 2" in r[1] for r in top)
    assert any("int \\| None" in r[1] for r in short)


def test_deep_dives_capped_at_limit_and_rest_in_short_table() -> None:
    from dataclasses import replace

    # five P0/P1 items, three with a mechanism worth a dive: the others get their row only, whatever the limit
    for limit, deep in ((0, 0), (2, 2), (3, 3), (9, 3)):
        text = render_daily(daily_input(limit=limit), "en")
        body = text.split("## Deep dives\n", 1)[1].split("\n## ", 1)[0]
        assert body.count("\n### ") + body.startswith("### ") == deep
        assert len(table_rows(text, "P0 / P1")) - 1 == 5  # the 5 P0/P1 items fit the table (limit 8)
        short = table_rows(text, "Short table")
        assert len(short) - 1 == 2  # both P2 items: no P0/P1 row is listed twice
    # a table of 3: the 2 other P0/P1 items go to the short table, before the P2 ones; deep dives come from the table
    text = render_daily(replace(daily_input(limit=9), top_table_limit=3), "en")
    top, short = table_rows(text, "P0 / P1")[1:], table_rows(text, "Short table")[1:]
    assert len(top) == 3 and [r[0].strip() for r in short][:2] != ["P2", "P2"] and len(short) == 4
    assert not {r[1] for r in top} & {r[1] for r in short}
    body = text.split("## Deep dives\n", 1)[1].split("\n## ", 1)[0]
    assert body.count("\n### ") + body.startswith("### ") == 3


def test_daily_ranking_and_scope_counts() -> None:
    text = render_daily(daily_input(), "en")
    top = [r[1].split("]")[0].strip(" [") for r in table_rows(text, "P0 / P1")[1:]]
    assert top == ["acme/infer#4821", "acme/infer-npu#1210", "acme/trainer#903", "acme/infer#4844",
                   "acme/infer#4830"]
    assert "Items: 9 scanned, 7 ranked (P0 2 · P1 3 · P2 2)" in text
    assert "Releases: acme/trainer v0.3.0 (2026-07-03)" in text
    assert "acme/infer#4840" not in text  # priority none is counted, never listed


def test_focus_weight_breaks_ties() -> None:
    a = make("acme/infer", 1, "a", topics=["docs"], priority="P1", importance=3, insight=3)
    b = make("acme/infer", 2, "b", topics=["npu"], priority="P1", importance=3, insight=3)
    assert [x.item.number for x in rank([a, b], {"npu": 1.5})] == [2, 1]
    assert [x.item.number for x in rank([a, b], {"docs": 2.0, "npu": 1.5})] == [1, 2]


def test_deep_dive_is_one_paragraph_of_our_own() -> None:
    """motivation → mechanism → evidence → target boundary → what to measure, in our words: the author's text is
    reached by the item's link (the heading), never pasted; a figures table when there are three or more."""
    text = render_daily(daily_input(), "en")
    dive = text.split("## Deep dives\n", 1)[1].split("\n## ", 1)[0]
    first = dive.split("\n### ")[1]
    para = next(ln for ln in first.splitlines()[1:] if ln and not ln.startswith(("#", "|")))
    # what to measure, naming the item's own metric, stands where the rules' decision reason stood
    assert "How: " in para and "Evidence: " in para and "NPU boundary: " in para and "Measure: " in para
    assert para.index("How: ") < para.index("Evidence: ") < para.index("NPU boundary: ") < para.index("Measure: ")
    assert "TTFT p50" in para[para.index("Measure: "):] and "Decision: " not in para
    assert "hashes full prefix blocks" not in dive and ">" not in dive and "<!--" not in dive  # nothing pasted
    assert "`infer/core/`" in para or "infer/core" in para
    assert "TTFT p50 0.88 s → 0.51 s (−42.0%) on Model-X 70B" in para  # the figure, its direction and condition
    assert "reuses Paged KV for long prompts" in para


def test_mechanism_skips_template_headings() -> None:
    body = "## Purpose\n\n**Motivation:**\n\nFixes #12\n\nThe scheduler now keeps one plan per shape. It is faster."
    assert mechanism(body) == "The scheduler now keeps one plan per shape. It is faster."
    assert mechanism("## Test Plan\n\n- [x] ran it\n") == ""


def test_watch_lines() -> None:
    text = render_daily(daily_input(), "zh")
    assert ("[acme/trainer#880](https://github.com/acme/trainer/pull/880) Async weight sync：已合并（`3f2a9c1`），"
            "3 个文件：`trainer/sync/async_weights.py`、`tests/test_sync.py` 等；自 2026-07-03 以来有变化；"
            "来自 2026-07-02（深入、P0）\n  - 状态：进行中 → 已合并\n") in text
    assert ("  - 新关联：[acme/trainer#911](https://github.com/acme/trainer/issues/911) 后续、"
            "[acme/trainer#915](https://github.com/acme/trainer/issues/915) 回合\n  - 末次复核：已合并，不再跟踪") in text
    # the reason typed by hand is author text: its backticks and angle brackets stay text
    assert "CPU offload | v2：进行中；首次复核；手动跟踪：waiting for `v2` \\<review>" in text


# --- weekly ----------------------------------------------------------------------------------------

def test_weekly_counts() -> None:
    text = render_weekly(weekly_input(), "en")
    title, headline = text.splitlines()[0], text.splitlines()[2]
    assert title == "# acme/infer weekly report, 2026 week 31 (07/27 – 08/02)"
    # ten merged PRs (the open PR and the issue do not count), one direct commit; five P0/P1 PRs of which the
    # key-PR list shows key_prs=4: the headline counts the key PRs listed, none is left unlisted
    assert "merged PRs: 10 (direct commits: 1)" in headline and "key PRs: 4" in headline
    # importance over the 12 changes: (5+4+3+4+3+1+3+2+1+4+2+1)/12 = 2.75
    assert "average importance 2.8" in headline
    assert "This week merged 10 PRs (8 in the previous week, +2 / +25.0%)" in text
    assert "bugfix 2 (−1)" in text and "perf 1 (−1)" in text and "deps 2 (+2)" in text
    assert "`infer/core/` 5 (0 before)" in text  # five PRs change code under infer/core/, none did before
    risks = text.split("## Risks\n", 1)[1].split("\n## ", 1)[0]
    # argued, each with its PRs: the dropped flag, the dtype fix, the new default; no "0" for what is absent
    assert "**Removed APIs, ops or patches**: #4836 `--swap-space`" in risks  # linked where first named
    assert "**Silent accuracy**: #4838" in risks and "**New defaults**: #4833" in risks
    assert ": 0" not in risks and "core-path" not in risks


def test_weekly_zh_title_and_key_pr_limit() -> None:
    text = render_weekly(weekly_input(), "zh")
    assert text.startswith("# acme/infer 2026 第 31 周周报（07/27 – 08/02）\n")
    quick = text.split("## 重点 PR 速览\n", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^(\d+)\. \[", quick, re.M) == ["1", "2", "3", "4"]  # key_prs=4: four key PRs, all listed
    assert "另有" not in quick and "重点 PR：4" in text
    assert "TTFT p50 0.88 s → 0.51 s（−42.0%）" in quick
    assert all(len(line) <= 200 for line in quick.splitlines())


def test_weekly_partial_week_says_where_its_data_ends() -> None:
    inp = weekly_input()
    inp.data_end = at("2026-07-31T18:00:00")
    text = render_weekly(inp, "zh")
    assert text.startswith("# acme/infer 2026 第 31 周周报（07/27 – 08/02，数据截至 07/31）\n")
    assert "数据截至 2026-07-31（本周只有前 5 天的数据）" in text.splitlines()[2]
    assert "数据只到 2026-07-31" in text
    inp.data_end = at("2026-08-02T23:00:00")  # data to the week's last day: a full week
    assert "数据截至" not in render_weekly(inp, "zh")
    inp.data_end = at("2026-07-31T18:00:00")
    assert "(07/27 – 08/02, data to 07/31)" in render_weekly(inp, "en").splitlines()[0]


def test_weekly_contributors_leave_bots_out() -> None:
    items = weekly_items()
    for ai in items:
        if ai.item.number in (4842, 4849):
            ai.item.author = "acme-ci"
    inp = weekly_input(items)
    inp.is_bot = lambda login: login == "acme-ci"
    inp.key_prs = 2
    text = render_weekly(inp, "en")
    assert "acme-ci" not in text and "2 PRs by bot accounts are not counted" in text


def test_weekly_date_range_and_empty() -> None:
    text = render_weekly(weekly_input(items=[], label=None), "en")
    assert text.startswith("# acme/infer report (2026-07-27 – 2026-08-02)\n")
    assert "This period: no merged PRs." in text and "No key PRs." in text
    assert "merged PRs: 0" in text


def test_weekly_recommendations_are_three_to_five() -> None:
    for lang in ("zh", "en"):
        head = load_strings(lang)["weekly"]["recommendations"]
        text = render_weekly(weekly_input(), lang)
        recs = text.split(f"## {head}\n", 1)[1].split("\n## ", 1)[0]
        assert 3 <= len(re.findall(r"^- ", recs, re.M)) <= 5


def test_weekly_rules_from_the_users_rules_dir(tmp_path: Path) -> None:
    """A user's weekly.toml replaces whole tables: a tighter budget shows fewer key PRs, a glossary entry
    glosses the theme's term."""
    (tmp_path / "weekly.toml").write_text(
        '[budget]\nfactor = 0.1\nteam_prs = 200\nteam_lines = 95\nteam_bytes = 9000\nfloor_lines = 10\n'
        'floor_bytes = 1000\n\n[glossary]\n"kv_cache.py" = { en = "the paged cache", zh = "分页缓存" }\n',
        encoding="utf-8")
    inp = weekly_input()
    inp.rules_dir = tmp_path
    text = render_weekly(inp, "en")
    assert "the paged cache (`infer/core/kv_cache.py`)" in text
    quick = text.split("## Key PRs\n", 1)[1].split("\n## ", 1)[0]
    # the rest shrinks; the key-PR list keeps a line for each key PR the headline counts
    assert len(re.findall(r"^\d+\. \[", quick, re.M)) == 4 and "key PRs: 4" in text


def _hostile_week(n: int) -> WeeklyInput:
    """`n` merged PRs with long repeating titles, bodies and file lists (removal verbs, version strings,
    identifiers, tags everywhere)."""
    items = []
    for i in range(n):
        title = f"[Tag{i % 7}][v0.{i % 3}.0] " + f"remove `op_{i}` drop flag bump torch 2.{i % 9}.0 " * 40
        body = "This PR removes `kernel_x` and is no longer supported. a.k.a max_num_reqs=12 " * 300
        files = [(f"pkg/mod{i % 5}/sub{j % 4}/file_{j}.py", 0, 40) for j in range(30)]
        items.append(make("acme/infer", 1000 + i, title, body=body, files=files, item_kind="refactor",
                          topics=["kv-cache"], priority="P1", importance=3, insight=2, grade="M",
                          risk_labels=["core-path", "no-test", "breaking"],
                          when=(WEEK.since + timedelta(hours=1 + i % 150)).strftime("%Y-%m-%dT%H:%M:%S")))
    return WeeklyInput("acme/infer", WEEK, "2026-W31", items, [], key_prs=8)


def test_weekly_cost_grows_linearly_with_hostile_weeks() -> None:
    """8x the PRs (each with a long repeating title, body and file list): linear ~8x the CPU time, quadratic
    ~64x; the bound is 24x. The report still keeps its lines short and cuts nothing."""
    import time

    def cost(inp: WeeklyInput) -> float:
        start = time.thread_time()
        text = render_weekly(inp, "en")
        assert "…" not in text and all(len(line) <= 400 for line in text.splitlines())
        return max(time.thread_time() - start, 1e-5)

    small, big = _hostile_week(12), _hostile_week(96)
    cost(small)
    ratio = min(cost(big) for _ in range(2)) / min(cost(small) for _ in range(3))
    assert ratio < 24, ratio


# --- card ------------------------------------------------------------------------------------------

SPEC_KEYS = {"repo", "number", "kind", "state", "title", "url", "author", "created_at", "merged_at", "closed_at",
             "files", "item_kind", "topics", "priority", "importance", "insight", "grade", "grade_reason",
             "decision", "decision_reason", "risk_labels", "perf_claims", "links", "summary", "branches",
             "merge_commit", "labels", "checklist"}


def test_card_json_has_every_spec_key() -> None:
    obj = card_json(card_input())
    assert set(obj) >= SPEC_KEYS
    assert obj["kind"] == "pr" and obj["state"] == "open" and obj["merged_at"] is None
    assert obj["created_at"] == "2026-07-01T12:00:00Z"
    assert obj["files"][0] == {"path": "infer/core/kv_cache.py", "additions": 210, "deletions": 40}
    assert set(obj["perf_claims"][0]) == {"metric", "before", "after", "unit", "change_pct", "ratio",
                                          "context", "source"}
    assert {lk["kind"] for lk in obj["links"]} == {"references", "follow-up", "duplicate", "same-mechanism"}
    assert all(set(lk) == {"kind", "ref", "url", "detail"} for lk in obj["links"])
    assert obj["grade_reason"].startswith("Python scheduling layer")
    json.dumps(obj)  # serialisable as is


def test_card_groups_files_by_directory() -> None:
    text = render_card(card_input(), "en")
    assert "| **infer/** (files: 4) | 385 | 86 |" in text
    assert "| **docs/** (files: 1) | 2 | 2 |" in text
    assert "- Referenced by: [acme/infer-npu#1210](https://github.com/acme/infer-npu/issues/1210)" in text


def test_user_template_wins(tmp_path: Path) -> None:
    (tmp_path / "card.md.j2").write_text("custom {{ ref }} {{ t.card.links }}\n", encoding="utf-8")
    (tmp_path / "i18n.toml").write_text('[en.card]\nlinks = "See also"\n', encoding="utf-8")
    assert render_card(card_input(), "en", template_dir=tmp_path) == "custom acme/infer#4821 See also\n"
    assert render_daily(daily_input(), "en", template_dir=tmp_path).startswith("# AI Infra daily radar")


def test_i18n_languages_have_the_same_keys() -> None:
    zh, en = load_strings("zh"), load_strings("en")
    for table in zh:
        if isinstance(zh[table], dict):
            assert set(zh[table]) == set(en[table]), table


# --- real history ----------------------------------------------------------------------------------

def test_weekly_renders_real_history() -> None:
    items, pr = [], re.compile(r"\(#(\d+)\)\s*$")
    for rec in export_commits("vllm-project+vllm-ascend.jsonl.gz"):
        when = datetime.fromisoformat(rec["committed_at"]).astimezone(UTC)
        if when < at("2026-08-10T00:00:00"):
            break
        m = pr.search(rec["subject"])
        item = Item("vllm-project/vllm-ascend", PR if m else COMMIT, m[1] if m else rec["sha"],
                    rec["subject"], number=int(m[1]) if m else None, author=rec["author_name"],
                    merged_at=when if m else None, updated_at=when,
                    files=[FileChange(**f) for f in rec["files"]])
        items.append(AnalysedItem(item, Analysis("feature", priority="P2")))
    window = Window(at("2026-08-10T00:00:00"), at("2026-08-24T00:00:00"))
    text = render_weekly(WeeklyInput("vllm-project/vllm-ascend", window, None, items, [], 5), "en")
    merged = sum(1 for ai in items if ai.item.kind == PR)
    assert f"merged PRs: {merged}" in text and merged > 0
    daily = render_daily(DailyInput(window, ["vllm-project/vllm-ascend"], items, [], 5, False, GENERATED,
                                    short_p2_limit=len(items), short_table_limit=len(items)), "en")
    rows = table_rows(daily, "Short table")
    assert len(rows) == len(items) + 1  # every P2 item listed under the header row
    assert {len(r) for r in rows} == {4}  # whatever the real titles hold, every row keeps its shape
    folded = render_daily(DailyInput(window, ["vllm-project/vllm-ascend"], items, [], 5, False, GENERATED,
                                     short_p2_limit=3), "en")
    assert len(table_rows(folded, "Short table")) == 3 + 1  # the first three P2 rows in full
    rest = next(ln for ln in folded.splitlines() if "more not listed" in ln)  # the rest counted, not linked
    assert rest.startswith(f"{len(items) - 3} P2 more not listed (vllm-ascend {len(items) - 3})")
    assert "](https://" not in rest


@pytest.mark.no_store
def test_compiled_templates_are_kept_between_runs_and_a_bad_cache_is_ignored(tmp_path, monkeypatch):
    from jinja2 import DictLoader, Environment

    from infra_radar.render import template_cache

    def fresh(directory):
        monkeypatch.setenv("RADAR_CACHE_DIR", str(directory))
        template_cache.bytecode_cache.cache_clear()
        cache = template_cache.bytecode_cache()
        env = Environment(loader=DictLoader({"t.j2": "{{ x }} and {{ y }}"}), bytecode_cache=cache)
        return cache, env.get_template("t.j2")

    cache, _ = fresh(tmp_path / "c")
    entries = list((tmp_path / "c" / "templates").iterdir())
    assert cache is not None and len(entries) == 1  # compiled once, written for the next process
    entries[0].write_bytes(b"\x00garbage")  # a truncated or foreign entry: compiled from source again
    assert fresh(tmp_path / "c")[1].render(x=1, y=2) == "1 and 2"
    (tmp_path / "file").write_text("x")
    cache, template = fresh(tmp_path / "file")  # a cache path under a file: no cache, same templates
    assert cache is None and template.render(x=1, y=2) == "1 and 2"
    shared = tmp_path / "shared"
    (shared / "templates").mkdir(parents=True)
    (shared / "templates").chmod(0o777)  # a folder others can write: its compiled code is not loaded
    assert fresh(shared)[0] is None
    template_cache.bytecode_cache.cache_clear()
