"""The named stages in order: import -> analyse -> report/export. The only module that knows the sequence.

Every stage takes the Settings and the store engine explicitly. Importers only write the store;
analysis and reports only read it (and write analyses and runs), so any report can be re-rendered
offline from a database file.
"""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

from sqlalchemy.engine import Engine

from . import killpoint
from .analysis_stage import alongside, analyze
from .card import parse_ref
from .config import CONFIG_NAME, Settings, default_config_text
from .errors import ConfigError, SourceError, clip, redact
from .models import Item, Window
from .store import queries, save
from .store.db import open_engine

Tick = Callable[[int], None]


def _no_tick(_n: int) -> None:
    return None


def open_store(settings: Settings, writer: bool = False) -> Engine:
    """The store named by the settings, migrated to the current schema.

    With `writer`, the store's writer lock is taken first (waiting up to settings.lock_timeout for another
    writer) and held until `store.lock.writer_lock(engine).release()` or the end of the process.
    """
    return open_engine(settings.db_url, writer=writer, wait=settings.lock_timeout)


def init_home(settings: Settings, force: bool = False) -> Path:
    """Write radar.toml (every option, commented) into the home directory and create the store."""
    settings.home.mkdir(parents=True, exist_ok=True)
    path = settings.config_path or settings.home / CONFIG_NAME
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite it)")
    atomic_write(path, default_config_text())
    open_store(settings).dispose()
    return path


def atomic_write(path: Path, text: str) -> Path:
    """Write a file so that readers see the old or the new content, never half of it. Temporary files that
    a killed earlier write left beside it are removed (writers of a store are serialised by its lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        killpoint.reached("write.tmp")  # the new text is complete in the temporary file, not yet in place
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        stale.unlink(missing_ok=True)
    return path


# -- import ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class ImportResult:
    """What one import did."""

    source: str
    repo: str
    stats: save.SaveStats
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was passed over on purpose (a branch glob matching nothing)
    analysed: int = 0  # items analysed while importing (import-jsonl: the whole command's, on its last file)


def _cleaner(settings: Settings):
    from .analyse.rules import load_noise_patterns
    from .sources.history import BodyCleaner

    return BodyCleaner(load_noise_patterns(settings))


def _counted(stream: Iterable[Item], tick: Tick) -> Iterator[Item]:
    for item in stream:
        tick(1)
        yield item


def import_jsonl(settings: Settings, engine: Engine, paths: list[Path], tick: Tick = _no_tick) -> list[ImportResult]:
    """Import history exports (JSON Lines, plain or gzipped); broken lines are skipped and reported."""
    clean, results = _cleaner(settings), []
    with alongside(settings, engine) as analyser:
        for path in paths:
            results.append(_import_one_jsonl(engine, path, clean, tick, analyser))
    if results and analyser is not None:
        results[-1].analysed = analyser.analysed
    return results


def _import_one_jsonl(engine: Engine, path: Path, clean, tick: Tick, analyser) -> ImportResult:
    """One export file, in its own run; `analyser` (analysis_stage.alongside) gets each saved batch."""
    from .sources.jsonl import JsonlReport, read_jsonl

    report = JsonlReport(str(path))
    run = save.start_run(engine, "import-jsonl", str(path))
    try:
        stats = save.save_items(engine, _counted(read_jsonl(path, clean, report), tick), on_saved=analyser)
    except (OSError, EOFError) as exc:
        save.finish_run(engine, run, "failed", {"error": clip(redact(str(exc)), 300)})
        raise SourceError(f"{path}: cannot read: {exc}") from None
    except Exception as exc:  # never leave the run "running"
        save.finish_run(engine, run, "failed", {"error": clip(redact(f"{type(exc).__name__}: {exc}"), 300)})
        raise
    report.skipped += stats.skipped
    save.finish_run(engine, run, "ok", {"inserted": stats.inserted, "updated": stats.updated,
                                       "skipped": len(report.skipped)})
    return ImportResult(str(path), report.repo, stats, report.skipped)


def import_git(settings: Settings, engine: Engine, path: Path, repo: str, branches: list[str] | None,
               window: Window | None = None, tick: Tick = _no_tick, started=None) -> ImportResult:
    """Import a local clone's first-parent history of the matching branches, and its tags (`started`: a
    sources.git.StartedClone of the same clone, branches and window, its git log already running)."""
    from .sources.git import check_clone, read_clone

    if repo.count("/") != 1:
        raise ConfigError(f"repository {repo!r} is not OWNER/NAME")
    if started is None:
        check_clone(path)
    patterns = branches or settings.repo(repo).branches
    run = save.start_run(engine, "import-git", repo, window)
    notes: list[str] = []
    stream = read_clone(path, repo, patterns, _cleaner(settings),
                        window.since if window else None, window.until if window else None, notes, started)
    try:
        with alongside(settings, engine) as analyser:
            stats = save.save_items(engine, _counted(stream, tick), on_saved=analyser)
    except Exception as exc:  # never leave the run "running"
        save.finish_run(engine, run, "failed", {"error": clip(redact(str(exc)), 300)})
        raise
    save.finish_run(engine, run, "ok", {"inserted": stats.inserted, "updated": stats.updated,
                                       "notes": notes, "skipped": len(stats.skipped)})
    return ImportResult(str(path), repo, stats, stats.skipped, notes, analyser.analysed if analyser else 0)


# -- reports --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Report:
    """A rendered report and where it was written (if it was)."""

    text: str
    window: Window
    path: Path | None = None
    llm: object = None  # llm_stage.LlmRunSummary when model prose was used


def _check_repos(engine: Engine, names: list[str]) -> list[str]:
    known = {n.lower(): n for n in queries.repo_names(engine)}
    missing = [n for n in names if n.lower() not in known]
    if missing:
        have = ", ".join(known.values()) or "none (import something first)"
        raise ConfigError(f"unknown repository {', '.join(missing)}; the store has: {have}")
    return [known[n.lower()] for n in names]


def daily_window(settings: Settings, engine: Engine, since: datetime | None, until: datetime | None) -> tuple[Window, bool]:
    """The daily window: from the last successful daily run (first run: look back N hours) to now."""
    from .windows import make_window

    until = until or datetime.now(UTC).replace(microsecond=0)
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
    from .models import CLOSED, MERGED, OPEN

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

    from .analyse.item import analyse
    from .analyse.ruleset import RuleSet
    from .models import AnalysedItem

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
    from .render.context import WatchRecheck
    from .store.rows import files_digest

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
    from .llm_render import render_daily_llm
    from .render.markdown import render_daily

    window, first = daily_window(settings, engine, since, until)
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
    return Report(text, window, path, prose)


def _llm_prose(settings: Settings, engine: Engine, flag: bool | None, inp):
    """Model prose for the daily radar `inp` (llm_stage.LlmRunSummary), or None when the model is off or not
    configured."""
    from .llm_stage import daily_llm, use_llm

    config = use_llm(settings, flag)
    return None if config is None else daily_llm(settings, engine, inp, settings.lang, config=config)


def daily_prompts(settings: Settings, engine: Engine, since: datetime | None = None, until: datetime | None = None,
                  repos: list[str] | None = None):
    """`radar daily --dry-run`: the model prompts the daily radar would send (llm_stage.LlmRunSummary.prompts);
    nothing is sent, written or recorded, and tracked items are not rechecked."""
    from .llm_stage import daily_llm, use_llm

    config = use_llm(settings, True)
    window, first = daily_window(settings, engine, since, until)
    names = _check_repos(engine, repos) if repos else queries.repo_names(engine)
    analyze(settings, engine)
    inp = _daily_input(settings, engine, window, first, names, since is not None, watch=[])
    return daily_llm(settings, engine, inp, settings.lang, dry_run=True, config=config)


def _daily_input(settings: Settings, engine: Engine, window: Window, first: bool, names: list[str],
                 explicit: bool, watch: list):
    """What the daily radar of `window` shows (render.context.DailyInput), the tracked items' rechecks given."""
    from .analyse.links import load_relation_rules
    from .analyse.relations import related_links
    from .analyse.stories import stories
    from .render.context import DailyInput

    found = daily_items(settings, engine, window, names)
    top = [a for a in found if a.analysis.priority in ("P0", "P1")]
    return DailyInput(window=window, repos=names, items=found, watch=watch, deep_dive_limit=settings.deep_dive_limit,
                      first_run=first, generated_at=datetime.now(UTC).replace(microsecond=0), explicit=explicit,
                      related=related_links(settings, engine, top), target=settings.target,
                      short_p2_limit=settings.short_p2_limit, top_table_limit=settings.top_table_limit,
                      stories=stories(found, load_relation_rules(settings)))


def weekly_input(settings: Settings, engine: Engine, repo: str, window: Window):
    """Everything the weekly report of `repo` over `window` shows (render.context.WeeklyInput)."""
    from .render.context import WeeklyInput
    from .store.ledger import adapted_in_window
    from .windows import previous, week_label

    (name,) = _check_repos(engine, [repo])
    analyze(settings, engine)
    return WeeklyInput(repo=name, window=window, week_label=week_label(window),
                       items=queries.analysed_in_window(engine, window, [name]),
                       previous=queries.analysed_in_window(engine, previous(window), [name]),
                       key_prs=settings.weekly_key_prs, adapted=adapted_in_window(engine, name, window),
                       target=settings.target)


def weekly(settings: Settings, engine: Engine, repo: str, window: Window, out_dir: Path | None = None,
           llm: bool | None = None) -> Report:
    """The weekly report of one repository over an ISO week or any date range."""
    from .llm_render import render_weekly_llm
    from .llm_stage import use_llm, weekly_llm
    from .render.markdown import render_weekly

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
        stem = label or f"{window.since:%Y-%m-%d}_{window.until:%Y-%m-%d}"
        path = atomic_write(out_dir / "weekly" / name.replace("/", "+") / f"{stem}.md", text)
    return Report(text, window, path, prose)


def card_input(settings: Settings, engine: Engine, ref: str):
    """Everything the item card of `OWNER/NAME#N` shows (render.context.CardInput), the store analysed first."""
    from .card import read_card

    repo, number = parse_ref(ref)
    analyze(settings, engine)
    return read_card(settings, engine, repo, number)


def export(settings: Settings, engine: Engine, window: Window | None, repo: str | None = None,
           state: str = "all") -> list[dict]:
    """The export contract: one JSON object per analysed item in the window, with the same links as its card
    (references, items referencing it, duplicates, chain parts, same-mechanism items, adaptations)."""
    from .analyse.relations import batch_cache
    from .card import card_of
    from .render.markdown import card_json

    names = _check_repos(engine, [repo]) if repo else None
    analyze(settings, engine)
    found = queries.analysed_in_window(engine, window, names, state=state)
    index = queries.title_index(engine, sorted({a.item.repo for a in found}))
    cache = batch_cache(engine)
    back = queries.referenced_by_many(engine, [(a.item.repo, a.item.number) for a in found if a.item.number])
    return [card_json(card_of(settings, engine, a, index, cache,
                            back.get((a.item.repo.lower(), a.item.number), []) if a.item.number else []))
            for a in found]


# -- demo -----------------------------------------------------------------------------------------

DEMO_DAILY = ("2026-08-01T02:00:00Z", "2026-08-03T02:00:00Z")
DEMO_WEEK = ("acme/infer-npu", "2026-W31")


def sample_files() -> list[Path]:
    """The bundled demo sample exports."""
    folder = resources.files("infra_radar") / "defaults" / "sample"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".jsonl"))


def demo(settings: Settings, out_dir: Path) -> list[Path]:
    """Import the bundled sample into out_dir/demo.db and write a daily radar, a weekly report and the export."""
    import json

    from .windows import iso_week, parse_when

    out_dir.mkdir(parents=True, exist_ok=True)
    db = out_dir / "demo.db"
    for stale in (db, db.with_name("demo.db-wal"), db.with_name("demo.db-shm")):
        stale.unlink(missing_ok=True)
    settings.db_url = f"sqlite:///{db.resolve()}"
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    analyze(settings, engine)
    day = daily(settings, engine, parse_when(DEMO_DAILY[0]), parse_when(DEMO_DAILY[1]), out_dir=out_dir)
    week = weekly(settings, engine, DEMO_WEEK[0], iso_week(DEMO_WEEK[1]), out_dir=out_dir)
    everything = Window(datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
    data = export(settings, engine, everything)
    export_path = atomic_write(out_dir / "export.json", json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    engine.dispose()
    return [p for p in (day.path, week.path, export_path) if p is not None]
