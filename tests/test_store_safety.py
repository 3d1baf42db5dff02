"""The store and what runs leave behind: one writer per database file however it is reached (hard links,
other paths), `radar doctor` runs the database's own integrity check, a killed piped import's spool is swept by
the next import, a push records what it delivered and resumes, and a bad site manifest entry is ignored."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.cli.imports import SPOOL_PREFIX
from infra_radar.config import load_settings
from infra_radar.pipeline.demo import sample_files
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_jsonl
from infra_radar.publish.writer import MANIFEST

from .conftest import TEST_DB_URL

sqlite_only = pytest.mark.skipif(bool(TEST_DB_URL), reason="a SQLite file case")
HOLD = """
import sys
from infra_radar.config import load_settings
from infra_radar.pipeline.home import open_store
from infra_radar.store import lock
lock.COMMAND = "radar test-holder"
open_store(load_settings(), writer=True)
print("held", flush=True)
sys.stdin.read()
"""


def radar(*args: str, env: dict | None = None, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "infra_radar", *args], env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=300, stdin=stdin)


# --- one writer per database file ----------------------------------------------------------------------

@sqlite_only
@pytest.mark.parametrize("how", ["hard link", "symbolic link", "another spelling"])
def test_one_store_reached_through_two_paths_has_one_writer(radar_home, tmp_path, how):
    first = radar("import-jsonl", str(sample_files()[0]))
    assert first.returncode == 0, first.stderr
    store = radar_home / "radar.db"
    other = tmp_path / "elsewhere"
    other.mkdir()
    alias = other / "alias.db"
    if how == "hard link":
        os.link(store, alias)
    elif how == "symbolic link":
        alias.symlink_to(store)
    else:
        alias = Path(str(radar_home / ".." / radar_home.name / "." / "radar.db"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        busy = radar("--db", f"sqlite:///{alias}", "--wait", "1", "watch", "add", "acme/infer#1")
        assert busy.returncode == 1 and "the store is busy" in busy.stderr, busy.stderr
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    done = radar("--db", f"sqlite:///{alias}", "--wait", "0", "watch", "add", "acme/infer#1")
    assert done.returncode == 0 and "watching acme/infer#1" in done.stdout, done.stderr


@sqlite_only
def test_a_new_store_with_a_deleted_stores_inode_gets_its_own_lock(tmp_path):
    """A process that runs many commands (a test session, a library user) deletes stores, and the system gives
    a new file the inode of a deleted one: the deleted store's lock, kept by that inode, is not the new
    store's (it would write its holder beside the deleted path and fail). The reuse is made here on purpose:
    the new store's inode is given the lock of a store already deleted."""
    from infra_radar.store import lock

    def engine(path: Path) -> sa.Engine:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        return sa.create_engine(f"sqlite:///{path}")

    gone = engine(tmp_path / "a" / "radar.db")
    old = lock.writer_lock(gone)
    assert old.try_acquire("test")
    old.release()
    lock.forget_database(tmp_path / "a" / "radar.db")
    (tmp_path / "a" / "radar.db").unlink()
    (tmp_path / "a" / "radar.db.lock").unlink()
    (tmp_path / "a").rmdir()
    new_path = tmp_path / "b" / "radar.db"
    new = engine(new_path)
    st = os.stat(new_path)
    lock._LOCKS[f"sqlite:{st.st_dev}:{st.st_ino}"] = old  # as if the new file had the deleted one's inode
    mine = lock.writer_lock(new)
    assert mine is not old and mine._backend.database == new_path.resolve()
    assert mine.try_acquire("test")  # the deleted path's lock would fail: its folder is gone
    mine.release()
    lock.forget_database(new_path)
    # two paths to one live file still share one lock
    alias = tmp_path / "b" / "alias.db"
    os.link(new_path, alias)
    assert lock.writer_lock(sa.create_engine(f"sqlite:///{alias}")) is mine


@sqlite_only
def test_a_store_made_where_a_deleted_stores_inode_was_is_opened_without_waiting_for_itself(tmp_path, monkeypatch):
    """The same reuse, when the new store does not exist yet as its writer asks for the lock: the lock is found
    by its path, and once the file exists it is filed under the file's identity, where the deleted store's lock
    may still be. It must replace that stale entry: left there, the store's next look-up (the migration under
    the lock) drops it as stale, makes a second lock of the same file and waits for the first, held by this very
    process, until its limit (seen once in a test session: an import-jsonl stuck for its whole --wait)."""
    from infra_radar.store import lock
    from infra_radar.store.db import open_engine

    stale_path = tmp_path / "gone" / "radar.db"
    stale_path.parent.mkdir()
    stale_path.touch()
    stale = lock.writer_lock(sa.create_engine(f"sqlite:///{stale_path}"))
    original = lock._FileLock.try_lock

    def reused(self, holder):  # the new file gets an identity the deleted store's lock is still filed under
        ok = original(self, holder)
        if ok and self.identity is not None:
            lock._LOCKS.setdefault(f"sqlite:{self.identity[0]}:{self.identity[1]}", stale)
        return ok

    monkeypatch.setattr(lock._FileLock, "try_lock", reused)
    new_path = tmp_path / "new" / "radar.db"
    engine = open_engine(f"sqlite:///{new_path}", writer=True, wait=2)  # the stale entry made this wait 2 s, then fail
    mine = lock.writer_lock(engine)
    assert mine is not stale and mine.held and mine._backend.database == new_path.resolve()
    mine.release()
    engine.dispose()
    lock.forget_database(new_path)


# --- doctor --------------------------------------------------------------------------------------------

def _doctor() -> subprocess.CompletedProcess:
    return radar("doctor", "--offline")


def test_doctor_runs_the_database_integrity_check(radar_home):
    assert radar("import-jsonl", str(sample_files()[0])).returncode == 0
    ok = _doctor()
    row = next(ln for ln in ok.stdout.splitlines() if ln.startswith("store"))
    assert " OK " in row and ("integrity_check ok" in row or "catalog and tables readable" in row), ok.stdout


@sqlite_only
def test_doctor_fails_a_malformed_sqlite_store_with_what_to_do(radar_home):
    assert radar("import-jsonl", *map(str, sample_files())).returncode == 0
    store = radar_home / "radar.db"
    engine = sa.create_engine(f"sqlite:///{store}")
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.exec_driver_sql("PRAGMA page_size").scalar()
        root = conn.exec_driver_sql("SELECT rootpage FROM sqlite_master WHERE name = 'ix_items_created'").scalar()
    engine.dispose()
    with open(store, "r+b") as fh:  # what two writers through two paths leave: an index page overwritten
        fh.seek((root - 1) * page + 8)
        fh.write(os.urandom(page - 16))
    bad = _doctor()
    assert bad.returncode == 1, bad.stdout
    row = next(ln for ln in bad.stdout.splitlines() if ln.startswith("store"))
    assert "FAIL" in row and "integrity check failed" in row and ".recover" in row, row
    assert "error: required check(s) failed: store" in bad.stderr


@pytest.mark.skipif(not TEST_DB_URL, reason="the PostgreSQL catalog case")
def test_doctor_fails_a_postgresql_store_missing_a_table(radar_home):
    assert radar("import-jsonl", str(sample_files()[0])).returncode == 0
    engine = sa.create_engine(load_settings().db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE item_terms"))
    engine.dispose()
    bad = _doctor()
    row = next(ln for ln in bad.stdout.splitlines() if ln.startswith("store"))
    assert bad.returncode == 1 and "FAIL" in row and "item_terms" in row, bad.stdout


# --- spools --------------------------------------------------------------------------------------------

def _spools(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith(SPOOL_PREFIX))


def test_a_killed_piped_import_leaves_a_spool_the_next_import_sweeps(radar_home, tmp_path):
    spool_dir = tmp_path / "tmp"
    spool_dir.mkdir()
    env = {**os.environ, "TMPDIR": str(spool_dir)}
    reader, writer = os.pipe()
    killed = subprocess.Popen([sys.executable, "-m", "infra_radar", "import-jsonl", "/dev/stdin"], stdin=reader,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(reader)
    os.write(writer, b'{"kind": "repo", "full_name": "acme/infer"}\n' + b" " * 100_000)
    deadline = time.monotonic() + 120
    while not any(p.stat().st_size for s in _spools(spool_dir) for p in s.iterdir() if p.name != ".owner"):
        assert time.monotonic() < deadline and killed.poll() is None, killed.stderr.read() if killed.poll() else ""
        time.sleep(0.05)
    # a live import's spool is kept: another store's import (no lock to wait for) sweeps around it
    other = radar("--db", f"sqlite:///{tmp_path / 'other.db'}", "import-jsonl", str(sample_files()[0]), env=env)
    assert other.returncode == 0 and len(_spools(spool_dir)) == 1, other.stderr
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    os.close(writer)
    assert len(_spools(spool_dir)) == 1  # what the kill left
    nxt = radar("import-jsonl", str(sample_files()[0]), env=env)
    assert nxt.returncode == 0, nxt.stderr
    assert _spools(spool_dir) == []


# --- push deliveries -----------------------------------------------------------------------------------

class FlakyHook(BaseHTTPRequestHandler):
    """A Slack-like webhook that answers HTTP 500 to the calls listed in `fail` (1-based), "ok" otherwise."""

    received: list[bytes] = []
    fail: set[int] = set()

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append(body)
        failing = len(self.received) in self.fail
        self.send_response(500 if failing else 200)
        self.end_headers()
        self.wfile.write(b"oops" if failing else b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def flaky(monkeypatch):
    FlakyHook.received, FlakyHook.fail = [], {2}
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyHook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("RADAR_SLACK_WEBHOOK", f"http://127.0.0.1:{server.server_address[1]}/services/T0/B0/SECRET")
    yield FlakyHook
    server.shutdown()


def test_a_push_failing_on_message_2_says_what_was_delivered_and_a_rerun_resumes(settings, flaky):
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    engine.dispose()
    args = ["push", "weekly", "--to", "slack", "--week", "2026-W31", "--repo", "acme/infer",
            "--repo", "acme/trainer"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 1, first.output
    errors = [ln for ln in first.output.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "HTTP 500" in errors[0] and "1/2 delivered" in errors[0], first.output
    assert "SECRET" not in first.output and first.output.count("posted slack") == 1
    second = CliRunner().invoke(main, args)
    assert second.exit_code == 0, second.output
    assert second.output.count("already delivered slack") == 1 and second.output.count("posted slack") == 1
    bodies = [json.loads(b)["text"] for b in flaky.received]
    assert len(bodies) == 3 and bodies[1] == bodies[2] and bodies[0] != bodies[1]  # message 1 went once
    third = CliRunner().invoke(main, args)  # everything delivered: nothing is sent again
    assert third.exit_code == 0 and third.output.count("already delivered") == 2 and len(flaky.received) == 3
    engine = open_store(load_settings())
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT target, report FROM push_deliveries")).all()
    assert len(stored) == 2 and all("SECRET" not in t and "127.0.0.1" not in t for t, _ in stored)


# --- site manifest -------------------------------------------------------------------------------------

def test_a_bad_site_manifest_entry_is_ignored_with_a_warning_and_the_manifest_rewritten(settings, tmp_path):
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    engine.dispose()
    out = tmp_path / "site"
    assert CliRunner().invoke(main, ["site", "build", str(out)]).exit_code == 0
    outside = tmp_path / "keep-me.txt"
    outside.write_text("not the site's", encoding="utf-8")
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    sha = hashlib.sha1(b"x").hexdigest()
    hostile = {"daily": sha, "items": sha, "../keep-me.txt": sha, str(outside): sha, "a/../../keep-me.txt": sha,
               "x.html": "not a hash", "": sha, "static/": sha}
    (out / MANIFEST).write_text(json.dumps({**manifest, **hostile, "gone.html": sha}), encoding="utf-8")
    for _ in range(2):  # and every later build
        result = CliRunner().invoke(main, ["site", "build", str(out)])
        assert result.exit_code == 0, result.output
        warnings = [ln for ln in result.output.splitlines() if ln.startswith("warning:")]
        if _ == 0:
            assert len(warnings) == 1 and f"{len(hostile)} entries ignored" in warnings[0], result.output
        else:
            assert warnings == []
        rewritten = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        assert not set(hostile) & set(rewritten) and "gone.html" not in rewritten
    assert outside.read_text(encoding="utf-8") == "not the site's"
    assert (out / "daily").is_dir() and (out / "items").is_dir()
