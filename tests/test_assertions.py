"""Read the sentence, not the word: causes, risks and symptoms only where the text asserts them of this change."""

from __future__ import annotations

import pytest

from infra_radar.analyse.assertions import asserted_sentence, cue_pattern, why_not
from infra_radar.models import AnalysedItem, Analysis, Item
from infra_radar.render.why import motivation_cues

pytestmark = pytest.mark.no_store

CUES = cue_pattern(["crash", "nan", "hang", "oom", "stuck"])


@pytest.mark.parametrize(("sentence", "reason"), [
    ("This fixes silent output degradation rather than a crash.", "negated"),
    ("After the fix the loss has no NaN in 500 steps.", "negated"),
    ("Throughput unchanged, the run is NaN-free.", "negated"),
    ("If the queue is full the worker could hang.", "hypothetical"),
    ("This might OOM on smaller cards.", "hypothetical"),
    ("As in SGLang, the scheduler hangs under heavy load.", "other-project"),
    ("The worker hangs when the queue is full.", ""),
    ("Training crashes with an OOM at step 11.", ""),
])
def test_why_a_cue_is_not_asserted(sentence, reason):
    m = CUES.search(sentence)
    assert m is not None
    assert why_not(sentence, m.start(), m.end(), ("ourproject",)) == reason


@pytest.mark.parametrize("text", [
    "```\nTraceback (most recent call last):\nRuntimeError: crash\n```",
    "Traceback (most recent call last): the engine crashed",
    "    RuntimeError: worker hang detected",
    "2026-07-02 10:00:01 ERROR engine crash in step 3",
    "> The engine crashes on start (quoted from the issue)",
    "$ python repro.py  # hangs",
    "This change is for maintenance of the scheduler.",  # "nan" inside a word
    "The change keeps the exchange simple.",  # "hang" inside a word
])
def test_code_logs_quotes_and_inner_words_are_not_read(text):
    assert asserted_sentence(text, CUES) == ""


def _item(body: str) -> AnalysedItem:
    item = Item(repo="acme/engine", kind="pr", key="7", number=7, title="Fix output quality", body=body)
    return AnalysedItem(item, Analysis(item_kind="bugfix"))


@pytest.mark.parametrize("motivation", [
    "The kernel produced silent output degradation rather than a crash.",
    "If a request is cancelled during prefill, the worker could hang.",
    "As in SGLang, the scheduler may get stuck; we keep ours as is.",
    "We saw no NaN and no crash; the outputs drifted from the reference.",
])
def test_a_deep_dive_cause_is_never_read_from_a_negated_hypothetical_or_foreign_sentence(motivation):
    ai = _item(f"## Motivation\n\n{motivation}\n\n## Changes\n\n- swap the kernel\n")
    cues = motivation_cues(ai, "en")
    assert not {"hangs", "crashes", "NaN"} & set(cues), cues


def test_a_cause_the_text_asserts_is_kept():
    ai = _item("## Motivation\n\nThe worker hangs when two requests share a prefix.\n")
    assert motivation_cues(ai, "en") == ["hangs"]


# --------------------------------------------------------------------------- checklist steps


def _steps(body: str, title: str = "Speed up decode", kind: str = "perf", topics: list[str] | None = None) -> str:
    from infra_radar.render.checklist import item_checklist

    item = Item(repo="acme/engine", kind="pr", key="9", number=9, title=title, body=body)
    ai = AnalysedItem(item, Analysis(item_kind=kind, topics=topics or []))
    return "\n".join(str(s) for s in item_checklist(ai, "zh", "NPU", []))


def test_a_benchmark_command_line_gives_no_switch_or_variable():
    body = ("## Summary\n\nCache the speaker embedding between requests.\n\n## Test\n\n```bash\n"
            "SEED_TTS_EVAL_DEVICE=cuda python eval.py --seed 1\n```\n\n"
            "$ EVAL_RUN_MODE_FAST=1 python bench.py --enable-fast-path\n")
    steps = _steps(body)
    assert "SEED_TTS_EVAL_DEVICE" not in steps and "EVAL_RUN_MODE_FAST" not in steps and "--enable-fast-path" not in steps


def test_a_switch_the_text_says_needs_another_platform_is_not_confirmed_on_the_target():
    body = "## Summary\n\nAdds `VLLM_USE_FP8_GATHER=1`, which needs NVIDIA SM89+ and is ignored elsewhere.\n"
    assert "VLLM_USE_FP8_GATHER" not in _steps(body)


def test_a_graph_step_never_compares_eager_with_itself():
    body = "## Summary\n\nFix the decode path when `enforce_eager` is set.\n"
    steps = _steps(body, kind="bugfix")
    assert "enforce_eager" not in steps


def test_a_parallel_setting_of_the_benchmark_is_not_a_step():
    body = "## Summary\n\nReuse the prefix hash.\n\n## Test\n\nRan Qwen3-8B with TP4 on 4 cards.\n"
    steps = _steps(body, topics=["distributed"])
    assert "TP4" not in steps and "不开该并行" not in steps


# --------------------------------------------------------------------------- the target boundary


def _porting(title: str, body: str, paths: tuple[str, ...] = ()) -> list[str]:
    from infra_radar.analyse.porting import applied
    from infra_radar.models import FileChange

    item = Item(repo="acme/engine", kind="pr", key="5", number=5, title=title, body=body,
                files=[FileChange(p) for p in paths])
    return [a.entry.id for a in applied(item, "ascend")]


def test_fp8_named_beside_a_copy_is_not_an_fp8_boundary():
    title = "Load fp8 checkpoints with one dense host-to-device copy"
    body = ("The loader now copies the whole shard in one dense H2D transfer. The fp8 shards are read the same way. "
            "Nothing changes for fp8 users. Loading fp8 shards is 3x faster.")
    assert "low-precision" not in _porting(title, body)


def test_fp8_said_of_the_compute_is_an_fp8_boundary():
    assert "low-precision" in _porting("Use fp8 GEMM for the MoE experts", "")


def test_negated_or_foreign_mentions_do_not_make_a_boundary():
    body = ("This does not use CUDA graphs. Unlike SGLang's cudagraph runner, nothing is captured. "
            "If cudagraph capture were enabled it could break. The change only reorders Python calls.")
    assert "cuda-graph" not in _porting("Reorder scheduler calls", body)


def test_a_loss_module_of_a_megatron_backend_is_not_the_fused_op_path():
    assert "megatron-te" not in _porting("Fuse logprob and entropy computation", "",
                                         ("pkg/backends/megatron_utils/loss.py", "pkg/utils/ppo_utils.py"))


def test_an_npu_change_does_not_list_the_gpu_path_it_leaves_alone():
    from infra_radar.render.conclusion import central_identifiers

    body = ("## Summary\n\nAdd an NPU backend for the gated delta-rule ops: `chunk_npu_fwd` and `npu_conv1d` "
            "run on Ascend. `flash_qla` stays the GPU path and is unchanged.\n")
    item = Item(repo="acme/engine", kind="pr", key="8", number=8, title="Add NPU backend for delta-rule ops", body=body)
    ids = central_identifiers(AnalysedItem(item, Analysis(item_kind="feature", topics=["npu"], native=True)), 6)
    assert "flash_qla" not in ids and "chunk_npu_fwd" in ids


def test_a_reproduction_command_of_a_cut_page_gives_no_identifier():
    from infra_radar.render.conclusion import central_identifiers

    cmd = ("python3 -m verl.trainer.main_ppo \\\n  algorithm.adv_estimator=grpo \\\n  data.train_batch_size=64 \\\n"
           "  actor_rollout_ref.rollout.name=vllm")
    # the page is cut inside the second run's command: its fence never closes
    body = ("## Environment\n\n```\ntorch 2.7\n```\n\n## Problem\n\nTraining with `actor.strategy=fsdp2` crashes at "
            f"step 11.\n\nLaunch command (run twice):\n\n```bash\n{cmd}\n{cmd}")
    item = Item(repo="acme/verl", kind="issue", key="4", number=4, title="GRPO crashes at step 11", body=body)
    ids = central_identifiers(AnalysedItem(item, Analysis(item_kind="issue-bug")), 6)
    assert any(i.startswith("actor.strategy") for i in ids), ids
    assert not {"algorithm.adv_estimator", "data.train_batch_size", "verl.trainer.main_ppo"} & set(ids), ids
