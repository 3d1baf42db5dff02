"""A cause is read only from a sentence that asserts it of the change: never a struck-through (`~~…~~`),
negated, hypothetical or quoted one (render/why.py, analyse/assertions.py)."""

from __future__ import annotations

import pytest

from infra_radar.analyse.assertions import sentence_list
from infra_radar.render.why import causes

pytestmark = pytest.mark.no_store

HEAD = "### Motivation\n\n"


def test_an_asserted_cause_is_read():
    found = causes(HEAD + "Each new shape triggers a ~1 s graph build, so step time grows.\n")
    assert [c.sentence for c in found] == ["Each new shape triggers a ~1 s graph build, so step time grows."]


@pytest.mark.parametrize("said", [
    "~~Each new shape triggers a graph build, so step time grows.~~\n",
    "If each new shape triggers a graph build, step time would grow.\n",
    "> Each new shape triggers a graph build, so step time grows.\n",
    '"Each new shape triggers a graph build, so step time grows," a reviewer wrote.\n',
])
def test_a_cause_not_asserted_is_not_read(said):
    assert causes(HEAD + said) == []


def test_struck_text_is_no_sentence():
    assert sentence_list("It crashes. ~~It also hangs on A3.~~ It is fixed now.") == ("It crashes.", "It is fixed now.")


def test_a_table_of_runs_is_never_no_figures():
    """A table whose cells are bare numbers (an accuracy per run) holds figures: never "描述中未见数字"."""
    from infra_radar.analyse.figures import unread_figure

    body = "Results on GSM8K:\n\n| run | acc |\n|---|---|\n| base | 0.842 |\n| new | 0.861 |\n"
    assert unread_figure(body) == ("0.842", "| base | 0.842 |")
    assert unread_figure("Version 2 of the plan; see step 3.") == ("", "")


def test_a_list_of_what_a_change_adds_is_no_cost():
    """"each X adds Y" is a cost only when Y reads as one (a figure, time, memory, a copy, a sync)."""
    assert causes(HEAD + "Each reviewable commit adds offline multimodal DPO training to the trainer.\n") == []
    found = causes(HEAD + "Each decode step adds 2 ms of host-side synchronisation.\n")
    assert [c.sentence for c in found] == ["Each decode step adds 2 ms of host-side synchronisation."]


def test_a_cause_cue_names_what_the_description_says_went_wrong():
    """A bandwidth cap is said as one; "not supported" in a sentence about another design is no missing-support
    cause of this change (conclusions.toml [motivation] cues)."""
    from infra_radar.models import AnalysedItem, Analysis, Item
    from infra_radar.render.why import motivation_evidence

    body = ("## Motivation\n\nWith a single sender, broadcast bandwidth is capped by the one NIC reachable from the "
            "source GPU. The other design relies on a transport which is not supported on certain backends.\n")
    item = Item(repo="acme/infer", kind="pr", key="9", title="Multi-sender broadcast", number=9, body=body)
    said = [cue for cue, _ in motivation_evidence(AnalysedItem(item, Analysis("feature")), "zh")]
    assert "带宽受限" in said and "能力缺失" not in said


def test_a_word_that_starts_like_a_cue_is_no_cue():
    """"serialization" is no serial queue (vllm-omni#4796: the current code already uses msgspec, a serialization
    library); copies that cost wall time are."""
    from infra_radar.models import AnalysedItem, Analysis, Item
    from infra_radar.render.why import motivation_evidence

    body = ("## Motivation\n\nThe current implementation already uses msgspec, a performant serialization "
            "library. Serialization paths perform excessive copy operations, increasing wall time.\n")
    item = Item(repo="acme/serve", kind="issue", key="8", title="Serializer refactor", number=8, body=body)
    said = [cue for cue, _ in motivation_evidence(AnalysedItem(item, Analysis("rfc")), "zh")]
    assert "串行排队" not in said and "拷贝与分配开销" in said


def test_a_figure_takes_the_model_its_own_clause_names_after_it():
    """"2.81x on A, 2.94x on B" after a table whose last row names B: the 2.81x is A's, not the model named last
    before it (issue 41: figures with their own condition)."""
    from infra_radar.analyse.claims import extract_claims

    body = ("| Model | Mode | Mean (s) |\n|---|---|---:|\n| Qwen3-8B | old | 5.0 |\n| Qwen3-8B | new | 1.8 |\n"
            "| Llama-3-70B | old | 5.6 |\n| Llama-3-70B | new | 1.9 |\n\nSpeedup: 2.81x on Qwen3-8B overall.\n")
    (claim,) = [c for c in extract_claims(body) if c.ratio]
    assert claim.context.get("model") == "Qwen3-8B"


def test_a_hard_wrapped_paragraph_is_one_text():
    """A commit message wrapped at 72 columns (verl#7250's squash commit) is read as its sentences, not as its
    lines; a list item, a heading, a table row and a quote each start a text of their own."""
    body = ("### What does this PR do?\n"
            "- This issue occurs because when the model uses the bridge\n"
            "backend, the module needs the padding mask. If the mask is None, the\n"
            "padding is discarded.\n"
            "- Updates the example.\n"
            "| a | b |\n"
            "> quoted\n"
            "line\n")
    assert sentence_list(body) == (
        "### What does this PR do?",
        "- This issue occurs because when the model uses the bridge backend, the module needs the padding mask.",
        "If the mask is None, the padding is discarded.",
        "- Updates the example.",
        "| a | b |",
        "line",
    )
