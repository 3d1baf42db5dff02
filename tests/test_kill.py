"""SIGKILL at 28 points of `import-jsonl` and `daily --out`: reruns reach the undisturbed store, and no
half-written report is ever in place."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra_radar.pipeline import sample_files

COPIES = 6  # the sample under 6 owner names: ~500 items, about a second of import work to interrupt
KILLS = 14  # per command
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # the report's "generated at" time
DAILY = ["daily", "--since", "2026-08-01", "--until", "2026-08-04", "--lang", "en"]


def write_inputs(folder: Path) -> list[Path]:
    """The bundled sample, copied under acme0/ .. acme5/ so there is enough work to be killed in."""
    paths = []
    for k in range(COPIES):
        for source in sample_files():
            lines = source.read_text().splitlines()
            head = json.loads(lines[0])
            head["full_name"] = head["full_name"].replace("acme/", f"acme{k}/")
            path = folder / f"{k}-{source.name}"
            path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
            paths.append(path)
    return paths


def radar(home: Path, *args: str, kill_after: float | None = None) -> subprocess.CompletedProcess | int:
    """Run `radar args` with its own RADAR_HOME; with kill_after, SIGKILL it then and return its status."""
    env = {**os.environ, "RADAR_HOME": str(home)}
    env.pop("RADAR_DB_URL", None)
    cmd = [sys.executable, "-m", "infra_radar", *args]
    if kill_after is None:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return proc.wait(timeout=kill_after)  # finished first: this attempt is not a kill point
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        return proc.wait(timeout=30)


def stored_items(home: Path) -> int:
    if not (home / "radar.db").exists():
        return 0
    with sqlite3.connect(home / "radar.db") as conn:
        try:
            return conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
        except sqlite3.OperationalError:  # killed before the first migration committed
            return -1


def text_of(report: Path) -> str:
    return STAMP.sub("<time>", report.read_text())


def timed(home: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    done = radar(home, *args)
    return done, time.perf_counter() - started


def test_sigkill_anywhere_loses_nothing(tmp_path):
    inputs = write_inputs(tmp_path)
    calm = tmp_path / "calm"
    _, import_s = timed(calm, "import-jsonl", *map(str, inputs))
    done, daily_s = timed(calm, *DAILY, "--out", str(tmp_path / "calm-out"))
    calm_report = text_of(Path(done.stdout.strip()))
    calm_export = radar(calm, "export").stdout
    statuses, counts = [], []

    def kill_points(args: list[str], span: float, after_kill) -> None:
        """Kill `args` at KILLS moments of its run; a run that ends first shortens the span and is retried."""
        landed, rng = 0, random.Random(7)
        for i in range(3 * KILLS):
            if landed == KILLS:
                break
            started = time.perf_counter()
            status = radar(home, *args, kill_after=span * (0.15 + 0.8 * (landed + rng.random()) / KILLS))
            statuses.append(status)
            if status == -signal.SIGKILL:
                landed += 1
                after_kill(i)
            else:  # the rerun had less to do than the undisturbed one: aim earlier
                span = (time.perf_counter() - started) * 0.9

    home, out = tmp_path / "killed", tmp_path / "out"
    kill_points(["import-jsonl", *map(str, inputs)], import_s, lambda i: counts.append(stored_items(home)))
    radar(home, "import-jsonl", *map(str, inputs))

    def no_half_report(i: int) -> None:
        for report in out.rglob("*.md"):
            assert text_of(report) == calm_report, f"half-written {report} after kill {i}"

    kill_points([*DAILY, "--out", str(out)], daily_s, no_half_report)
    final = Path(radar(home, *DAILY, "--out", str(out)).stdout.strip())
    export = radar(home, "export").stdout
    killed = statuses.count(-signal.SIGKILL)
    assert killed == 2 * KILLS, statuses  # each landed while the command was running, not after it ended
    assert json.loads(export) == json.loads(calm_export) and len(json.loads(export)) > 400
    assert len(set(counts)) >= 3, counts  # kills landed in migrations, before and after batch commits
    assert text_of(final) == calm_report
    print("kill statuses", statuses, "items after import kills", counts,
          "leftover temp files", [p.name for p in out.rglob(".*")])
    assert [p.name for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")] == [final.name]


def test_a_migration_interrupted_halfway_leaves_no_half_schema(tmp_path, monkeypatch):
    # what a SIGKILL between two CREATE TABLEs did before SQLite DDL ran inside the migration's transaction
    from infra_radar.store import db, schema

    def interrupted(op) -> None:
        raise RuntimeError("killed")

    monkeypatch.setattr(schema, "MIGRATIONS", [schema.MIGRATIONS[0], ("002_interrupted", interrupted)])
    path = tmp_path / "radar.db"
    with pytest.raises(RuntimeError):
        db.open_engine(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == []
    monkeypatch.undo()
    monkeypatch.setenv("RADAR_HOME", str(tmp_path))
    assert db.open_engine(f"sqlite:///{path}").dialect.name == "sqlite"  # the rerun migrates cleanly
