"""Grounding by claim, not by digits: a model sentence's figures are read as claims (value, unit, ratio,
percentage, range, direction, condition) in English and Chinese, number words and numerals included, and
each must be a claim of the source or follow from one of its before/after pairs; the code names a sentence
leans on must be the item's own."""

from __future__ import annotations

import gzip
import json
import random
import re

import pytest

from infra_radar.analyse.claims import extract_claims
from infra_radar.llm.figures import read
from infra_radar.llm.grounding import Grounds, ground_counted
from infra_radar.models import PerfClaim, format_number
from infra_radar.render.base import signed, with_unit

pytestmark = pytest.mark.no_store

SOURCE = """## Purpose
Reuse the prefix KV blocks of `paged_kv_reuse` in vllm_ascend/attention/mla_v1.py.

## Test Result
Qwen3-8B on 8 NPUs, batch 32: TTFT drops from 120.5 ms to 98.2 ms.
With batch 8 the decode step is 16x faster.
Throughput rises from 1830 tokens/s to 2105 tokens/s (+15.0%).
Peak memory fell from 40 GB to 20 GB.
"""
FILES = ["vllm_ascend/attention/mla_v1.py", "tests/ut/attention/test_mla_v1.py"]
FIGURES = re.compile(r"\d\s*(?:ms|s|us|μs|tokens/s|tok/s|GB|%|x)\b[^\n]{0,40}?(?:->|→|=>)|\d\s*(?:->|→)\s*\d")


@pytest.fixture(scope="module")
def grounds() -> Grounds:
    return Grounds.of(SOURCE, ["acme/infer#7"], "acme/infer", names=["[Perf] Reuse prefix KV blocks", *FILES],
                      claims=extract_claims(SOURCE))


def kept(sentence: str, grounds: Grounds) -> bool:
    text, dropped = ground_counted(sentence, grounds, filler=False)
    assert sum(dropped.values()) in (0, 1)
    return bool(text)


@pytest.mark.parametrize("sentence", [
    "Decode is a thousand times faster.", "It makes decode ten-fold faster.", "Decode got two-fold faster.",
    "TTFT is a hundred times lower.", "Latency is tenfold lower.",
    "速度提升一千倍。", "首 token 延迟降低了十倍。", "吞吐提升了三倍。", "解码快了二十倍。", "吞吐提升百分之三十。",
    "吞吐提升三成。", "Throughput improves by fifty percent.",
])
def test_number_words_and_chinese_numerals_the_source_does_not_state_are_dropped(sentence, grounds):
    assert not kept(sentence, grounds), sentence


@pytest.mark.parametrize("sentence", [
    "Peak memory is halved.", "显存占用减半。", "峰值显存降低一半。", "Throughput rises by fifteen percent.",
    "吞吐提升百分之十五。", "Decode is sixteen times faster at batch 8.", "批大小为 8 时解码快了十六倍。",
    "Peak memory drops two-fold.", "显存降低了两倍。",
])
def test_number_words_and_chinese_numerals_the_source_supports_are_kept(sentence, grounds):
    assert kept(sentence, grounds), sentence


def test_a_figure_with_a_condition_needs_the_two_stated_together(grounds):
    assert kept("Decode is 16x faster with batch 8.", grounds)
    assert not kept("Decode is 16x faster with batch 32.", grounds)  # 16x and batch 32 are both in the source
    assert kept("At batch 32, TTFT drops from 120.5 ms to 98.2 ms.", grounds)
    assert not kept("At batch 8, TTFT drops from 120.5 ms to 98.2 ms.", grounds)
    assert not kept("On 16 NPUs TTFT drops from 120.5 ms to 98.2 ms.", grounds)


def test_a_range_needs_both_ends_grounded(grounds):
    assert not kept("Decode is 5-16x faster.", grounds)
    assert not kept("Decode is 16-20x faster.", grounds)
    assert not kept("解码快 10 到 16 倍。", grounds)
    assert kept("Throughput is 1830-2105 tokens/s.", grounds)


def test_units_must_agree(grounds):
    assert not kept("TTFT drops from 120.5 ms to 98.2 μs.", grounds)  # the issue's "from 10 ms to 5 μs"
    assert not kept("TTFT drops from 120.5 s to 98.2 s.", grounds)
    assert kept("TTFT drops from 0.1205 s to 0.0982 s.", grounds)  # the same times in seconds
    assert not kept("Throughput is 1830 ms.", grounds)  # a throughput figure is no time
    assert kept("Peak memory fell from 40 GB to 20 GB.", grounds)
    assert not kept("Peak memory fell from 40 MB to 20 MB.", grounds)
    assert kept("首 token 延迟从 120.5 毫秒降到 98.2 毫秒。", grounds)
    assert not kept("首 token 延迟从 120.5 微秒降到 98.2 微秒。", grounds)


def test_a_ratio_or_percent_that_follows_from_a_before_after_pair_is_grounded(grounds):
    assert kept("TTFT is 18.5% lower.", grounds)  # (120.5 - 98.2) / 120.5
    assert kept("TTFT is 1.2x faster.", grounds)  # 120.5 / 98.2 = 1.23, as written to one decimal
    assert kept("吞吐提升 15%。", grounds)
    assert kept("Throughput is 1.15x higher.", grounds)
    assert not kept("TTFT is 30% lower.", grounds)
    assert not kept("TTFT is 1.5x faster.", grounds)
    assert not kept("Throughput is 3x higher.", grounds)


def test_a_figure_said_to_go_the_other_way_is_dropped(grounds):
    assert not kept("TTFT is 18.5% higher.", grounds)
    assert not kept("Peak memory doubled.", grounds)
    assert not kept("吞吐下降了 15%。", grounds)
    assert not kept("Decode is 16x slower at batch 8.", grounds)
    assert kept("Peak memory halved.", grounds)


def test_a_file_or_identifier_the_item_does_not_have_is_dropped(grounds):
    assert kept("The change sits in vllm_ascend/attention/mla_v1.py.", grounds)
    assert kept("改动集中在 mla_v1.py。", grounds)  # a file named by its last part
    assert kept("It reuses blocks through `paged_kv_reuse`.", grounds)
    assert not kept("It also rewrites vllm_ascend/worker/model_runner.py.", grounds)
    assert not kept("同时修改了 model_runner.py。", grounds)
    assert not kept("It adds `paged_kv_evict`.", grounds)
    assert not kept("The switch is VLLM_ASCEND_ENABLE_PREFIX_REUSE.", grounds)
    assert not kept("Enable it with --enable-prefix-reuse.", grounds)
    assert not kept("It calls torch.npu.reuse_blocks().", grounds)


def test_a_plain_count_in_words_or_numerals_must_be_the_sources(grounds):
    assert kept("It runs Qwen3-8B on eight NPUs.", grounds)
    assert not kept("It runs on seven NPUs.", grounds)
    assert kept("在 8 张卡上运行。", grounds)
    assert not kept("在五张卡上运行。", grounds)
    assert kept("统一了接口，十分重要。", grounds)  # 统一, 十分: no numerals


def test_each_example_of_the_issue_is_dropped():
    source = "TTFT 5 ms -> 4 ms with batch 8. Batch 32 was also tried; 16 layers were fused."
    g = Grounds.of(source, [], "a/b", claims=extract_claims(source))
    for sentence in ("It is a thousand times faster.", "It is ten-fold faster.", "速度提升一千倍。", "延迟降低了十倍。",
                     "It is 16x faster with batch 32.", "It is 5-10x faster.", "TTFT goes from 10 ms to 5 μs.",
                     "It changes vllm_ascend/worker/model_runner.py."):
        assert ground_counted(sentence, g, filler=False)[0] == "", sentence


def test_reading_figures():
    r = read("halved, 2.45x, ten-fold, 一千倍, 百分之三十, 三成, 5-10x, 10 ms, batch 32")
    kinds = [[(f.kind, round(f.value, 4)) for f in end][:1] for c in r.claims for end in c.ends]
    assert kinds == [[("ratio", 2.0)], [("ratio", 2.45)], [("ratio", 10.0)], [("ratio", 1000.0)],
                     [("percent", 30.0)], [("percent", 30.0)], [("ratio", 5.0)], [("ratio", 10.0)],
                     [("quantity", 0.01)]]
    assert r.conditions == {("batch", "32")}
    assert read("on 8x H100").claims == []  # eight devices, not a ratio


def test_grounded_sentences_of_the_real_history_still_pass(shared_data):
    """Sentences stating the claims of real PR descriptions (as the radar writes them) are kept; the same
    sentences with a unit or a value changed are dropped."""
    path = shared_data / "git" / "vllm-project+vllm-ascend.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        bodies = [b for b in (json.loads(line).get("body") or "" for line in fh) if FIGURES.search(b)]
    rng = random.Random(28)
    checked = wrong = 0
    for body in rng.sample(bodies, min(150, len(bodies))):
        claims = extract_claims(body)
        g = Grounds.of(body, [], "a/b", claims=claims)
        for c in claims:
            if "#" in c.metric:
                continue
            sentences = _sentences(c)
            for s in sentences:
                checked += 1
                assert ground_counted(s, g, filler=False)[0] == s, (s, c.source)
            if c.before is not None and c.after is not None and c.unit in ("ms", "s"):
                other = "μs" if c.unit == "ms" else "ms"
                wrong += 1
                s = f"{c.metric} goes from {with_unit(c.before, other)} to {with_unit(c.after, other)}."
                assert ground_counted(s, g, filler=False)[0] == "", (s, c.source)
    assert checked >= 150 and wrong >= 15


def _sentences(c: PerfClaim) -> list[str]:
    out = []
    if c.before is not None and c.after is not None and c.unit not in ("", "%", "x"):
        out += [f"{c.metric} goes from {with_unit(c.before, c.unit)} to {with_unit(c.after, c.unit)}.",
                f"{c.metric} 从 {with_unit(c.before, c.unit)} 变为 {with_unit(c.after, c.unit)}。"]
    if c.change_pct is not None:
        out.append(f"{c.metric} changes by {signed(c.change_pct, 1, '%')}.")
    if c.ratio is not None:
        out.append(f"That is {format_number(round(c.ratio, 2))}x.")
    return out


def test_a_chinese_word_figure_alone_is_read():
    g = Grounds.of("TTFT drops from 120.5 ms to 98.2 ms.", [], "a/b")
    for sentence in ("延迟减半。", "吞吐翻倍。", "显存降低一半。"):
        assert ground_counted(sentence, g, filler=False)[0] == "", sentence
