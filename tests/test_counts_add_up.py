"""Numbers that add up: every total a report states is the sum of the parts it states beside it.

Read off the rendered Markdown (zh and en) of every daily of the shared history's last 30 days and every weekly
of 2026-W27..W33 of each repository: the scope line's priorities and downstream total, the "all new" count, the
downstream section's states and priorities, the rows of the two tables with what the short table leaves out,
the weekly's mix of kinds against its merged PRs and direct commits, and its key PRs against the quick view.
The dailies are built once per window and rendered in both languages in-process (no run is recorded, nothing
is published); the store is the session's (conftest.full_store). The since-last line's tracked counts are
checked on crafted rechecks (tests without memory have none).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from infra_radar.render.inputs import DailyInput, SinceLast, WatchRecheck

from .conftest import opened_full_store
from .report_checks import table_rows

DAYS = [datetime(2026, 7, 23, tzinfo=UTC) + timedelta(days=i) for i in range(30)]  # the history ends 08-21/22
# every calendar day of the last 30, and the team's three mornings (with the 24 pages)
WINDOWS = [(d, d + timedelta(days=1)) for d in DAYS] + [
    (datetime(2026, 6, 29, 2, tzinfo=UTC), datetime(2026, 7, 2, 2, 12, tzinfo=UTC)),
    (datetime(2026, 7, 2, 2, 12, tzinfo=UTC), datetime(2026, 7, 3, 2, 11, 27, tzinfo=UTC)),
    (datetime(2026, 7, 3, 2, 11, 27, tzinfo=UTC), datetime(2026, 7, 4, 2, 14, tzinfo=UTC))]
WEEKS = [f"2026-W{n}" for n in range(27, 34)]
LANGS = ("zh", "en")

PAT = {
    "zh": {
        "counts": re.compile(r"^- 条目：扫描 (\d+) 项，入选 (\d+) 项（([^）]*)）(?:；下游 (\d+) 项另列)?$", re.M),
        "all_new": re.compile(r"入选的 (\d+) 项均为新增"),
        "down": re.compile(r"^- \S+：窗口内 (\d+) 项（([^）]*)）(?:；入选 (\d+) 项（([^）]*)）(?:，未入选 (\d+) 项)?|；无入选项)。$",
                           re.M),
        "down_more": re.compile(r"^- 其余 (\d+) 项见站点或导出。$", re.M),
        "short_more": re.compile(r"^另有 (.+) 未列出（(.+)），见站点或导出。$", re.M),
        "limit": re.compile(r"本轮深入 (\d+) 项"),
        "head": re.compile(r"合并 PR：(\d+)(?:（另有直接提交 (\d+) 个）)? · 重点 PR：(\d+)"),
        "mix": re.compile(r"^- 结构：(.+?)(?:；|$)", re.M),
        "quick_more": re.compile(r"^\d+\. 另有 (\d+) 个重点 PR", re.M),
        "quick_others": re.compile(r"^本周没有 P0/P1 的重点 PR；以下是其余 (\d+) 个", re.M),
        "sections": ("P0 / P1", "简表", "重点机制", "下游进展", "重点 PR 速览"),
        "theme": re.compile(r"^### \d+\. .*（(\d+)）\n\n(.*)$", re.M),
        "theme_count": re.compile(r"^本周 (\d+) 个 PR"),
        "untested": re.compile(r"(\d+) 个核心路径改动没有带测试（(.*?)）(?:。|；|$)", re.M),
        "and_more": re.compile(r" 等另 (\d+) 个$"),
    },
    "en": {
        "counts": re.compile(r"^- Items: (\d+) scanned, (\d+) ranked \(([^)]*)\)(?:; (\d+) downstream items apart)?$",
                             re.M),
        "all_new": re.compile(r"all (\d+) ranked items are new"),
        "down": re.compile(r"^- \S+: (\d+) in the window \(([^)]*)\)(?:; (\d+) ranked \(([^)]*)\)(?:, (\d+) not ranked)?"
                           r"|; none ranked)\.$", re.M),
        "down_more": re.compile(r"^- (\d+) more in the site or the export\.$", re.M),
        "short_more": re.compile(r"^(.+) more not listed \((.+)\); see the site or the export\.$", re.M),
        "limit": re.compile(r"; (\d+) deep dives this run"),
        "head": re.compile(r"merged PRs: (\d+)(?: \(direct commits: (\d+)\))? · key PRs: (\d+)"),
        "mix": re.compile(r"^- Mix: (.+?)(?:; |$)", re.M),
        "quick_more": re.compile(r"^\d+\. (\d+) more key PRs", re.M),
        "quick_others": re.compile(r"^No key \(P0/P1\) PR this week; the first of the (\d+) other", re.M),
        "sections": ("P0 / P1", "Short table", "Deep dives", "Downstream", "Key PRs"),
        "theme": re.compile(r"^### \d+\. .* \((\d+)\)\n\n(.*)$", re.M),
        "theme_count": re.compile(r"^(\d+) PRs this week"),
        "untested": re.compile(r"(\d+) core-path changes came without tests \((.*?)\)(?:\.|;|$)", re.M),
        "and_more": re.compile(r" and (\d+) more$"),
    },
}


def numbers(text: str) -> list[int]:
    """The counts of a list of parts ("P0 4 · P1 8", "已合并 59 · 已发布 1", "59 merged · 1 published"): the
    number of each part."""
    return [int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.%])", text)]


def section(text: str, heading: str) -> str:
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0] if f"## {heading}\n" in text else ""


@pytest.fixture(scope="module")
def settings_engine(full_store):

    with opened_full_store(full_store) as opened:
        yield opened


@pytest.fixture(scope="module")
def dailies(settings_engine) -> dict[tuple[str, str], str]:
    """Every day's daily radar, each window's input built once and rendered in both languages."""
    from infra_radar.models import Window
    from infra_radar.pipeline.memory import Memory
    from infra_radar.pipeline.radar import daily_radar
    from infra_radar.pipeline.reports import report_repos
    from infra_radar.render.markdown import render_daily

    settings, engine = settings_engine
    names = report_repos(settings, engine, None)
    memory = Memory.load(settings, engine)
    out = {}
    for since, until in WINDOWS:
        inp = daily_radar(settings, engine, Window(since, until), names, explicit=True, memory=memory).input
        for lang in LANGS:
            out[(f"{since:%Y-%m-%dT%H:%M}", lang)] = render_daily(inp, lang, focus_weights=settings.focus_weights)
    return out


@pytest.fixture(scope="module")
def weeklies(settings_engine) -> dict[tuple[str, str, str], str]:
    from infra_radar.pipeline.reports import weekly_input
    from infra_radar.render.markdown import render_weekly
    from infra_radar.store import queries
    from infra_radar.windows import iso_week

    settings, engine = settings_engine
    out = {}
    for repo in queries.repo_names(engine):
        for week in WEEKS:
            inp = weekly_input(settings, engine, repo, iso_week(week))
            for lang in LANGS:
                out[(repo, week, lang)] = render_weekly(inp, lang, focus_weights=settings.focus_weights)
    return out


@pytest.mark.one_store
def test_every_daily_total_is_the_sum_of_its_parts(dailies):
    checked = {"scope": 0, "downstream": 0, "tables": 0, "short_more": 0}
    for (day, lang), text in dailies.items():
        p, where = PAT[lang], f"{day} {lang}"
        top_h, short_h, deep_h, down_h, _ = p["sections"]
        m = p["counts"].search(text)
        assert m, where
        scanned, ranked, by_p, down_total = int(m[1]), int(m[2]), numbers(m[3]), int(m[4] or 0)
        assert sum(by_p) == ranked <= scanned, (where, m[0])
        checked["scope"] += 1
        new = p["all_new"].search(text)
        assert new is None or int(new[1]) == ranked, (where, new and new[0], m[0])
        # every ranked item once: a row of the P0/P1 table, a row of the short table, or counted below it
        rows = len(table_rows(text, top_h)) if ranked else 0
        short = len(table_rows(text, short_h)) if "|" in section(text, short_h) else 0
        more = p["short_more"].search(text)
        left = 0
        if more:
            by_priority, by_repo = numbers(more[1]), numbers(more[2])
            assert sum(by_priority) == sum(by_repo), (where, more[0])
            left = sum(by_priority)
            checked["short_more"] += 1
        assert rows + short + left == ranked, (where, rows, short, left, m[0])
        checked["tables"] += 1
        # the deep dives the scope announces are the ones written
        deep = p["limit"].search(text)
        assert deep and int(deep[1]) == section(text, deep_h).count("\n### ") + \
            section(text, deep_h).startswith("### "), where
        # the downstream section: each repository's total by state and by priority, and the scope's total
        down = section(text, down_h)
        totals = 0
        for line in p["down"].finditer(down):
            total, states = int(line[1]), numbers(line[2])
            assert sum(states) == total, (where, line[0])
            if line[3] is not None:
                n_ranked, parts, unranked = int(line[3]), numbers(line[4]), int(line[5] or 0)
                assert sum(parts) == n_ranked and n_ranked + unranked == total, (where, line[0])
            totals += total
            checked["downstream"] += 1
        assert totals == down_total, (where, totals, m[0])
        if totals:  # the items named in the section and "the rest" make its totals
            named = len(re.findall(r"^- \[", down, re.M))
            rest = p["down_more"].search(down)
            assert named + (int(rest[1]) if rest else 0) == totals, (where, named, rest and rest[0], totals)
    assert len(dailies) == 2 * len(WINDOWS)
    assert checked["downstream"] >= 20 and checked["short_more"] >= 10, checked


@pytest.mark.one_store
def test_every_weekly_total_is_the_sum_of_its_parts(weeklies):
    checked, themes, untested = 0, 0, 0
    for (repo, week, lang), text in weeklies.items():
        p, where = PAT[lang], f"{repo} {week} {lang}"
        head = p["head"].search(text)
        assert head, where
        merged, commits, key = int(head[1]), int(head[2] or 0), int(head[3])
        mix = p["mix"].search(text)
        if mix:  # the kinds of the week's changes: every merged PR and direct commit once
            kinds = re.findall(r"(\d+)(?:（[−+±]?\d+）| \([−+±]?\d+\))?(?=、|, |$)", mix[1])
            assert sum(int(n) for n in kinds) == merged + commits, (where, mix[0], head[0])
            checked += 1
        # a theme's count in its heading is the count its text gives
        for theme in p["theme"].finditer(text):
            said = p["theme_count"].search(theme[2])
            assert said is None or int(said[1]) == int(theme[1]), (where, theme[0][:200])
            themes += said is not None
        # "6 core-path changes without tests (#a, #b, #c and 3 more)": the refs and the rest make the count
        for fact in p["untested"].finditer(text):
            shown_refs = len(re.findall(r"\[#\d+\]|(?<!\[)#\d+", fact[2]))
            rest = p["and_more"].search(fact[2])
            assert shown_refs + (int(rest[1]) if rest else 0) == int(fact[1]), (where, fact[0])
            untested += 1
        quick = section(text, p["sections"][4])
        # a line stands for its PR and the other PRs of the same change it names ("同一变更另见 #6881")
        shown = len(re.findall(r"^\d+\. \[", quick, re.M)) + sum(
            len(re.findall(r"#\d+", m)) for m in re.findall(r"(?:同一变更另见|the same change also in) ([#\d、, ]+)", quick))
        more = p["quick_more"].search(quick)
        others = p["quick_others"].search(quick)
        if others:  # no key PR: the first-ranked others, said to be others, their number given
            assert key == 0 and not more and shown <= int(others[1]), (where, others[0], head[0])
        else:
            assert shown + (int(more[1]) if more else 0) == key, (where, shown, more and more[0], head[0])
    assert checked >= 30 and themes >= 30 and untested >= 10, (checked, themes, untested)


def _recheck(ref: str, before: str | None, now: str, **over) -> WatchRecheck:
    return WatchRecheck(ref, f"https://example.invalid/{ref}", "Fuse the rope kernel", before, now, None, None,
                        [], **over)


@pytest.mark.no_store
@pytest.mark.parametrize("lang", LANGS)
def test_the_since_last_line_counts_the_rechecks_it_stands_above(lang):
    """State changed + changed otherwise + unchanged = the tracked items, counted from the recheck's own lines:
    a recheck saying "changed" is never under a line that says nothing changed."""
    from infra_radar.models import Window
    from infra_radar.render.base import load_strings
    from infra_radar.render.recheck import recheck_views, since_last_line

    t = load_strings(lang)
    watch = [
        _recheck("acme/infer#1", "open", "merged", last_day="2026-07-02"),  # state changed
        _recheck("acme/infer#2", "open", "open", last_day="2026-07-02", new_comments=3),  # changed otherwise
        _recheck("acme/infer#3", "open", "open", last_day="2026-07-02"),  # unchanged
    ]
    now = datetime(2026, 7, 4, tzinfo=UTC)
    inp = DailyInput(Window(now - timedelta(days=1), now), ["acme/infer"], [], watch, 3, False, now,
                     since_last=SinceLast("2026-07-03", 5, 1, 0))
    views = recheck_views(watch, t)
    line = str(since_last_line(inp, t, views))
    assert [v["changed"] for v in sorted(views, key=lambda v: v["ref"])] == [True, True, False]
    n = numbers(line.split("2026-07-03", 1)[1])
    assert n[:5] == [5, 3, 1, 1, 1], line  # new; tracked 3 = 1 state + 1 other + 1 unchanged
    assert n[2] + n[3] + n[4] == n[1]
