"""Cross-item links on invented titles, files and terms: duplicates, chains, same mechanism elsewhere."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from infra_radar.analyse.links import (
    Change,
    compile_relation_rules,
    distinctive_terms,
    duplicate_links,
    load_relation_rules,
    mechanism_links,
    part_of,
    same_change,
    title_key,
)
from infra_radar.analyse.related import ChangeIndex

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

REPO = "acme/infer-npu"


@pytest.fixture(scope="module")
def rules():
    text = (resources.files("infra_radar") / "defaults" / "rules" / "links.toml").read_text(encoding="utf-8")
    return compile_relation_rules(tomllib.loads(text))


# --- distinctive terms -----------------------------------------------------------------------------

def test_terms_are_identifiers_of_title_and_description(rules):
    body = ("Call `npu_fused_infer_attention_score` from `AscendMLABackend` instead of the generic path.\n"
            "See https://github.com/acme/infer/blob/main/infer/attention/paged_attention_v2.py and "
            "`infer_npu/ops/rotary_embedding.py`.\n\n```\nTraceback: some_logged_function_name failed\n```\n"
            "RUNNING the HTTP2 server; DeepSeek works; the tensor_parallel_size is 8.")
    terms = distinctive_terms("[Perf] Fuse RopeCacheManager updates", body, rules)
    assert terms[0] == "ropecachemanager"  # the title comes first
    assert "npu_fused_infer_attention_score" in terms and "ascendmlabackend" in terms
    for absent in ("paged_attention_v2", "rotary_embedding", "some_logged_function_name",  # URL, path, fence
                   "running", "deepseek", "tensor_parallel_size"):  # upper-case word, stop words
        assert absent not in terms


def test_terms_are_capped(rules):
    body = " ".join(f"`op_number_{i}`" for i in range(200))
    assert len(distinctive_terms("t", body, rules)) == rules.max_per_item


# --- same mechanism elsewhere ----------------------------------------------------------------------

def scored(rules, own, candidates, df, titles=None, title_terms=frozenset(), total=10_000):
    return [lk.ref for lk in mechanism_links(set(own), set(title_terms), candidates, df, total, rules, titles)]


def test_two_rare_shared_terms_link_items_of_other_repositories(rules):
    df = {"fused_rope_cache_kernel": 3, "ropecachemanager": 4, "hidden_size": 900}
    candidates = {("acme/trainer", 450): {"fused_rope_cache_kernel", "ropecachemanager"},
                  ("acme/trainer", 451): {"fused_rope_cache_kernel"}}  # one term, not in any title
    assert scored(rules, df, candidates, df) == ["acme/trainer#450"]


def test_common_terms_are_not_evidence(rules):
    df = {"hidden_size": 900, "num_heads": 400}
    assert scored(rules, df, {("acme/trainer", 1): {"hidden_size", "num_heads"}}, df) == []


def test_library_names_and_short_compounds_are_not_a_mechanism(rules):
    """`max_workers` and `ThreadPoolExecutor` are rare in an inference store yet say nothing about the
    mechanism: two PRs sharing only them are not linked; one specific shared name is enough."""
    df = {"max_workers": 3, "threadpoolexecutor": 3, "recv_task_queue_size": 3}
    generic = {("acme/trainer", 1): {"max_workers", "threadpoolexecutor"}}
    assert scored(rules, df, generic, df) == []
    specific = {("acme/trainer", 2): {"max_workers", "threadpoolexecutor", "recv_task_queue_size"}}
    assert scored(rules, df, specific, df) == ["acme/trainer#2"]


def test_one_term_counts_when_both_titles_name_it(rules):
    df = {"groupedmatmul": 3}
    candidates = {("acme/trainer", 7): {"groupedmatmul"}, ("acme/trainer", 8): {"groupedmatmul"}}
    titles = {("acme/trainer", 7): "[perf] use GroupedMatmul for MoE experts",
              ("acme/trainer", 8): "[ci] fix flaky test"}
    assert scored(rules, df, candidates, df, titles, {"groupedmatmul"}) == ["acme/trainer#7"]


def test_at_most_max_links_best_first(rules):
    df = {f"fused_term_{i}_kernel": 2 + i for i in range(4)}
    candidates = {("acme/trainer", n): set(list(df)[: 2 + n % 3]) for n in range(10)}
    refs = scored(rules, df, candidates, df)
    assert len(refs) == rules.max_links
    assert refs[0] in ("acme/trainer#2", "acme/trainer#5", "acme/trainer#8")  # four shared terms score highest


def test_threshold_is_configuration(rules):
    df = {"fused_term_a_kernel": 15, "fused_term_b_kernel": 15}
    candidates = {("acme/trainer", 1): {"fused_term_a_kernel", "fused_term_b_kernel"}}
    assert scored(rules, df, candidates, df, total=100) == []  # too common in a small store
    loose = dataclasses.replace(rules, min_score=1.0)
    assert scored(loose, df, candidates, df, total=100) == ["acme/trainer#1"]


# --- same-change duplicates ------------------------------------------------------------------------

MAIN = Change(903, "[BugFix] Guard padded seq lens in graph mode",
              frozenset({"infer_npu/attention/mla.py", "tests/ut/attention/test_mla.py"}))


@pytest.mark.parametrize("title", [
    "[BugFix][v0.3.0] Guard padded seq lens in graph mode",
    "[Cherry-pick][releases/v0.3.0][BugFix] Guard padded seq lens in graph mode",
    "[BugFix] Guard padded seq lens in graph mode- #903",
    "[BugFix] Guard padded seq lens in graph mode release 0.3.0",
])
def test_release_branch_copies_are_the_same_change(rules, title):
    assert same_change(MAIN, Change(905, title, MAIN.files | {"docs/release_notes.md"}), rules)


def test_same_title_different_files_is_not_the_same_change(rules):
    other = Change(950, MAIN.title, frozenset({"infer_npu/worker/model_runner.py"}))
    assert not same_change(MAIN, other, rules)
    recurring = Change(13, "[Doc] Translated doc files 2026-08-08", frozenset({"docs/a.po"}))
    assert not same_change(recurring, Change(14, "[Doc] Translated doc files 2026-08-10",
                                              frozenset({"docs/b.po", "docs/c.po"})), rules)


def test_a_revert_is_not_a_duplicate_of_what_it_reverts(rules):
    revert = Change(7288, 'Revert "[BugFix] Guard padded seq lens in graph mode (#903)"', MAIN.files)
    assert not same_change(MAIN, revert, rules)
    assert not same_change(Change(1, "[Revert] Guard padded seq lens in graph mode", MAIN.files), MAIN, rules)


def test_index_lookup_matches_comparing_every_pair_on_real_titles(rules):
    """similar_titles only looks at PRs holding one of the item's rarest tokens (prefix filtering); on a
    real repository's titles it must return exactly what comparing the item with every PR returns."""
    from tests.conftest import export_commits

    numbered = (re.search(r"\(#(\d+)\)\s*$", c["subject"]) for c in export_commits("vllm-project+vllm-ascend.jsonl.gz"))
    pool = list({int(m[1]): Change(int(m[1]), m.string[: m.start()]) for m in numbered if m}.values())[:1500]
    index = ChangeIndex(REPO, pool, rules)
    keys = {c.number: set(title_key(c.title, rules).split()) for c in pool}
    found_any = 0
    for item in pool[::5]:
        own = keys[item.number]
        brute = [c.number for c in sorted(pool, key=lambda c: c.number) if c.number != item.number and own
                 and len(own & keys[c.number]) / len(own | keys[c.number]) >= 0.6]
        assert [c.number for c in index.similar_titles(item)] == brute, item.title
        found_any += bool(brute)
    assert found_any >= 5


def test_different_titles_are_not_duplicates(rules):
    other = Change(960, "[BugFix] Guard MTP graph capture sizes", MAIN.files)
    assert not same_change(MAIN, other, rules)
    assert title_key("[Cherry-pick][releases/v0.3.0] fix: Foo bar (#12)", rules) == "foo bar"


def test_index_finds_candidates_by_title_then_files_decide(rules):
    pool = [MAIN, Change(905, "[BugFix][v0.3.0] Guard padded seq lens in graph mode"),
            Change(906, "[Feature] Add a graph mode switch"), Change(907, "Guard graph mode")]
    index = ChangeIndex(REPO, pool, rules)
    similar = index.similar_titles(MAIN)
    assert [c.number for c in similar] == [905]
    loaded = [dataclasses.replace(similar[0], files=MAIN.files)]
    assert [lk.ref for lk in duplicate_links(MAIN, loaded, REPO, rules)] == [f"{REPO}#905"]


# --- follow-up chains ------------------------------------------------------------------------------

@pytest.mark.parametrize(("title", "index", "total"), [
    ("[2/4][Refactor] Refactor attention utils", 2, 4), ("feat: int4 training support (Part3)", 3, None),
    ("Update CI (part 1/N)", 1, None), ("[model] Qwen support Step1/N: text input", 1, None),
    ("chore: clean legacy path part 2, clean CI", 2, None), ("Refactor the worker (PR 2 of 3)", 2, 3),
])
def test_part_markers(rules, title, index, total):
    part = part_of(title, rules)
    assert part is not None and (part.index, part.total) == (index, total)


def test_no_part_marker(rules):
    assert part_of("[Feature] Support Step3.5 Flash", rules) is None
    assert part_of("Fix TP 2/4 mismatch", rules) is None


def test_chain_groups_parts_of_one_split(rules):
    pool = [Change(910, "[1/3][Refactor] Split scheduler: move request queue"),
            Change(911, "[2/3][Refactor] Split scheduler: move token budget"),
            Change(912, "[3/3][Refactor] Split scheduler: remove the old class"),
            Change(920, "[1/2][Refactor] Refactor quantization config"),  # another split (other total)
            Change(930, "[1/N] Add graph capture for MTP")]  # unrelated open-ended split
    index = ChangeIndex(REPO, pool, rules)
    links = index.chain(pool[1])
    assert [lk.ref for lk in links] == [f"{REPO}#910", f"{REPO}#912"]
    assert links[0].detail.startswith("part 1/3: ")
    assert index.chain(Change(999, "[Feature] Not split at all")) == []


def test_chain_by_shared_prefix(rules):
    pool = [Change(1, "[megatron] chore: clean legacy code path part 1, make engine default"),
            Change(2, "[megatron] chore: clean legacy code path part 2, clean legacy CI")]
    assert [lk.number for lk in ChangeIndex(REPO, pool, rules).chain(pool[1])] == [1]


def test_relation_rules_follow_the_rules_dir(settings, tmp_path: Path):
    (tmp_path / "links.toml").write_text("[terms]\nmax_links = 1\nmin_score = 3.0\n", encoding="utf-8")
    settings.rules_dir = tmp_path
    rules = load_relation_rules(settings)
    assert (rules.max_links, rules.min_score) == (1, 3.0)
    assert rules.min_title_similarity == 0.85  # tables the user did not copy keep the packaged values


def test_a_link_opens_the_page_of_the_kind_the_store_holds():
    """A mention of a PR the store holds links /pull/N, also when the author wrote /issues/N; an issue stays
    /issues/N, and a reference the store does not hold keeps /issues/N (GitHub forwards it)."""
    from infra_radar.models import ISSUE, PR, Link
    from infra_radar.render.base import link_views

    links = [Link("mentions", "acme/infer", 5), Link("mentions", "acme/infer", 6,
                                                      url="https://github.com/acme/infer/issues/6"),
             Link("mentions", "acme/infer", 7), Link("mentions", "acme/infer", 8)]
    urls = [v["url"] for v in link_views(links, {"acme/infer#5": PR, "acme/infer#6": PR, "acme/infer#7": ISSUE})]
    assert urls == ["https://github.com/acme/infer/pull/5", "https://github.com/acme/infer/pull/6",
                    "https://github.com/acme/infer/issues/7", "https://github.com/acme/infer/issues/8"]
