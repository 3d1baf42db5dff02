"""Shared fixtures: a hermetic RADAR_HOME, the real data beside the repo, tiny git repositories."""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from infra_radar.config import load_settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TEST_DB_URL = os.environ.get("RADAR_TEST_DB_URL", "")  # e.g. from scripts/postgres.sh: run the suite on PostgreSQL


@functools.cache
def _admin_engine():
    """One pooled connection to the test cluster for the whole session (a new engine per test cost a
    connection handshake each time)."""
    import sqlalchemy as sa

    return sa.create_engine(TEST_DB_URL, pool_size=1, max_overflow=0)


def _fresh_schema(name: str) -> str:
    """A new, empty PostgreSQL schema for one test; the URL that makes it the only one searched."""
    import sqlalchemy as sa

    # a worker of pytest-xdist (`-n`) names its schemas apart: two workers may build the same module fixture
    schema = "t_" + hashlib.sha1(f"{os.environ.get('PYTEST_XDIST_WORKER', '')}:{name}".encode()).hexdigest()[:16]
    with _admin_engine().begin() as conn:
        conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in TEST_DB_URL else "?"
    return f"{TEST_DB_URL}{sep}options=-csearch_path%3D{schema}"


# --- tests that never open a store ----------------------------------------------------------------
# A test (or module, via pytestmark) marked `no_store` runs in the SQLite pass only: the PostgreSQL pass
# would repeat it unchanged. The SQLite pass checks the mark: such a test that connects to a store, or
# leaves a database file under its tmp_path (a radar subprocess), fails.
# A test marked `one_store` opens a store but proves something no store changes (the judgment, the text and
# the caps on input over real history). That reading real history from either store gives the same output
# is proved on both by the golden cards of real items (test_explain_real) and the team's days in sequence
# (test_memory_real); what the stores must do alike (memory, labels, locks, kills) stays on both.
_CONNECTS = [0]


def _count_connect(*_args) -> None:
    _CONNECTS[0] += 1


def pytest_configure(config) -> None:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    config.addinivalue_line("markers", "no_store: never opens a store (run in the SQLite pass only)")
    config.addinivalue_line("markers", "one_store: opens a store, but what it proves (judgment, text, caps on "
                            "input) does not depend on which one: run in the SQLite pass only")
    if not event.contains(Engine, "engine_connect", _count_connect):
        event.listen(Engine, "engine_connect", _count_connect)


# Under pytest-xdist (`-n 2 --dist loadfile --no-loadscope-reorder`, as scripts/test.sh runs the SQLite pass)
# each module goes to one worker whole, in collection order: the longest modules go first, so that no long one
# starts last and leaves the other worker idle at the end, and a module reading the session's full store comes
# second, so that its build (~50 s) runs beside the longest module instead of keeping the other worker waiting
# for it later (measured with --durations; the order changes nothing else).
LONGEST_FIRST = ("test_kill.py", "test_counts_add_up.py", "test_e2e.py", "test_related_caps.py",
                 "test_store_safety.py", "test_concurrency.py", "test_llm.py", "test_badinput.py", "test_show_fast.py",
                 "test_site.py", "test_site_rebuild.py", "test_llm_faults.py", "test_input_caps.py", "test_memory.py")


def pytest_collection_modifyitems(config, items) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
    if not TEST_DB_URL:
        return
    def once(item) -> bool:
        return bool(item.get_closest_marker("no_store") or item.get_closest_marker("one_store"))

    free = [item for item in items if once(item)]
    if free:
        config.hook.pytest_deselected(items=free)
        items[:] = [item for item in items if not once(item)]


@pytest.fixture(autouse=True)
def _no_store_guard(request, tmp_path):
    if request.node.get_closest_marker("no_store") is None:
        yield
        return
    before = _CONNECTS[0]
    yield
    opened = _CONNECTS[0] - before
    files = [p.name for p in tmp_path.rglob("*.db")]
    assert not opened and not files, (f"{request.node.nodeid} is marked no_store but opened a store "
                                      f"({opened} connection(s), files {files}): remove the mark")


@pytest.fixture(autouse=True)
def radar_home(tmp_path, monkeypatch, request) -> Path:
    """Every test gets its own home directory (and, with RADAR_TEST_DB_URL, its own PostgreSQL schema)."""
    home = tmp_path / "home"
    monkeypatch.setenv("RADAR_HOME", str(home))
    for var in ("RADAR_DB_URL", "RADAR_LANG"):
        monkeypatch.delenv(var, raising=False)
    if TEST_DB_URL:
        monkeypatch.setenv("RADAR_DB_URL", _fresh_schema(request.node.nodeid))
    return home


def _run_dir(tmp_path_factory) -> Path:
    """A folder of this pytest run that every worker of pytest-xdist (`-n`) sees: the parent of the workers'
    base folders, or the base folder when the run has no workers."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _run_lock(path: Path):
    """Held by one process of the run at a time (the workers of `-n` build a shared fixture once)."""
    import fcntl

    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build_full_store(home: Path, url: str) -> None:
    from click.testing import CliRunner

    from infra_radar.cli import main

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.delenv("RADAR_DB_URL", raising=False)
        runner = CliRunner()
        # every page in one import-page (one store opened, not one per page)
        for args in (["import-jsonl", *sorted(str(p) for p in (SHARED / "git").glob("*.jsonl.gz"))],
                     ["import-page", *(str(page) for page in sorted((SHARED / "pages").rglob("*.txt")))],
                     ["analyze"]):
            result = runner.invoke(main, ["--db", url, *args])
            assert result.exit_code == 0, result.output


def copy_sqlite_home(source: Path, target: Path) -> None:
    """A copy of the RADAR_HOME `source` (its radar.db copied by SQLite's backup, which reads a consistent
    store whatever its write-ahead log holds) at `target`."""
    import shutil
    import sqlite3

    shutil.copytree(source, target, ignore=shutil.ignore_patterns("radar.db", "radar.db-*"))
    into = sqlite3.connect(target / "radar.db")
    with contextlib.closing(sqlite3.connect(source / "radar.db")) as db:
        db.backup(into)
    into.close()


@pytest.fixture(scope="session")
def full_store(tmp_path_factory) -> tuple[Path, str]:
    """(RADAR_HOME, store URL) of one store holding all shared history and every page under ../shared/data/pages,
    analysed: built once per session for the modules that read the whole history (explain_real, judgement).
    They only add to it (a watch entry, published dailies) and take that away again (`forget_published`),
    never change what is stored. On SQLite under pytest-xdist (`-n`) the run builds it once, the first worker
    to ask, and every worker reads a copy of its own."""
    if not (SHARED / "git").is_dir():
        pytest.skip("../shared/data is not available")
    if TEST_DB_URL or not os.environ.get("PYTEST_XDIST_WORKER"):
        home = tmp_path_factory.mktemp("full") / "home"
        home.mkdir()
        url = _fresh_schema("full-store-session") if TEST_DB_URL else f"sqlite:///{home / 'radar.db'}"
        _build_full_store(home, url)
        return home, url
    run = _run_dir(tmp_path_factory)
    built = run / "full-store" / "home"
    with _run_lock(run / "full-store.lock"):
        if not (run / "full-store" / "done").exists():
            if built.parent.exists():  # a worker that failed halfway
                import shutil

                shutil.rmtree(built.parent)
            built.mkdir(parents=True)
            _build_full_store(built, f"sqlite:///{built / 'radar.db'}")
            (run / "full-store" / "done").touch()
    home = tmp_path_factory.mktemp("full") / "home"
    copy_sqlite_home(built, home)
    return home, f"sqlite:///{home / 'radar.db'}"


def forget_published(url: str, watched: tuple[str, int] | None = None) -> None:
    """Leave the session's full store at `url` as it was built: no published radar, no dropped carry (and,
    given, the watch entry of `watched` = (repo, number) removed). A module that publishes dailies or adds to
    the watch list borrows the store and hands it back this way: what it published would otherwise be recalled
    by the next module's dailies (a daily of a window already published is rebuilt as it was)."""
    import sqlalchemy as sa

    from infra_radar.store.schema import carry_dropped, published_items, published_radars, watch

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        for table in (published_items, published_radars, carry_dropped):
            conn.execute(table.delete())
        if watched is not None:
            conn.execute(watch.delete().where(watch.c.repo == watched[0], watch.c.number == watched[1]))
    engine.dispose()


@contextlib.contextmanager
def opened_full_store(full_store: tuple[Path, str]):
    """(settings, engine) of the session's full store, with RADAR_HOME and RADAR_DB_URL pointing at it while it
    is open (a module-scoped fixture yields from inside it)."""
    from infra_radar.pipeline.home import open_store

    home, url = full_store
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.setenv("RADAR_DB_URL", url)
        settings = load_settings()
        engine = open_store(settings)
        try:
            yield settings, engine
        finally:
            engine.dispose()


@pytest.fixture
def settings(radar_home):
    return load_settings()


@pytest.fixture
def sample_store(settings):
    """The store of RADAR_HOME with the bundled sample imported (not analysed): its engine."""
    from infra_radar.pipeline.demo import sample_files
    from infra_radar.pipeline.home import open_store
    from infra_radar.pipeline.imports import import_jsonl

    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    yield engine
    engine.dispose()


def published_rows(url: str) -> list[tuple]:
    """Every published radar and published item of the store at `url`, in id order."""
    import sqlalchemy as sa

    from infra_radar.store.schema import published_items, published_radars

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        rows = [tuple(r) for table in (published_radars, published_items)
                for r in conn.execute(sa.select(table).order_by(table.c.id))]
    engine.dispose()
    return rows


@pytest.fixture
def shared_data() -> Path:
    """../shared/data, or skip when the real data is not beside the checkout."""
    if not (SHARED / "git").is_dir():
        pytest.skip("../shared/data is not available")
    return SHARED


@functools.cache
def export_rows(name: str) -> tuple[dict, ...]:
    """Every record of the shared history export ../shared/data/git/NAME, read once per session (do not
    mutate them); skips the test when the export is not beside the checkout."""
    path = SHARED / "git" / name
    if not path.exists():
        pytest.skip(f"{path} is not available")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return tuple(map(json.loads, fh))


def export_commits(name: str) -> list[dict]:
    """The commit records of a shared history export, newest first as exported."""
    return [row for row in export_rows(name) if row.get("kind") == "commit"]


def git(cwd: Path, *args: str, env: dict | None = None) -> str:
    full = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null", **(env or {})}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env=full).stdout


def commit(repo: Path, subject: str, files: dict[str, str], when: str, body: str = "",
           author: str = "Alice Dev <1234+alice-dev@users.noreply.github.com>") -> str:
    """Write files (content None deletes) and commit them at `when` (ISO with offset)."""
    for name, content in files.items():
        path = repo / name
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    git(repo, "add", "-A")
    name, _, email = author.partition(" <")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"), "GIT_AUTHOR_DATE": when,
           "GIT_COMMITTER_NAME": "GitHub", "GIT_COMMITTER_EMAIL": "noreply@github.com", "GIT_COMMITTER_DATE": when}
    git(repo, "commit", "-q", "-m", subject + (f"\n\n{body}" if body else ""), env=env)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def make_repo(tmp_path):
    """A factory for empty git repositories on branch main."""
    def make(name: str = "clone") -> Path:
        path = tmp_path / name
        path.mkdir()
        git(path, "init", "-q", "-b", "main")
        return path
    return make


@pytest.fixture(scope="session")
def shared_clones(tmp_path_factory) -> Path:
    """The real bare, shallow clones of ../shared/data/clones, extracted once per run (the workers of `-n`
    share them: nothing writes to them): the folder holding OWNER+NAME.git for each archive (skip when the
    archives are not beside the checkout)."""
    import tarfile

    archives = sorted((SHARED / "clones").glob("*.git.tar")) if (SHARED / "clones").is_dir() else []
    if not archives:
        pytest.skip("../shared/data/clones is not available")
    run = _run_dir(tmp_path_factory)
    into = run / "clones"
    with _run_lock(run / "clones.lock"):
        if not (run / "clones.done").exists():
            if into.exists():
                import shutil

                shutil.rmtree(into)
            into.mkdir()
            for archive in archives:
                with tarfile.open(archive) as tar:
                    tar.extractall(into, filter="data")
            (run / "clones.done").touch()
    return into


def check_golden(path: Path, text: str, label: str) -> None:
    """`text` equals the golden file `path` (written instead, folders included, with RADAR_UPDATE_GOLDEN=1)."""
    if os.environ.get("RADAR_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing: run with RADAR_UPDATE_GOLDEN=1 and review the diff"
    assert text == path.read_text(encoding="utf-8"), f"{label} differs from {path.name}"
