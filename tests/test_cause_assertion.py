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
