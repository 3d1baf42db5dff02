"""Everything the site shows, read from the store once and grouped: by UTC day, by repository and ISO
week, and the reverse links (who references whom) that item pages list.

Reading the whole store in one pass and grouping in memory is what keeps a build of thousands of
pages fast; the per-item queries of `radar show` would cost one round trip per page.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from sqlalchemy.engine import Engine

from ..config import Settings
from ..models import AnalysedItem, Link, Window
from ..store import queries
from ..windows import iso_week

EVERYTHING = Window(datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC))


def week_of(day: date) -> str:
    """ISO week label of a date: 2026-W31."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def day_window(day: date) -> Window:
    """[D 00:00Z, D+1 00:00Z)."""
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return Window(start, start + timedelta(days=1))


@dataclass
class SiteData:
    """The analysed store, grouped the ways the pages need it."""

    repos: list[str]
    items: list[AnalysedItem]
    by_day: dict[date, list[AnalysedItem]] = field(default_factory=dict)
    by_week: dict[tuple[str, str], list[AnalysedItem]] = field(default_factory=dict)
    referenced_by: dict[tuple[str, int], list[Link]] = field(default_factory=dict)
    titles: dict = field(default_factory=dict)
    watch: list[queries.WatchEntry] = field(default_factory=list)

    def numbered(self) -> list[AnalysedItem]:
        """Items that get a page of their own (pull requests and issues)."""
        return [ai for ai in self.items if ai.item.number is not None]

    def weeks_of(self, repo: str) -> list[str]:
        """ISO weeks in which `repo` has items, oldest first."""
        return sorted(week for name, week in self.by_week if name == repo)

    def week_window(self, week: str) -> Window:
        """The window of an ISO week label."""
        return iso_week(week)


def _reverse_links(items: list[AnalysedItem]) -> dict[tuple[str, int], list[Link]]:
    """(repo, number) -> links back to the items that reference it (as `queries.referenced_by` gives)."""
    found: dict[tuple[str, int], dict[tuple[str, int], Link]] = defaultdict(dict)
    for ai in items:
        src = ai.item
        if src.number is None:
            continue
        for link in ai.analysis.links:
            if link.repo and link.number is not None and (link.repo.lower(), link.number) != (
                    src.repo.lower(), src.number):
                found[(link.repo.lower(), link.number)].setdefault(
                    (src.repo, src.number),
                    Link(kind=f"referenced-by:{link.kind}", repo=src.repo, number=src.number, url=src.url,
                         detail=src.title))
    return {key: list(links.values()) for key, links in found.items()}


def load_site_data(engine: Engine, settings: Settings | None = None, limit: datetime | None = None) -> SiteData:
    """Every analysed item of the store, grouped by day, by (repository, week) and by reference; with `settings`,
    as the team judged them (labels and calibration, pipeline/judgment.py). An item dated later than `limit`
    (now plus the clock skew) gets its page but makes no day and no week."""
    items = queries.analysed_in_window(engine, EVERYTHING)
    if settings is not None:
        from ..pipeline.judgment import judge

        judge(settings, engine, items)
    repos = queries.repo_names(engine)
    if settings is not None:  # the repositories the reports cover (pipeline.reports.report_repos)
        from ..pipeline.reports import covered

        repos = [n for n in covered(settings, repos) if n in set(repos)]
        wanted = {n.lower() for n in repos}
        items = [ai for ai in items if ai.item.repo.lower() in wanted]
    data = SiteData(repos=repos, items=items)
    by_day: dict[date, list[AnalysedItem]] = defaultdict(list)
    by_week: dict[tuple[str, str], list[AnalysedItem]] = defaultdict(list)
    for ai in items:
        when = ai.item.when
        if when is None or (limit is not None and when > limit):
            continue
        day = when.astimezone(UTC).date()
        by_day[day].append(ai)
        by_week[(ai.item.repo, week_of(day))].append(ai)
        opened = queries.opened_at(ai.item)  # a daily radar holds what was opened that day too (as radar daily)
        if opened is not None and opened.astimezone(UTC).date() < day:
            by_day[opened.astimezone(UTC).date()].append(ai)
    data.by_day, data.by_week = dict(by_day), dict(by_week)
    data.referenced_by = _reverse_links(items)
    data.titles = queries.title_index(engine, data.repos)
    data.watch = queries.watch_list(engine)
    return data
