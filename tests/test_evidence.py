"""Evidence records: every templated statement about an item rests on a record {statement, source, field, text,
rule}; no record, no statement. `radar show ITEM --evidence`, the export's `evidence` and the weekly's risks."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.models import AnalysedItem, Analysis, FileChange, Item
from infra_radar.render.evidence import item_evidence, risk_evidence, stated_risks
from infra_radar.render.weekly_risks import find, removed

TEAM = ("2026-06-29T02:00Z", "2026-07-02T02:12Z")


def _item(title: str, body: str = "", risks: tuple[str, ...] = (), kind: str = "feature") -> AnalysedItem:
    when = datetime(2026, 7, 1, tzinfo=UTC)
    item = Item(repo="acme/engine", kind="pr", key="3", number=3, title=title, body=body, created_at=when,
                merged_at=when, updated_at=when, files=[FileChange("engine/core/sched.py", 40, 10)], source="jsonl")
    return AnalysedItem(item, Analysis(item_kind=kind, risk_labels=list(risks)))


@pytest.mark.no_store
@pytest.mark.parametrize("body", [
    "Adds `--decode-first`; the new option is off by default.",
    "Adds a decode-first policy, disabled by default, so existing deployments are unchanged.",
    "The new `decode_first` flag defaults to False.",
    "The default value of `do_virtual` is `False`, so existing deployments behave as before.",
])
def test_a_new_option_off_by_default_is_no_default_change(body):
    ai = _item("Add a decode-first scheduling policy", body, ("new-default",))
    assert risk_evidence(ai, "new-default") is None
    assert "new-default" not in stated_risks(ai)
    assert find([ai]).defaults == []  # the weekly lists no default change for it


@pytest.mark.no_store
def test_a_default_moved_from_false_is_a_default_change():
    ai = _item("Enable prefix caching", "We changed the default of `prefix_cache` from False to True.", ("new-default",))
    assert risk_evidence(ai, "new-default") is not None


@pytest.mark.no_store
def test_a_changed_default_has_its_sentence():
    ai = _item("Schedule decode first", "The scheduler now defaults to decode-first under memory pressure.",
               ("new-default",))
    record = risk_evidence(ai, "new-default")
    assert record is not None and record.field == "body" and "now defaults" in record.text
    assert record.rule == "risks.toml:new-default" and record.source == "jsonl"
    assert find([ai]).defaults == [ai]


@pytest.mark.no_store
def test_a_removal_of_something_of_an_identifier_is_not_the_identifier_removed():
    # a downcast is removed, not `e_correction_bias`: nothing a downstream could depend on is gone
    assert removed(_item("Remove downcast of e_correction_bias in the router", kind="bugfix")) is None
    assert removed(_item("Upgrade decode performance; Remove e_correction_bias downcast", kind="bugfix")) is None
    assert str(removed(_item("Remove the e_correction_bias argument", kind="bugfix"))) == "`e_correction_bias`"
    assert str(removed(_item("Drop the legacy `--swap-space` flag", kind="bugfix"))) == "`--swap-space`"


@pytest.mark.no_store
def test_every_record_of_an_invented_item_is_complete():
    body = ("## Motivation\n\nThe worker hangs when the queue is full.\n\n## Change\n\n"
            "Adds `--drain-first`, which needs SM89+ on GPUs. Latency 120 ms vs the baseline 150 ms.\n")
    records = item_evidence(_item("Drain the queue first", body, ("core-path",), kind="bugfix"), "en", "ascend")
    rules = [r.rule for r in records]
    assert any(r.startswith("conclusions.toml") for r in rules)  # the cause, with its sentence
    assert any(r == "claims_figures.toml:reference" for r in rules)
    assert all(r.statement and r.text and r.rule and r.source and r.field for r in records)
    cause = next(r for r in records if r.rule.startswith("conclusions.toml"))
    assert cause.text == "The worker hangs when the queue is full."


# --------------------------------------------------------------------------- the team's day, real data


def _radar(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout if args[0] == "export" else result.output  # an export's data is its stdout (a long one says its progress on stderr)


@pytest.fixture(scope="module")
def team_day(full_store):
    home, url = full_store
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.setenv("RADAR_DB_URL", url)
        reports = {lang: _radar("daily", "--since", TEAM[0], "--until", TEAM[1], "--lang", lang)
                   for lang in ("zh", "en")}
        refs = sorted({m for text in reports.values()
                       for m in re.findall(r"^### \[([\w.-]+/[\w.-]+#\d+)\]", text, re.M)}
                      | {m for text in reports.values()
                         for m in re.findall(r"^- \[([\w.-]+/[\w.-]+#\d+)\]\([^)]*\)[：:]", text, re.M)})
        evidence = {(ref, lang): json.loads(_radar("show", ref, "--evidence", "--json", "--lang", lang))
                    for ref in refs for lang in ("zh", "en")}
        exported = json.loads(_radar("export", "--since", TEAM[0], "--until", TEAM[1]))
        text = _radar("show", "verl-project/verl#6907", "--evidence")
    return reports, evidence, exported, text


def _bare(s: str) -> str:
    return re.sub(r"[`\\*]", "", " ".join(s.split()))


@pytest.mark.one_store
def test_every_deep_dive_and_checklist_step_of_the_team_day_has_records(team_day):
    reports, evidence, _, _ = team_day
    assert evidence, "no deep dives or checklist items found"
    for (ref, lang), records in evidence.items():
        assert records, f"{ref} ({lang}): no evidence records"
        for r in records:
            assert set(r) == {"statement", "source", "field", "text", "rule"}
            assert r["statement"] and r["text"] and r["rule"], (ref, r)
        stated = {_bare(r["statement"]) for r in records}
        text = reports[lang]
        section = text.split("\n## 验证清单\n" if lang == "zh" else "\n## Verification checklist\n", 1)[1]
        section = section.split("\n## ", 1)[0]
        for line in section.splitlines():
            if f"[{ref}]" not in line:
                continue
            steps = re.split(r"；|; (?=[A-Z])", line.split(")：", 1)[-1].split("): ", 1)[-1])
            for step in steps:
                assert _bare(step) in stated, f"{ref} ({lang}): checklist step without a record: {step}"
        for kind, word in (("conclusions.toml", "起因：" if lang == "zh" else "Why: "),):
            dive = text.split(f"### [{ref}]", 1)[1].split("\n### ", 1)[0] if f"### [{ref}]" in text else ""
            if word in dive:  # a cause stated in the dive rests on a sentence
                assert any(r["rule"].startswith(kind) for r in records), (ref, lang)


@pytest.mark.one_store
def test_every_stated_boundary_and_risk_of_the_team_day_has_a_record(team_day):
    _, _, exported, _ = team_day
    assert exported
    for obj in exported:
        rules = [r["rule"] for r in obj["evidence"]]
        assert obj["evidence"], obj["repo"]
        for rid in obj["risk_labels"]:
            if any(r.startswith(f"risks.toml:{rid}") for r in rules):
                continue
            # a label the analysis set without a sentence saying it: never stated (the card omits it)
            assert rid in ("new-default", "breaking", "external-dependency", "silent-accuracy"), (obj["number"], rid)


@pytest.mark.one_store
def test_show_evidence_lists_the_error_bound_with_its_sentence(team_day):
    text = team_day[3]
    assert "max abs error 4.8828125e-4" in text
    assert "rule: claims_figures.toml:bound · source: page · field: body" in text
    assert "matched the torch reference" in text  # the sentence it rests on


@pytest.mark.no_store
def test_a_recheck_marks_the_newest_state_as_the_table_does():
    from infra_radar.render.base import load_strings
    from infra_radar.render.inputs import WatchRecheck
    from infra_radar.render.recheck import recheck_views

    t = load_strings("zh")
    w = WatchRecheck("acme/engine#7", "https://github.com/acme/engine/pull/7", "Fuse the kernel", "open", "open", None,
                     False, [], origin_day="2026-07-02", reasons=["deep"], last_day="2026-07-02", later_state="closed")
    shown = " ".join(str(v) for view in recheck_views([w], t) for v in view.values())
    assert "页面保存时已关闭" in shown


@pytest.mark.no_store
def test_a_huge_description_gives_bounded_records_of_sentences():
    from infra_radar.config import rule_data

    bounds = rule_data("dives").get("evidence", {"records": 60, "figures": 12, "text_chars": 320})
    unit = ("The worker hangs when the queue is full. Throughput 1200 tok/s vs 1000 tok/s baseline on 8 GPUs. "
            "Set `VLLM_FAST=1` to enable; the default is now on. ")
    sizes = {}
    for n in (100, 2000):  # 15 KB and 300 KB, one line
        records = item_evidence(_item("Speed up decode", unit * n, ("new-default",)), "en", "ascend")
        sizes[n] = (len(records), sum(len(r.text) for r in records))
        assert len(records) <= bounds["records"]
        assert sum(r.rule.startswith(("claims", "claims_figures")) for r in records) <= bounds["figures"]
        for r in records:
            assert len(r.text) <= bounds["text_chars"] and not r.text.endswith(("…", "..."))
        figure = next(r for r in records if r.rule.startswith("claims_figures"))
        assert figure.text == "Throughput 1200 tok/s vs 1000 tok/s baseline on 8 GPUs."
        assert figure.field == "body (excerpt)"
    assert sizes[100] == sizes[2000]  # what is kept does not grow with the description


@pytest.mark.no_store
def test_an_excerpt_of_one_long_sentence_is_cut_at_words_around_what_it_rests_on():
    from infra_radar.render.evidence import excerpt

    text = "word " * 5000 + "speedup 1.8x vs baseline " + "more " * 5000
    cut, marked = excerpt(text, "1.8x vs baseline", 120)
    assert marked and "1.8x vs baseline" in cut and len(cut) <= 120
    assert not cut.startswith("ord") and set(cut.split()) <= {"word", "speedup", "1.8x", "vs", "baseline", "more"}
    assert excerpt("Short sentence.", "x", 120) == ("Short sentence.", False)
