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
from datetime import date, timedelta
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from ..analyse.links import load_relation_rules
from ..analyse.related import cap_links, nearest
from ..config import Settings
from ..models import PR, AnalysedItem, Link, Window, ref_number
from ..render import markdown as md_render
from ..render.context import (
    LANGS,
    CardInput,
    DailyInput,
    WeeklyInput,
    card_context,
    load_strings,
    weekly_context,
)
from ..render.escape import Md
from ..render.escape import text as author_text
from ..render.evidence import item_evidence
from ..render.markdown import fmt
from ..render.template_cache import bytecode_cache, fingerprint
from ..store import queries
from ..windows import horizon
from . import inputs
from .data import SiteData, day_window, week_of
from .markup import inline_html, markdown_html, markdown_title, safe_url, shown

SITE_TEMPLATES = Path(str(resources.files("infra_radar") / "defaults" / "templates" / "site"))
STATIC = resources.files("infra_radar") / "defaults" / "site_static"
STATIC_FILES = ("site.css", "search.js")
CHART_WEEKS = 52
INLINE_CACHE = 50_000  # lines of Markdown kept converted (see Site.inline)
_GITHUB_ITEM = re.compile(r"^https://github\.com/([\w.-]+/[\w.-]+)/(?:pull|issues)/(\d+)/?$")


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
    """Renders every page of the site from the grouped store data. A daily page is the radar `radar daily`
    builds for its UTC day (pipeline.radar.daily_radar, from the store `engine`); with `memory`
    (pipeline.memory.Memory) it recalls the radars published before it. With `backfill`, each daily page is
    also remembered (in `records`) as published, for the pages after it."""

    def __init__(self, settings: Settings, data: SiteData, site_url: str = "", memory=None,
                 engine=None, backfill: bool = False) -> None:
        self.settings, self.data, self.lang = settings, data, settings.lang
        self.memory, self.records = memory, []
        self.engine, self.backfill = engine, backfill
        self._radar: tuple[date, Any] | None = None  # the last daily radar built (the home page reuses it)
        self._compiled: dict = {}  # the rules, compiled once when a day's item is judged as it stood (as_of)
        self._related: dict | None = None  # what the daily pages' related-item look-ups read once a build
        self._names: list[str] = []  # the repositories a daily page covers (pipeline.reports.report_repos)
        self._backfilled: set[date] = set()
        self.site_url = site_url.rstrip("/") + "/" if site_url else ""
        self.t = load_strings(self.lang, SITE_TEMPLATES)
        self.names = {lang: load_strings(lang) for lang in LANGS}
        self.pages = {(ai.item.repo.lower(), ai.item.number): item_page(ai.item.repo, ai.item.number)
                      for ai in data.numbered()}
        self.by_ref = {(ai.item.repo.lower(), ai.item.number): ai for ai in data.numbered()}
        self.looked: set[str] | None = None  # the items a page being rendered looked up (publish/inputs.py)
        self._digests: dict[int, str] = {}
        self._inline: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}  # (line, root) -> (HTML, links)
        self._newest: dict[str, Any] | None = None
        self._is_bot: Any = None
        self.most = load_relation_rules(settings).max_per_kind  # related items of one kind a page lists
        self._groups: dict = {}  # exact-title group -> (numbers sorted, number -> (store order, title))
        # the published radars by date: each is a page of the site under its date, exactly as published; a
        # calendar-day page is only for a day no published radar covers
        self.published: dict[date, tuple] = {}
        self.covered: set[date] = set()
        if engine is not None:
            from ..store.published import published_days
            from ..windows import owned_days

            self.published = published_days(engine)
            spans = [(since, until) for since, until, *_ in self.published.values()]
            for since, until in spans:
                self.covered |= owned_days(Window(since, until), spans)
            self.covered |= set(self.published)

    def daily_days(self) -> list[date]:
        """The days of the site's daily pages: every published radar's, and every day with items that no
        published radar covers (a calendar-day page), in order."""
        return sorted(set(self.published) | {d for d in self.data.by_day if d not in self.covered})

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
        if day in self.published:
            return inputs.digest("published", day, *self.published[day])
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
        Markdown card shows it (its author pieces escaped as `render.escape.text` escapes them there).

        Converted once a build for each line and root (a risk's name, "no test changes", a common checklist
        step recur on thousands of pages): the HTML depends on nothing else, as the site's pages are fixed for
        the build; the links it looked up are looked up again, so each page records them (publish/inputs.py)."""
        text = author_text(value)
        found = self._inline.get((text, root))
        if found is None:
            urls: list[str] = []

            def local(url: str) -> str | None:
                urls.append(url)
                return self.local(url, root)
            if len(self._inline) >= INLINE_CACHE:
                self._inline.clear()
            found = self._inline[(text, root)] = (inline_html(text, local), tuple(urls))
        else:
            for url in found[1]:
                self.local(url, root)
        return Markup(found[0])

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
    def daily_radar(self, day: date):
        """The daily radar of one UTC day [D 00:00Z, D+1), as `radar daily` builds it for that window
        (pipeline.radar.daily_radar): the day's items from the site's data, judged as they stood at its end, the
        rules, when an item needs judging again, compiled once a build."""
        from ..pipeline.radar import daily_radar
        from ..pipeline.relations import batch_cache

        if self._related is None:
            from ..pipeline.reports import report_repos

            self._related = batch_cache(self.engine)
            self._names = report_repos(self.settings, self.engine, None)  # as `radar daily` names them
        if (self._radar is None or self._radar[0] != day) and day in self.published:
            # the published radar of that date, rebuilt as it was published (recalling the radars before it)
            since, until, _, _, repos = self.published[day]
            window = Window(since, until)
            radar = daily_radar(self.settings, self.engine, window, repos or self._names, generated_at=window.until,
                                compiled=self._compiled, related=self._related)
            self._radar = (day, radar)
        if self._radar is None or self._radar[0] != day:
            window = day_window(day)
            radar = daily_radar(self.settings, self.engine, window, self._names, calendar_day=True,
                                generated_at=window.until, found=self.data.by_day.get(day, []),
                                memory=self.memory, lookup=SiteLookup(self), compiled=self._compiled,
                                remember=self.memory is not None, related=self._related)
            self._radar = (day, radar)
        return self._radar[1]

    def backfill_day(self, day: date) -> None:
        """With `backfill`: the radar of `day` remembered as published for the pages after it, and kept in
        `records` to be recorded when the build ends (a page not rendered again is backfilled too)."""
        if not self.backfill or day in self._backfilled or day in self.published:  # once a day (a feed may
            return  # render a page again); a published radar stays as it was
        self._backfilled.add(day)
        radar = self.daily_radar(day)
        if radar.recall is not None:
            record = radar.record(self.t)
            self.memory.put(record)
            self.records.append(record)

    def daily_input(self, day: date) -> DailyInput:
        """What the daily radar of one UTC day shows."""
        return self.daily_radar(day).input

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
        kept = self.published.get(day)
        if kept is not None and kept[2] is not None:  # the published text, as it was published
            text = kept[2]
        else:
            radar = self.daily_radar(day)
            text = self.markdown("daily.md.j2", radar.context(self.t))
        self.backfill_day(day)
        title = markdown_title(text)
        content = self.report(text, rel)
        if kept is None:  # a calendar day: computed here, and the page says so above the radar
            content = Markup('<p class="computed-day">{}</p>\n').format(self.t["site"]["computed_day"]) + content
        return rel, self.render("report.html.j2", rel, title=title, content=content), text

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

    def model_evidence(self, ai: AnalysedItem) -> list[dict]:
        """The model sentences the cache holds for the item, each with the records it cites (llm/shown.py; none
        without a configured model; nothing is sent)."""
        if self.engine is None or ai.item.number is None:
            return []
        from ..llm.shown import model_evidence

        return model_evidence(self.settings, self.engine, [ai], self.lang).get(ai.item.ref, [])

    def item(self, ai: AnalysedItem, given: CardInput | None = None, model: list[dict] | None = None
             ) -> tuple[str, str]:
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
        # each record's statement as the report shows it (the radar's Markdown: code spans rendered, raw HTML
        # escaped); its source text is the author's, shown exactly as written: escaped, never read as markup
        evidence = [{**e.json(), "statement": Md(e.statement), "text": author_text(e.text)}
                    for e in item_evidence(ai, self.lang, self.settings.target)] if item.number is not None else []
        # the model's sentences, marked as the model's: its words are escaped text, like the author's
        model = self.model_evidence(ai) if model is None else model
        evidence += [{**m, "statement": author_text(m["statement"]), "text": author_text(m["text"]),
                      "records": ", ".join(map(str, m["records"]))} for m in model]
        return rel, self.render("item.html.j2", rel, c=card, repo=item.repo, body=body, evidence=evidence,
                                repo_link=root_of(rel) + repo_page(item.repo))


