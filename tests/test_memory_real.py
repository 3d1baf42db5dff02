"""The team's three mornings in sequence on the store of all shared history: the 07-03 and 07-04 radars recheck
verl#6901 against its merge commit and files, neither deep-dives what an earlier morning deep-dived, the watch
list carries verl#6901 from 07-02, and a rerun of 07-03 changes no record and writes the same radar."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.store.schema import carry_dropped, published_items, published_radars

from .conftest import published_rows

WINDOWS = {"2026-07-02": ("2026-06-29T02:00Z", "2026-07-02T02:12Z"),
           "2026-07-03": ("2026-07-02T02:12Z", "2026-07-03T02:00Z"),
           "2026-07-04": ("2026-07-03T02:00Z", "2026-07-04T02:00Z")}
PR = "verl-project/verl#6901"
STAMP = re.compile(r"^- 生成时间：.*$", re.M)


def radar(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _forget(url: str) -> None:
    """The session's store is shared: its published records are this module's only while it runs."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        for table in (published_items, published_radars, carry_dropped):
            conn.execute(table.delete())
    engine.dispose()


@pytest.fixture(scope="module")
def mornings(full_store, tmp_path_factory):
    home, url = full_store
    out = tmp_path_factory.mktemp("memory") / "out"
    _forget(url)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.setenv("RADAR_DB_URL", url)
        texts = {}
        for day, (since, until) in WINDOWS.items():
            path = Path(radar("daily", "--since", since, "--until", until, "--out", str(out)).strip())
            texts[day] = path.read_text(encoding="utf-8")
        listed = radar("watch", "list")
        before = published_rows(url)
        since, until = WINDOWS["2026-07-03"]
        again = Path(radar("daily", "--since", since, "--until", until, "--out", str(out)).strip())
        yield {"texts": texts, "listed": listed, "before": before, "after": published_rows(url),
               "again": again.read_text(encoding="utf-8")}
    _forget(url)


def section(text: str, heading: str) -> str:
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_later_mornings_recheck_6901_against_its_merge_commit_and_files(mornings):
    for day in ("2026-07-03", "2026-07-04"):
        recheck = section(mornings["texts"][day], "跟踪项复核")
        line = next(ln for ln in recheck.splitlines() if f"[{PR}]" in ln)
        assert "已合并（`561a4b0`）" in line and "6 个文件：`verl/models/mcore/model_forward.py`" in line, line
        assert "来自 2026-07-02（深入、P0）" in line, line
        assert not line.endswith("…")


def test_no_morning_deep_dives_what_an_earlier_one_did(mornings):
    seen: set[str] = set()
    for day in WINDOWS:
        deep = set(re.findall(r"^### \[([^\]]+)\]", section(mornings["texts"][day], "重点机制"), re.M))
        assert deep and not deep & seen, (day, deep & seen)
        seen |= deep
    assert PR in re.findall(r"^### \[([^\]]+)\]", section(mornings["texts"]["2026-07-02"], "重点机制"), re.M)


def test_no_morning_deep_dives_the_same_change_elsewhere(mornings):
    """A backport or pick of a change an earlier morning deep-dived (its row says 同一变更：#6886 原始、#6881 回合)
    is named in that change's recheck, not deep-dived again: 07-03 does not deep-dive verl#6881."""
    followed: set[str] = set()
    for day in WINDOWS:
        text = mornings["texts"][day]
        deep = set(re.findall(r"^### \[([^\]]+)\]", section(text, "重点机制"), re.M))
        assert not deep & followed, (day, deep & followed)
        for ref in deep:
            repo = ref.split("#")[0]
            row = next((ln for ln in section(text, "P0 / P1").splitlines() if f"[{ref}]" in ln), "")
            same = row.split("同一变更：", 1)[1].split("|", 1)[0] if "同一变更：" in row else ""
            followed |= {ref, *(f"{repo}#{n}" for n in re.findall(r"#(\d+)", same))}
    assert "verl-project/verl#6881" in followed


def test_the_scope_says_what_changed_since_the_last_radar(mornings):
    texts = mornings["texts"]
    new = re.search(r"^- 此前没有已发布的雷达：本期 (\d+) 项均为新增（入选 (\d+) 项、下游 (\d+) 项）$", texts["2026-07-02"], re.M)
    assert new and int(new[1]) == int(new[2]) + int(new[3])  # the parts the scope line counts add up
    for day, last in (("2026-07-03", "2026-07-02"), ("2026-07-04", "2026-07-03")):
        assert re.search(rf"^- 自上次雷达（{last}）：新增 \d+ 项，跟踪项状态变化 \d+ 项，停止跟踪 \d+ 项$", texts[day],
                         re.M), day
        # the rechecks the scope line counts are the ones the recheck section shows
        said = re.search(r"复核跟踪项 (\d+) 项", texts[day])
        shown = section(texts[day], "跟踪项复核")
        entries = 0 if "没有跟踪项" in shown else len(re.findall(r"^(?:- |### )", shown, re.M))
        assert said and int(said[1]) == entries, (day, said, entries)


def test_the_watch_list_carries_6901_from_the_first_morning(mornings):
    assert f"{PR}\tmerged\tcarried from 2026-07-02 (deep dive, P0)" in mornings["listed"].splitlines()


def test_a_rerun_of_a_morning_changes_no_record_and_writes_the_same_radar(mornings):
    assert mornings["after"] == mornings["before"]
    assert STAMP.sub("", mornings["again"]) == STAMP.sub("", mornings["texts"]["2026-07-03"])
