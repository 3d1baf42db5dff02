"""Figures in every shape authors write them (analyse/figures.py), and what a report says when none is read."""

from __future__ import annotations

import glob
import re

import pytest

from infra_radar.analyse.claims import extract_claims
from infra_radar.analyse.figures import SHAPES, description_cut, extract_figures, figure_shapes

from .conftest import SHARED, export_commits

pytestmark = pytest.mark.no_store


def shapes(text: str) -> list[tuple[str, str]]:
    return [(f.shape, f.text) for f in extract_figures(text)]


@pytest.mark.parametrize(("text", "expected"), [
    ("We measured WER 1.83% vs the official 2.02% on the eval set.",
     [("reference", "WER 1.83% vs the official 2.02%")]),
    ("Mean TTFT 120 ms vs 150 ms for the other scheduler.", [("versus", "Mean TTFT 120 ms vs 150 ms")]),
    ("Conversion takes 68–495 s, 3–4 s per expert tensor.",
     [("range", "68–495 s"), ("range", "3–4 s per expert tensor")]),
    ("The planner costs 6 ms/step at 4k history, 47 ms/step at 28k.",
     [("growth", "6 ms/step at 4k history, 47 ms/step at 28k")]),
    ("- fused forward matched the reference at max abs error 4.8828125e-4 on the NPU",
     [("bound", "max abs error 4.8828125e-4")]),
    ("Output throughput 1517.5 tok/s on 8 cards with concurrency 64.",
     [("value", "Output throughput 1517.5 tok/s on 8 cards with concurrency 64")]),
    # a quality metric's move written as an arrow; a version bump is not a figure
    ("Validated on 4xH100, 60 steps: rollout pearson 0.993, val acc 0.75 -> 0.90.",
     [("transition", "acc 0.75 -> 0.90")]),
    ("Bump the engine 0.19 -> 0.20 for the new scheduler.", []),
])
def test_each_shape_is_read(text, expected):
    assert shapes(text) == expected


@pytest.mark.parametrize("text", [
    "```\npython bench.py  # latency 5 ms vs 6 ms at 4k, 9 ms at 8k\n```",
    "    latency 5 ms vs 6 ms (indented code)",
    "$ vllm bench --latency 5 ms vs 6 ms",
    "2026-07-02 12:00:01 INFO latency 5 ms at step 3, 7 ms at step 4",
    "Traceback (most recent call last): max abs error 0.5",
    "Upgrade from v0.19 vs v0.18, TP4 vs TP8.",
    "Speed up weight updates from 110s to 37s.",  # a before -> after: claims.py's, not a range
])
def test_code_logs_commands_versions_and_pairs_are_not_these_figures(text):
    assert shapes(text) == []


def test_figures_skip_the_perf_claims_spans():
    text = "Step time 534.13 s -> 397.71 s; throughput 1517 tok/s on 8 cards."
    claims = extract_claims(text)
    found = extract_figures(text, taken=[c.span for c in claims])
    assert [f.shape for f in found] == ["value"]
    assert figure_shapes(claims, found)["before_after"] == 1


@pytest.mark.parametrize(("body", "cut"), [
    ("Adds a switch.\n\nTested on two cards.", False),
    ("- one\n- two", False),
    ("| a | b |\n|---|---|\n| 1 | 2 |", False),
    ("Wrapped text with `code\nthat closes` on the next line.", False),
    ("Description then a bot's name gemini-code-assist[bo", True),
    ("- Applied pre-commit checks\n-", True),
    ("```\nsome code without its end", True),
    ("- `git -c core.whitespace=blank-at-eol,spa", True),
    ("", False),
])
def test_a_cut_description_is_told_from_a_whole_one(body, cut):
    assert description_cut(body) is cut


def test_figures_by_shape_over_the_shared_history():
    """Every PR description of the shared history (squash commits ending in "(#N)", all exports), figures counted
    by shape. Before this module (main's extract_claims only) the count was 240 figures in 91 descriptions:
    216 before/after, 8 stated factors, 16 stated changes, and no A-vs-B, reference, range, growth, error bound
    or single measured value at all. The claims' counts must not change; the new shapes add to them."""
    names = sorted(p.rsplit("/", 1)[-1] for p in glob.glob(str(SHARED / "git" / "*.jsonl.gz")))
    if not names:
        pytest.skip("../shared/data is not available")
    totals = dict.fromkeys(SHAPES, 0)
    with_any = 0
    for name in names:
        for row in export_commits(name):
            if not row["body"].strip() or not re.search(r"\(#\d+\)\s*$", row["subject"]):
                continue
            claims = extract_claims(row["body"])
            found = extract_figures(row["body"], taken=[c.span for c in claims])
            with_any += bool(claims or found)
            for shape, n in figure_shapes(claims, found).items():
                totals[shape] += n
    before = 240
    claims_now = totals["before_after"] + totals["ratio"] + totals["change"]
    assert claims_now >= before, totals  # the claims themselves are no fewer
    new = sum(totals[s] for s in ("versus", "reference", "range", "growth", "bound", "value"))
    assert new >= 40, totals  # measured: 63 (range 55, value 5, versus 1, bound 1 ...)
    assert totals["range"] >= 30 and totals["value"] >= 3 and totals["bound"] >= 1, totals
    assert with_any >= 110, with_any  # measured: 120 descriptions (91 before)


@pytest.mark.parametrize(("line", "subject"), [
    # what a bound was measured on: a sanity check is not the kernel it sits beside
    ("- NPU: Ascend 910 (torch 2.7, Triton 3.2) vector-add Triton sanity passed with max error 0.0",
     "vector-add Triton sanity"),
    ("- NPU: rope fused forward matched the torch reference at max abs error 4.8828125e-4", "rope fused forward"),
    # a fragment of a sentence, a table row, a range: no subject rather than a wrong one
    ("and the kernel reached max abs error 1e-3 on long inputs", ""),
    ("| fused | max abs error 1e-3 |", ""),
    ("The planner costs 68–495 s in total.", ""),
])
def test_a_figure_says_what_it_was_measured_on(line, subject):
    from infra_radar.analyse.figures import figure_subject

    found = extract_figures(line)
    assert found, line
    assert figure_subject(found[0]) == subject, (line, found[0])


@pytest.mark.parametrize(("body", "seen"), [
    # a table of runs: no shape reads it, but it is not "no figures"
    ("| setup | coloc | PD | delta |\n|---|---|---|---|\n| 4-card | 13.98 ± 0.22 | 16.42 ± 0.35 | **+17.49%** |",
     "13.98 ± 0.22"),
    ("Measured step2=9.88s after the fix.", "9.88s"),
    # versions, counts of devices and settings are not measurements
    ("Needs vLLM 0.19.0 on 1×8 H200 with batch=16 and rollout.n=8.", ""),
    ("```\nstep 3 took 12.5s\n```", ""),
])
def test_a_description_with_unread_figures_is_not_said_to_have_none(body, seen):
    from infra_radar.analyse.figures import unread_figure

    assert unread_figure(body)[0] == seen


@pytest.mark.no_store
def test_a_tables_cells_are_not_the_changes_settings():
    """A squash commit wraps a table's rows: a root-cause cell's `x_=false` (another project's default) is no
    setting of the change; the same setting in prose is."""
    from infra_radar.models import AnalysedItem, Analysis, Item
    from infra_radar.render.checklist import item_switches, outside_tables

    table = ("| # | Symptom | Root cause |\n|---|---|---|\n| 2 | flood under load |\nthe engine ships "
             "`enable_pool_=false` ([PR\n#12](https://example.com)) |\n\nThis PR adds a connection pool, on with `use_pool=true`, so requests reuse connections.")
    assert "enable_pool_" not in outside_tables(table) and "use_pool=true" in outside_tables(table)
    item = Item(repo="acme/infer", kind="pr", key="1", number=1, title="Add a connection pool", body=table)
    switches, _ = item_switches(AnalysedItem(item, Analysis(item_kind="feature")))
    assert "use_pool=true" in switches and not any("enable_pool_" in s for s in switches), switches


def test_a_one_line_description_of_many_figures_is_cleaned_once_a_line(monkeypatch):
    """The line a figure stands on (its context) is cleaned once per line, not once per figure: a 300 KB
    one-line description holding thousands of figures cost the square of its length (seconds per card)."""
    from infra_radar.analyse import figures

    unit = "Throughput 1200 tok/s vs 1000 tok/s baseline on 8 GPUs. The worker hangs when the queue is full. "
    cleaned = {"chars": 0}
    clean = figures._clean

    def counted(text: str) -> str:
        cleaned["chars"] += len(text)
        return clean(text)

    monkeypatch.setattr(figures, "_clean", counted)
    chars = {}
    for n in (50, 200):
        cleaned["chars"] = 0
        found = extract_figures(unit * n)
        assert len(found) == n and found[-1].line == found[0].line
        chars[n] = cleaned["chars"]
    assert chars[200] <= 5 * chars[50], chars  # 4x the text: about 4x the characters cleaned (16x before)
