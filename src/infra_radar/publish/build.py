"""`radar site build`: every page of the site written under one folder, the pages whose inputs did not change
since the last build skipped (publish/inputs.py), with the home page, indexes, repository pages, search and
feeds; progress told as it goes. The pages themselves are rendered by site.Site."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from .. import windows
from ..config import Settings
from ..models import MERGED, PR
from ..render.context import (
    mean,
)
from ..windows import horizon
from . import charts, feeds, inputs, search
from .data import day_window, load_site_data, week_of
from .markup import shown_rows
from .site import (
    CHART_WEEKS,
    STATIC,
    STATIC_FILES,
    Site,
    daily_page,
    item_page,
    repo_page,
    slug,
    weekly_page,
)
from .writer import PageWriter


@dataclass(slots=True)
class BuildResult:
    """What one build did."""

    out_dir: Path
    pages: int
    written: int
    unchanged: int
    removed: int
    item_pages: int
    daily_pages: int
    weekly_pages: int
    charts: bool
    seconds: float
    skipped: int = 0  # pages not rendered again: their inputs had not changed since the last build
    warnings: list[str] = field(default_factory=list)  # what the build passed over, one line each


def _weekly_row(site: Site, repo: str, week: str) -> dict[str, Any]:
    items = site.data.by_week.get((repo, week), [])
    return {"week": week, "repo": repo, "page": weekly_page(repo, week),
            "merged": sum(1 for ai in items if ai.item.kind == PR and ai.item.state == MERGED),
            "key": sum(1 for ai in items if ai.analysis.priority in ("P0", "P1")),
            "count": len(items), "importance": mean([ai.analysis.importance for ai in items]),
            "insight": mean([ai.analysis.insight for ai in items])}


def _series(site: Site, repo: str, weeks: list[str]) -> dict[str, Any]:
    """Per-week merged counts, category counts (top kinds) and risk counts of one repository."""
    groups = [site.data.by_week.get((repo, w), []) for w in weeks]
    kinds = Counter(ai.analysis.item_kind for g in groups for ai in g)
    top = [k for k, _ in kinds.most_common(6)]
    categories = {k: [sum(1 for ai in g if ai.analysis.item_kind == k) for g in groups] for k in top}
    other = [sum(1 for ai in g if ai.analysis.item_kind not in top) for g in groups]
    if any(other):
        categories["other"] = other
    risks = {code: [sum(1 for ai in g if code in ai.analysis.risk_labels) for g in groups]
             for code in site.t["codes"]["weekly_risks"]}
    merged = [sum(1 for ai in g if ai.item.kind == PR and ai.item.state == MERGED) for g in groups]
    return {"weeks": weeks, "merged": merged, "categories": categories, "risks": risks}


def _repo_page(site: Site, repo: str) -> dict[str, str]:
    """The repository page and its chart files, by site path."""
    weeks = site.data.weeks_of(repo)
    recent = weeks[-CHART_WEEKS:]
    series = _series(site, repo, recent)
    svgs = {"merged": charts.bars(recent, series["merged"]),
            "categories": charts.stacked(recent, series["categories"]),
            "risks": charts.lines(recent, series["risks"])}
    images, files = {}, {}
    for key, svg in svgs.items():
        if svg is not None:
            rel = f"repos/{slug(repo)}-{key}.svg"
            files[rel] = svg
            images[key] = rel.removeprefix("repos/")  # beside the repository page
    rows = [_weekly_row(site, repo, w) for w in reversed(weeks)]
    rel = repo_page(repo)
    files[rel] = site.render("repo.html.j2", rel, repo=repo, rows=rows, images=images,
                             series={**series, "rows": list(zip(recent, series["merged"], strict=True))})
    return files


def _carried(site: Site) -> list[dict[str, Any]]:
    """The items the next daily radar carries on from the published ones (the home page's watch list)."""
    memory = site.memory
    if memory is None or not memory.untils:
        return []
    r = site.t["recheck"]
    out = []
    for c in sorted(memory.carried(memory.untils[-1] + timedelta(microseconds=1)).values(),
                    key=lambda c: (c.origin_until, c.repo.lower(), c.number)):
        found = site.by_ref.get((c.repo.lower(), c.number))
        reasons = site.t["common"]["sep"].join(r["reasons"].get(x, x) for x in c.reasons)
        day = (c.origin_until - timedelta(microseconds=1)).date().isoformat()
        out.append({"ref": f"{c.repo}#{c.number}", "repo": c.repo, "number": c.number,
                    "reason": r["carried"].format(day=day, reasons=reasons),
                    "title": found.item.title if found else c.last.title, "state": c.last.state})
    return out


def _home(site: Site, writer: PageWriter, days: list[date]) -> None:
    # the home page leads with the last published radar (the series the team reads), else the last day
    latest = max(site.published) if site.published else days[-1] if days else None
    daily = dict(site.daily_radar(latest).context(site.t)) if latest else None
    if daily:  # the P0/P1 rows the home page lists, their conclusions as text
        daily["top"] = shown_rows(daily["top"])
    week = week_of(latest) if latest else None
    weekly = [_weekly_row(site, repo, week) for repo in site.data.repos if (repo, week) in site.data.by_week]
    watch = _carried(site)
    for entry in site.data.watch:
        found = site.by_ref.get((entry.repo.lower(), entry.number))
        watch.append({"ref": f"{entry.repo}#{entry.number}", "repo": entry.repo, "number": entry.number,
                      "reason": entry.reason, "title": found.item.title if found else "",
                      "state": found.item.state if found else (entry.last_state or "")})
    recent = [{"day": d.isoformat(), "page": daily_page(d), "count": len(site.data.by_day.get(d, []))}
              for d in reversed(days[-14:])]
    repos = [{"name": r, "page": repo_page(r)} for r in site.data.repos]
    writer.write("index.html", site.render(
        "home.html.j2", "index.html", latest=latest.isoformat() if latest else "",
        latest_page=daily_page(latest) if latest else "", daily=daily, week=week, weekly=weekly, watch=watch,
        recent=recent, repos=repos))


def _indexes(site: Site, writer: PageWriter, days: list[date]) -> None:
    rows = [{"day": d.isoformat(), "page": "../" + daily_page(d), "count": len(site.data.by_day.get(d, [])),
             "key": sum(1 for ai in site.data.by_day.get(d, []) if ai.analysis.priority in ("P0", "P1"))}
            for d in reversed(days)]
    writer.write("daily/index.html", site.render("list.html.j2", "daily/index.html",
                                                 title=site.t["site"]["daily_index"], days=rows, repos=[]))
    repos = [{"repo": repo, "rows": [{**_weekly_row(site, repo, w), "page": "../" + weekly_page(repo, w)}
                                     for w in reversed(site.data.weeks_of(repo))]}
             for repo in site.data.repos]
    writer.write("weekly/index.html", site.render("list.html.j2", "weekly/index.html",
                                                  title=site.t["site"]["weekly_index"], days=[], repos=repos))


def _static(writer: PageWriter) -> None:
    for name in STATIC_FILES:
        writer.write(f"static/{name}", (STATIC / name).read_bytes())


class Progress:
    """What a build tells as it goes: a stage with its number of pages, each page done, a line of news.
    This one tells nobody; `radar site build` passes one that prints (cli/publish.py)."""

    def stage(self, label: str, total: int | None = None) -> None:
        """A stage starts: `label`, with `total` pages when it is known."""

    def advance(self, n: int = 1) -> None:
        """`n` more pages of the stage are done (rendered or skipped)."""

    def say(self, line: str) -> None:
        """A line saying what a stage did."""


def _pages(label: str, rendered: int, total: int) -> str:
    skipped = total - rendered
    return f"{label}: {total} page(s), {rendered} rendered, {skipped} skipped (inputs unchanged)"


class _Build:
    """One build's writer and input record: each page is rendered unless its inputs are unchanged."""

    def __init__(self, site: Site, writer: PageWriter, record: inputs.InputRecord) -> None:
        self.site, self.writer, self.record = site, writer, record
        self.rendered = self.skipped = 0

    def page(self, rel: str, data: str, render) -> bool:
        """Write page `rel` from `render()` unless the last build made it from the same inputs (the file
        is kept as it is); True when it was rendered. `render` gives the page's content, or a dict of the
        page's and the files it comes with (a repository page and its charts)."""
        if self.kept(rel, data):
            return False
        content, looked = _looking(self.site, render)
        self.done(rel, data, content, looked)
        return True

    def kept(self, rel: str, data: str) -> bool:
        """True (the page and its files kept as they are) when the last build made page `rel` from the same
        inputs."""
        files = self.record.fresh(rel, data, self.site.resolve)
        if files is not None and all(self.writer.can_keep(f) for f in (rel, *files)):
            for f in (rel, *files):
                self.writer.keep(f)
            self.skipped += 1
            return True
        return False

    def done(self, rel: str, data: str, content: str | dict[str, str], looked: set[str]) -> None:
        """Page `rel` rendered as `content` (see `page`) after looking up `looked`: written and recorded."""
        written = content if isinstance(content, dict) else {rel: content}
        for f, text in written.items():
            self.writer.write(f, text)
        self.record.record(rel, data, looked, self.site.resolve, [f for f in written if f != rel])
        self.rendered += 1

    def pages(self, jobs: list[tuple[str, str, Callable[[], tuple[Any, Any]]]], progress: Progress,
              workers: int, least: int | None = None) -> list[Any]:
        """Pages that need no other page: each job (rel, data, render) whose inputs changed is rendered,
        `render()` giving (content, extra), in forked workers when `workers` > 1 and there are `least` (default
        MIN_FORK) or more to render, and
        written here in the jobs' order, so the site is the same file for file whatever the workers. The
        `extra` of each job (None for a page kept as it was), in order."""
        todo = [i for i, (rel, data, _) in enumerate(jobs) if not self.kept(rel, data)]
        extras: list[Any] = [None] * len(jobs)
        progress.advance(len(jobs) - len(todo))
        least = MIN_FORK if least is None else least
        for i, (content, extra, looked) in _rendered(self.site, [jobs[i][2] for i in todo],
                                                     workers if len(todo) >= least else 1):
            rel, data, _ = jobs[todo[i]]
            self.done(rel, data, content, looked)
            extras[todo[i]] = extra
            progress.advance()
        return extras


def _looking(site: Site, render: Callable[[], Any]) -> tuple[Any, set[str]]:
    """render() and the references it looked up (publish/inputs.py)."""
    site.looked = set()
    try:
        content = render()
    finally:
        looked, site.looked = site.looked, None
    return content, looked


MIN_FORK = 200  # pages to render before forked workers are worth their start
_JOBS: tuple[Site, list] | None = None  # what the forked workers render: set before they fork, inherited


def _render_job(i: int) -> tuple[int, Any, Any, set[str]]:
    assert _JOBS is not None
    site, renders = _JOBS
    (content, extra), looked = _looking(site, renders[i])
    return i, content, extra, looked


def _rendered(site: Site, renders: list, workers: int) -> Iterator[tuple[int, tuple[Any, Any, set[str]]]]:
    """(i, (content, extra, looked)) of each render, in order: here, or in `workers` forked processes, which
    inherit the site as it stands (its data read, its caches filled) and send back what they rendered."""
    global _JOBS
    import multiprocessing

    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for i, render in enumerate(renders):
            (content, extra), looked = _looking(site, render)
            yield i, (content, extra, looked)
        return
    if site.engine is not None:
        site.engine.dispose()  # no pooled connection crosses the fork (a worker reads nothing from the store)
    _JOBS = (site, renders)
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            # chunks small enough that the pages come back in a steady stream (progress, bounded memory)
            for i, content, extra, looked in pool.imap(_render_job, range(len(renders)), chunksize=8):
                yield i, (content, extra, looked)
    finally:
        _JOBS = None


def site_workers() -> int:
    """How many processes render the site's pages: RADAR_SITE_WORKERS, else the cores this process may use (at
    most 4)."""
    import os

    given = os.environ.get("RADAR_SITE_WORKERS", "").strip()
    if given:
        return int(given)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, 4))


def build_site(settings: Settings, engine: Engine, out_dir: Path, site_url: str = "",
               progress: Progress | None = None, backfill: bool = False, workers: int | None = None
               ) -> BuildResult:
    """Build (or incrementally rebuild) the site under `out_dir`.

    A page whose inputs did not change since the last build (publish/inputs.py) is not rendered again;
    every other page is rendered and written only when its content changed (publish/writer.py). A daily page
    is the radar of its UTC day as `radar daily` builds it (pipeline/radar.py), recalling the radars published
    before it; the build publishes nothing. With `backfill`, the daily pages rendered are recorded as
    published radars (docs/memory.md) once the build is complete, each page following the ones before it.
    """
    from ..pipeline.analysis import analyze
    from ..pipeline.memory import Memory

    progress = progress or Progress()
    workers = site_workers() if workers is None else workers
    started = time.perf_counter()
    progress.stage("reading the store")
    analyze(settings, engine)
    site = Site(settings, load_site_data(engine, settings, horizon(settings.clock_skew)), site_url,
                Memory.everything(settings, engine), engine=engine, backfill=backfill)
    progress.say(f"read {len(site.data.items)} item(s) of {len(site.data.repos)} repositories "
                 f"({time.perf_counter() - started:.1f}s)")
    clock = windows.now()  # a report of today or this week is dated when it was built, never at its window's future end
    writer = PageWriter.open(out_dir)
    key = inputs.build_key(settings, site.site_url, charts.available(), rules_dir=settings.rules_dir)
    seen = inputs.InputRecord.open(writer.root, key)
    build = _Build(site, writer, seen)
    _static(writer)
    days = site.daily_days()  # each published radar under its date, and the calendar days no radar covers
    reports: list[feeds.FeedEntry] = []

    progress.stage("daily pages", len(days))
    for day in days:
        rel, text = daily_page(day), ""

        def render(day=day):
            nonlocal text
            _, html, text = site.daily(day)
            return html
        data = site.daily_inputs(day)
        done = build.page(rel, data, render)
        if not done:
            site.backfill_day(day)  # a page kept as it was is still recorded when backfilling
        ends = site.published[day][1] if day in site.published else day_window(day).until
        reports.append(feeds.FeedEntry("daily", rel, text, min(ends, clock), inputs=data,
                                       load=None if done else lambda day=day: site.daily(day)[2]))
        progress.advance()
    progress.say(_pages("daily pages", build.rendered, len(days)))

    weeks = sorted(site.data.by_week)
    build.rendered = 0
    progress.stage("weekly pages", len(weeks))
    jobs = [(weekly_page(repo, week), site.weekly_inputs(repo, week),
             lambda repo=repo, week=week: site.weekly(repo, week)[1:]) for repo, week in weeks]
    texts = build.pages(jobs, progress, workers)
    for (repo, week), (rel, data, _), text in zip(weeks, jobs, texts, strict=True):
        reports.append(feeds.FeedEntry("weekly", rel, text or "", min(site.data.week_window(week).until, clock),
                                       inputs=data,
                                       load=None if text is not None else lambda r=repo, w=week: site.weekly(r, w)[2]))
    progress.say(_pages("weekly pages", build.rendered, len(weeks)))

    numbered = site.data.numbered()
    build.rendered = 0
    progress.stage("item pages", len(numbered))
    item_digests, jobs = [], []
    for ai in numbered:
        given = site.card_input(ai)
        model = site.model_evidence(ai)  # cached model sentences: a page changes when they do
        data = inputs.digest("item", site.digest_of([ai]), given.referenced_by, given.duplicates, given.more,
                             [(m["statement"], m["records"]) for m in model])
        item_digests.append(data)
        jobs.append((item_page(ai.item.repo, ai.item.number), data,
                     lambda ai=ai, given=given, model=model: (site.item(ai, given, model)[1], None)))
    build.pages(jobs, progress, workers)
    progress.say(_pages("item pages", build.rendered, len(numbered)))

    progress.stage("repository pages, home, indexes, search and feeds")
    jobs = []
    for repo in site.data.repos:
        own = site.data.weeks_of(repo)
        data = inputs.digest("repo", repo, own, [site.digest_of(site.data.by_week[(repo, w)]) for w in own])
        jobs.append((repo_page(repo), data, lambda repo=repo: (_repo_page(site, repo), None)))
    # a repository's charts take a second or more each: worth a worker from two on
    build.pages(jobs, Progress(), workers, least=2 if charts.available() else MIN_FORK)
    _home(site, writer, days)
    _indexes(site, writer, days)
    build.page("search-index.js", inputs.digest("search", item_digests),
               lambda: search.index_script(search.index_entries(
                   ((ai, item_page(ai.item.repo, ai.item.number)) for ai in numbered), site.names)))
    writer.write("search.html", site.render("search.html.j2", "search.html"))
    _feeds(site, build, reports)
    removed = writer.finish()
    seen.save()
    if backfill and site.records:
        from ..store.lock import writer_lock
        from ..store.published import save_records

        with writer_lock(engine).hold(settings.lock_timeout):
            written = save_records(engine, site.records)
        progress.say(f"backfill: {len(site.records)} daily page(s) recorded as published radars "
                     f"({written} new or changed); the next radar follows them")
    return BuildResult(out_dir, len(writer.new), len(writer.written), writer.unchanged, len(removed),
                       len(numbered), len(days), len(weeks), charts.available(),
                       time.perf_counter() - started, build.skipped, writer.warnings)


def _feeds(site: Site, build: _Build, reports: list[feeds.FeedEntry]) -> None:
    """Atom and RSS over the newest reports; not built again when those reports' inputs are unchanged."""
    data = inputs.digest("feeds", [(e.kind, e.rel, e.updated, e.inputs) for e in feeds.latest(reports)])
    texts: dict[str, str] = {}

    def render(rel: str) -> str:
        if not texts:
            texts.update(feeds.build_feeds(reports, site.site_url, site.t["site"]))
        return texts[rel]
    for rel in feeds.FEED_FILES.values():
        build.page(rel, data, lambda rel=rel: render(rel))
