"""End to end on real history from ../shared/data: import, export, weekly, daily, show, replica parity."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main

from .conftest import SHARED, TEST_DB_URL, _fresh_schema, export_commits

ASCEND = "vllm-project+vllm-ascend.jsonl.gz"
SINCE, UNTIL = datetime(2026, 7, 27, tzinfo=UTC), datetime(2026, 8, 3, tzinfo=UTC)
DAILY_ZH = ["## 扫描范围", "## P0 / P1", "## 重点机制", "## 跟踪项复核", "## 简表", "## 验证清单", "## 参考链接"]
DAILY_EN = ["## Scope", "## P0 / P1", "## Deep dives", "## Tracked items", "## Short table",
            "## Verification checklist", "## References"]


def radar(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.stdout if args[0] == "export" else result.output  # an export's data is its stdout (a long one says its progress on stderr)


def expected_window(name: str) -> dict[int, set[tuple[str, int | None, int | None]]]:
    """PR number -> its files, for the squash commits committed in [SINCE, UNTIL), read straight from the export."""
    found = {}
    for rec in export_commits(name):
        when = datetime.fromisoformat(rec["committed_at"]).astimezone(UTC)
        number = re.findall(r"\(#(\d+)\)", rec["subject"])
        if SINCE <= when < UTC_until() and number and rec["subject"].rstrip().endswith(")"):
            found[int(number[-1])] = {(f["path"], f["additions"], f["deletions"]) for f in rec["files"]}
    return found


def UTC_until() -> datetime:  # noqa: N802 - reads as the constant it stands for
    return UNTIL


def export_window(repo: str = "vllm-project/vllm-ascend") -> list[dict]:
    return json.loads(radar("export", "--format", "json", "--repo", repo, "--since", "2026-07-27",
                            "--until", "2026-08-03"))


@pytest.fixture(scope="module")
def ascend_store(tmp_path_factory) -> dict[str, str]:
    """One store holding the vllm-ascend history, imported and analysed once for the module's tests that
    only read it (each would otherwise spend ~10 s importing and analysing 4,776 items)."""
    if not (SHARED / "git").is_dir():
        pytest.skip("../shared/data is not available")
    env = {"RADAR_HOME": str(tmp_path_factory.mktemp("ascend") / "home")}
    if TEST_DB_URL:
        env["RADAR_DB_URL"] = _fresh_schema(f"{__name__}-ascend")
    with pytest.MonkeyPatch.context() as mp:
        for var, value in env.items():
            mp.setenv(var, value)
        radar("import-jsonl", str(SHARED / "git" / ASCEND))
        radar("analyze")
    return env


@pytest.fixture
def ascend(ascend_store, monkeypatch) -> Path:
    """The shared vllm-ascend store as this test's store (tests using it must not change it)."""
    for var, value in ascend_store.items():
        monkeypatch.setenv(var, value)
    return SHARED / "git" / ASCEND


def test_export_window_is_exactly_the_squash_commits(ascend):
    expected = expected_window(ASCEND)
    data = export_window()
    got = {d["number"]: {(f["path"], f["additions"], f["deletions"]) for f in d["files"]} for d in data}
    assert len(expected) == 90 and got == expected
    sample = data[0]
    for key in ("repo", "number", "kind", "state", "title", "url", "author", "created_at", "merged_at",
                "closed_at", "files", "item_kind", "topics", "priority", "importance", "insight", "grade",
                "grade_reason", "decision", "risk_labels", "perf_claims", "links", "summary"):
        assert key in sample, key
    again = radar("import-jsonl", str(ascend))
    assert "0 new, 0 updated" in again
    assert export_window() == data


def test_weekly_states_the_merged_count_in_both_languages(ascend):
    zh = radar("weekly", "--repo", "vllm-project/vllm-ascend", "--since", "2026-07-27", "--until", "2026-08-03")
    en = radar("weekly", "--repo", "vllm-project/vllm-ascend", "--since", "2026-07-27", "--until", "2026-08-03",
               "--lang", "en")
    assert re.search(r"合并 PR[:：]\s*90", zh), zh[:500]
    assert re.search(r"[Mm]erged PRs?[:：]?\s*90", en), en[:500]
    for heading in ("## 执行摘要", "## 本周重点变化", "## 模块与主题趋势", "## 风险观察", "## 重点 PR 速览", "## 后续建议"):
        assert heading in zh
    for heading in ("## Executive summary", "## Key changes", "## Trends", "## Risks", "## Key PRs",
                    "## Recommendations"):
        assert heading in en


def test_show_reports_the_authors_figures(ascend):
    card = radar("show", "vllm-project/vllm-ascend#7756", "--lang", "en")
    for figure in ("1048.64", "978.58", "162.26", "164.67", "1008.81", "163.60"):
        assert figure in card
    data = json.loads(radar("show", "vllm-project/vllm-ascend#7756", "--json"))
    claims = {(c["metric"], c["before"], c["after"]) for c in data["perf_claims"]}
    assert ("TTFT", 1048.64, 978.58) in claims and ("TPS", 162.26, 164.67) in claims
    tests = [f["path"] for f in data["files"] if f["path"].startswith("tests/")]
    assert len(tests) == 3


def test_daily_ranks_a_real_perf_change(shared_data):
    git_dir = shared_data / "git"
    radar("import-jsonl", str(git_dir / "verl-project+verl.jsonl.gz"),
          str(git_dir / "verl-project+verl@release+v0.8.0.jsonl.gz"), str(git_dir / "THUDM+slime.jsonl.gz"),
          str(git_dir / "ByteDance-Seed+VeOmni.jsonl.gz"))
    zh = radar("daily", "--since", "2026-06-29T02:00Z", "--until", "2026-07-02T02:12Z")
    positions = [zh.index(h) for h in DAILY_ZH]
    assert positions == sorted(positions)
    top = zh[zh.index("## P0 / P1"):zh.index("## 重点机制")]
    assert "verl-project/verl#6901" in top
    en = radar("daily", "--since", "2026-06-29T02:00Z", "--until", "2026-07-02T02:12Z", "--lang", "en")
    assert [h in en for h in DAILY_EN] == [True] * 7


@pytest.fixture(scope="module")
def replica(tmp_path_factory, request) -> Path:
    if not (SHARED / "git").is_dir():
        pytest.skip("../shared/data is not available")
    dest = tmp_path_factory.mktemp("replica") / "ascend"
    tool = SHARED.parent / "tools" / "replica_repo.py"
    subprocess.run([sys.executable, str(tool), str(SHARED / "git" / ASCEND), str(dest)], check=True,
                   stdout=subprocess.DEVNULL)
    return dest


def test_replica_through_git_gives_the_same_window(ascend, replica, tmp_path, monkeypatch):
    from_jsonl = {d["number"]: d for d in export_window()}
    monkeypatch.setenv("RADAR_HOME", str(tmp_path / "git-home"))
    if TEST_DB_URL:  # a store of its own, not the shared one
        monkeypatch.setenv("RADAR_DB_URL", _fresh_schema(f"{__name__}-replica-git"))
    else:
        monkeypatch.delenv("RADAR_DB_URL", raising=False)
    radar("import-git", str(replica), "--repo", "vllm-project/vllm-ascend", "--branches", "main")
    from_git = {d["number"]: d for d in export_window()}
    assert sorted(from_git) == sorted(from_jsonl)
    mode_only = 0
    for number, item in from_git.items():
        # a 0/0 entry is a mode-only change (chmod +x); the replica writes every file 100644 and cannot
        # reproduce it, so git rightly reports nothing for it there
        expected = {f["path"] for f in from_jsonl[number]["files"] if (f["additions"], f["deletions"]) != (0, 0)}
        mode_only += len(from_jsonl[number]["files"]) - len(expected)
        assert {f["path"] for f in item["files"]} - {f["path"] for f in from_jsonl[number]["files"]} == set()
        assert expected <= {f["path"] for f in item["files"]}, number
    assert mode_only <= 3
    same_counts = sum(item["files"] == from_jsonl[n]["files"] for n, item in from_git.items())
    assert same_counts >= 0.97 * len(from_git)


def test_export_objects_carry_the_same_links_as_the_cards(ascend):
    """The export is the card in JSON: every relation the card shows (items referencing it, duplicates,
    chain parts, same-mechanism items, adaptations) is in the export object too."""
    from infra_radar.config import load_settings
    from infra_radar.pipeline.card import card_input
    from infra_radar.pipeline.home import open_store
    from infra_radar.render.markdown import card_json

    data = export_window()
    settings = load_settings()
    engine = open_store(settings)
    # every object with a relation beyond its own references (the links the card works out from the
    # rest of the store) and a few plain ones; a card takes ~0.7 s, so not all 90
    related = [obj for obj in data if {link["kind"].split(":")[0] for link in obj["links"]} - {"references", "url"}]
    plain = [obj for obj in data if obj not in related][:4]
    assert len(related) >= 10
    for obj in related + plain:
        assert card_json(card_input(settings, engine, f"{obj['repo']}#{obj['number']}")) == obj
    kinds = {link["kind"].split(":")[0] for obj in data for link in obj["links"]}
    assert {"referenced-by", "duplicate", "references"} <= kinds
