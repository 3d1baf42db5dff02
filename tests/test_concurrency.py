"""Two processes, one store: real `radar` subprocesses importing, reporting and exporting at once.

Writers are serialised by the store's writer lock (flock beside SQLite, an advisory lock on PostgreSQL);
a second writer waits, naming the holder, or gives up after --wait with one line; readers never wait; a
SIGKILLed holder leaves no lock behind; two fresh processes never both migrate. With RADAR_TEST_DB_URL
every test runs on its own PostgreSQL schema (see conftest), so the same tests cover both stores.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from infra_radar.config import load_settings
from infra_radar.pipeline.demo import sample_files
from infra_radar.store.lock import writer_lock
from infra_radar.store.schema import MIGRATIONS, migrations_table

from .conftest import TEST_DB_URL, _fresh_schema

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # a report's "generated at" time
HOLD = """
import sys
from infra_radar.config import load_settings
from infra_radar.pipeline.home import open_store
from infra_radar.store import lock
lock.COMMAND = "radar test-holder"
open_store(load_settings(), writer=True)
print("held", flush=True)
sys.stdin.read()  # hold the lock until the test closes our stdin
"""


@pytest.fixture(autouse=True)
def _no_lock_env(monkeypatch):
    monkeypatch.delenv("RADAR_LOCK_TIMEOUT", raising=False)


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "infra_radar", *args]


def radar(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `radar args` on the test's store (RADAR_HOME / RADAR_DB_URL from conftest) and wait for it."""
    return subprocess.run(_cmd(*args), env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=300)


class Started:
    """A `radar` process running in the background, its stdout and stderr in files."""

    def __init__(self, folder: Path, name: str, *args: str):
        self.out, self.err = folder / f"{name}.out", folder / f"{name}.err"
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen(_cmd(*args), stdout=out, stderr=err, stdin=subprocess.DEVNULL)

    def finish(self, timeout: float = 300) -> tuple[int, str, str]:
        code = self.proc.wait(timeout=timeout)
        return code, self.out.read_text(), self.err.read_text()

    def stderr_has(self, text: str, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.err.read_text():
                return True
            if self.proc.poll() is not None:
                return text in self.err.read_text()
            time.sleep(0.05)
        return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


class Holder:
    """Another process holding the store's writer lock through the same code `radar` uses, until released."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


def current_holder():
    """Who holds the writer lock of the test's store, as any process can tell."""
    return writer_lock(sa.create_engine(load_settings().db_url)).holder()


def wait_until_free(timeout: float = 10) -> float:
    """Seconds until nobody holds the writer lock. A killed holder's flock goes with its process; its
    PostgreSQL session ends a moment later, when the server sees the connection closed."""
    start = time.monotonic()
    while current_holder() is not None:
        assert time.monotonic() - start < timeout, f"the lock outlived its holder: {current_holder()}"
        time.sleep(0.02)
    return time.monotonic() - start


def wait_until_holder(pid: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holder = current_holder()
        if holder is not None and holder.pid == pid:
            return
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} never took the writer lock (holder: {current_holder()})")


def stuck_writer(tmp_path: Path) -> Started:
    """A real `radar import-jsonl` that holds the writer lock mid-run: its input is a FIFO nobody writes."""
    fifo = tmp_path / "never-written.jsonl"
    os.mkfifo(fifo)
    writer = Started(tmp_path, "stuck", "import-jsonl", str(fifo))
    wait_until_holder(writer.proc.pid)
    return writer


@pytest.fixture
def other_store(tmp_path, request) -> str:
    """A second, empty store of the same kind as the test's (SQLite file, or its own PostgreSQL schema)."""
    return _fresh_schema(request.node.nodeid + "#other") if TEST_DB_URL else f"sqlite:///{tmp_path / 'other.db'}"


def test_imports_started_together_end_like_sequential_ones(shared_data, tmp_path, other_store):
    veomni, omni = (str(shared_data / "git" / f"{n}.jsonl.gz") for n in ("ByteDance-Seed+VeOmni", "vllm-project+vllm-omni"))
    gate = Holder()  # all three imports start while the lock is taken, so they really contend for it
    runs = [Started(tmp_path, f"import{i}", "import-jsonl", path) for i, path in enumerate([veomni, omni, veomni])]
    try:
        assert all(r.stderr_has("waiting for `radar test-holder`") for r in runs)
        gate.release()
        done = [r.finish() for r in runs]
    finally:
        for r in runs:
            r.kill()
    assert [code for code, _, _ in done] == [0, 0, 0], [err for _, _, err in done]
    # the same file twice: one run stored everything, the other found it all there (no duplicate, no error)
    assert sorted(done[i][1].split(" (")[0] for i in (0, 2)) == [
        "ByteDance-Seed/VeOmni: 0 new, 0 updated, 621 unchanged", "ByteDance-Seed/VeOmni: 621 new, 0 updated, 0 unchanged"]
    together = radar("export")
    assert together.returncode == 0, together.stderr
    for path in (veomni, omni):
        assert radar("import-jsonl", path, env={"RADAR_DB_URL": other_store}).returncode == 0
    alone = radar("export", env={"RADAR_DB_URL": other_store})
    assert json.loads(together.stdout) == json.loads(alone.stdout)
    assert {i["repo"] for i in json.loads(together.stdout)} == {"ByteDance-Seed/VeOmni", "vllm-project/vllm-omni"}


def test_reports_wait_for_an_import_and_see_all_of_it(shared_data, tmp_path):
    out = tmp_path / "out"
    daily = ["daily", "--since", "2026-05-01", "--until", "2026-05-15", "--lang", "en", "--out", str(out)]
    weekly = ["weekly", "--repo", "THUDM/slime", "--week", "2026-W19", "--lang", "en", "--out", str(out)]
    importer = Started(tmp_path, "import", "import-jsonl", str(shared_data / "git" / "THUDM+slime.jsonl.gz"))
    started = [importer]
    try:
        wait_until_holder(importer.proc.pid)
        started += [Started(tmp_path, "daily", *daily), Started(tmp_path, "weekly", *weekly)]
        code, _, err = importer.finish()
        assert code == 0, err
        results = [r.finish() for r in started[1:]]
    finally:
        for r in started:
            r.kill()
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    # a report that reached the lock while the import held it waited, saying for whom (on a loaded machine a
    # report may start only after the import ended: then it had nothing to wait for, and still sees it all;
    # test_imports_started_together_end_like_sequential_ones makes the wait certain with a held gate); the
    # two reports are writers too, so one may wait for the other once the import is done
    waited = [err for _, _, err in results if "waiting for" in err]
    assert all(re.search(r"waiting for `radar (import-jsonl|daily|weekly)` \(pid \d+", err) for err in waited), waited
    paths = [Path(stdout.strip()) for _, stdout, _ in results]
    assert [p.name for p in paths] == ["2026-05-14.md", "2026-W19.md"]  # a daily is named by its title's date
    first = STAMP.sub("<t>", paths[0].read_text())
    assert "THUDM/slime" in first and "THUDM/slime" in paths[1].read_text()
    again = radar(*daily)  # after everything: the report written while the import ran is the same
    assert again.returncode == 0, again.stderr
    assert STAMP.sub("<t>", paths[0].read_text()) == first


def test_readers_do_not_wait_for_a_writer(tmp_path):
    files = [str(p) for p in sample_files()]
    assert radar("import-jsonl", *files[:2]).returncode == 0
    before = radar("export")
    assert before.returncode == 0 and len(json.loads(before.stdout)) > 20
    ref = next(f"{i['repo']}#{i['number']}" for i in json.loads(before.stdout) if i["number"])
    assert radar("import-jsonl", files[2]).returncode == 0  # imported, not analysed yet
    writer = stuck_writer(tmp_path)
    try:
        during = radar("export")
        card = radar("show", "--json", ref)
        watched = radar("watch", "list")
        assert writer.proc.poll() is None  # they all ended while the writer still held the lock
    finally:
        writer.kill()
    assert during.returncode == 0 and card.returncode == 0 and watched.returncode == 0, during.stderr
    assert json.loads(during.stdout) == json.loads(before.stdout)  # the store as last analysed
    pid = writer.proc.pid
    assert re.search(rf"note: `radar import-jsonl` \(pid {pid} on .*is writing the store; \d+ item\(s\) not "
                     "analysed yet", during.stderr), during.stderr
    wait_until_free()
    after = radar("export")  # the writer is gone (SIGKILL): the reader analyses the rest itself
    assert after.returncode == 0 and "note:" not in after.stderr
    assert len(json.loads(after.stdout)) > len(json.loads(before.stdout))


def test_a_second_writer_gives_up_naming_the_holder_and_a_killed_holder_blocks_nobody(tmp_path):
    sample = str(sample_files()[0])
    writer = stuck_writer(tmp_path)
    try:
        busy = radar("--wait", "1", "import-jsonl", sample)
        at_once = radar("watch", "add", "acme/infer#1", env={"RADAR_LOCK_TIMEOUT": "0"})
        assert writer.proc.poll() is None
    finally:
        writer.kill()
    host, pid = socket.gethostname(), writer.proc.pid
    for done, waited in ((busy, "1 s"), (at_once, "0 s")):
        assert done.returncode == 1
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert re.fullmatch(rf"error: the store is busy: `radar import-jsonl` \(pid {pid} on {re.escape(host)}, "
                            rf"since \S+Z\) is writing it and did not finish within {waited}; rerun when it has "
                            r"finished, or wait longer with --wait SECONDS .*", errors[0]), errors[0]
    assert f"waiting for `radar import-jsonl` (pid {pid} on {host}" in busy.stderr  # one line while it waited
    assert len(busy.stderr.splitlines()) == 2
    # SIGKILLed while holding the lock: free at once (SQLite) or within a moment (PostgreSQL), no clean-up
    wait_until_free()
    done = radar("--wait", "0", "import-jsonl", sample)
    assert done.returncode == 0 and "waiting" not in done.stderr, done.stderr
    assert radar("--wait", "0", "watch", "add", "acme/infer#1").stdout.strip() == "watching acme/infer#1"


def test_the_lock_describes_its_holder_and_dies_with_it():
    lock = writer_lock(sa.create_engine(load_settings().db_url))
    holder = Holder()
    try:
        seen = lock.holder()
        with lock.attempt() as mine:
            assert not mine  # held by the other process: a reader does not get it, and does not wait
    finally:
        holder.proc.kill()
        holder.proc.wait(timeout=30)
    assert (seen.command, seen.pid, seen.host) == ("radar test-holder", holder.proc.pid, socket.gethostname())
    assert seen.since is not None and abs(time.time() - seen.since.timestamp()) < 300
    wait_until_free()
    with lock.attempt() as mine:
        assert mine and lock.held
        with lock.attempt() as again:  # reentrant within a process
            assert again
        assert lock.held
    assert not lock.held and lock.holder() is None


def test_two_fresh_processes_migrate_an_empty_store_once():
    runs = [subprocess.Popen(_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for args in (["watch", "list"], ["watch", "add", "acme/infer#7"], ["watch", "list"],
                         ["watch", "add", "acme/infer#7"])]
    done = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in runs]
    for p in runs:
        p.stdout.close()
        p.stderr.close()
    assert [code for code, _, _ in done] == [0, 0, 0, 0], [err for _, _, err in done]
    assert sorted(done[1][1].split("\n")[:1] + done[3][1].split("\n")[:1]) == [
        "acme/infer#7 is already watched", "watching acme/infer#7"]
    engine = sa.create_engine(load_settings().db_url)
    with engine.connect() as conn:
        names = list(conn.execute(sa.select(migrations_table.c.name)).scalars())
    engine.dispose()
    assert sorted(names) == [name for name, _ in MIGRATIONS]


def test_a_bad_lock_wait_is_one_line(monkeypatch):
    from click.testing import CliRunner

    from infra_radar.cli import main

    monkeypatch.setenv("RADAR_LOCK_TIMEOUT", "-5")
    result = CliRunner().invoke(main, ["watch", "list"])
    assert result.exit_code == 1 and "RADAR_LOCK_TIMEOUT" in result.stderr and "Traceback" not in result.stderr
    monkeypatch.delenv("RADAR_LOCK_TIMEOUT")
    result = CliRunner().invoke(main, ["--wait", "soon", "watch", "list"])
    assert result.exit_code == 2 and "--wait" in result.stderr


def test_a_released_lock_is_free_at_once(radar_home):
    """Given back means given back: the next look finds nobody, with no wait. A closed PostgreSQL session
    frees its locks a moment after the client has gone, so release unlocks before it closes. (On PostgreSQL the
    look comes from a session opened beforehand, so it follows the release by microseconds, not a connect.)"""
    radar_home.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(load_settings().db_url)
    lock = writer_lock(engine)
    with contextlib.ExitStack() as stack:
        look = current_holder
        if TEST_DB_URL:
            with lock.attempt():
                key = lock._backend.key & 0xFFFF_FFFF_FFFF_FFFF  # pg_locks shows a bigint key as two oids
            observer = stack.enter_context(engine.connect())
            held = sa.text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                           "AND objsubid = 1 AND classid::bigint = :hi AND objid::bigint = :lo")
            look = lambda: observer.execute(held, {"hi": key >> 32, "lo": key & 0xFFFF_FFFF}).scalar() or None  # noqa: E731
        for _ in range(200):
            with lock.attempt() as mine:
                assert mine and look() is not None
            assert look() is None
    engine.dispose()
