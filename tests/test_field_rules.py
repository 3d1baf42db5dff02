"""The rules over the whole watched field, on invented PRs (tests/data/rules/field.json): lossy step caches of
image and video diffusion, omni multi-stage serving, TTS/audio and eval alignment, host-side work (tokenizer, API
server, scheduler), device kernels and paged caches written for CUDA/Triton, RL weight sync, caches of every kind,
and noise that must stay noise. Each class has several PRs in different words, repositories and files: a rule that
fits one wording fails the others."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra_radar.analyse.item import analyse
from infra_radar.analyse.rules import RuleSet
from infra_radar.config import Settings
from infra_radar.models import FileChange, Item

pytestmark = pytest.mark.no_store

CASES = {c["name"]: c for c in json.loads(
    (Path(__file__).parent / "data" / "rules" / "field.json").read_text(encoding="utf-8"))["items"]}
FOCUS = ["performance", "multimodal", "scheduling", "attention", "padding", "kv-cache", "spec-decode", "npu"]


@pytest.fixture(scope="module")
def conf(tmp_path_factory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("home"), db_url="sqlite://", focus=FOCUS)


@pytest.fixture(scope="module")
def rules(conf) -> RuleSet:
    return RuleSet.load(conf)


def item_of(case: dict) -> Item:
    """A merged PR with its diffstat, or (`state` open, no files) a pasted page: paths only its text names."""
    merged = case.get("state", "merged") == "merged"
    when = datetime(2026, 7, 3, tzinfo=UTC)
    return Item(repo=case["repo"], kind=case.get("kind", "pr"), key="1", number=1, title=case["title"],
                body=case["body"], files=[FileChange(p, a, d) for p, a, d in case["files"]],
                state=case.get("state", "merged"), merged_at=when if merged else None, updated_at=when,
                named_paths=case.get("named_paths", []), source="jsonl" if merged else "page")


def _ok(want, got) -> bool:
    return got in want if isinstance(want, list) else got == want


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_field_is_ranked_and_graded_by_class(name, rules, conf):
    case = CASES[name]
    expect = case["expect"]
    result = analyse(item_of(case), rules, conf)
    shown = (result.priority, result.grade, result.topics, result.grade_reason["en"])
    if "priority" in expect:
        assert _ok(expect["priority"], result.priority), shown
    if "grade" in expect:
        assert _ok(expect["grade"], result.grade), shown
    assert set(expect.get("topics_has", [])) <= set(result.topics), shown
