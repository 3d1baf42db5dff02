"""A report as a chat digest: its title, ranked plain lines and the link to its full page (`radar push`).

The daily digest is the radar `radar daily` builds for the window (pipeline.radar.daily_radar); the weekly one
the weekly report's context, read as plain lines.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from importlib import resources
from typing import Any

from sqlalchemy.engine import Engine

from ..config import Settings
from ..errors import WindowError
from ..models import Window
from ..pipeline.judgment import judge
from ..render.context import WeeklyInput, load_strings, weekly_context
from ..render.escape import Md, plain, plain_line
from ..store import queries
from ..windows import horizon, iso_week
from .data import day_window, week_of
from .site import daily_page, item_page, weekly_page


def load_limits() -> dict[str, Any]:
    """The packaged push.toml: per-platform limits and formats, and the digest wording."""
    text = (resources.files("infra_radar") / "defaults" / "push.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


# --- digest --------------------------------------------------------------------------------------

@dataclass(slots=True)
class Line:
    """One line of a digest: an optional bold tag (P0) and linked reference, then text; or a heading."""

    text: str
    tag: str = ""
    ref: str = ""
    url: str = ""
    heading: bool = False


@dataclass(slots=True)
class Digest:
    """What a chat message says about one report."""

    title: str
    lines: list[Line]
    full_url: str = ""
    report: str = ""  # which report it is, for the delivery record: "daily 2026-07-02", "weekly OWNER/NAME W"
    publish: Callable[[], object] | None = None  # records the radar once the digest is posted (daily)


def _item_url(ref: str, github: str, site_url: str) -> str:
    repo, _, number = ref.rpartition("#")
    return site_url + item_page(repo, int(number)) if site_url and number.isdigit() else github


def _up_to_now(window: Window, limit: datetime) -> Window:
    """`window` ending no later than `limit` (now plus the clock skew); WindowError when it has not begun."""
    if window.since > limit:
        raise WindowError(f"the window starts {window.since:%Y-%m-%dT%H:%MZ}, later than now: nothing in it has "
                          "happened yet")
    return Window(window.since, min(window.until, limit))


def daily_digest(settings: Settings, engine: Engine, window: Window | date, repos: list[str], site_url: str,
                 calendar_day: bool = False) -> Digest:
    """The P0/P1 rows, the short table and the downstream section of the daily radar of `window` (a UTC day
    when a date), built as `radar daily` builds it (pipeline.radar.daily_radar)."""
    from ..pipeline.radar import daily_radar
    from ..windows import report_day

    if not isinstance(window, Window):
        window, calendar_day = day_window(window), True
    t = load_strings(settings.lang)
    window = _up_to_now(window, horizon(settings.clock_skew))
    from ..pipeline.reports import report_repos

    radar = daily_radar(settings, engine, window, repos or report_repos(settings, engine, None),
                        calendar_day=calendar_day, explicit=not calendar_day,
                        generated_at=window.until)
    ctx = radar.context(t)
    lines = [Line(t["daily"]["counts"].format(scanned=ctx["scanned"], ranked=ctx["ranked"],
                                              by_priority=ctx["by_priority"]))]
    if ctx["repos_no_data"]:  # the scope line as `radar daily` has it, when a repository it covers has no data
        sep = t["common"]["sep"]
        lines.append(Line(t["daily"]["repos"].format(repos=sep.join(ctx["repos"]) or t["common"]["none"])
                          + t["daily"]["no_data"].format(repos=sep.join(ctx["repos_no_data"]))))
    if ctx["since_last"]:
        lines.append(Line(plain(ctx["since_last"])))
    dash = t["common"]["dash"]
    for r in ctx["top"]:  # chat text is plain text: what a reader of the report sees (the platform escapes it)
        lines.append(Line(f"{plain(r['title'])}{dash}{plain(r['summary'])}", r["priority"], r["ref"],
                          _item_url(r["ref"], r["url"], site_url)))
    for r in ctx["short"]:
        lines.append(Line(f"{plain(r['title'])}{dash}{plain(r['note'])}", r["priority"], r["ref"],
                          _item_url(r["ref"], r["url"], site_url)))
    down = ctx["downstream"]
    if down and down["lines"]:  # the downstream section, apart from the upstream rows, as the report has it
        lines.append(Line(t["daily"]["downstream"], heading=True))
        lines += [Line(f"{plain(r['head'])}{dash}{plain(r['note'])}", r["priority"], r["ref"],
                       _item_url(r["ref"], r["url"], site_url)) for r in down["lines"]]
    day = report_day(window)
    title = t["daily"]["title"].format(date=day.isoformat())
    return Digest(title, lines, site_url + daily_page(day) if site_url else "",
                  f"daily {day.isoformat()} {settings.lang}", lambda: radar.publish(engine, t))


_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_ITEM_CELL = re.compile(r"\[(?P<ref>[^\]\n]{1,200})\]\((?P<url>[^()\s]{1,500})\)[ \t]*+(?P<title>.*)")
_HEADING = re.compile(r"#{2,3} ")


def published_digest(text: str, lang: str, day: date, site_url: str) -> Digest:
    """The digest of a published daily radar read from its stored text (`published_radars.text`), so a push
    sends what was published whatever the store holds now: the scope's count line, the rows of the P0/P1 table
    and of the short table, and the downstream section's lines, each as the radar wrote it (Markdown read as
    plain text). One pass over the lines: linear in the text."""
    t = load_strings(lang)
    dash = t["common"]["dash"]
    counts = t["daily"]["counts"].split("{", 1)[0]
    downstream = t["daily"]["downstream"]
    lines: list[Line] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if _HEADING.match(line):
            section = line.lstrip("#").strip()
            if section == downstream:
                lines.append(Line(downstream, heading=True))
            continue
        if line.startswith("- ") and counts and line[2:].startswith(counts) and not lines:
            lines.append(Line(plain_line(line[2:])))
        elif line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in _CELL_SPLIT.split(line)[1:-1]]
            if len(cells) < 4 or cells[0] not in ("P0", "P1", "P2"):
                continue
            item = _ITEM_CELL.match(cells[1])
            if item is None:
                continue
            title, note = _unmark(item["title"]), _unmark(cells[-1])
            lines.append(Line(f"{title}{dash}{note}", cells[0], item["ref"],
                              _item_url(item["ref"], item["url"], site_url)))
        elif section == downstream and line.startswith("- ["):
            item = _ITEM_CELL.match(line[2:])
            if item is not None:
                lines.append(Line(_unmark(item["title"]), "", item["ref"],
                                  _item_url(item["ref"], item["url"], site_url)))
    title = t["daily"]["title"].format(date=day.isoformat())
    return Digest(title, lines, site_url + daily_page(day) if site_url else "", f"daily {day.isoformat()} {lang}")


def _unmark(cell: str) -> str:
    """A cell or line of the radar's Markdown as plain text: its backslash escapes undone (code spans kept)."""
    return plain(Md(cell))


def weekly_digest(settings: Settings, engine: Engine, repo: str, week: str, site_url: str) -> Digest:
    """Executive summary, key PRs and recommendations of one repository's week."""
    limits = load_limits()
    t, words = load_strings(settings.lang), limits[settings.lang]
    window = _up_to_now(iso_week(week), horizon(settings.clock_skew))
    before = iso_week(week_of(window.since.date() - timedelta(days=1)))
    from ..pipeline.reports import bot_test

    inp = WeeklyInput(repo=repo, window=window, week_label=week,
                      items=judge(settings, engine, queries.analysed_in_window(engine, window, [repo])),
                      previous=judge(settings, engine, queries.analysed_in_window(engine, before, [repo])),
                      key_prs=settings.weekly_key_prs,
                      target=settings.target, data_end=queries.newest_time(engine, repo, horizon(settings.clock_skew)), is_bot=bot_test(settings),
                      rules_dir=settings.rules_dir)
    ctx = weekly_context(inp, t, settings.focus_weights)
    dash = t["common"]["dash"]
    # the summary and its movements as plain lines (a chat message links the items itself)
    lines = [Line(plain_line(x)) for x in [ctx["summary"], *ctx["movements"]]]
    lines.append(Line(words["key_prs"], heading=True))
    most, recs = int(limits["weekly"]["key_prs"]), int(limits["weekly"]["recommendations"])
    lines += [Line(f"{plain(q['title'])}{dash}{plain_line(q['rest'])}", q["priority"], q["ref"],
                   _item_url(q["ref"], q["url"], site_url)) for q in ctx["quick"][:most]]
    if len(ctx["quick"]) > most:
        lines.append(Line(words["more"].format(n=len(ctx["quick"]) - most)))
    lines += [Line(words["recommendations"], heading=True), *(Line(plain_line(r)) for r in ctx["recommendations"][:recs])]
    return Digest(plain(ctx["title"]), lines, site_url + weekly_page(repo, week) if site_url else "",
                  f"weekly {repo} {week} {settings.lang}")


