"""The calibration learnt from the team's labels (analyse/learn.py) and the judgment laid over an analysis
(analyse/judge.py), on invented flags: deterministic fits, moves of one step with precedent only, the hard rules
of priority.toml [learning], the guard on unlisted merged PRs, and decisions re-derived by the rules' tables."""

from __future__ import annotations

import random
import tomllib

import pytest

from infra_radar.analyse.judge import Judge, tables_of
from infra_radar.analyse.learn import Calibration, Example, Limits, fit, limits_of
from infra_radar.config import DEFAULTS
from infra_radar.models import Analysis

pytestmark = pytest.mark.no_store

PRIORITY = tomllib.loads((DEFAULTS / "rules" / "priority.toml").read_text(encoding="utf-8"))
GRADES = tomllib.loads((DEFAULTS / "rules" / "grades.toml").read_text(encoding="utf-8"))
LIMITS = limits_of(PRIORITY["learning"])
BASE = ("merged", "code", "work", "domain")
RECIPE = (*BASE, "kind:feature", "topic:multimodal", "topic:rl-training", "why:a feature on a focus topic",
          "repo:acme/trainer", "focus", "explained")
KERNEL = (*BASE, "kind:perf", "topic:kernels", "topic:attention", "why:substantial change on a hot path",
          "repo:acme/infer", "hot", "lines300")


def recipe(extra: str = "", team: str | None = "P2") -> Example:
    return Example(tuple(sorted({*RECIPE, extra} - {""})), "P1", "S", team)


def agreeing(i: int) -> Example:
    return Example(tuple(sorted({*KERNEL, f"topic:x{i % 3}"})), "P1", "L", "P1", "L")


def test_a_class_the_team_ranks_lower_moves_one_step_and_names_its_flags():
    model = fit([recipe("lines50"), recipe("lines300"), recipe("substance"), agreeing(0), agreeing(1), agreeing(2)],
                LIMITS)
    moved = model.move(RECIPE, "P1", "S")
    assert moved["priority"] == "P2" and "grade" not in moved
    names = [name for name, _ in moved["moved_by"]]
    assert len(names) <= 3 and all(model.priority[n] < 0 for n in names)
    assert model.move(KERNEL, "P1", "L") is None  # the team agreed with the rules there
    # never more than one step, however far the weights point
    strong = Calibration({f: -5.0 for f in RECIPE}, {}, limits=LIMITS,
                         precedents={"priority": [("P0", -1, frozenset(RECIPE))] * 2})
    assert strong.move(RECIPE, "P0", "S")["priority"] == "P1"


def test_a_move_needs_precedent_not_only_weights():
    like = ("topic:a", "kind:feature", "repo:acme/x", "why:r")
    model = Calibration({"topic:a": -1.0}, {}, labels=4, limits=LIMITS, seen={f: 2 for f in like} | {"merged": 4},
                        precedents={"priority": [("P1", -1, frozenset((*like, "merged")))] * 2})
    assert model.move((*like, "merged"), "P1", "S")["priority"] == "P2"
    # the same weight on an item unlike the precedents (its other flags rare among the labelled items): no move
    unlike = ("topic:a", "kind:docs", "repo:acme/y", "why:s", "merged")
    assert model.shift("priority", unlike) <= -model.threshold and model.move(unlike, "P1", "S") is None
    # precedents where the rules answered otherwise (P1 there, P0 here): not the same correction
    assert model.move((*like, "merged"), "P0", "S") is None
    # a single precedent is not enough
    one = Calibration({"topic:a": -1.0}, {}, labels=4, limits=LIMITS, seen={f: 2 for f in like},
                      precedents={"priority": [("P1", -1, frozenset(like))]})
    assert one.move(like, "P1", "S") is None
    assert fit([recipe(), agreeing(0), agreeing(1), agreeing(2)], LIMITS).move(RECIPE, "P1", "S") is None


def test_fits_are_deterministic_and_round_trip():
    examples = [recipe("lines50"), recipe("lines300"), recipe("substance"), *(agreeing(i) for i in range(6)),
                Example(("merged", "code", "repo:acme/infer", "kind:bugfix"), "P1", "M", listed=False)]
    first = fit(examples, LIMITS).as_data()
    for seed in range(3):
        shuffled = list(examples)
        random.Random(seed).shuffle(shuffled)
        assert fit(shuffled, LIMITS).as_data() == first
    again = Calibration.from_data(first, LIMITS)
    assert again.as_data() == first
    assert again.move(RECIPE, "P1", "S") == fit(examples, LIMITS).move(RECIPE, "P1", "S")


def test_too_few_labels_learn_nothing_and_alternatives_count_as_agreement():
    assert fit([recipe(), recipe("lines50")], LIMITS).empty  # fewer than min_labels
    # the team accepted either answer: no disagreement to learn
    either = [Example(RECIPE, "P1", "S", ("P2", "P1")) for _ in range(4)]
    assert fit(either, LIMITS).move(RECIPE, "P1", "S") is None


@pytest.mark.parametrize(("flags", "rules", "allowed"), [
    (("bot",), "P2", {"P2"}),  # never moved
    (("kind:ci",), "P2", {"P2"}),
    (("backport",), "P1", {"P1", "P2"}),  # at most P1
    (("kind:docs",), "P1", {"P1", "P2"}),
    (("target-x", "work"), "P1", {"P1", "P0"}),  # target-platform work never below P1
])
def test_the_hard_rules_hold_whatever_the_weights(flags, rules, allowed):
    items = (*flags, "topic:t")
    for weight in (-5.0, 5.0):
        model = Calibration({f: weight for f in items}, {}, limits=LIMITS,
                            precedents={"priority": [(rules, 1 if weight > 0 else -1, frozenset(items))] * 2})
        moved = model.move(items, rules, "S")
        assert (moved or {}).get("priority", rules) in allowed, (weight, moved)


def test_grades_of_docs_ci_and_tests_never_move():
    items = ("kind:docs", "topic:docs")
    model = Calibration({}, {f: 5.0 for f in items}, limits=LIMITS,
                        precedents={"grade": [("S", 1, frozenset(items))] * 2})
    assert model.move(items, "P2", "S") is None


def test_promotions_are_held_back_for_the_unlisted_merged_prs():
    hot = ("kind:feature", "topic:moe", "repo:acme/infer", "merged", "code")
    listed = [Example(hot, "P2", "M", "P1") for _ in range(4)]
    unlisted = [Example(hot, "P2", "M", listed=False) for _ in range(6)]
    free = fit(listed, Limits(max_unlisted_high=1.0))
    assert free.move(hot, "P2", "M")["priority"] == "P1"
    # unlisted PRs that teach nothing by themselves (weight 0) still hold the promotions back
    model = fit([*listed, *unlisted], Limits(unlisted_weight=0.0))
    assert model.up_threshold > model.threshold
    high = sum(((model.move(e.features, "P2", "M") or {}).get("priority", "P2")) in ("P0", "P1") for e in unlisted)
    assert high / len(unlisted) <= LIMITS.max_unlisted_high


# --- judging one analysis -----------------------------------------------------------------------------------

def analysis(**kw) -> Analysis:
    base = dict(item_kind="feature", topics=["attention"], priority="P1", grade="M", decision="validate-first",
                decision_reason={"en": "x", "zh": "x"}, grade_reason={"en": "rules reason", "zh": "规则理由"},
                importance=4, features=["kind:feature", "topic:attention", "code", "merged", "grade:M",
                                        "why:a feature on a focus topic", "focus", "tests"],
                why={"en": "a feature on a focus topic", "zh": "关注主题上的新功能"})
    base.update(kw)
    return Analysis(**base)


def judge() -> Judge:
    return Judge(tables_of(PRIORITY, GRADES), {}, ["attention"])


def test_a_team_label_sets_priority_grade_and_rederives_the_decision():
    a = analysis()
    judge().overlay(a, {"priority": "none", "grade": "S", "by": "mei"}, None)
    assert (a.priority, a.grade) == ("none", "S")
    assert a.decision == "track-only" and a.decision_reason["en"].startswith("ranked none (the team's label)")
    assert a.importance <= 2  # the cap of "none"
    assert a.rules == {"priority": "P1", "grade": "M", "decision": "validate-first", "importance": 4,
                       "why": {"en": "a feature on a focus topic", "zh": "关注主题上的新功能"},
                       "grade_reason": {"en": "rules reason", "zh": "规则理由"}}
    assert a.grade_reason["en"] == "graded S by the team (mei); the rules said M: rules reason"
    assert a.grade_reason["zh"] == "团队标注为 S（mei）；规则判为 M：规则理由"
    b = analysis()
    judge().overlay(b, {"priority": "P0"}, None)
    assert (b.priority, b.grade, b.importance) == ("P0", "M", 5) and b.grade_reason["en"] == "rules reason"


def test_docs_are_never_adapt_now_whatever_the_judgment():
    a = analysis(item_kind="docs", features=["kind:docs", "native", "merged", "tests", "grade:L"], grade="L")
    judge().overlay(a, {"priority": "P0", "grade": "S"}, None)
    assert a.decision != "adapt-now"


def test_an_item_judged_twice_is_judged_once():
    a = analysis()
    j = judge()
    j.overlay(a, {"priority": "P2"}, None)
    j.overlay(a, {"priority": "P0"}, None)
    assert a.priority == "P2" and a.rules["priority"] == "P1"
