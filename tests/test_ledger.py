"""The downstream adaptation ledger: parsing invented PR texts, the store, the upstream-only card, real history."""

from __future__ import annotations

import gzip
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.analyse.ledger import compile_ledger_rules, load_ledger_rules, parse_adaptations
from infra_radar.cli import main
from infra_radar.pipeline.analysis import analyze
from infra_radar.pipeline.card import card_input
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_jsonl
from infra_radar.pipeline.reports import weekly
from infra_radar.render.markdown import render_card
from infra_radar.store.ledger import adapted_in, ledger_size
from infra_radar.windows import iso_week

from .conftest import export_commits

DATA = Path(__file__).parent / "data" / "ledger"
UP, DOWN = "vllm-project/vllm", "vllm-project/vllm-ascend"


@pytest.fixture(scope="module")
def rules():
    text = (resources.files("infra_radar") / "defaults" / "rules" / "ledger.toml").read_text(encoding="utf-8")
    return compile_ledger_rules(tomllib.loads(text))


def by_number(found) -> dict[int, object]:
    return {a.number: a for a in found}


# --- parsing ---------------------------------------------------------------------------------------

TABLE = """### What this PR does / why we need it?

Adapt to vLLM main up to May 2.

| Files | Upstream vLLM change | vllm-ascend adaptation |
|-------|---------------------|------------------------|
|
`vllm_ascend/ops/rope.py`<br>`vllm_ascend/patch/worker/patch_rope.py`
| [vllm#41001](https://github.com/vllm-project/vllm/pull/41001) moved
`get_rope` to `vllm.model_executor.layers.rotary` | Version-gated the
import with `vllm_version_is("0.20.0")` |
| `vllm_ascend/worker/model_runner_v1.py` |
[vllm#41010](https://github.com/vllm-project/vllm/pull/41010) / #41011
changed `execute_model` | Unpack the new tuple on main only. |
| `tests/ut/test_misc.py` | No upstream PR | Removed a dead mock. |
"""


def test_table_rows_give_files_and_how(rules):
    changed = ["vllm_ascend/ops/rope.py", "vllm_ascend/patch/worker/patch_rope.py",
               "vllm_ascend/worker/model_runner_v1.py"]
    found = by_number(parse_adaptations("[Misc] Main2main upgrade vLLM to 0502", TABLE, DOWN, rules, changed))
    assert sorted(found) == [41001, 41010, 41011]
    assert found[41001].files == ["vllm_ascend/ops/rope.py", "vllm_ascend/patch/worker/patch_rope.py"]
    assert found[41001].how.startswith("Version-gated the import")
    assert found[41011].files == ["vllm_ascend/worker/model_runner_v1.py"]  # "#41011" continues the row
    assert found[41010].how == "Unpack the new tuple on main only."
    assert all(a.upstream == UP for a in found.values())


def test_table_row_split_by_a_blank_line_still_parses(rules):
    # a body cleaner that drops the lone "|" opening a wrapped row leaves a blank line inside the table
    lost = TABLE.replace("|------------------------|\n|\n", "|------------------------|\n\n")
    assert lost != TABLE
    found = by_number(parse_adaptations("main2main 0502", lost, DOWN, rules))
    assert found[41001].files == ["vllm_ascend/ops/rope.py", "vllm_ascend/patch/worker/patch_rope.py"]
    assert found[41010].how == "Unpack the new tuple on main only."


def test_per_file_headings_give_the_files(rules):
    body = ("##### 1.\n[`vllm_ascend/worker/block_table.py`](https://github.com/vllm-project/vllm-ascend/pull/9/files)\n\n"
            "| Change | Upstream change | Downstream adaptation | Why |\n| --- | --- | --- | --- |\n"
            "| Pass block sizes | [vLLM #40996](https://github.com/vllm-project/vllm/pull/40996) added two "
            "arguments | Pass both on main. | Signature changed. |\n")
    (a,) = parse_adaptations("[CI]main2main 0710", body, DOWN, rules)
    assert (a.number, a.files, a.how) == (40996, ["vllm_ascend/worker/block_table.py"], "Pass both on main.")


def test_bullet_list_of_upstream_urls(rules):
    body = ("Update main2main to vllm 0308.\nbreaks:\n\n"
            "* https://github.com/vllm-project/vllm/pull/35552 remove\nself.cudagraph_batch_sizes\n"
            "* https://github.com/vllm-project/vllm/pull/30681\n")
    found = by_number(parse_adaptations("[main2main] upgrade vllm to 0308", body, DOWN, rules))
    assert found[35552].how == "vllm#35552 remove self.cudagraph_batch_sizes"
    assert found[30681].how == ""  # a bare reference says nothing about how


def test_other_prs_need_an_adaptation_phrase(rules):
    caused = "Fix `SharedFusedMoE` import, caused by https://github.com/vllm-project/vllm/pull/26145"
    (a,) = parse_adaptations("[BugFix] Fix import", caused, DOWN, rules, ["vllm_ascend/ops/moe.py"])
    assert a.number == 26145 and "caused by vllm#26145" in a.how
    assert parse_adaptations("[Doc] FAQ", "See vllm#26145 for the discussion.", DOWN, rules) == []


def test_single_upstream_pr_takes_the_paths_the_body_names(rules):
    body = ("The main code change is in `vllm_ascend/ops/gdn.py`.\n\n"
            "Upstream vLLM PR https://github.com/vllm-project/vllm/pull/44700 changed the op interface.")
    (a,) = parse_adaptations("[Misc] main2main 0608", body, DOWN, rules, ["vllm_ascend/ops/gdn.py", "x.yaml"])
    assert a.files == ["vllm_ascend/ops/gdn.py"]


def test_bare_file_names_resolve_against_the_changed_paths(rules):
    body = "| File | Change Reason |\n|---|---|\n| `npu_ipc_engine.py` | Drop the gate (vllm #48981) |\n"
    (a,) = parse_adaptations("main2main v0.27.1", body, DOWN, rules,
                             ["vllm_ascend/distributed/weight_transfer/npu_ipc_engine.py"])
    assert a.files == ["vllm_ascend/distributed/weight_transfer/npu_ipc_engine.py"]


def test_only_configured_downstream_repositories(rules):
    assert parse_adaptations("main2main", TABLE, "verl-project/verl", rules) == []
    assert parse_adaptations("main2main", "", DOWN, rules) == []


def test_pairs_are_configuration(settings):
    settings.rules_dir = DATA / "rules"
    rules = load_ledger_rules(settings)
    assert [(p.upstream, p.downstream) for p in rules.pairs] == [("acme/infer", "acme/infer-npu")]
    (a,) = parse_adaptations("x", "Adapt to the rename in infer#7.", "acme/infer-npu", rules)
    assert (a.upstream, a.number) == ("acme/infer", 7)


# --- store, card, weekly ---------------------------------------------------------------------------

@pytest.fixture
def store(settings):
    settings.rules_dir = DATA / "rules"
    engine = open_store(settings)
    import_jsonl(settings, engine, sorted(DATA.glob("*.jsonl")))
    analyze(settings, engine)
    yield settings, engine
    engine.dispose()


def test_ledger_rows_in_the_store(store):
    _, engine = store
    assert ledger_size(engine) == 4  # #1840, #1845, #1846 from #900; #1850 from #901; not #1851 (a mention)
    (entry,) = adapted_in(engine, "acme/infer", 1840)
    assert (entry.down_ref, entry.files) == ("acme/infer-npu#900", ["infer_npu/attention/rope.py",
                                                                   "infer_npu/patch/patch_rope.py"])
    assert adapted_in(engine, "acme/infer", 1851) == []


def test_upstream_only_card(store):
    settings, engine = store
    inp = card_input(settings, engine, "acme/infer#1845")
    assert not inp.known and [e.down_number for e in inp.adapted] == [900]
    text = render_card(inp, "en")
    assert "known only from downstream adaptations" in text
    assert "[acme/infer-npu#900]" in text and "Unpack the tuple on main only." in text
    assert "Adaptation grade" not in text  # nothing is known about the upstream PR itself


def test_card_related_sections(store):
    settings, engine = store
    dup = card_input(settings, engine, "acme/infer-npu#905")
    assert [lk.ref for lk in dup.duplicates] == ["acme/infer-npu#903"]
    part = card_input(settings, engine, "acme/infer-npu#911")
    assert [lk.ref for lk in part.chain] == ["acme/infer-npu#910"]
    same = card_input(settings, engine, "acme/trainer#450")
    assert [lk.ref for lk in same.related] == ["acme/infer-npu#901"]
    text = render_card(same, "en")
    assert "Same mechanism elsewhere: [acme/infer-npu#901]" in text


def test_weekly_section_on_adapted_upstream_changes(store):
    settings, engine = store
    text = weekly(settings, engine, "acme/infer-npu", iso_week("2026-W32"), None).text
    assert "## 本周适配的上游变更" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("- [#901](https://github.com/acme/infer-npu/pull/901) "))
    assert "[acme/infer#1850](https://github.com/acme/infer/pull/1850)" in line  # both pull requests: /pull/N
    other = weekly(settings, engine, "acme/trainer", iso_week("2026-W32"), None).text
    assert "本周适配的上游变更" not in other


def test_relations_follow_rule_changes(store):
    settings, engine = store
    settings.rules_dir = None  # the packaged pair: vllm -> vllm-ascend, so nothing in this store
    analyze(settings, engine)
    assert ledger_size(engine) == 0


# --- real history ----------------------------------------------------------------------------------

def test_ledger_from_real_history_has_enough_links(shared_data, rules):
    links = set()
    for rec in export_commits("vllm-project+vllm-ascend.jsonl.gz"):
        for a in parse_adaptations(rec["subject"], rec["body"], DOWN, rules):
            links.add((a.number, rec["subject"]))
    assert len(links) >= 50


def test_show_an_upstream_pr_known_only_downstream(shared_data, tmp_path):
    # the commits that mention the PR, exported as a smaller history (read at test time, not copied)
    src = shared_data / "git" / "vllm-project+vllm-ascend.jsonl.gz"
    out = tmp_path / "ascend.jsonl"
    with gzip.open(src, "rt", encoding="utf-8") as fh, out.open("w", encoding="utf-8") as dst:
        for i, line in enumerate(fh):
            if i == 0 or "47288" in line:
                dst.write(line)
    runner = CliRunner()
    assert runner.invoke(main, ["import-jsonl", str(out)]).exit_code == 0
    result = runner.invoke(main, ["show", "vllm-project/vllm#47288", "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert "vllm-project/vllm-ascend#14027" in result.output
    assert "npu_communicator.py" in result.output
