"""Numbers that add up: every count in a report is the sum of its parts, on every daily of the shared history's
last 30 days and every weekly of 2026-W27..W33 (all shared history and pages, rules only, one store, rendered
in-process)."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest
from click.testing import CliRunner

from infra_radar.cli import main

pytestmark = pytest.mark.one_store

LAST_DAY = date(2026, 8, 22)  # the newest commit of the shared history
DAYS = [LAST_DAY - timedelta(days=i) for i in range(30)]
WEEKS = [f"2026-W{w}" for w in range(27, 34)]
REPOS = ["ByteDance-Seed/VeOmni", "THUDM/slime", "verl-project/verl", "verl-project/verl-omni", "vllm-project/vllm",
         "vllm-project/vllm-ascend", "vllm-project/vllm-omni"]


def _radar(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def reports(full_store) -> tuple[dict[str, str], dict[str, str]]:
    home, url = full_store
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.setenv("RADAR_DB_URL", url)
        dailies = {str(d): _radar(runner, "daily", "--since", f"{d}T00:00Z", "--until", f"{d + timedelta(days=1)}T00:00Z")
                   for d in DAYS}
        weeklies = {f"{repo} {week}": _radar(runner, "weekly", "--week", week, "--repo", repo)
                    for week in WEEKS for repo in REPOS}
    return dailies, weeklies


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0] if f"\n## {heading}\n" in text else ""


def _n(pattern: str, text: str) -> list[int]:
    m = re.search(pattern, text)
    return [int(g) for g in m.groups()] if m else []


def test_every_daily_count_is_the_sum_of_its_parts(reports):
    dailies, _ = reports
    for day, text in dailies.items():
        check_daily(day, text)
    assert len(dailies) == 30


def check_daily(day: str, text: str) -> None:
    scope = _section(text, "扫描范围")
    scanned, ranked, p0, p1, p2 = _n(r"扫描 (\d+) 项，入选 (\d+) 项（P0 (\d+) · P1 (\d+) · P2 (\d+)）", scope)
    assert p0 + p1 + p2 == ranked <= scanned, (day, scope)
    # the tables and the "not listed" line hold every ranked item once
    top = [ln for ln in _section(text, "P0 / P1").splitlines() if ln.startswith("| P")]
    short = _section(text, "简表")
    rows = [ln for ln in short.splitlines() if ln.startswith("| P")]
    rest = sum(int(x) for x in re.findall(r"P\d (\d+) 项", re.search(r"另有 (.*?) 未列出", short).group(1))) \
        if "未列出" in short else 0
    by_repo = re.search(r"未列出（(.*?)）", short)
    if by_repo:
        assert rest == sum(int(x) for x in re.findall(r" (\d+)(?:、|$)", by_repo.group(1))), (day, short)
    assert len(top) + len(rows) + rest == ranked, (day, len(top), len(rows), rest, ranked)
    # deep dives and rechecks as counted in the scope line
    dived, rechecked = _n(r"本轮深入 (\d+) 项，复核跟踪项 (\d+) 项", scope)
    assert dived == _section(text, "重点机制").count("\n### ") + _section(text, "重点机制").startswith("### "), day
    recheck = _section(text, "跟踪项复核")
    assert rechecked == (0 if "没有跟踪项" in recheck else len(re.findall(r"^(?:- |### )", recheck, re.M))), day
    # the downstream section counts the items the scope line sets apart, and each split sums to them
    down = _n(r"下游 (\d+) 项另列", scope)
    section = _section(text, "下游进展")
    if down:
        line = re.search(r"窗口内 (\d+) 项：(.*?)（(.*?)）。", section)
        assert line, (day, section)
        total = int(line.group(1))
        assert total == down[0], (day, total, down)
        assert sum(int(x) for x in re.findall(r"(\d+)", line.group(2))) == total, (day, line.group(0))
        assert sum(int(x) for x in re.findall(r"(?:P\d|不入选) (\d+)", line.group(3))) == total, (day, line.group(0))
        listed = len(re.findall(r"^- \[", section, re.M))
        more = _n(r"其余 (\d+) 项", section)
        assert listed + (more[0] if more else 0) == total, (day, listed, more, total)
    # what is new is the items the scope line counts
    new = re.search(r"本期 (\d+) 项均为新增（入选 (\d+) 项、下游 (\d+) 项）", scope)
    if new:
        k, up, dn = (int(g) for g in new.groups())
        assert up + dn == k and up == ranked, (day, new.group(0))


def test_every_weekly_count_is_the_sum_of_its_parts(reports):
    _, weeklies = reports
    for name, text in weeklies.items():
        check_weekly(name, text)


def check_weekly(name: str, text: str) -> None:
    head = text.splitlines()[2] if len(text.splitlines()) > 2 else ""
    merged = _n(r"合并 PR：(\d+)", head)
    said = _n(r"本周合并 (\d+) 个 PR", text)
    if merged and said:
        assert merged == said, (name, head)
    # "N 个核心路径改动没有带测试（#a、#b 等另 k 个）": the refs shown and the rest make N
    for m in re.finditer(r"(\d+) 个核心路径改动没有带测试（(.*?)）", text):
        refs = len(re.findall(r"#\d+", re.sub(r"\]\([^)]*\)", "]", m.group(2))))
        more = _n(r"等另 (\d+) 个", m.group(2))
        assert refs + (more[0] if more else 0) == int(m.group(1)), (name, m.group(0))
    # a story's "本周 N 个 PR" names N PRs (directly, in groups, or "另有 k 项")
    for m in re.finditer(r"^本周 (\d+) 个 PR（上周 \d+ 个）[^：\n]*：(.*)$", text, re.M):
        body = re.sub(r"\([^()]*\)", "", re.sub(r"\]\([^)]*\)", "]", m.group(2)))  # a title's "(from #N)"
        refs = len(set(re.findall(r"#\d+", body)))
        more = _n(r"另有 (\d+) 项", body)
        assert refs + (more[0] if more else 0) == int(m.group(1)), (name, m.group(0))
