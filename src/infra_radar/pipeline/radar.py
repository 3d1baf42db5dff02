"""One way from the store to a daily radar, whatever the door.

`radar daily` (in the terminal and with `--out`), the site's daily pages, its home page and feeds, and
`radar push daily` all build a window's radar with `daily_radar`, from the one Settings object: the same items
(touched or opened in the window, as they stood at its end, as the team judged them), the same sections (the
downstream repositories apart, the table limits, the stories that group a change with its backports), the same
target wording, and the same memory of the radars published before it. A door differs only in how it shows the
radar (Markdown, an HTML page, a chat digest) and in whether it publishes it (`DailyRadar.publish`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from ..config import Settings
from ..models import AnalysedItem, Window
from ..render.inputs import DailyInput
from ..store import queries

__all__ = ["DailyRadar", "daily_radar"]


@dataclass
class DailyRadar:
    """One window's daily radar: what it shows (`input`), what it recalled from the published radars before it
    (`recall`, None without memory), and its context per set of strings (render.daily.daily_context)."""

    settings: Settings
    input: DailyInput
    recall: Any = None  # pipeline.memory.Recall
    _contexts: dict[int, dict] = field(default_factory=dict)

    def context(self, t: dict[str, Any] | None = None) -> dict:
        """The radar's facts in section order, in the strings `t` (default: the settings' language). Worked out
        once per set of strings."""
        from ..render.context import daily_context, load_strings

        t = t if t is not None else load_strings(self.settings.lang)
        key = id(t)
        if key not in self._contexts:
            self._contexts[key] = (t, daily_context(self.input, t, self.settings.focus_weights))
        return self._contexts[key][1]

    def markdown(self, t: dict[str, Any] | None = None) -> str:
        """The radar as `radar daily` prints it (rule text; model prose is laid over by llm/render.py)."""
        from ..render.context import load_strings
        from ..render.markdown import _render

        t = t if t is not None else load_strings(self.settings.lang)
        return _render("daily.md.j2", self.context(t), t, None)

    def record(self, t: dict[str, Any] | None = None):
        """The record of this radar as published (store.published.RadarRecord), or None without memory."""
        return None if self.recall is None else self.recall.record(self.input, self.context(t))

    def publish(self, engine: Engine, t: dict[str, Any] | None = None, text: str | None = None):
        """Record the radar as published (docs/memory.md), with its text (`text`, default: the rule text): the
        radars after it follow what it showed, and the next daily window starts where it ends. A window already
        published keeps its record (store.published.save_records). Returns the record (None without memory)."""
        if self.recall is None:
            return None
        return self.recall.save(engine, self.input, self.context(t),
                                text=text if text is not None else self.markdown(t), lang=self.settings.lang)


def daily_radar(settings: Settings, engine: Engine, window: Window, names: list[str], *,
                first: bool = False, explicit: bool = False, calendar_day: bool = False,
                generated_at: datetime | None = None, found: list[AnalysedItem] | None = None,
                memory: Any = None, lookup: Any = None, compiled: dict | None = None,
                remember: bool = True, related: dict | None = None) -> DailyRadar:
    """The daily radar of `window` over repositories `names` (pipeline.reports.report_repos: every stored one and
    every one radar.toml lists, unless some were asked for), from `settings`.

    `found`: the items touched or opened in the window as the store holds them, when the caller has read them
    already (a site build reads the whole store once); they are taken as they stood at the window's end and
    judged here, as the store's are. `memory` (pipeline.memory.Memory, default: the store's published records)
    and `lookup` (where rechecks read items, default: the store) give the radar its recall; with `remember`
    off it has none (a preview of prompts needs it, a test may not). `compiled` (the rules) and `related` (what
    the related-item look-ups read once: the ledger, the term index) are kept across calls when given."""
    from ..analyse.links import load_relation_rules
    from ..analyse.stories import stories
    from ..store.ledger import adapted_in_window
    from ..windows import owned_days
    from .asof import as_of
    from .judgment import judge
    from .relations import related_links

    names = list(names)
    carried: list[AnalysedItem] = []
    days = None
    # a radar already published is rebuilt as it was: recalling only the radars published before it
    before_id = published_id(engine, window)
    if before_id is not None and not first:
        first = not preceded(engine, window, before_id) and first_lookback(settings, engine, window, before_id)
    if found is None:
        # a date-only time counts in one window of a published series: the one covering most of its day
        days = held_days(engine, window, names, before_id)
        found = queries.analysed_in_window(engine, window, names, opened=True, days=days)
        if first_lookback(settings, engine, window, before_id):  # what was open and may have moved in it, undated
            carried = queries.open_before(engine, window, names, settings.open_lookback_days, days)
            found = found + carried
    else:
        wanted = {n.lower() for n in names}
        found = [ai for ai in found if ai.item.repo.lower() in wanted]
    items = judge(settings, engine, as_of(settings, found, window.until, compiled))
    # what the author withdrew or superseded in a comment by the window's end (rules/withdrawal.toml)
    from ..analyse.withdrawal import compile_rules, withdrawal

    if compiled is not None and "withdrawal" not in compiled:
        compiled["withdrawal"] = compile_rules(settings)
    said = compiled["withdrawal"] if compiled is not None else compile_rules(settings)
    held = days if days is not None else owned_days(window)
    for ai in items:
        ai.withdrawn = withdrawal(ai.item, window.until, said, held)
    downstream = [n for n in names if settings.repo(n).role == "downstream"]
    down = {n.lower() for n in downstream}
    top = [a for a in items if a.analysis.priority in ("P0", "P1") and a.item.repo.lower() not in down]
    links_of = related_links(settings, engine, top, window.until, related)
    adapted = [e for repo in downstream for e in adapted_in_window(engine, repo, window)]
    # what the store knows of the items the report links (a pull request's page is /pull/N): one look-up
    linked = {(lk.repo, lk.number) for ai in top for lk in ai.analysis.links if lk.repo and lk.number is not None}
    linked |= {(lk.repo, lk.number) for links in links_of.values() for lk in links
               if lk.repo and lk.number is not None}
    linked |= {(e.up_repo, e.up_number) for e in adapted}
    kinds = {f"{repo}#{number}": kind for (repo, number), kind in queries.item_kinds(engine, linked).items()}
    inp = DailyInput(window=window, repos=names, items=items, watch=[], deep_dive_limit=settings.deep_dive_limit,
                     first_run=first, generated_at=generated_at or datetime.now(UTC).replace(microsecond=0),
                     explicit=explicit, calendar_day=calendar_day,
                     related=links_of, target=settings.target,
                     short_p2_limit=settings.short_p2_limit, top_table_limit=settings.top_table_limit,
                     short_table_limit=settings.short_table_limit, downstream=downstream,
                     downstream_limit=settings.downstream_limit,
                     adapted=adapted, stories=stories(items, load_relation_rules(settings)), kinds=kinds,
                     open_before={ai.item.ref.lower() for ai in carried})
    recalled = None
    if remember:
        from .memory import Memory, StoreLookup, recall
        from .retable import unchanged

        memory = memory if memory is not None else Memory.load(settings, engine, before_id)
        recalled = recall(settings, memory, lookup if lookup is not None else StoreLookup(engine), inp, compiled,
                          unchanged)
    return DailyRadar(settings, inp, recalled)


def published_id(engine: Engine, window: Window) -> int | None:
    """The row id of the published radar of exactly `window`, or None when that window was not published."""
    from ..store import published

    found = published.record_at(engine, window.until)
    return found[0] if found is not None and found[1].since == window.since else None


def first_lookback(settings: Settings, engine: Engine, window: Window, before_id: int | None = None) -> bool:
    """Whether `window` is a first run's look back: no radar published before it, and as long as the first run
    looks back (`first_lookback_hours`) or longer. A shorter window looked at on its own is one day of a series
    not yet published, not a first look over what was open."""
    hours = (window.until - window.since) / timedelta(hours=1)
    return hours >= settings.first_lookback_hours > 0 and not preceded(engine, window, before_id)


def preceded(engine: Engine, window: Window, before_id: int | None = None) -> bool:
    """Whether a radar published before `window` ended at or before its start: a series the window continues,
    whose radars listed what moved before it (with `before_id`: one published before the radar of that id)."""
    from ..store import published

    return published.latest_until(engine, window.since + timedelta(microseconds=1), before_id) is not None


def held_days(engine: Engine, window: Window, names: list[str], before_id: int | None = None):
    """The UTC days whose date-only times `window` holds (windows.owned_days) beside the windows published for
    any of the repositories `names`: a day belongs to the window of the series covering its largest part."""
    from ..store import published
    from ..windows import DAY, day_start, owned_days

    others = published.windows_around(engine, day_start(window.since), day_start(window.until) + DAY, names,
                                      before_id)
    return owned_days(window, others)
