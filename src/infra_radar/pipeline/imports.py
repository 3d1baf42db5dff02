"""The import stage: history exports, local clones and saved pages into the store, analysed as they go."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine

from ..config import Settings
from ..errors import SourceError, clip, redact
from ..models import Item, Window, check_repo
from ..sources.page import PageReport, load_page_rules, parse_page, read_page
from ..store import save
from ..windows import LaterDates
from .analysis import Tick, alongside, no_tick


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
    from ..analyse.rules import load_noise_patterns
    from ..sources.history import BodyCleaner

    return BodyCleaner(load_noise_patterns(settings))


def _counted(stream: Iterable[Item], tick: Tick) -> Iterator[Item]:
    for item in stream:
        tick(1)
        yield item


def import_jsonl(settings: Settings, engine: Engine, paths: list[Path], tick: Tick = no_tick) -> list[ImportResult]:
    """Import history exports (JSON Lines, plain or gzipped); broken lines are skipped and reported."""
    clean, results = _cleaner(settings), []
    with alongside(settings, engine) as analyser:
        for path in paths:
            results.append(_import_one_jsonl(engine, path, clean, tick, analyser, LaterDates(settings.clock_skew)))
    if results and analyser is not None:
        results[-1].analysed = analyser.analysed
    return results


def _import_one_jsonl(engine: Engine, path: Path, clean, tick: Tick, analyser, later: LaterDates) -> ImportResult:
    """One export file, in its own run; `analyser` (pipeline.analysis.alongside) gets each saved batch."""
    from ..sources.jsonl import JsonlReport, read_jsonl

    report = JsonlReport(str(path))
    run = save.start_run(engine, "import-jsonl", str(path))
    stream = later.watch(read_jsonl(path, clean, report), lambda _item: f"{path}:{report.line}")
    try:
        stats = save.save_items(engine, _counted(stream, tick), on_saved=analyser)
    except (OSError, EOFError) as exc:
        save.finish_run(engine, run, "failed", {"error": clip(redact(str(exc)), 300)})
        raise SourceError(f"{path}: cannot read: {exc}") from None
    except Exception as exc:  # never leave the run "running"
        save.finish_run(engine, run, "failed", {"error": clip(redact(f"{type(exc).__name__}: {exc}"), 300)})
        raise
    report.skipped += stats.skipped
    save.finish_run(engine, run, "ok", {"inserted": stats.inserted, "updated": stats.updated,
                                       "skipped": len(report.skipped)})
    return ImportResult(str(path), report.repo, stats, report.skipped, [n for n in [later.note()] if n])


def import_git(settings: Settings, engine: Engine, path: Path, repo: str, branches: list[str] | None,
               window: Window | None = None, tick: Tick = no_tick, started=None, diffs: bool = True) -> ImportResult:
    """Import a local clone's first-parent history of the matching branches, and its tags (`started`: a
    sources.git.StartedClone of the same clone, branches and window, its git log already running; `diffs`:
    each change's diff read for its code facts, when `started` did not say)."""
    from ..sources.git import check_clone, read_clone

    repo = check_repo(repo)
    if started is None:
        check_clone(path)
    patterns = branches or settings.repo(repo).branches
    run = save.start_run(engine, "import-git", repo, window)
    notes: list[str] = []
    later = LaterDates(settings.clock_skew)
    rules = None
    if diffs and started is None:
        from ..analyse.code_facts import load_code_rules

        rules = load_code_rules(settings)
    stream = later.watch(read_clone(path, repo, patterns, _cleaner(settings), window.since if window else None,
                                    window.until if window else None, notes, started,
                                    diffs=diffs and started is None, rules=rules),
                         lambda item: f"{path}: {item.ref}")
    try:
        with alongside(settings, engine) as analyser:
            stats = save.save_items(engine, _counted(stream, tick), on_saved=analyser)
    except Exception as exc:  # never leave the run "running"
        save.finish_run(engine, run, "failed", {"error": clip(redact(str(exc)), 300)})
        raise
    notes += [n for n in [later.note()] if n]
    save.finish_run(engine, run, "ok", {"inserted": stats.inserted, "updated": stats.updated,
                                       "notes": notes, "skipped": len(stats.skipped)})
    return ImportResult(str(path), repo, stats, stats.skipped, notes, analyser.analysed if analyser else 0)


def _adopt_stored(engine: Engine, item: Item) -> None:
    """Take the store's name, kind and key for the PR or issue it has under this number (history calls every
    numbered change a PR); a page item stored under the other kind by an older import is moved to this one."""
    import sqlalchemy as sa

    from ..store.schema import items, repos

    if item.number is None:
        return
    query = (sa.select(items.c.id, repos.c.name, items.c.kind, items.c.key, items.c.source)
             .join(repos, repos.c.id == items.c.repo_id)
             .where(sa.func.lower(repos.c.name) == item.repo.lower(), items.c.number == item.number,
                    items.c.kind.in_(["pr", "issue"])).order_by(items.c.kind).limit(1))
    with engine.connect() as conn:
        row = conn.execute(query).first()
    if row is None:
        return
    item.repo = row.name
    if row.source == "page" and row.kind != item.kind:
        with engine.begin() as conn:  # the page now says which it is
            conn.execute(items.update().where(items.c.id == row.id).values(kind=item.kind))
        return
    item.kind, item.key = row.kind, row.key


def _bound(engine: Engine, item: Item) -> None:
    """Bound an opening the page does not give by its events and the neighbouring numbers
    (sources/page_dates)."""
    from ..sources.page_dates import BOUND, bound_creation
    from ..store import queries

    item.created_at, bound = bound_creation(item, *queries.neighbours(engine, item.repo, item.number))
    item.time_source = BOUND if bound else "" if item.time_source == BOUND else item.time_source


def _rebound_near(engine: Engine, item: Item) -> None:
    """The bounded openings next to a newly imported item, bounded again: its opening or its merge may tighten
    them, whichever order the pages came in (saved through the merge, which keeps the tighter bound)."""
    from ..store import queries

    if item.number is None:
        return
    near = queries.bounded_near(engine, item.repo, item.number)
    for other in near:
        _bound(engine, other)
    if near:
        save.save_items(engine, near)


def import_page(settings: Settings, engine: Engine, path: Path, repo: str | None = None, number: int | None = None,
                report: PageReport | None = None) -> Item:
    """Read a pasted PR page, save it as one item (merged with the stored one) and return it."""
    report = report if report is not None else PageReport()
    report.path = str(path)
    item = parse_page(read_page(path), load_page_rules(settings), repo, number, Path(path).stem, report)
    later = LaterDates(settings.clock_skew)
    later.check(item, str(path))
    report.later = later.note()
    _adopt_stored(engine, item)  # save merges the rest without downgrading what the store has
    if item.created_at is None and item.number is not None:  # the page does not say when it was opened
        _bound(engine, item)
    if item.state == "merged" and item.merged_at is None and item.merge_commit:  # dated by a clone or export
        from ..store import queries

        found = queries.commit_time(engine, item.repo, item.merge_commit)
        if found:
            item.merge_commit, item.merged_at = found
            item.closed_at = item.closed_at or item.merged_at
            item.updated_at = max(t for t in (item.updated_at, item.merged_at) if t is not None)
    run = save.start_run(engine, "import-page", str(path))
    report.stats = save.save_items(engine, [item])
    _rebound_near(engine, item)
    save.finish_run(engine, run, "ok", {"ref": item.ref, "inserted": report.stats.inserted,
                                       "updated": report.stats.updated})
    return item
