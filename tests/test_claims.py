"""Performance-claim extraction: prose, tables, dedupe, false positives, context, real bodies."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest

from infra_radar.analyse.claims import compile_claim_rules, extract_claims, format_number
from infra_radar.models import PerfClaim

from .conftest import export_commits

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

DATA = Path(__file__).parent / "data" / "claims"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def fixture(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def figures(claims: list[PerfClaim]) -> list[tuple]:
    return [(c.metric, c.before, c.after, c.unit) for c in claims]


def one(text: str) -> PerfClaim:
    claims = extract_claims(text)
    assert len(claims) == 1, claims
    return claims[0]


def body_of(name: str, suffix: str) -> str:
    return next(c["body"] for c in export_commits(name) if c["subject"].endswith(suffix))


# --------------------------------------------------------------------------- format_number


@pytest.mark.parametrize(("value", "text"), [
    (1048.64, "1048.64"), (12.0, "12"), (0.5, "0.5"), (-70.06, "-70.06"), (1e-05, "0.00001"),
    (1.8, "1.8"), (162.26, "162.26"), (0.0, "0"), (1234567.0, "1234567"),
])
def test_format_number_is_shortest_faithful_text(value, text):
    assert format_number(value) == text


# --------------------------------------------------------------------------- prose


@pytest.mark.parametrize(("text", "expected"), [
    ("Step time: 17.04s -> 12.83s", ("Step time", 17.04, 12.83, "s")),
    ("Step time: 17.04 s → 12.83 s", ("Step time", 17.04, 12.83, "s")),
    ("The lookup went from 1289μs/call to 1.8μs/call.", ("lookup", 1289.0, 1.8, "μs/call")),
    ("TTFT 0.88s → 0.51s", ("TTFT", 0.88, 0.51, "s")),
    ("Peak memory reduced from 3.2 GB to 2.1 GB.", ("Peak memory", 3.2, 2.1, "GB")),
    ("- ttft: 7824 ms -> 6698 ms", ("TTFT", 7824.0, 6698.0, "ms")),
    ("Mean TTFT：8226->7432ms", ("Mean TTFT", 8226.0, 7432.0, "ms")),
    ("Output throughput: 534 -> 652 tok/s", ("Output throughput", 534.0, 652.0, "tokens/s")),
    ("p90 TPOT **90.79ms** -> **88.58ms**", ("p90 TPOT", 90.79, 88.58, "ms")),
    ("decode latency: 1.2 s -> 800 ms", ("decode latency", 1200.0, 800.0, "ms")),
    ("Throughput 15.2K tok/s -> 16.0K tok/s", ("Throughput", 15200.0, 16000.0, "tokens/s")),
    # the verb that opens the clause is not part of the name
    ("Replaced it with AscendC, reducing the operation cost from 313us to 76us.",
     ("operation cost", 313.0, 76.0, "μs")),
    ("This cuts decode latency from 12 ms to 9 ms.", ("decode latency", 12.0, 9.0, "ms")),
])
def test_prose_pairs(text, expected):
    claim = one(text)
    assert (claim.metric, claim.before, claim.after, claim.unit) == expected


def test_prose_pair_change_and_ratio_follow_metric_direction():
    latency = one("TTFT 0.88s → 0.51s")
    assert latency.change_pct == -42.05 and latency.ratio == 1.73  # before/after for lower-is-better
    throughput = one("Output throughput: 534 -> 652 tok/s")
    assert throughput.change_pct == 22.1 and throughput.ratio == 1.22  # after/before for higher-is-better


def test_prose_pair_chain_keeps_first_and_last():
    claim = one("prefix cache hit rate 0% -> 40.3% -> 53.7%.")
    assert (claim.metric, claim.before, claim.after, claim.unit) == ("prefix cache hit rate", 0.0, 53.7, "%")
    assert claim.change_pct is None and claim.ratio is None  # no division by zero, no direction for %


def test_prose_pair_without_metric_name_needs_a_performance_unit():
    assert one("[result] **5890us -> 4964us(16%)**").metric == "latency"
    assert extract_claims("loss went 12.25 -> 11.72 after the fix") == []
    assert extract_claims("the value goes 3 -> 4 now") == []


def test_stated_ratio_next_to_a_pair_is_attached_not_a_second_claim():
    claim = one("Load time reduced from 109s to 25s, speedup by *4.36x*")
    assert (claim.before, claim.after, claim.ratio) == (109.0, 25.0, 4.36)


def test_ratio_only_claims():
    claim = one("Overall this gives up to 2.45x faster decoding.")
    assert (claim.metric, claim.ratio, claim.before, claim.after) == ("speedup", 2.45, None, None)
    assert one("The kernel is 3.1× faster than the Triton one").ratio == 3.1
    assert one("PP4TP8 delivers nearly 2x higher prefill throughput").metric == "prefill throughput"
    assert extract_claims("we need 70x less data to train") == []
    assert extract_claims("runs on 8x H100 nodes") == []


@pytest.mark.parametrize(("text", "metric", "pct"), [
    ("This improves throughput by 12% at high concurrency.", "throughput", 12.0),
    ("We reduce TTFT by approximately 4%.", "TTFT", -4.0),
    ("- **TTFT** has been reduced by **7.43%**.", "TTFT", -7.43),
    ("Peak memory is cut by 18.3% on the 30B model", "Peak memory", -18.3),
    ("E2E latency -25.68% with the default scheduler", "E2E latency", -25.68),
    ("throughput +9.18%", "throughput", 9.18),
])
def test_change_only_claims_are_signed_by_their_verb(text, metric, pct):
    claim = one(text)
    assert (claim.metric, claim.change_pct, claim.before, claim.ratio) == (metric, pct, None, None)


def test_percentages_without_a_named_metric_are_not_claims():
    assert extract_claims("Coverage of the module is 93.62%, up by 5%.") == []
    assert extract_claims("-25.68% on the second run") == []


def test_prose_fixture():
    claims = extract_claims(fixture("prose.md"))
    assert figures(claims) == [
        ("Step time", 17.04, 12.83, "s"), ("TTFT", 0.88, 0.51, "s"),
        ("rope cache lookup", 1289.0, 1.8, "μs/call"), ("Peak memory", 3.2, 2.1, "GB"),
        ("speedup", None, None, ""), ("throughput", None, None, ""), ("E2E latency", None, None, ""),
    ]
    assert [c.ratio for c in claims][4] == 2.45
    assert [c.change_pct for c in claims][5:] == [12.0, -25.68]


# --------------------------------------------------------------------------- tables


def test_state_table_pairs_baseline_with_current_only():
    claims = extract_claims(fixture("state_table.md"))
    assert figures(claims) == [
        ("TTFT", 812.4, 766.02, "ms"), ("TPOT", 31.2, 29.95, "ms"),
        ("Output throughput", 1520.5, 1588.3, "tokens/s"),
    ]
    assert all(790.1 not in (c.before, c.after) for c in claims)  # no intermediate pairs
    assert claims[0].change_pct == -5.71 and claims[0].ratio == 1.06
    assert claims[0].source.startswith("| baseline") and "| current" in claims[0].source


def test_state_table_context_comes_from_the_description():
    claim = extract_claims(fixture("state_table.md"))[0]
    assert claim.context == {"model": "Qwen3-30B-A3B-W8A8", "hardware": "Atlas A2", "concurrency": "32",
                             "config": "TP=2", "states": "first revision (0f9e8d7c) 790.10 ms"}


def test_stage_table_without_outer_pipes_and_with_mark_tags():
    claims = extract_claims(fixture("stage_table.md"))
    assert figures(claims) == [
        ("Total Step Time", 301.5, 244.2, "s"), ("Generation", 120.4, 119.95, "s"),
        ("Old Log Prob", 41.02, 22.61, "s"), ("Actor Update", 118.33, 80.07, "s"),
        ("Ref Model Computation", 14.1, 14.31, "s"), ("Peak memory", 61.2, 58.9, "GB"),
    ]
    assert claims[0].context["hardware"] == "8xH100" and claims[0].context["model"] == "Qwen2.5-7B-Instruct"
    assert claims[0].source == "Total Step Time | 301.50 | 244.20"


def test_column_pair_table_in_either_order_with_units_in_cells():
    text = """| Metric | PR | baseline | Δ |
|:---:|:---:|:---:|:---:|
| TPOT | `44.30 ms` | `45.91 ms` | **-3.5%** |
| Request throughput | 4.95 req/s | 4.80 req/s | +3.1% |
| Mean TTFT | 1381.6 ms | 1381.4 ms | flat |
"""
    assert figures(extract_claims(text)) == [
        ("TPOT", 45.91, 44.3, "ms"), ("Request throughput", 4.8, 4.95, "req/s"),
        ("Mean TTFT", 1381.4, 1381.6, "ms"),
    ]


def test_column_pair_table_with_metric_in_header_and_row_context():
    text = """| Concurrency | Mean TTFT (ms) main | Mean TTFT (ms) this PR |
| -- | -- | -- |
| 16 | 429.40 | 323.3 |
| 64 | 1297.01 | 911.74 |
"""
    claims = extract_claims(text)
    assert figures(claims) == [("Mean TTFT", 429.4, 323.3, "ms"), ("Mean TTFT", 1297.01, 911.74, "ms")]
    assert [c.context["concurrency"] for c in claims] == ["16", "64"]


def test_table_speedup_column_is_the_stated_ratio():
    text = """| Kernel | Before | After | Speedup |
|---|---:|---:|---:|
| `rms_norm` | ~0.67ms | ~0.134ms | **~5x** |
"""
    claim = one(text)
    assert (claim.metric, claim.before, claim.after, claim.unit, claim.ratio) == ("rms_norm", 0.67, 0.134, "ms", 5.0)


def test_table_cells_holding_before_arrow_after():
    text = """Method | Draft | EAGER tok/s OFF → ON | Δ
-- | -- | -- | --
DFlash | 9 | 2475 → 2904 | +17.33%
 | 7 | 2612 → 2920 | +11.79%
"""
    claims = extract_claims(text)
    assert figures(claims) == [("EAGER", 2475.0, 2904.0, "tokens/s"), ("EAGER", 2612.0, 2920.0, "tokens/s")]


def test_wrapped_table_rows_are_joined():
    text = """| Metric | Legacy | This PR | Relative change |
|---|---:|---:|---:|
| Output token throughput | 416.83 tok/s | 418.75 tok/s |
+0.46% |
| Mean TPOT | 34.20 ms | 34.05 ms | -0.44% |
### How was this patch tested?
"""
    claims = extract_claims(text)
    assert figures(claims) == [("Output token throughput", 416.83, 418.75, "tokens/s"), ("Mean TPOT", 34.2, 34.05, "ms")]
    assert "###" not in claims[1].source


def test_table_flattened_onto_one_line():
    row = ("Results: | State | TTFT | TPS | | --- | ---: | ---: | | baseline (`d1`) | `100.5 ms` | `50.25` | "
           "| original (`d2`) | `99.0 ms` | `51.00` | | current (`d3`) | `90.25 ms` | `52.75` | Delta: - TTFT: `-10.25 ms`")
    assert figures(extract_claims(row)) == [("TTFT", 100.5, 90.25, "ms"), ("TPS", 50.25, 52.75, "")]


def test_accuracy_and_config_tables_give_no_claims():
    text = """| dataset | version | metric | mode | baseline | this PR |
| --- | --- | --- | --- | --- | --- |
| gsm8k | 7cd45e | accuracy | gen | 91.21 | 91.36 |

| Config | Accuracy | MTP Acc Ratio |
-- | -- | --
DCP1+MTP1(baseline) | 0.880 | 94.48%
DCP2+MTP3 | 0.890 | 79.67%
"""
    assert extract_claims(text) == []


# --------------------------------------------------------------------------- precision, dedupe


def test_noise_fixture_gives_no_claims():
    assert extract_claims(fixture("noise.md")) == []


def test_delta_lines_are_not_claims():
    claims = extract_claims(fixture("state_table.md"))
    assert all(c.before != 0 and c.change_pct not in (-46.38, -1.25) for c in claims)
    assert extract_claims("Delta:\n- TTFT: `-70.06 ms`\n- TPS: `+2.42`") == []


def test_repeated_description_gives_each_claim_once():
    text = fixture("state_table.md")
    assert figures(extract_claims("\n\n".join([text] * 5))) == figures(extract_claims(text))


def test_prose_restating_a_table_row_with_rounding_is_not_a_second_claim():
    text = """| Metric | Before | After |
|---|---:|---:|
| Mean TTFT (ms) | 7,116.24 | 6,888.64 |

- TTFT improved: mean dropped **-3.20%** (7,116ms → 6,889ms).
- TTFT has been reduced by 3.2%.
"""
    assert figures(extract_claims(text)) == [("Mean TTFT", 7116.24, 6888.64, "ms")]


def test_spans_point_into_the_text():
    text = fixture("prose.md")
    for claim in extract_claims(text):
        start, end = claim.span
        assert 0 <= start < end <= len(text)
        assert claim.source in text.replace("\n", " ") or claim.source in text
    step = extract_claims(text)[0]
    assert text[step.span[0]:step.span[1]] == "Step time: 17.04s -> 12.83s"


def test_context_prefers_the_nearest_preceding_mention():
    text = ("Setup A: model: `Qwen3-8B` on 910B4.\nTTFT: 10 ms -> 8 ms\n\n"
            "Setup B: model: `DeepSeek-V3` on 8xH800.\nTTFT: 40 ms -> 30 ms\n")
    first, second = extract_claims(text)
    assert (first.context["model"], first.context["hardware"]) == ("Qwen3-8B", "910B4")
    assert (second.context["model"], second.context["hardware"]) == ("DeepSeek-V3", "8xH800")


def test_empty_and_plain_texts():
    assert extract_claims("") == []
    assert extract_claims("Refactor the scheduler; no behaviour change.") == []


def test_rules_are_data_a_user_can_extend():
    path = resources.files("infra_radar") / "defaults" / "rules" / "claims.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert extract_claims("goodbits: 10 -> 20") == []
    data["metric"].append({"name": "goodbits", "aliases": ["goodbits"], "better": "higher"})
    claim = one_with(compile_claim_rules(data), "goodbits: 10 -> 20")
    assert (claim.metric, claim.ratio) == ("goodbits", 2.0)


def one_with(rules, text: str) -> PerfClaim:
    claims = extract_claims(text, rules)
    assert len(claims) == 1, claims
    return claims[0]


# --------------------------------------------------------------------------- real data (read at test time)


def test_real_vllm_ascend_7756_state_table():
    claims = extract_claims(body_of("vllm-project+vllm-ascend.jsonl.gz", "(#7756)"))
    assert figures(claims) == [("TTFT", 1048.64, 978.58, "ms"), ("TPS", 162.26, 164.67, "")]
    for claim in claims:
        assert claim.context["model"] == "Qwen3.5-35B-A3B"
        assert claim.context["hardware"] == "910B4"
        assert claim.context["concurrency"] == "16"


def test_real_verl_6901_stage_table():
    claims = extract_claims(body_of("verl-project+verl.jsonl.gz", "(#6901)"))
    assert figures(claims)[:4] == [
        ("Total Step Time", 534.13, 397.71, "s"), ("Gen/Rollout", 171.06, 170.86, "s"),
        ("Old Log Prob", 78.38, 35.45, "s"), ("Actor Update", 247.58, 154.5, "s"),
    ]
    assert len(claims) == 6


def test_real_pasted_page_gives_each_claim_once():
    page = SHARED / "pages" / "vllm-project+vllm-ascend+7756.txt"
    if not page.exists():
        pytest.skip(f"{page} not available")
    claims = extract_claims(page.read_text(encoding="utf-8"))
    assert figures(claims) == [("TTFT", 1048.64, 978.58, "ms"), ("TPS", 162.26, 164.67, "")]
    assert claims[0].context["model"] == "Qwen3.5-35B-A3B"


def test_real_export_version_bumps_are_not_claims():
    commits = export_commits("vllm-project+vllm-ascend.jsonl.gz")
    found = [(c["subject"], extract_claims(c["body"])) for c in commits]
    bumps = [claims for subject, claims in found if subject.lower().startswith(("bump", "[ci] bump"))]
    assert not any(bumps)
    assert sum(1 for _, claims in found if claims) > 40


def test_claim_meaning_tells_improvement_regression_ab_and_sweep():
    from infra_radar.analyse.claims import claim_meaning
    from infra_radar.models import PerfClaim

    faster = PerfClaim("TTFT", 100.0, 80.0, "ms", -20.0, ratio=1.25)
    slower = PerfClaim("TTFT", 100.0, 120.0, "ms", 20.0, ratio=0.83)
    ab = PerfClaim("memory", 52.37, 57.68, "GB", 10.1, ratio=0.91, source="| W4A4 | GLM-5.1 | 8 | off | 52.37 GB |")
    rows = [PerfClaim("kernel time", 9.0, 8.0, "us", ratio=1.12, context={"case": "Shape: [512]"}),
            PerfClaim("kernel time", 11.0, 12.0, "us", ratio=0.92, context={"case": "Shape: [704]"})]
    assert claim_meaning(faster, [faster]) == "improvement"
    assert claim_meaning(slower, [slower]) == "regression"
    assert claim_meaning(ab, [ab]) == "ab"
    assert claim_meaning(rows[0], rows) == "sweep"
    assert claim_meaning(PerfClaim("hit rate", 0.0, 53.7, "%"), []) == "figure"
