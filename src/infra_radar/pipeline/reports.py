"""The report stage: the daily radar, the weekly report and the export, each from a window of the store.

Every report takes the Settings and the store engine explicitly, analyses what is new first, and only reads
the store (and writes analyses and runs), so any report can be re-rendered offline from a database file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.engine import Engine

from ..config import Settings
from ..errors import ConfigError, WindowError, few
from ..models import Window, check_repo
from ..store import queries, save
from .analysis import analyze
from .home import atomic_write


@dataclass(slots=True)
class Report:
    """A rendered report and where it was written (if it was)."""

    text: str
    window: Window
    path: Path | None = None
    llm: object = None  # llm.stage.LlmRunSummary when model prose was used
    notes: list[str] = field(default_factory=list)  # what the user should know (a window clipped to now)


def _check_repos(engine: Engine, names: list[str]) -> list[str]:
    names = [check_repo(n) for n in names]  # one check of OWNER/NAME for every command (models.check_repo)
    known = {n.lower(): n for n in queries.repo_names(engine)}
    missing = [n for n in names if n.lower() not in known]
    if missing:
        have = few(known.values(), len(known)) or "none (import something first)"
        raise ConfigError(f"unknown repository {few(m[:80] for m in missing)}; the store has: {have}")
    return [known[n.lower()] for n in names]


def daily_window(settings: Settings, engine: Engine, since: datetime | None, until: datetime | None,
                 notes: list[str] | None = None) -> tuple[Window, bool]:
    """The daily window: from the last successful daily run (first run: look back N hours) to now. A window
    ending later than now ends now (said in `notes`): what has not happened yet is never "today"."""
    from ..windows import make_window, now

    clock = now()
    if until is not None and until > clock:
        if notes is not None:
            notes.append(f"--until {until:%Y-%m-%dT%H:%M:%SZ} is later than now: the window ends now, "
                         f"{clock:%Y-%m-%dT%H:%M:%SZ}")
        until = clock
    until = until or clock
    first = False
    if since is None:
        last = queries.last_success(engine, "daily", "all")
        if last and last[1] and last[1] < until:
            since = last[1]
        else:
            since, first = until - timedelta(hours=settings.first_lookback_hours), last is None
    return make_window(since, until), first


def state_at(item, when: datetime) -> tuple[str, str | None, bool]:
    """An item's state as of `when`: (state, merge commit or None, whether it changed after `when`).

    A PR merged or closed after `when` was still open then (a watched PR existed; history imports only
    know its merge time, so its creation time says nothing).
    """
    from ..models import CLOSED, MERGED, OPEN

    later = any(t is not None and t > when for t in (item.merged_at, item.closed_at, item.updated_at))
    if item.state == MERGED and item.merged_at is not None and item.merged_at > when:
        return OPEN, None, True
    if item.state == CLOSED and item.closed_at is not None and item.closed_at > when:
        return OPEN, None, True
    return item.state, item.merge_commit, later


def as_of(settings: Settings, found: list, when: datetime, compiled: dict | None = None) -> list:
    """The items as they stood at `when`: one merged or closed later (a window looked at afterwards, as a
    backfill or the team's day is) was open then, and is judged again as open (priority and decision read
    the state); its later dates are left out. The rules are compiled only when some item needs it, and kept
    in `compiled` (when given) for the next call: a site build asks for every day."""
    from dataclasses import replace

    from ..analyse.item import analyse
    from ..analyse.ruleset import RuleSet
    from ..models import AnalysedItem

    compiled = {} if compiled is None else compiled
    out = []
    for ai in found:
        item = ai.item
        state, _, _ = state_at(item, when)
        if state == item.state:
            out.append(ai)
            continue
        if "rules" not in compiled:
            compiled["rules"] = RuleSet.load(settings)
        rules = compiled["rules"]
        then = replace(item, state=state, merged_at=None, closed_at=None, merge_commit=None,
                       updated_at=item.updated_at if item.updated_at and item.updated_at <= when else None)
        out.append(AnalysedItem(then, analyse(then, rules, settings)))
    return out


def daily_items(settings: Settings, engine: Engine, window: Window, names: list[str]) -> list:
    """What a daily radar of `window` holds: the items touched or opened in it, as they stood at its end."""
    return as_of(settings, queries.analysed_in_window(engine, window, names, opened=True), window.until)


def _watch_rechecks(engine: Engine, window: Window) -> list:
    from ..render.context import WatchRecheck
    from ..store.rows import files_digest

    rechecks = []
    for entry in queries.watch_list(engine):
        found = queries.analysed_item(engine, entry.repo, entry.number)
        ref = f"{entry.repo}#{entry.number}"
        if found is None:
            rechecks.append(WatchRecheck(ref, f"https://github.com/{ref.replace('#', '/pull/')}", entry.reason,
                                         entry.last_state, "unknown", None, None, []))
            continue
        item, digest = found.item, files_digest(found.item)
        newer = queries.referencing_in_window(engine, entry.repo, entry.number, window)
        state, commit, later = state_at(item, window.until)
        # what happened after the window's end is not reported (nor remembered) by this window's radar
        moved = None if entry.last_files is None or later else digest != entry.last_files
        rechecks.append(WatchRecheck(ref, item.url, item.title, entry.last_state, state, commit, moved, newer,
                                     list(found.analysis.risk_labels)))
        if not later:
            save.watch_checked(engine, entry.repo, entry.number, state, digest)
    return rechecks


def daily(settings: Settings, engine: Engine, since: datetime | None = None, until: datetime | None = None,
          repos: list[str] | None = None, out_dir: Path | None = None, llm: bool | None = None) -> Report:
    """The daily radar for the window after the last successful run; recorded as a run."""
    from ..llm.render import render_daily_llm
    from ..render.markdown import render_daily

    notes: list[str] = []
    window, first = daily_window(settings, engine, since, until, notes)
    names = _check_repos(engine, repos) if repos else queries.repo_names(engine)
    analyze(settings, engine)
    run = save.start_run(engine, "daily", "all", window)
    try:
        inp = _daily_input(settings, engine, window, first, names, since is not None,
                           _watch_rechecks(engine, window))
        found = inp.items
        prose = _llm_prose(settings, engine, llm, inp)
        text = (render_daily(inp, settings.lang, focus_weights=settings.focus_weights) if prose is None else
                render_daily_llm(inp, settings.lang, prose, settings.focus_weights))
        path = atomic_write(out_dir / "daily" / f"{window.until:%Y-%m-%d}.md", text) if out_dir else None
    except BaseException:
        save.finish_run(engine, run, "failed")
        raise
    save.finish_run(engine, run, "ok", {"items": len(found), "path": str(path) if path else None,
                                        **({"llm": prose.line()} if prose else {})})
    return Report(text, window, path, prose, notes)


def _llm_prose(settings: Settings, engine: Engine, flag: bool | None, inp):
    """Model prose for the daily radar `inp` (llm.stage.LlmRunSummary), or None when the model is off or not
    configured."""
    from ..llm.stage import daily_llm, use_llm

    config = use_llm(settings, flag)
    return None if config is None else daily_llm(settings, engine, inp, settings.lang, config=config)


def daily_prompts(settings: Settings, engine: Engine, since: datetime | None = None, until: datetime | None = None,
                  repos: list[str] | None = None):
    """`radar daily --dry-run`: the model prompts the daily radar would send (llm.stage.LlmRunSummary.prompts);
    nothing is sent, written or recorded, and tracked items are not rechecked."""
    from ..llm.stage import daily_llm, use_llm

    config = use_llm(settings, True)
    window, first = daily_window(settings, engine, since, until)
    names = _check_repos(engine, repos) if repos else queries.repo_names(engine)
    analyze(settings, engine)
    inp = _daily_input(settings, engine, window, first, names, since is not None, watch=[])
    return daily_llm(settings, engine, inp, settings.lang, dry_run=True, config=config)


def _daily_input(settings: Settings, engine: Engine, window: Window, first: bool, names: list[str],
                 explicit: bool, watch: list):
    """What the daily radar of `window` shows (render.context.DailyInput), the tracked items' rechecks given."""
    from ..analyse.links import load_relation_rules
    from ..analyse.stories import stories
    from ..render.context import DailyInput
    from .relations import related_links

    found = daily_items(settings, engine, window, names)
    top = [a for a in found if a.analysis.priority in ("P0", "P1")]
    return DailyInput(window=window, repos=names, items=found, watch=watch, deep_dive_limit=settings.deep_dive_limit,
                      first_run=first, generated_at=datetime.now(UTC).replace(microsecond=0), explicit=explicit,
                      related=related_links(settings, engine, top), target=settings.target,
                      short_p2_limit=settings.short_p2_limit, top_table_limit=settings.top_table_limit,
                      stories=stories(found, load_relation_rules(settings)))


def weekly_input(settings: Settings, engine: Engine, repo: str, window: Window):
    """Everything the weekly report of `repo` over `window` shows (render.context.WeeklyInput)."""
    from ..render.context import WeeklyInput
    from ..store.ledger import adapted_in_window
    from ..windows import horizon, previous, week_label

    limit = horizon(settings.clock_skew)
    if window.since > limit:
        raise WindowError(f"the window starts {window.since:%Y-%m-%dT%H:%MZ}, later than now: nothing in it has "
                          "happened yet (a record dated that late is kept but never makes a week)")
    seen = Window(window.since, min(window.until, limit))  # what is dated later than now is not this week's
    if week_label(window) is None:  # a --since/--until range ending later than now ends now (a week keeps its name)
        window = seen
    (name,) = _check_repos(engine, [repo])
    analyze(settings, engine)
    return WeeklyInput(repo=name, window=window, week_label=week_label(window),
                       items=queries.analysed_in_window(engine, seen, [name]),
                       previous=queries.analysed_in_window(engine, previous(window), [name]),
                       key_prs=settings.weekly_key_prs, adapted=adapted_in_window(engine, name, seen),
                       target=settings.target)


def weekly(settings: Settings, engine: Engine, repo: str, window: Window, out_dir: Path | None = None,
           llm: bool | None = None) -> Report:
    """The weekly report of one repository over an ISO week or any date range."""
    from ..llm.render import render_weekly_llm
    from ..llm.stage import use_llm, weekly_llm
    from ..render.markdown import render_weekly

    inp = weekly_input(settings, engine, repo, window)
    name, label = inp.repo, inp.week_label
    config, prose = use_llm(settings, llm), None
    if config is None:
        text = render_weekly(inp, settings.lang, focus_weights=settings.focus_weights)
    else:
        prose = weekly_llm(settings, engine, inp, settings.lang, config=config)
        text = render_weekly_llm(inp, settings.lang, prose, settings.focus_weights)
    path = None
    if out_dir:
        stem = label or f"{inp.window.since:%Y-%m-%d}_{inp.window.until:%Y-%m-%d}"
        path = atomic_write(out_dir / "weekly" / name.replace("/", "+") / f"{stem}.md", text)
    return Report(text, inp.window, path, prose)


def export(settings: Settings, engine: Engine, window: Window | None, repo: str | None = None,
           state: str = "all") -> list[dict]:
    """The export contract: one JSON object per analysed item in the window, with the same links as its card
    (references, items referencing it, duplicates, chain parts, same-mechanism items, adaptations)."""
    from ..render.markdown import card_json
    from .card import card_of
    from .relations import batch_cache

    names = _check_repos(engine, [repo]) if repo else None
    analyze(settings, engine)
    found = queries.analysed_in_window(engine, window, names, state=state)
    cache = batch_cache(engine)
    back = queries.referenced_by_many(engine, [(a.item.repo, a.item.number) for a in found if a.item.number])
    return [card_json(card_of(settings, engine, a, cache,
                            back.get((a.item.repo.lower(), a.item.number), []) if a.item.number else []))
            for a in found]
