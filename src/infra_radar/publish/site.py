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
from ..models import MERGED, PR, AnalysedItem, Link, Window, ref_number
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
from ..render.escape import text as author_text
from ..render.markdown import fmt
from ..render.template_cache import bytecode_cache, fingerprint
from ..store import queries
from ..windows import horizon
from . import charts, feeds, inputs, search
from .data import SiteData, day_window, load_site_data, week_of
from .markup import inline_html, markdown_html, markdown_title, safe_url, shown, shown_rows
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
    skipped: int = 0  # pages not rendered again: their inputs had not changed since the last build
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
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(fmt=fmt, url=safe_url)
    env.bytecode_cache = bytecode_cache(fingerprint(env))
    return env


class SiteLookup:
    """Where the daily pages' rechecks read items: the site's own data, already in memory (pipeline.memory.Lookup)."""

    def __init__(self, site: Site) -> None:
        self.site = site

    def item(self, repo: str, number: int) -> AnalysedItem | None:
        return self.site.by_ref.get((repo.lower(), number))

    def referencing(self, repo: str, number: int) -> list[AnalysedItem]:
        links = self.site.data.referenced_by.get((repo.lower(), number), [])
        found = (self.site.by_ref.get(((link.repo or "").lower(), link.number)) for link in links)
        return [ai for ai in found if ai is not None]

    def watch(self) -> list:
        return self.site.data.watch


class Site:
    """Renders every page of the site from the grouped store data. With `memory` (pipeline.memory.Memory), each
    daily page recalls the radars before it, and is remembered (in `records`) for the pages after it."""

    def __init__(self, settings: Settings, data: SiteData, site_url: str = "", memory=None,
                 judge=None) -> None:
        self.settings, self.data, self.lang = settings, data, settings.lang
        self.memory, self.records = memory, []
        self._recalled: dict[date, Any] = {}
        self.judge = judge or (lambda items: items)  # the team's labels over items judged again as they stood
        self._compiled: dict = {}  # the rules, compiled once when a day's item is judged as it stood (as_of)
        self.site_url = site_url.rstrip("/") + "/" if site_url else ""
        self.t = load_strings(self.lang, SITE_TEMPLATES)
        self.names = {lang: load_strings(lang) for lang in LANGS}
        self.pages = {(ai.item.repo.lower(), ai.item.number): item_page(ai.item.repo, ai.item.number)
                      for ai in data.numbered()}
        self.by_ref = {(ai.item.repo.lower(), ai.item.number): ai for ai in data.numbered()}
        self.looked: set[str] | None = None  # the items a page being rendered looked up (publish/inputs.py)
        self._digests: dict[int, str] = {}
        self._newest: dict[str, Any] | None = None
        self._is_bot: Any = None
        self.most = load_relation_rules(settings).max_per_kind  # related items of one kind a page lists
        self._groups: dict = {}  # exact-title group -> (numbers sorted, number -> (store order, title))

    # inputs (publish/inputs.py)
    def digest_of(self, items: list[AnalysedItem]) -> list[str]:
        """The digest of each analysed item as the store gave it (computed once a build)."""
        out = []
        for ai in items:
            found = self._digests.get(id(ai))
            if found is None:
                found = self._digests[id(ai)] = inputs.digest(ai)
            out.append(found)
        return out

    def daily_inputs(self, day: date) -> str:
        """What the daily page of `day` is made from (as_of and the rules are in the build's key)."""
        return inputs.digest("daily", day, self.data.repos, self.digest_of(self.data.by_day.get(day, [])),
                             self._memory_inputs(day_window(day)))

    def _memory_inputs(self, window: Window) -> str:
        """What a daily page recalls from the radars before it (pipeline/memory.py): the records of the last
        carry_days, the carries dropped by hand, the hand-watched items, and each followed item as it stands
        with what references it. A page is rendered again when any of these changed."""
        memory = self.memory
        if memory is None:
            return ""
        horizon = window.until - memory.carry_days - timedelta(days=1)
        records = [memory.records[u].content() for u in memory.untils if horizon <= u < window.until]
        watch = [(w.repo.lower(), w.number, w.reason) for w in self.data.watch]
        lookup, followed = SiteLookup(self), []
        for repo, number in sorted({(r.lower(), n) for r, n in memory.carried(window.until)}
                                   | {(r, n) for r, n, _ in watch}):
            found = lookup.item(repo, number)
            followed.append((repo, number, self.digest_of([found]) if found else None,
                             self.digest_of(lookup.referencing(repo, number))))
        return inputs.digest(records, sorted(memory.dropped), watch, followed)

    def weekly_inputs(self, repo: str, week: str) -> str:
        window = self.data.week_window(week)
        before = week_of((window.since - timedelta(days=1)).date())
        end = self._data_end(repo)  # a week the data ends inside says so: that changes when newer items come
        partial = end.isoformat() if end is not None and end < window.until else ""
        return inputs.digest("weekly", repo, week, self.digest_of(self.data.by_week.get((repo, week), [])),
                             self.digest_of(self.data.by_week.get((repo, before), [])), partial)

    def card_input(self, ai: AnalysedItem) -> CardInput:
        """An item's card input as the site shows it: at most `most` related items of one kind, the nearest, and
        how many more."""
        item = ai.item
        back, more = cap_links(self.data.referenced_by.get((item.repo.lower(), item.number), []), item.number,
                               self.most)
        duplicates, same = self.duplicates(item)
        return CardInput(item=ai, referenced_by=back, duplicates=duplicates,
                         more={**more, **({"duplicate": same} if same else {})})

    # links
    def _page_of(self, repo: str, number: int) -> str | None:
        """The page of item repo#number, noting the lookup while a page is rendered (publish/inputs.py)."""
        if self.looked is not None:
            self.looked.add(f"{repo.lower()}#{number}")
        return self.pages.get((repo.lower(), number))

    def resolve(self, ref: str) -> str | None:
        """The page a looked-up reference ("owner/name#N", lower case) points at now, or None."""
        repo, _, number = ref.rpartition("#")
        return self.pages.get((repo, int(number))) if number.isdigit() else None

    def local(self, url: str, root: str) -> str | None:
        """The site's own page for a GitHub PR/issue URL of an item in the store, else None."""
        found = _GITHUB_ITEM.match(url or "")
        number = ref_number(found.group(2)) if found else None
        page = self._page_of(found.group(1), number) if number is not None else None
        return root + page if page else None

    def href(self, url: str, root: str) -> str:
        """Where a link from GitHub data may point: our page of it, else a safe absolute URL, else ""."""
        return self.local(url, root) or safe_url(url)

    def ref_href(self, ref: str, root: str) -> str:
        """The page of an `owner/name#N` reference, or "" when the store has no such item."""
        repo, _, number = ref.rpartition("#")
        page = self._page_of(repo, int(number)) if number.isdigit() else None
        return root + page if page else ""

    def render(self, template: str, rel: str, **ctx: Any) -> str:
        """One page: the template with the shared context (strings, root prefix, link helpers)."""
        root = root_of(rel)
        return environment().get_template(template).render(
            t=self.t, lang=self.lang, root=root, href=lambda u: self.href(u, root),
            ref_href=lambda ref: self.ref_href(ref, root), md=lambda s: self.inline(s, root), **ctx)

    def inline(self, value: object, root: str) -> Markup:
        """A line of the radar's Markdown (a conclusion, a reason, a checklist step) as safe HTML, as the
        Markdown card shows it (its author pieces escaped as `render.escape.text` escapes them there)."""
        return Markup(inline_html(author_text(value), lambda url: self.local(url, root)))

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
        items = self.judge(as_of(self.settings, self.data.by_day.get(day, []), window.until, self._compiled))
        inp = DailyInput(window=window, repos=self.data.repos, items=items, watch=[],
                         deep_dive_limit=self.settings.deep_dive_limit, first_run=False,
                         generated_at=window.until, calendar_day=True)
        if self.memory is not None:
            from ..pipeline.memory import recall

            self._recalled[day] = recall(self.settings, self.memory, SiteLookup(self), inp, self._compiled)
        return inp

    def weekly_input(self, repo: str, week: str) -> WeeklyInput:
        """The weekly report of one repository and ISO week."""
        window = self.data.week_window(week)
        before = week_of((window.since - timedelta(days=1)).date())
        return WeeklyInput(repo=repo, window=window, week_label=week,
                           items=self.data.by_week.get((repo, week), []),
                           previous=self.data.by_week.get((repo, before), []),
                           key_prs=self.settings.weekly_key_prs, target=self.settings.target,
                           data_end=self._data_end(repo), is_bot=self._is_bot, rules_dir=self.settings.rules_dir)

    def _data_end(self, repo: str):
        """Where the repository's data ends (its newest item's time); with it, the bot test: once a build."""
        if self._newest is None:
            from ..pipeline.reports import bot_test

            self._newest, self._is_bot = {}, bot_test(self.settings)
            limit = horizon(self.settings.clock_skew)  # a record dated later than now is not where data ends
            for ai in self.data.items:
                when = ai.item.when
                if when is not None and when <= limit and (ai.item.repo not in self._newest
                                                           or when > self._newest[ai.item.repo]):
                    self._newest[ai.item.repo] = when
        return self._newest.get(repo)

    # pages
    def daily(self, day: date) -> tuple[str, str, str]:
        """(path, html, markdown) of a daily radar page."""
        rel = daily_page(day)
        inp = self.daily_input(day)
        ctx = daily_context(inp, self.t, self.settings.focus_weights)
        text = self.markdown("daily.md.j2", ctx)
        if day in self._recalled:  # remembered for the pages after it, recorded when the build ends
            record = self._recalled.pop(day).record(inp, ctx)
            self.memory.put(record)
            self.records.append(record)
        title = markdown_title(text)
        return rel, self.render("report.html.j2", rel, title=title, content=self.report(text, rel)), text

    def weekly(self, repo: str, week: str) -> tuple[str, str, str]:
        """(path, html, markdown) of a weekly report page."""
        rel = weekly_page(repo, week)
        text = self.markdown("weekly.md.j2",
                             weekly_context(self.weekly_input(repo, week), self.t, self.settings.focus_weights))
        title = markdown_title(text)
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

    def item(self, ai: AnalysedItem, given: CardInput | None = None) -> tuple[str, str]:
        """(path, html) of an item page.

        Rendered straight from the card context with autoescaped HTML templates rather than through
        Markdown: it is the page with the most GitHub-authored text (title, author, labels, paths, body,
        link URLs), so every field gets exactly one escaping step, and it is the most numerous page, so
        skipping a Markdown round trip keeps a build of thousands of items fast.
        """
        item = ai.item
        rel = item_page(item.repo, item.number)
        card = card_context(given or self.card_input(ai), self.t)
        body = item.body.strip()
        # the sentences the radar built in Markdown go through md() in the template (code spans rendered);
        # the team's line is shown as the text a reader sees (HTML escapes it)
        card["team"] = shown(card["team"])
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
    latest = days[-1] if days else None
    daily = daily_context(site.daily_input(latest), site.t, site.settings.focus_weights) if latest else None
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
        files = self.record.fresh(rel, data, self.site.resolve)
        if files is not None and all(self.writer.can_keep(f) for f in (rel, *files)):
            for f in (rel, *files):
                self.writer.keep(f)
            self.skipped += 1
            return False
        self.site.looked = set()
        try:
            content = render()
        finally:
            looked, self.site.looked = self.site.looked, None
        written = content if isinstance(content, dict) else {rel: content}
        for f, text in written.items():
            self.writer.write(f, text)
        self.record.record(rel, data, looked, self.site.resolve, [f for f in written if f != rel])
        self.rendered += 1
        return True


def build_site(settings: Settings, engine: Engine, out_dir: Path, site_url: str = "",
               progress: Progress | None = None, record: bool = True) -> BuildResult:
    """Build (or incrementally rebuild) the site under `out_dir`.

    A page whose inputs did not change since the last build (publish/inputs.py) is not rendered again;
    every other page is rendered and written only when its content changed (publish/writer.py). The daily
    pages rendered are recorded as published radars (docs/memory.md) once the build is complete, unless
    `record` is off.
    """
    from ..pipeline.analysis import analyze
    from ..pipeline.memory import Memory

    progress = progress or Progress()
    started = time.perf_counter()
    progress.stage("reading the store")
    analyze(settings, engine)
    from ..pipeline.judgment import judge

    site = Site(settings, load_site_data(engine, settings, horizon(settings.clock_skew)), site_url, Memory.load(settings, engine),
                lambda items: judge(settings, engine, items))
    progress.say(f"read {len(site.data.items)} item(s) of {len(site.data.repos)} repositories "
                 f"({time.perf_counter() - started:.1f}s)")
    clock = windows.now()  # a report of today or this week is dated when it was built, never at its window's future end
    writer = PageWriter.open(out_dir)
    key = inputs.build_key(settings, site.site_url, charts.available(), rules_dir=settings.rules_dir)
    seen = inputs.InputRecord.open(writer.root, key)
    build = _Build(site, writer, seen)
    _static(writer)
    days = sorted(site.data.by_day)
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
        reports.append(feeds.FeedEntry("daily", rel, text, min(day_window(day).until, clock), inputs=data,
                                       load=None if done else lambda day=day: site.daily(day)[2]))
        progress.advance()
    progress.say(_pages("daily pages", build.rendered, len(days)))

    weeks = sorted(site.data.by_week)
    build.rendered = 0
    progress.stage("weekly pages", len(weeks))
    for repo, week in weeks:
        rel, text = weekly_page(repo, week), ""

        def render(repo=repo, week=week):
            nonlocal text
            _, html, text = site.weekly(repo, week)
            return html
        data = site.weekly_inputs(repo, week)
        done = build.page(rel, data, render)
        reports.append(feeds.FeedEntry("weekly", rel, text, min(site.data.week_window(week).until, clock),
                                       inputs=data,
                                       load=None if done else lambda r=repo, w=week: site.weekly(r, w)[2]))
        progress.advance()
    progress.say(_pages("weekly pages", build.rendered, len(weeks)))

    numbered = site.data.numbered()
    build.rendered = 0
    progress.stage("item pages", len(numbered))
    item_digests = []
    for ai in numbered:
        given = site.card_input(ai)
        data = inputs.digest("item", site.digest_of([ai]), given.referenced_by, given.duplicates, given.more)
        item_digests.append(data)
        build.page(item_page(ai.item.repo, ai.item.number), data, lambda ai=ai, given=given: site.item(ai, given)[1])
        progress.advance()
    progress.say(_pages("item pages", build.rendered, len(numbered)))

    progress.stage("repository pages, home, indexes, search and feeds")
    for repo in site.data.repos:
        own = site.data.weeks_of(repo)
        data = inputs.digest("repo", repo, own, [site.digest_of(site.data.by_week[(repo, w)]) for w in own])
        build.page(repo_page(repo), data, lambda repo=repo: _repo_page(site, repo))
    _home(site, writer, days)
    _indexes(site, writer, days)
    build.page("search-index.js", inputs.digest("search", item_digests),
               lambda: search.index_script(search.index_entries(
                   ((ai, item_page(ai.item.repo, ai.item.number)) for ai in numbered), site.names)))
    writer.write("search.html", site.render("search.html.j2", "search.html"))
    _feeds(site, build, reports)
    removed = writer.finish()
    seen.save()
    if record and site.records:
        from ..store.lock import writer_lock
        from ..store.published import save_records

        with writer_lock(engine).hold(settings.lock_timeout):
            save_records(engine, site.records)
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
