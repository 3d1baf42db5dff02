"""Cited model prose: the stand-in model proposes, in every field of every item and row reply, a supported
sentence, an unsupported one (an invented name and number), a filler one, one citing a record that does not
exist and one contradicting a code fact (a setting the diff ships `True` called opt-in); only the supported
ones reach any output, the code's fact stays in the row and the dive, and a rerun sends nothing."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from infra_radar.analyse.item import analyse
from infra_radar.analyse.rules import RuleSet
from infra_radar.llm.cited import Cited, Support, join_sentences, proposed
from infra_radar.llm.client import LlmConfig
from infra_radar.llm.records import item_records
from infra_radar.llm.render import render_daily_llm
from infra_radar.llm.stage import _item_job, daily_llm
from infra_radar.models import AnalysedItem, FileChange, Item
from infra_radar.pipeline.home import open_store
from infra_radar.windows import make_window

from .llm_stub import INVENTED_NAME, INVENTED_NUMBER, INVENTED_REF, LlmStub

SWITCH = "pad_bshd_to_minibatch_max"
BODY = (f"This adds an opt-in flag `{SWITCH}` for the bshd layout. Padding each micro-batch to its own "
        "`seqlens_in_batch.max()` gives 20 distinct `s_q` shapes per mini-batch, because every shape compiles "
        "a new graph on the NPU. Total step time drops from 534.13 s to 397.71 s on Qwen3-8B. Older configs keep an "
        "escape hatch.")
CODE = {"source": "api", "complete": True,
        "defaults": [{"name": SWITCH, "value": "True", "previous": None, "file": "verl/trainer/config/actor.yaml"}]}


def _padded(settings) -> AnalysedItem:
    item = Item(repo="acme/trainer", kind="pr", key="901", number=901,
                title="Pad bshd micro-batches to the mini-batch max on NPU", body=BODY,
                files=[FileChange("verl/workers/actor/dp_actor.py", 80, 12),
                       FileChange("verl/trainer/config/actor.yaml", 3, 0)],
                merged_at=datetime(2026, 7, 30, tzinfo=UTC), state="merged", code=CODE)
    analysis = analyse(item, RuleSet.load(settings), settings)
    analysis.priority = "P0"  # the row and a dive, whatever the rules' ranking of a made-up item
    return AnalysedItem(item, analysis)


def _daily_input(items):
    from infra_radar.render.context import DailyInput

    window = make_window(datetime(2026, 7, 29, tzinfo=UTC), datetime(2026, 7, 31, tzinfo=UTC))
    return DailyInput(window=window, repos=sorted({ai.item.repo for ai in items}), items=items, watch=[],
                      deep_dive_limit=5, first_run=False, generated_at=datetime(2026, 7, 31, tzinfo=UTC),
                      explicit=True)


BAD = (INVENTED_NAME, INVENTED_NUMBER, INVENTED_REF, "至关重要", "crucial for", "是一个 opt-in 开关",
       "opt-in switch, off unless set")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_only_supported_sentences_reach_any_output_and_the_code_fact_stays(settings, lang):
    from infra_radar.render.markdown import render_daily

    ai = _padded(settings)
    assert ai.analysis.contradictions, "the description's opt-in against the code's True"
    inp = _daily_input([ai])
    plain = render_daily(inp, lang)
    said_true = "设为 `True`" if lang == "zh" else "sets it to `True`"
    engine = open_store(settings)
    with LlmStub() as stub:
        config = LlmConfig(stub.base_url, "stub-model", max_concurrency=1)
        run = daily_llm(settings, engine, inp, lang, config=config)
        sent = len(stub.requests)
        text = render_daily_llm(inp, lang, run)
        again = daily_llm(settings, engine, inp, lang, config=config)
        assert len(stub.requests) == sent and again.cached == sent and again.requests == 0
        assert render_daily_llm(inp, lang, again) == text  # a rerun writes the same radar
    ref = ai.item.ref
    # every proposal of the stand-in: the headline (3, one with an invented #N), the row (5) and each of the
    # five item fields (5 each)
    assert run.requests == 3 and run.proposed == 3 + 5 + 5 * 5 and run.kept == 2 + 1 + 5 and run.failed == 0
    assert run.dropped_by == {"ungrounded": 1 + 2 + 2 * 5, "filler": 1 + 5, "contradiction": 1 + 5, "language": 0,
                              "seam": 0}
    # only the supported sentences reach the prose, the report, the cited records and the radar
    everything = json.dumps([run.prose, run.report, {k: {f: [c.json() for c in v] for f, v in d.items()}
                                                     for k, d in run.cited.items()}], ensure_ascii=False) + text
    for bad in BAD:
        assert bad not in everything, bad
    supported = "改动涉及「" if lang == "zh" else "The change covers \""
    assert set(run.prose[ref]) == {"summary", "mechanism", "why", "boundary", "risks"}
    assert all(v.startswith(supported) for v in run.prose[ref].values())
    assert [c.records for c in run.cited[ref]["conclusion"]] == [(2,)]  # the files record
    # the code's fact stands in the row and in the dive, after the model's line
    row = next(line for line in text.splitlines() if line.startswith("| P0 |"))
    assert ("模型结论" if lang == "zh" else "Model conclusion") in row and said_true in row
    assert said_true in plain.split("\n## ", 3)[2] or said_true in plain
    dive = text.split("\n### ", 1)[1]
    assert said_true in dive and dive.count(supported) == 3  # mechanism, why, boundary
    # one text: no stop before a comma or a second stop, in the row or the dive
    assert not re.search(r"。[，。]|\.[,]|\.\.(?!\.)", row + dive)


def test_a_sentence_is_kept_only_when_its_cited_records_hold_it(settings):
    ai = _padded(settings)
    records = item_records(ai, "zh", "ascend")
    by_kind = {r.kind: r.id for r in reversed(records)}
    sentence = next(r.id for r in records if "step time drops" in r.text)
    cause = next(r.id for r in records if "because every shape" in r.text)
    title = by_kind["title"]
    support = _item_job(ai, "zh", "ascend").support
    assert isinstance(support, Support)

    def judge(text: str, *ids: int) -> str | None:
        return support.judge(Cited(text, ids))

    assert judge("总步时从 534.13 s 降到 397.71 s。", sentence) is None
    assert judge("总步时从 534.13 s 降到 397.71 s。", title) == "ungrounded"  # the title holds no figure
    assert judge("总步时从 534.13 s 降到 397.71 s。") == "ungrounded"  # cites nothing
    assert judge("总步时从 534.13 s 降到 397.71 s。", 99) == "ungrounded"  # a record that does not exist
    assert judge("改动用 `fused_pad_kernel` 填充 bshd。", cause) == "ungrounded"  # a name no record holds
    # a cause needs a record that asserts one: the title does not, the description's sentence does
    assert judge("因为每种 `s_q` 形状都会编译新图，每个 mini-batch 有 20 种形状。", title) == "ungrounded"
    assert judge("因为每种 `s_q` 形状都会编译新图，每个 mini-batch 有 20 种形状。", cause) is None
    # the code ships the switch True: calling it opt-in, or "when enabled", contradicts it, whatever it cites
    assert judge(f"该功能通过启用一个 opt-in 标志 `{SWITCH}` 实现。", by_kind["sentence"]) == "contradiction"
    assert judge(f"`{SWITCH}` 启用时按 mini-batch max 填充。", by_kind["code"]) == "contradiction"
    assert judge(f"`{SWITCH}` 默认开启。", by_kind["code"]) is None
    # filler, seams and spliced English
    assert judge("Qwen3-8B 是一个大型语言模型，需要高性能的计算能力。", sentence) == "filler"
    assert judge("bshd 改动已合并（页面保存时已合并）。", title) == "seam"
    assert judge("改动为 bshd 的 micro-batches 填充（已进行中）。", title) == "seam"
    assert judge("bshd 作为 the 填充方式。", title) == "language"
    # a kind of effect needs a record of that kind: performance from a figure or a record about speed, stability
    # from one about crashes or hangs, a fix from one naming a bug (this change is no bugfix)
    assert judge("该改动提高了 Qwen3-8B 的性能。", by_kind["figure"]) is None  # the author's figure
    assert judge("该改动提高了 Qwen3-8B 的性能和稳定性。", by_kind["figure"]) == "ungrounded"  # nothing on stability
    assert judge("该改动提高了 bshd 的性能。", cause, title) == "ungrounded"  # a cause, but nothing of speed
    assert judge("该改动修复了 bshd 的填充。", title) == "ungrounded"  # no record names a bug
    # the target named only by the radar's own verdict record is not the author's: «在 NPU 上» needs a record of
    # the author's text or code naming NPU (the title here does)
    assert judge("该改动在 NPU 上为 bshd 填充 micro-batches。", by_kind["verdict"]) == "ungrounded"
    assert judge("该改动在 NPU 上为 bshd 填充 micro-batches。", title) is None
    assert judge("该改动在NPU上为 bshd 填充 micro-batches。", by_kind["verdict"]) == "ungrounded"  # no spaces
    hatch = next(r.id for r in records if "escape hatch" in r.text)
    assert judge("旧配置保留作为逃逸 hatch 的路径。", hatch) == "language"  # half of "escape hatch" translated


def test_replies_of_any_shape_are_read_and_a_sentence_joins_on_its_stop():
    found, ok = proposed([{"text": "甲改动 `a_b`。乙改动。", "records": [1, "2"]}, "丙 [3]。", {"sentence": "丁", "ids": "E4"}])
    assert ok and [(c.text, c.records) for c in found] == [("甲改动 `a_b`。", (1, 2)), ("乙改动。", (1, 2)),
                                                           ("丙。", (3,)), ("丁", (4,))]
    assert proposed(42) == ([], False) and proposed(None) == ([], True)
    assert join_sentences(["从而提高性能。", "，改动集中在 x", "证据。。"], "zh") == "从而提高性能。改动集中在 x。证据。"
    assert join_sentences(["It pads.", "it compiles once"], "en") == "It pads. it compiles once."


def test_show_evidence_the_export_and_the_item_page_list_each_model_sentence_with_its_records(settings, monkeypatch):
    """After a daily run with the stand-in, `radar show --evidence` (text and JSON), the export and the site's
    item page list each kept model sentence with the ids and text of its records, marked as the model's;
    the rejected sentences are nowhere; nothing more is sent."""
    from click.testing import CliRunner

    from infra_radar.cli import main
    from infra_radar.pipeline.demo import sample_files
    from infra_radar.pipeline.imports import import_jsonl
    from infra_radar.pipeline.reports import daily, export
    from infra_radar.publish.data import load_site_data
    from infra_radar.publish.site import Site

    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    since, until = datetime(2026, 7, 28, tzinfo=UTC), datetime(2026, 8, 4, tzinfo=UTC)
    with LlmStub() as stub:
        monkeypatch.setenv("RADAR_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")
        report = daily(settings, engine, since, until)
        sent = len(stub.requests)
        ref = next(iter(report.llm.cited.keys() & report.llm.prose.keys()))  # a deep dive: the item prompt's
        lang = settings.lang

        def cli(*args: str) -> str:
            result = CliRunner().invoke(main, [*args, "--lang", lang])
            assert result.exit_code == 0, result.output
            return result.stdout

        shown = cli("show", ref, "--evidence")
        as_json = json.loads(cli("show", ref, "--evidence", "--json"))
        rules_only = cli("show", ref, "--evidence", "--no-llm")
        exported = {o["ref"] if "ref" in o else f"{o['repo']}#{o['number']}": o for o in export(settings, engine, None)}
        site = Site(settings, load_site_data(engine), engine=engine)
        page = site.item(next(ai for ai in report_items(engine, ref)))[1]
        assert len(stub.requests) == sent  # all from the cache
    supported = "改动涉及「" if lang == "zh" else "The change covers"
    model = [e for e in as_json if e.get("source") == "model"]
    assert len(model) == 5 and {e["field"] for e in model} == {"summary", "mechanism", "why", "boundary", "risks"}
    assert all(e["statement"].startswith(supported) and e["records"] == [1] and e["text"].startswith("[1] ")
               for e in model)
    assert shown.count("source: model") == 5 and "records: 1 " in shown and "source: model" not in rules_only
    assert [e for e in exported[ref]["evidence"] if e.get("source") == "model"] == model
    assert page.count('class="evidence model"') == 5
    for text in (shown, json.dumps(as_json, ensure_ascii=False), page):
        for bad in BAD:
            assert bad not in text, bad


def report_items(engine, ref: str):
    from infra_radar.store.queries import analysed_item

    repo, number = ref.split("#")
    return [analysed_item(engine, repo, int(number))]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_verl_6901_keeps_the_code_s_true_whatever_the_model_says(settings, shared_clones, lang):
    """The real verl#6901: its description calls `pad_bshd_to_minibatch_max` opt-in, its merged code ships it
    `True` (the clone's diff). With the stand-in model calling it opt-in in every field, the row and the dive
    keep the code's `True` and no model sentence says otherwise."""
    from .conftest import export_commits
    from .test_code_facts import VERL, _facts

    facts, _ = _facts(shared_clones, VERL, "6901")
    c = next(c for c in export_commits("verl-project+verl.jsonl.gz") if c["subject"].endswith("(#6901)"))
    item = Item(repo="verl-project/verl", kind="pr", key="6901", number=6901,
                title=c["subject"].removesuffix(" (#6901)"), body=c["body"], state="merged",
                files=[FileChange(f["path"], f["additions"], f["deletions"]) for f in c["files"]],
                merged_at=datetime(2026, 7, 2, 2, 6, tzinfo=UTC), code=facts)
    analysis = analyse(item, RuleSet.load(settings), settings)
    analysis.priority = "P1"  # a row and a dive here, whatever its rank among the day's items
    ai = AnalysedItem(item, analysis)
    assert ai.analysis.contradictions
    inp = _daily_input([ai])
    engine = open_store(settings)
    with LlmStub() as stub:
        run = daily_llm(settings, engine, inp, lang, config=LlmConfig(stub.base_url, "stub-model"))
    text = render_daily_llm(inp, lang, run)
    said_true = "设为 `True`" if lang == "zh" else "sets it to `True`"
    row = next(line for line in text.splitlines() if line.startswith("| P1 |"))
    assert said_true in row and said_true in text.split("\n### ", 1)[1]
    prompt = next(r["messages"][1]["content"] for r in stub.requests  # the item prompt (requests run in parallel)
                  if r["messages"][1]["content"].startswith(("条目：", "Item: ")))
    assert "pad_bshd_to_minibatch_max` = `True`" in prompt and "…" not in prompt  # the code's fact, records whole
    assert run.dropped_by["contradiction"] == 1 + 5  # the row's and each field's opt-in sentence
    for bad in BAD:
        assert bad not in text, bad


def test_a_removed_function_said_added_or_a_gate_said_with_another_version_contradicts_the_code(settings):
    ai = _padded(settings)
    ai.item.code = {**CODE, "removed": [{"kind": "function", "name": "preprocess_bshd_legacy", "top": True,
                                         "file": "verl/models/mcore/util.py"}],
                    "version_gates": [{"package": "megatron", "before": None, "after": "0.12.0",
                                       "file": "verl/models/mcore/util.py"}]}
    support = _item_job(ai, "en", "ascend").support
    title = 1

    def judge(text: str) -> str | None:
        return support.judge(Cited(text, (title,)))

    assert judge("It adds `preprocess_bshd_legacy` for the bshd path.") == "contradiction"
    assert judge("It removes `preprocess_bshd_legacy` from the bshd path.") != "contradiction"
    assert judge("The new path needs megatron 0.11.0 for bshd.") == "contradiction"
    assert judge("The new path needs megatron 0.12.0 for bshd.") != "contradiction"


def test_a_model_sentence_repeating_a_verdict_clause_is_a_seam():
    """The template places the verdict beside the model's prose; a model sentence that copies one of its clauses
    (seen with the real 1.5B: "…，需要在 NPU 硬件上验证、上游仍 open，需在目标平台复现 A/B 后再跟进") is dropped."""
    from infra_radar.llm.cited import seam

    assert seam("Wan2.2 不支持同时开启两种并行，上游仍 open，需在目标平台复现 A/B 后再跟进", "zh")
    assert not seam("该改动把 topk index buffer 在 draft steps 之间共享，省去每步的重复分配", "zh")
    # the clause rewritten without its leading modal (the real 1.5B on vllm-omni#4796)
    assert seam("为了确保这些改进能够成功实现，作者建议在目标平台复现 A/B 后再跟进", "zh")
