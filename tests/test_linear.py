"""Text handling is linear in its input: proved by counting work, or by the cost ratio of two input sizes
measured in one run with a wide margin (8x the input: linear ~8x the time, quadratic ~64x; the bound is 24x).
No test here asserts a wall-clock time; bench/text_linear.py prints the timings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from infra_radar.analyse import rules as rules_module
from infra_radar.analyse.refs import extract_refs, pr_number_from_subject, strip_pr_suffix
from infra_radar.analyse.rules import RuleSet, analyse_item, load_noise_patterns
from infra_radar.models import Item
from infra_radar.sources.history import BodyCleaner

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

SMALL, FACTOR, BOUND = 8192, 8, 24.0


def cost(fn: Callable[[str], object], text: str, repeats: int = 5) -> float:
    """The best of `repeats` runs in this thread's CPU time: time spent descheduled on a busy machine (a CI
    neighbour, the other test pass) does not count, so the ratio below measures the work, not the load."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        fn(text)
        best = min(best, time.thread_time() - start)
    return max(best, 1e-5)


def growth(fn: Callable[[str], object], make: Callable[[int], str], rounds: int = 5) -> float:
    """cost(FACTOR x input) / cost(input), each the best of `rounds` runs taken alternately (a burst of load
    inflates some runs of both sizes, never shortens one); the small input is warmed first."""
    small, big = make(SMALL), make(SMALL * FACTOR)
    fn(small)
    best_small = best_big = float("inf")
    for _ in range(rounds):
        best_small = min(best_small, cost(fn, small, 2))
        best_big = min(best_big, cost(fn, big, 1))
    return best_big / best_small


def fill(unit: str, size: int, tail: str = "") -> str:
    return (unit * (size // len(unit) + 1))[: size - len(tail)] + tail


CLEANUP_BODIES = {
    # a blank run ending in a word: a line-anchored \s* rescans the run from every line start, then fails
    "blank lines then a trailer": lambda n: fill(" \n", n, "x Signed-off-by: x <x@y.z>\n"),
    "blank run then a separator": lambda n: fill("\n \t", n, "x ------\n"),
    "blank run then a pipe": lambda n: fill(" \n", n, "x |\n"),
    "blank run then conflicts": lambda n: fill(" \n", n, "x Conflicting files\n"),
    "gemini headers": lambda n: fill("Summary of Changes Hello, I'm Gemini Code Assist. ", n),
    "gemini using": lambda n: "Summary of Changes\n" + fill("Using Gemini Code Assist ", n),
    "welcome bots": lambda n: fill("👋 Hi! Thank you for contributing to the vLLM Ascend project. ", n),
    "DCO words": lambda n: fill("DCO ", n),
}


@pytest.mark.parametrize("make", CLEANUP_BODIES.values(), ids=CLEANUP_BODIES.keys())
def test_import_cleanup_is_linear(make):
    clean = BodyCleaner(load_noise_patterns())
    assert growth(clean, make) < BOUND


def test_the_cleanup_still_removes_what_it_did():
    clean = BodyCleaner(load_noise_patterns())
    body = ("Purpose\n\n  Signed-off-by: a <a@b.c>\nCo-authored-by: b <b@c.d>\n -------- \nConflicting files\n"
            "the DCO sign-off check passed\nkeep me\n|\nHide details\n")
    assert clean(body) == "Purpose\n\nkeep me"


def test_references_in_a_long_body_are_linear():
    # 20k URLs and 20k `#N` lines (the old URL-span scan was quadratic), and one line of `#1`s (the relation
    # phrase used to be looked for from the start of the line, per reference)
    body = "see https://example.com/a/b and #12 then\n"
    assert growth(lambda t: extract_refs(t, "acme/infer", own=1), lambda n: fill(body, n)) < BOUND
    assert growth(lambda t: extract_refs(t, "acme/infer", own=1), lambda n: fill("#1 ", n)) < BOUND
    assert any(link.number == 12 for link in extract_refs(fill(body, 8192), "acme/infer", own=1))


def test_a_subject_of_repeated_pr_suffixes_is_linear():
    make = lambda n: fill("(#1)", n, "x")  # noqa: E731 - the suffix search used to rescan the line per position
    assert growth(pr_number_from_subject, make) < BOUND
    assert growth(strip_pr_suffix, make) < BOUND
    assert pr_number_from_subject("Faster decode (#12) (#34)") == (34, [12])
    assert strip_pr_suffix("Faster decode (#12) (#34) ") == "Faster decode"


def test_references_to_another_repo_read_each_line_once(settings, monkeypatch):
    """Counted: the words handed to the ref-context test add up to the body once, not once per reference."""
    rules = RuleSet.load(settings)
    when = datetime(2026, 8, 2, tzinfo=UTC)
    seen = []
    real = rules_module.words
    monkeypatch.setattr(rules_module, "words", lambda text: seen.append(len(text)) or real(text))
    body = fill("see other/repo#1 ", 32768) + "\n" + fill("and other/repo#2 ", 4096)
    item = Item(repo="acme/infer", kind="pr", key="1", number=1, title="[Perf] Faster decode", body=body,
                author="alice", state="merged", created_at=when, updated_at=when, merged_at=when, source="jsonl")
    assert rules_module._depends_on_other_repo(item, rules) is False  # noqa: SLF001
    assert sum(seen) <= len(body)
    seen.clear()
    analyse_item(item, rules, [], settings)
    assert sum(seen) < 20 * len(body)  # a handful of passes over the text, not one per reference (4,500 here)


# --------------------------------------------------------------------------- bounded work per body (issue 16)
# A body of nothing but references or figures carries hundreds of times the findings of prose per KB; the
# extractors stop after a per-body budget of matches examined (links.toml max_matches, claims.toml [limits]),
# so what they do for a 64 KB body is counted here, never timed.

BIG = 64 * 1024


def _counting(monkeypatch, module, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("unit", ["#1 ", "depends on other/repo#1 and #2 ", "fixes #1 ",
                                  "https://github.com/a/b/pull/1 ", "`x` #1 "])
def test_references_examined_per_body_are_bounded(monkeypatch, unit):
    from infra_radar.analyse import refs

    limit = refs.default_link_rules().max_matches
    relations = _counting(monkeypatch, refs, "_relation")  # the per-reference work: the phrase before it
    links = refs.extract_refs(fill(unit, BIG), "acme/infer", own=2)
    assert len(relations) <= limit < fill(unit, BIG).count("#1") + fill(unit, BIG).count("pull/1")
    assert len(links) <= limit


def test_the_same_reference_repeated_stops_at_the_budget_too(monkeypatch):
    """Matches examined, not unique findings: 20,000 copies of one `#1` are one link but cost no more than the
    budget."""
    from infra_radar.analyse import refs

    rules = refs.compile_link_rules({**_toml("links"), "max_matches": 50})
    relations = _counting(monkeypatch, refs, "_relation")
    assert [(link.number, link.kind) for link in refs.extract_refs("#1 " * 20000, "acme/infer", rules=rules)] == [
        (1, "references")]
    assert len(relations) == 50
    # a reference within the budget is still found, one past where the text stopped being read is not
    body = "fixes #7\n" + "#1 " * 100 + "\nsee #9"
    assert {link.number for link in refs.extract_refs(body, "acme/infer", rules=rules)} == {1, 7}
    assert {link.number for link in refs.extract_refs(body, "acme/infer")} == {1, 7, 9}


@pytest.mark.parametrize("unit", ["1.0 ms -> 2.0 ms ", "1.0 ms -> 2.5 ms, TTFT 3 -> 4 ms ", "12% ",
                                  "throughput up by 12% ", "2.5x faster ", "from 1 ms to 2 ms "])
def test_claim_candidates_examined_per_body_are_bounded(monkeypatch, unit):
    from infra_radar.analyse import claims

    rules = claims.default_claim_rules()
    takes = _counting(monkeypatch, claims._Budget, "take")  # noqa: SLF001 - every anchor hit and match examined
    metric = _counting(monkeypatch, claims, "_window")  # the per-candidate metric lookup before a figure
    found = claims.extract_claims(fill(unit, BIG))
    assert len(takes) <= rules.max_anchors + rules.max_matches + 2  # a spent budget is asked once more per kind
    assert len(metric) <= rules.max_matches
    assert len(found) <= rules.max_claims


def test_table_rows_examined_per_body_are_bounded(monkeypatch):
    from infra_radar.analyse import claim_tables, claims

    rules = claims.default_claim_rules()
    body = "| metric | before | after |\n|---|---|---|\n" + fill("| TTFT | 1.0 ms | 2.0 ms |\n", BIG)
    cells = _counting(monkeypatch, claim_tables, "_split_cells")
    found = claims.extract_claims(body)
    assert len(cells) <= 3 * rules.max_table_lines  # a row is split once, plus a few header and wrap checks
    assert 1 <= len(found) <= rules.max_claims


def test_claim_limits_are_data_and_read_from_the_rules():
    from infra_radar.analyse import claims

    data = _toml("claims")
    assert data["limits"]["max_anchors"] == claims.default_claim_rules().max_anchors
    small = claims.compile_claim_rules({**data, "limits": {"max_anchors": 4, "max_matches": 2, "max_claims": 1}})
    body = "TTFT 10 ms -> 5 ms. TPOT 4 ms -> 2 ms. ITL 8 ms -> 4 ms."
    assert len(claims.extract_claims(body)) == 3
    assert len(claims.extract_claims(body, small)) == 1


def _toml(name: str) -> dict:
    import tomllib
    from importlib import resources

    return tomllib.loads((resources.files("infra_radar") / "defaults" / "rules" / f"{name}.toml").read_text("utf-8"))


WITHDRAWAL_BODIES = {
    # rules/withdrawal.toml on one comment: a long owner/name run before "#", a run of stops before the phrase,
    # negations and questions everywhere
    "owner/name run": lambda n: "superseded by " + fill("a.", n, "/b#"),
    "slashes": lambda n: "replaced by " + fill("a/", n, "#"),
    "stops then the phrase": lambda n: fill(". ", n, " not closing this"),
    "questions": lambda n: fill("closing this? ", n),
    "no stop": lambda n: fill("doesn't ", n, " hold"),
}


@pytest.mark.parametrize("make", WITHDRAWAL_BODIES.values(), ids=WITHDRAWAL_BODIES.keys())
def test_withdrawal_rules_are_linear(make):
    from infra_radar.analyse.withdrawal import compile_rules, withdrawal
    from infra_radar.config import Settings
    from infra_radar.models import Comment

    rules = compile_rules(Settings(home=None, db_url="sqlite://"))
    until = datetime(2026, 8, 2, tzinfo=UTC)

    def read(body: str) -> object:
        item = Item(repo="a/b", kind="pr", key="1", number=1, title="t", author="me",
                    comments=[Comment("me", body, datetime(2026, 8, 1, tzinfo=UTC))])
        return withdrawal(item, until, rules)

    assert growth(read, make) < BOUND
