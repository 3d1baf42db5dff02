"""The report stage: the daily radar, the weekly report and the export, each from a window of the store.

Every report takes the Settings and the store engine explicitly, analyses what is new first, and only reads
the store (and writes analyses and runs), so any report can be re-rendered offline from a database file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy.engine import Engine

from ..config import Settings
from ..errors import ConfigError, WindowError, few
from ..models import Window, check_repo
from ..store import queries, save
from ..windows import report_day
from .analysis import analyze
from .asof import as_of, live, state_at, undated  # noqa: F401  (defined here before)
from .home import atomic_write


@dataclass(slots=True)
class Report:
    """A rendered report and where it was written (if it was)."""

    text: str
    window: Window
    path: Path | None = None
    llm: object = None  # llm.stage.LlmRunSummary when model prose was used
    newest: list | None = None  # a window with no item: each repository's newest item time (what the store holds)
    notes: list[str] = field(default_factory=list)  # what the user should know (a window clipped to now)



def _check_repos(engine: Engine, names: list[str], settings: Settings | None = None) -> list[str]:
    names = [check_repo(n) for n in names]  # one check of OWNER/NAME for every command (models.check_repo)
    known = {n.lower(): n for n in queries.repo_names(engine)}
    # a repository radar.toml lists is known before the store holds anything of it: its report is empty
    known.update({n.lower(): n for n in unstored_repos(settings, known.values())} if settings else {})
    missing = [n for n in names if n.lower() not in known]
    if missing:
        have = few(known.values(), len(known)) or "none (import something first)"
        raise ConfigError(f"unknown repository {few(m[:80] for m in missing)}; the store has: {have} "
                          "(radar repo add OWNER/NAME adds one to radar.toml)")
    return [known[n.lower()] for n in names]


def unstored_repos(settings: Settings, stored) -> list[str]:
    """The repositories the user's radar.toml lists that the store holds nothing of (none with the packaged list:
    those are an example, not the user's choice)."""
    if settings.config_path is None:
        return []
    have = {n.lower() for n in stored}
    return [r.name for r in settings.repos if r.name.lower() not in have]


def report_repos(settings: Settings, engine: Engine, repos: list[str] | None) -> list[str]:
    """The repositories a daily radar covers: those given (checked), else every one radar.toml lists (stored or
    not: the scope line names a configured repository with no data); with no [[repos]] of the user's, every
    stored one. A repository the store holds that radar.toml does not list (removed, or imported under a name
    nobody configured) is in no report: its data stays, and can be read by name."""
    if repos:
        return _check_repos(engine, repos, settings)
    return covered(settings, queries.repo_names(engine))


def covered(settings: Settings, stored: list[str]) -> list[str]:
    """Of the stored repositories `stored`, those the reports cover (see `report_repos`), then the configured ones
    the store holds nothing of."""
    if not settings.repos_listed:
        return stored + unstored_repos(settings, stored)
    listed = {r.name.lower() for r in settings.repos}
    return [n for n in stored if n.lower() in listed] + unstored_repos(settings, stored)


def daily_window(settings: Settings, engine: Engine, since: datetime | None, until: datetime | None,
                 notes: list[str] | None = None, repos: list[str] | None = None) -> tuple[Window, bool]:
    """The daily window: from the end of the last published radar (none yet: look back N hours) to now; with
    `repos`, the last radar published for them (store.published.last_window: windows are per repository). A
    radar only printed is a preview and moves nothing. A window ending later than now ends now (said in
    `notes`): what has not happened yet is never "today"."""
    from ..store.published import last_window
    from ..windows import make_window, now_end

    clock = now_end()
    if until is not None and until > clock:
        if notes is not None:
            notes.append(f"--until {until:%Y-%m-%dT%H:%M:%SZ} is later than now: the window ends now, "
                         f"{clock:%Y-%m-%dT%H:%M:%SZ}")
        until = clock
    until = until or clock
    first = False
    if since is None:
        last = last_window(engine, repos)
        if last and last[1] < until:
            since = last[1]
        else:
            since, first = until - timedelta(hours=settings.first_lookback_hours), last is None
    return make_window(since, until), first


def daily(settings: Settings, engine: Engine, since: datetime | None = None, until: datetime | None = None,
          repos: list[str] | None = None, out_dir: Path | None = None, llm: bool | None = None,
          record: bool = True, warn=None) -> Report:
    """The daily radar for the window after the last published radar; recorded as a run. Written under
    `out_dir`, it is published: what it showed is recorded for the radars after it, and the next window starts
    where it ends (not with `record` off). Printed, it is a preview: nothing is recorded."""
    from ..llm.render import render_daily_llm
    from .radar import daily_radar

    notes: list[str] = []
    names = report_repos(settings, engine, repos)
    window, first = daily_window(settings, engine, since, until, notes, names)
    from ..store.published import record_at

    kept = record_at(engine, window.until)
    if (kept is not None and kept[1].since == window.since and kept[1].text is not None
            and kept[1].lang in (None, settings.lang) and sorted(kept[1].repos) == sorted(names)):
        # a published radar is immutable: its rerun (same window, repositories and language) says what it said,
        # and its record stays as it is
        path = atomic_write(out_dir / "daily" / f"{report_day(window):%Y-%m-%d}.md", kept[1].text) if out_dir else None
        return Report(kept[1].text, window, path, None, None, notes)
    # a window the command line gave is the one asked for; one taken from the last publication may be weeks long
    long = long_window(settings, window) if since is None else ""
    if long:  # said before anything is written (`warn`: the command's stderr), and kept with the report
        (warn or notes.append)(long)
    analyze(settings, engine)
    run = save.start_run(engine, "daily", "all", window)
    try:
        radar = daily_radar(settings, engine, window, names, first=first, explicit=since is not None)
        inp = radar.input
        found = inp.items
        prose = _llm_prose(settings, engine, llm, inp)
        text = (radar.markdown() if prose is None else
                render_daily_llm(inp, settings.lang, prose, settings.focus_weights))
        path = atomic_write(out_dir / "daily" / f"{report_day(window):%Y-%m-%d}.md", text) if out_dir else None
        if path is not None and record:
            radar.publish(engine, text=text)
    except BaseException:
        save.finish_run(engine, run, "failed")
        raise
    save.finish_run(engine, run, "ok", {"items": len(found), "path": str(path) if path else None,
                                        "published": bool(path is not None and record),
                                        **({"llm": prose.line()} if prose else {})})
    return Report(text, window, path, prose, None if found else queries.newest_per_repo(engine, names), notes)


def long_window(settings: Settings, window: Window) -> str:
    """One line when `window` is much longer than the daily schedule (`long_window_days`), else "": the last
    radar was published long ago (or never), and the radar about to be written covers all of that."""
    days = (window.until - window.since) / timedelta(days=1)
    if settings.long_window_days <= 0 or days <= settings.long_window_days:
        return ""
    return (f"the daily window {window.since:%Y-%m-%dT%H:%MZ}..{window.until:%Y-%m-%dT%H:%MZ} is "
            f"{round(days * 24):,} hours long (more than long_window_days = {settings.long_window_days:g} days: the "
            "last radar was published long ago); choose one with --since (and --until), e.g. --since "
            f"{window.until - timedelta(days=1):%Y-%m-%dT%H:%MZ}")


def _llm_prose(settings: Settings, engine: Engine, flag: bool | None, inp):
    """Model prose for the daily radar `inp` (llm.stage.LlmRunSummary), or None when the model is off or not
    configured."""
    from ..llm.stage import daily_llm, use_llm

    config = use_llm(settings, flag)
    return None if config is None else daily_llm(settings, engine, inp, settings.lang, config=config)


def daily_prompts(settings: Settings, engine: Engine, since: datetime | None = None, until: datetime | None = None,
                  repos: list[str] | None = None):
    """`radar daily --dry-run`: the model prompts the daily radar would send (llm.stage.LlmRunSummary.prompts);
    nothing is sent, written or recorded."""
    from ..llm.stage import daily_llm, use_llm
    from .radar import daily_radar

    config = use_llm(settings, True)
    names = report_repos(settings, engine, repos)
    window, first = daily_window(settings, engine, since, until, repos=names)
    analyze(settings, engine)
    # with its recall: what it would not deep-dive again
    inp = daily_radar(settings, engine, window, names, first=first, explicit=since is not None).input
    return daily_llm(settings, engine, inp, settings.lang, dry_run=True, config=config)


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
    (name,) = _check_repos(engine, [repo], settings)
    analyze(settings, engine)
    from .judgment import judge

    return WeeklyInput(repo=name, window=window, week_label=week_label(window),
                       items=judge(settings, engine, queries.analysed_in_window(engine, seen, [name])),
                       previous=judge(settings, engine, queries.analysed_in_window(engine, previous(window), [name])),
                       key_prs=settings.weekly_key_prs, adapted=adapted_in_window(engine, name, seen),
                       target=settings.target, data_end=queries.newest_time(engine, name, limit),
                       is_bot=bot_test(settings), rules_dir=settings.rules_dir)


def bot_test(settings: Settings):
    """The rules' bot test (bots.toml names and patterns, the user's copy first) as a function of a login."""
    from ..analyse.ruleset import RuleSet, is_bot

    rules = RuleSet.load(settings)
    return lambda login: is_bot(login, rules)


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
    """The export contract as one list: one JSON object per analysed item in the window, with the same links as
    its card (references, items referencing it, duplicates, chain parts, same-mechanism items, adaptations).
    `radar export` streams the same objects (pipeline/export.py)."""
    from .export import export_objects

    names = _check_repos(engine, [repo], settings) if repo else None
    return list(export_objects(settings, engine, window, names, state))
