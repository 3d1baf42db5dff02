"""`radar site build DIR`: a static site from the store, with no build tool and no CDN.

Pages: home (latest daily radar, this week's reports, watch list), one page per day with items and per
repository and ISO week with items, a page for every PR and issue, one page per repository (weekly
history and trend charts), a search page over a JS index, Atom and RSS feeds. Links are relative, so
the site works from file:// and behind any static server. Daily and weekly pages are the same Markdown
reports `radar daily` and `radar weekly` print, converted by markdown-it with raw HTML off; item pages
are HTML templates fed the same context as `radar show`, autoescaped (see `render_item`).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from sqlalchemy.engine import Engine

from .. import windows
from ..analyse.links import load_relation_rules
from ..analyse.related import cap_links, nearest
from ..config import Settings
from ..models import MERGED, PR, AnalysedItem, Link, ref_number
from ..render import markdown as md_render
from ..render.context import (
    LANGS,
    CardInput,
    DailyInput,
    WeeklyInput,
    card_context,
    daily_context,
    load_strings,
    mean,
    weekly_context,
)
from ..render.markdown import fmt
from ..render.template_cache import bytecode_cache
from ..store import queries
from ..windows import horizon
from . import charts, feeds, search
from .data import SiteData, day_window, load_site_data, week_of
from .markup import markdown_html, safe_url
from .writer import PageWriter

SITE_TEMPLATES = Path(str(resources.files("infra_radar") / "defaults" / "templates" / "site"))
STATIC = resources.files("infra_radar") / "defaults" / "site_static"
STATIC_FILES = ("site.css", "search.js")
CHART_WEEKS = 52
_GITHUB_ITEM = re.compile(r"^https://github\.com/([\w.-]+/[\w.-]+)/(?:pull|issues)/(\d+)/?$")


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
    warnings: list[str] = field(default_factory=list)  # what the build passed over, one line each


# --- paths ---------------------------------------------------------------------------------------

def slug(repo: str) -> str:
    """A repository name as one safe path component: owner+name."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", repo.replace("/", "+"))


def item_page(repo: str, number: int) -> str:
    """Site path of an item page."""
    return f"items/{slug(repo)}/{number}.html"


def daily_page(day: date) -> str:
    """Site path of a daily radar page."""
    return f"daily/{day:%Y-%m-%d}.html"


def weekly_page(repo: str, week: str) -> str:
    """Site path of a weekly report page."""
    return f"weekly/{slug(repo)}/{week}.html"


def repo_page(repo: str) -> str:
    """Site path of a repository page."""
    return f"repos/{slug(repo)}.html"


def root_of(rel: str) -> str:
    """The relative prefix from page `rel` back to the site root ("", "../", "../../")."""
    return "../" * rel.count("/")


# --- templates -----------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def environment() -> Environment:
    """The HTML template environment: autoescaped, strict, packaged templates."""
    env = Environment(loader=PackageLoader("infra_radar", "defaults/templates/site"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      bytecode_cache=bytecode_cache())
    env.filters.update(fmt=fmt, url=safe_url)
    return env


class Site:
    """Renders every page of the site from the grouped store data."""

    def __init__(self, settings: Settings, data: SiteData, site_url: str = "") -> None:
        self.settings, self.data, self.lang = settings, data, settings.lang
        self._compiled: dict = {}  # the rules, compiled once when a day's item is judged as it stood (as_of)
        self.site_url = site_url.rstrip("/") + "/" if site_url else ""
        self.t = load_strings(self.lang, SITE_TEMPLATES)
        self.names = {lang: load_strings(lang) for lang in LANGS}
        self.pages = {(ai.item.repo.lower(), ai.item.number): item_page(ai.item.repo, ai.item.number)
                      for ai in data.numbered()}
        self.by_ref = {(ai.item.repo.lower(), ai.item.number): ai for ai in data.numbered()}
        self.most = load_relation_rules(settings).max_per_kind  # related items of one kind a page lists
        self._groups: dict = {}  # exact-title group -> (numbers sorted, number -> (store order, title))

    # links
    def local(self, url: str, root: str) -> str | None:
        """The site's own page for a GitHub PR/issue URL of an item in the store, else None."""
        found = _GITHUB_ITEM.match(url or "")
        number = ref_number(found.group(2)) if found else None
        page = self.pages.get((found.group(1).lower(), number)) if number is not None else None
        return root + page if page else None

    def href(self, url: str, root: str) -> str:
        """Where a link from GitHub data may point: our page of it, else a safe absolute URL, else ""."""
        return self.local(url, root) or safe_url(url)

    def ref_href(self, ref: str, root: str) -> str:
        """The page of an `owner/name#N` reference, or "" when the store has no such item."""
        repo, _, number = ref.rpartition("#")
        page = self.pages.get((repo.lower(), int(number))) if number.isdigit() else None
        return root + page if page else ""

    def render(self, template: str, rel: str, **ctx: Any) -> str:
        """One page: the template with the shared context (strings, root prefix, link helpers)."""
        root = root_of(rel)
        return environment().get_template(template).render(
            t=self.t, lang=self.lang, root=root, href=lambda u: self.href(u, root),
            ref_href=lambda ref: self.ref_href(ref, root), **ctx)

    def markdown(self, template: str, ctx: dict[str, Any]) -> str:
        """A report as `radar daily`/`radar weekly` print it, with the strings loaded once per build.

        (render_daily/render_weekly reload i18n.toml on every call: ~20 ms that a build of hundreds of
        reports would pay hundreds of times.)
        """
        text = md_render.environment(None).get_template(template).render(**ctx, t=self.t)
        return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"

    def report(self, markdown: str, rel: str) -> Markup:
        """A Markdown report as safe HTML whose item links point at the site's own pages."""
        root = root_of(rel)
        return Markup(markdown_html(markdown, lambda url: self.local(url, root)))

    # inputs
    def daily_input(self, day: date) -> DailyInput:
        """The daily radar of one UTC day [D 00:00Z, D+1)."""
        from ..pipeline.reports import as_of

        window = day_window(day)
        # as `radar daily` shows them; the rules, when an item needs judging again, are compiled once a build
        items = as_of(self.settings, self.data.by_day.get(day, []), window.until, self._compiled)
        return DailyInput(window=window, repos=self.data.repos, items=items, watch=[],
                          deep_dive_limit=self.settings.deep_dive_limit, first_run=False,
                          generated_at=window.until, calendar_day=True)

    def weekly_input(self, repo: str, week: str) -> WeeklyInput:
        """The weekly report of one repository and ISO week."""
        window = self.data.week_window(week)
        before = week_of((window.since - timedelta(days=1)).date())
        return WeeklyInput(repo=repo, window=window, week_label=week,
                           items=self.data.by_week.get((repo, week), []),
                           previous=self.data.by_week.get((repo, before), []),
                           key_prs=self.settings.weekly_key_prs)

    # pages
    def daily(self, day: date) -> tuple[str, str, str]:
        """(path, html, markdown) of a daily radar page."""
        rel = daily_page(day)
        text = self.markdown("daily.md.j2", daily_context(self.daily_input(day), self.t, self.settings.focus_weights))
        title = text.splitlines()[0].lstrip("# ")
        return rel, self.render("report.html.j2", rel, title=title, content=self.report(text, rel)), text

    def weekly(self, repo: str, week: str) -> tuple[str, str, str]:
        """(path, html, markdown) of a weekly report page."""
        rel = weekly_page(repo, week)
        text = self.markdown("weekly.md.j2",
                             weekly_context(self.weekly_input(repo, week), self.t, self.settings.focus_weights))
        title = text.splitlines()[0].lstrip("# ")
        page = self.render("report.html.j2", rel, title=title, content=self.report(text, rel),
                           repo_link=root_of(rel) + repo_page(repo), repo=repo)
        return rel, page, text

    def duplicates(self, item) -> tuple[list[Link], int]:
        """The PRs of the item's exact title (store.queries.title_index), the `max_per_kind` nearest by number
        in the store's order, and how many more: found by bisection, so a title shared by thousands of PRs
        costs each page a few steps, not the thousands."""
        if item.kind != PR or item.number is None:
            return [], 0
        key = (item.repo.lower(), queries.normalise_title(item.title))
        group = self.data.titles.get(key)
        if not group:
            return [], 0
        if key not in self._groups:
            self._groups[key] = (sorted(n for n, _ in group), {n: (i, t) for i, (n, t) in enumerate(group)})
        numbers, where = self._groups[key]
        chosen = sorted(nearest(numbers, item.number, self.most), key=lambda n: where[n][0])
        others = len(numbers) - (item.number in where)
        return [Link(kind="duplicate", repo=item.repo, number=n, detail=where[n][1]) for n in chosen], \
            others - len(chosen)

    def item(self, ai: AnalysedItem) -> tuple[str, str]:
        """(path, html) of an item page.

        Rendered straight from the card context with autoescaped HTML templates rather than through
        Markdown: it is the page with the most GitHub-authored text (title, author, labels, paths, body,
        link URLs), so every field gets exactly one escaping step, and it is the most numerous page, so
        skipping a Markdown round trip keeps a build of thousands of items fast.
        """
        item = ai.item
        rel = item_page(item.repo, item.number)
        back, more = cap_links(self.data.referenced_by.get((item.repo.lower(), item.number), []), item.number,
                               self.most)
        duplicates, same = self.duplicates(item)
        card = card_context(CardInput(item=ai, referenced_by=back, duplicates=duplicates,
                                      more={**more, **({"duplicate": same} if same else {})}), self.t)
        body = item.body.strip()
        return rel, self.render("item.html.j2", rel, c=card, repo=item.repo, body=body,
                                repo_link=root_of(rel) + repo_page(item.repo))


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


def _repo_page(site: Site, repo: str, writer: PageWriter) -> None:
    weeks = site.data.weeks_of(repo)
    recent = weeks[-CHART_WEEKS:]
    series = _series(site, repo, recent)
    svgs = {"merged": charts.bars(recent, series["merged"]),
            "categories": charts.stacked(recent, series["categories"]),
            "risks": charts.lines(recent, series["risks"])}
    images = {}
    for key, svg in svgs.items():
        if svg is not None:
            rel = f"repos/{slug(repo)}-{key}.svg"
            writer.write(rel, svg)
            images[key] = rel.removeprefix("repos/")  # beside the repository page
    rows = [_weekly_row(site, repo, w) for w in reversed(weeks)]
    rel = repo_page(repo)
    writer.write(rel, site.render("repo.html.j2", rel, repo=repo, rows=rows, images=images,
                                  series={**series, "rows": list(zip(recent, series["merged"], strict=True))}))


def _home(site: Site, writer: PageWriter, days: list[date]) -> None:
    latest = days[-1] if days else None
    daily = daily_context(site.daily_input(latest), site.t, site.settings.focus_weights) if latest else None
    week = week_of(latest) if latest else None
    weekly = [_weekly_row(site, repo, week) for repo in site.data.repos if (repo, week) in site.data.by_week]
    watch = []
    for entry in site.data.watch:
        found = site.by_ref.get((entry.repo.lower(), entry.number))
        watch.append({"ref": f"{entry.repo}#{entry.number}", "repo": entry.repo, "number": entry.number,
                      "reason": entry.reason, "title": found.item.title if found else "",
                      "state": found.item.state if found else (entry.last_state or "")})
    recent = [{"day": d.isoformat(), "page": daily_page(d), "count": len(site.data.by_day[d])}
              for d in reversed(days[-14:])]
    repos = [{"name": r, "page": repo_page(r)} for r in site.data.repos]
    writer.write("index.html", site.render(
        "home.html.j2", "index.html", latest=latest.isoformat() if latest else "",
        latest_page=daily_page(latest) if latest else "", daily=daily, week=week, weekly=weekly, watch=watch,
        recent=recent, repos=repos))


def _indexes(site: Site, writer: PageWriter, days: list[date]) -> None:
    rows = [{"day": d.isoformat(), "page": "../" + daily_page(d), "count": len(site.data.by_day[d]),
             "key": sum(1 for ai in site.data.by_day[d] if ai.analysis.priority in ("P0", "P1"))}
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


def build_site(settings: Settings, engine: Engine, out_dir: Path, site_url: str = "") -> BuildResult:
    """Build (or incrementally rebuild) the static site under `out_dir`."""
    from ..pipeline.analysis import analyze

    started = time.perf_counter()
    analyze(settings, engine)
    site = Site(settings, load_site_data(engine, horizon(settings.clock_skew)), site_url)
    clock = windows.now()  # a report of today or this week is dated when it was built, never at its window's future end
    writer = PageWriter.open(out_dir)
    _static(writer)
    days = sorted(site.data.by_day)
    reports: list[feeds.FeedEntry] = []
    for day in days:
        rel, html, text = site.daily(day)
        writer.write(rel, html)
        reports.append(feeds.FeedEntry("daily", rel, text, min(day_window(day).until, clock)))
    weekly_count = 0
    for repo, week in sorted(site.data.by_week):
        rel, html, text = site.weekly(repo, week)
        writer.write(rel, html)
        reports.append(feeds.FeedEntry("weekly", rel, text, min(site.data.week_window(week).until, clock)))
        weekly_count += 1
    numbered = site.data.numbered()
    for ai in numbered:
        writer.write(*site.item(ai))
    for repo in site.data.repos:
        _repo_page(site, repo, writer)
    _home(site, writer, days)
    _indexes(site, writer, days)
    entries = search.index_entries(((ai, item_page(ai.item.repo, ai.item.number)) for ai in numbered),
                                   site.names)
    writer.write("search-index.js", search.index_script(entries))
    writer.write("search.html", site.render("search.html.j2", "search.html"))
    for rel, text in feeds.build_feeds(reports, site.site_url, site.t["site"]).items():
        writer.write(rel, text)
    removed = writer.finish()
    return BuildResult(out_dir, len(writer.new), len(writer.written), writer.unchanged, len(removed),
                       len(numbered), len(days), weekly_count, charts.available(),
                       time.perf_counter() - started, writer.warnings)
