"""The analysis stage: rules over every item that needs them, then the relations (ledger, terms) in the store.

Analysis is pure over stored text, so a large backlog is spread over the machine's cores: forked workers
each read a batch of 250 items from the store themselves (nothing but ids crosses the pipe on the way in),
analyse it and scan it for relations; this process saves both, one transaction per batch.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import killpoint
from ..config import Settings
from ..errors import ConfigError, clip
from ..store import queries

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from ..store.reader import Reader

Tick = Callable[[int], None]
BATCH = 250  # items per worker task and per saved transaction
NICE = 10  # niceness of the workers analysing beside an import


def no_tick(_n: int) -> None:
    """A progress callback that tells nobody."""
    return None


@dataclass(slots=True)
class AnalyzeResult:
    """What an analysis pass did."""

    analysed: int
    version: str
    seconds: float


@dataclass(slots=True)
class _State:
    """What a batch needs besides its ids; set before the workers fork, so they inherit it compiled."""

    rules: object  # analyse.rules.RuleSet
    settings: Settings
    engine: Engine
    scan: object  # analyse.relations.RelationScan
    to_scan: set[int] | None  # ids whose relation scan is stale (None: every item read, as an import saved it)


_STATE: _State | None = None
_READER = None  # a forked worker's read-only stdlib sqlite3 view of a SQLite store (no SQLAlchemy per batch)


def _analyse_batch(ids: list[int]) -> tuple[list[tuple[int, str, object]], list]:
    """Read these items, analyse them and scan the stale ones for relations."""
    from ..analyse.item import analyse

    state = _STATE
    assert state is not None
    batch = queries.items_by_id(_READER or state.engine, ids)
    # scanned before analysing: the scan sees the stored values, as update_relations reads them
    scans = [state.scan.of_item(item, digest) for item, digest in batch
             if state.to_scan is None or item.id in state.to_scan]
    return [(item.id, digest, analyse(item, state.rules, state.settings)) for item, digest in batch], scans


@contextmanager
def _batch_runner(state: _State, workers: int):
    """map(id batches) -> (analyses, scans), in order: in this process, or in forked workers."""
    import multiprocessing  # here: `radar show` reads what needs analysing through this module (7 ms)

    global _STATE
    _STATE = state
    try:
        if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
            yield lambda batches: map(_analyse_batch, batches)
            return
        with _fork_pool(state, workers, 0) as pool:
            yield lambda batches: pool.imap(_analyse_batch, batches)
    finally:
        _STATE = None


def _fork_pool(state: _State, workers: int, nice: int):
    """Forked workers that inherit `state` (the rules compiled once, copied on fork), started by _worker_start."""
    import multiprocessing

    global _STATE
    _STATE = state
    # no pooled connection crosses the fork: each worker opens its own on first use (a connection in
    # use, such as PostgreSQL's lock session, stays checked out and is never touched by a worker)
    state.engine.dispose()
    return multiprocessing.get_context("fork").Pool(workers, _worker_start, (os.getpid(), nice))


def analyze(settings: Settings, engine: Engine, tick: Tick = no_tick, workers: int | None = None,
            on_total: Tick = no_tick) -> AnalyzeResult:
    """Analyse every item that has no analysis, changed since, or was analysed by other rules.

    A backlog of 1,000 items or more is spread over up to 4 forked workers; results are saved by this
    process, one transaction per batch, relations (the ledger and distinctive terms) with them.
    """
    from ..analyse.rules import RuleSet
    from ..store import ledger as relations
    from ..store import save
    from ..store.lock import writer_lock
    from .judgment import refit
    from .relations import RelationScan, update_relations

    started, count = time.perf_counter(), 0
    with _rules_override(settings):
        version = RuleSet.version_of(settings)  # read and compiled only when an item needs it (~0.1 s a report)
    with writer_lock(engine).attempt() as mine, _rules_override(settings):  # already ours in writing commands; readers never wait
        pending = queries.count_to_analyse(engine, version)
        if not mine:
            _analysis_skipped(engine, pending)
            return AnalyzeResult(0, version, time.perf_counter() - started)
        on_total(pending)
        scan = RelationScan.load(settings)
        if not pending:
            update_relations(settings, engine, scan)
            refit(settings, engine)  # labels changed under an import's analyses: fitted again here
            return AnalyzeResult(0, version, time.perf_counter() - started)
        rules = RuleSet.load(settings)
        if workers is None:
            workers = min(os.cpu_count() or 1, 4) if pending >= 1000 else 1
        ids = queries.ids_to_analyse(engine, rules.version)
        state = _State(rules, settings, engine, scan, relations.stale_ids(engine, scan.version))
        with _batch_runner(state, workers) as run:
            for results, scans in run([ids[i:i + BATCH] for i in range(0, len(ids), BATCH)]):
                save.save_analyses(engine, results)
                save.save_scans(engine, scan.version, scans)
                killpoint.reached("analyze.saved")
                count += len(results)
                tick(len(results))
        update_relations(settings, engine, scan)  # items whose relations are stale but analysis is not
        refit(settings, engine)  # the team's calibration, fitted on the new analyses of the labelled items
    return AnalyzeResult(count, rules.version, time.perf_counter() - started)


class _Alongside:
    """Analyses the batches an import has just saved in forked workers while the import goes on reading its
    source; the results are saved by the importing process between its own batches (it holds the lock).

    The workers start at the first batch of `BATCH` items or more: a small import leaves its items to
    `analyze` and pays nothing (no rules loaded, no fork). They may fork while git's reader thread runs;
    a worker touches only the store and the rules, never that thread's pipe or queue. At most two batches
    per worker are handed over at a time; when the import has read its source, the batches not handed over
    yet are analysed by the importing process itself, beside the workers: it has nothing else to do, and it
    is not `nice`d (on a busy machine the workers' niceness would otherwise keep it waiting for them).
    """

    def __init__(self, settings: Settings, engine: Engine, workers: int):
        self.settings, self.engine, self.workers = settings, engine, workers
        self.pool, self.state, self.pending, self.off = None, None, deque(), False
        self.queued: deque[list[int]] = deque()  # saved batches not yet handed to the workers
        self.analysed = 0  # items whose analyses this import saved

    def __call__(self, ids: list[int]) -> None:
        """save.save_items' `on_saved`: hand one committed batch's ids to the workers."""
        if self.off or self.pool is None and not self._start(len(ids)):
            return
        for start in range(0, len(ids), BATCH):
            self.queued.append(ids[start:start + BATCH])
        self.save(wait=False)

    def _start(self, size: int) -> bool:
        from ..analyse.rules import RuleSet
        from .relations import RelationScan

        if size < BATCH:
            return False
        try:
            with _rules_override(self.settings):
                self.state = _State(RuleSet.load(self.settings), self.settings, self.engine,
                                    RelationScan.load(self.settings), None)
        except (ConfigError, OSError):  # `analyze` will say what is wrong with the rules
            self.off = True
            return False
        self.pool = _fork_pool(self.state, self.workers, NICE)
        return True

    def _hand_over(self) -> None:
        while self.queued and len(self.pending) < 2 * self.workers:
            self.pending.append(self.pool.apply_async(_analyse_batch, (self.queued.popleft(),)))

    def save(self, wait: bool) -> None:
        """Save the finished batches, in the order they were saved by the import (`wait`: all of them, the
        ones not handed over analysed here)."""
        self._hand_over()
        if wait:
            own = []  # this process's share, saved after the workers' batches (the order they were saved in)
            while self.queued and not self.off:
                if self.pending and self.pending[0].ready():
                    self._save_next()
                    continue
                try:
                    own.append(_analyse_batch(self.queued.popleft()))
                except Exception:  # noqa: BLE001 - as a worker's fault: `analyze` reports it
                    self.queued.clear()
                    self.off = True
        while self.pending and not self.off and (wait or self.pending[0].ready()):
            self._save_next()
            self._hand_over()
        if wait:
            for results, scans in own if not self.off else ():
                self._store(results, scans)

    def _save_next(self) -> None:
        try:
            results, scans = self.pending.popleft().get()
        except Exception:  # noqa: BLE001 - an analysis fault never fails an import: `analyze` reports it
            self.pending.clear()
            self.queued.clear()
            self.off = True
            return
        self._store(results, scans)

    def _store(self, results, scans) -> None:
        from ..store import save

        save.save_analyses(self.engine, results)
        save.save_scans(self.engine, self.state.scan.version, scans)
        self.analysed += len(results)
        killpoint.reached("analyze.saved")

    def close(self, ok: bool) -> None:
        global _STATE
        if self.pool is None:
            return
        try:
            if ok:
                self.save(wait=True)
        finally:
            self.pool.terminate()
            self.pool.join()
            self.pool, _STATE = None, None


def _worker_start(parent: int, nice: int) -> None:
    """A forked analysis worker's start: it dies with the radar process that forked it (Linux's parent-death
    signal: a killed import or analyze leaves no worker finishing its batch and printing a broken pipe), and
    beside an import it runs `nice`r, so git and the import come first and it takes the cores they leave."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: a worker then ends when it finds the pipe closed
        pass
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(0)
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass
    _open_reader()


def _open_reader() -> None:
    """In a worker, on a SQLite store: read the batches through a read-only stdlib sqlite3 connection (each
    read sees what the writer committed before it handed the ids over); else through the engine."""
    import sqlite3

    from ..store.reader import open_sqlite

    global _READER
    url = _STATE.engine.url if _STATE is not None else None
    path = url.database if url is not None and url.get_backend_name() == "sqlite" else None
    try:
        _READER = open_sqlite(path) if path and path != ":memory:" and not url.query else None
    except sqlite3.Error:
        _READER = None


@contextmanager
def alongside(settings: Settings, engine: Engine, workers: int | None = None) -> Iterator[_Alongside | None]:
    """While an import runs: a callback taking the ids of each batch it saved, analysed in forked workers as
    `analyze` would analyse them (the same reads, the same results), so a later `analyze` finds them done;
    its `analysed` counts them once the block has ended.

    Yields None, and the import leaves every item to `analyze`, on a machine with one core, where fork is
    missing, or with `RADAR_ANALYSE_ON_IMPORT=0`.
    """
    import multiprocessing

    if workers is None:
        workers = min(os.cpu_count() or 1, 4)
    off = os.environ.get("RADAR_ANALYSE_ON_IMPORT", "1").strip().lower() in ("0", "no", "false", "off")
    if off or workers < 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield None
        return
    runner, ok = _Alongside(settings, engine, workers), False
    try:
        yield runner
        ok = True
    finally:
        runner.close(ok)


def work_left(settings: Settings, store: Engine | Reader) -> int:
    """How many items `analyze` would analyse or scan for relations again (0: the store can be read as it is);
    from the rule files' bytes, nothing compiled."""
    from ..analyse.versions import relation_version, rules_version
    from ..store.ledger import count_stale

    with _rules_override(settings):
        version, scan_version = rules_version(settings), relation_version(settings)
    return queries.count_to_analyse(store, version) or count_stale(store, scan_version)


@contextmanager
def ready_sqlite(settings: Settings) -> Iterator[Reader | None]:
    """A read-only stdlib sqlite3 view (one snapshot) of the SQLite store, when it is ready: every migration
    applied and nothing to analyse or rescan. None for anything else (PostgreSQL, a missing or unreadable
    file, work left), which the SQLAlchemy path handles. Never imports SQLAlchemy (`radar show`, `analyze`)."""
    import sqlite3

    from ..store.reader import open_sqlite, sqlite_file

    path = sqlite_file(settings.db_url)
    try:
        db = open_sqlite(path) if path is not None else None
    except sqlite3.Error:  # missing, a directory, not a database...: the SQLAlchemy path says what is wrong
        db = None
    if db is None:
        yield None
        return
    try:
        db.conn.execute("BEGIN")
        ready = set(queries.MIGRATION_NAMES) == queries.applied_migrations(db) and not work_left(settings, db)
    except sqlite3.Error:
        ready = False
    try:
        yield db if ready else None
    finally:
        db.close()


def nothing_to_analyse(settings: Settings) -> str | None:
    """The rules version when `radar analyze` has nothing to do on a SQLite store, checked under the writer
    lock without SQLAlchemy (a no-op analyze after an import that analysed as it went takes ~0.1 s, not
    0.3 s); None when another writer holds the lock (analyze waits for it as before) or anything is left."""
    from ..analyse.versions import rules_version
    from ..errors import StoreError
    from ..store.lock import sqlite_writer
    from ..store.reader import sqlite_file

    path = sqlite_file(settings.db_url)
    if path is None or not path.is_file():
        return None
    try:
        with sqlite_writer(path) as mine, ready_sqlite(settings) as db:
            if not mine or db is None:
                return None
            with _rules_override(settings):
                return rules_version(settings)
    except StoreError:
        return None


@contextmanager
def _rules_override(settings: Settings) -> Iterator[None]:
    """A user's rules override with a missing key or a value of the wrong type: one line naming its folder."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if settings.rules_dir is None:
            raise
        what = f"missing key {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise ConfigError(clip(f"a rules override in {settings.rules_dir} has a missing key or a value of the "
                               f"wrong type ({what}); compare it with the packaged defaults/rules", 400)) from None


def _analysis_skipped(engine: Engine, pending: int) -> None:
    """A reader met a writer: say (once, on stderr) that it shows the store as last analysed."""
    from ..store.lock import writer_lock

    if pending:
        holder = writer_lock(engine).holder()
        who = holder.describe() if holder else "another radar process"
        print(f"radar: note: {who} is writing the store; {pending} item(s) not analysed yet are shown as last "
              "analysed or left out (rerun when it has finished)", file=sys.stderr, flush=True)
