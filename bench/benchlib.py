"""What the benchmark scripts share: running a command and timing it, and a store of all shared history.

The scripts run as `python bench/NAME.py`, so this folder is on their import path."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """(seconds, stdout) of one command; a failure ends the benchmark with the end of its stderr."""
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return took, done.stdout


def copy_store(home: Path, into: Path) -> None:
    """A SQLite store copied file by file (not through SQLite: a reader leaves -wal/-shm files behind)."""
    into.mkdir(parents=True, exist_ok=True)
    for name in ("radar.db", "radar.db-wal"):
        if (home / name).exists():
            shutil.copyfile(home / name, into / name)


def import_shared(radar: list[str], env: dict[str, str]) -> None:
    """All history and every page of ../shared/data imported by the command `radar` into env's store."""
    if not (DATA / "git").is_dir():
        sys.exit(f"{DATA} is not available: give --home")
    print("building the store from ../shared/data ...", file=sys.stderr, flush=True)
    run([*radar, "import-jsonl", *map(str, sorted((DATA / "git").glob("*.jsonl.gz")))], env)
    run([*radar, "import-page", *map(str, sorted((DATA / "pages").rglob("*.txt")))], env)  # one process


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the command and the children it waited for, peak RSS in MB) of one
    command, from os.wait4; a failure ends the benchmark with the end of its stderr."""
    import os

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def extract_clone(name: str, into: Path) -> Path:
    """The bare clone ../shared/data/clones/NAME.git.tar extracted under `into`: its folder."""
    import tarfile

    archive = DATA / "clones" / f"{name}.git.tar"
    if not archive.is_file():
        sys.exit(f"{archive} is not available: give --clone")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / f"{name}.git"


def radar_cmd() -> list[str]:
    """The `radar` command of this interpreter (its console script, else `python -m infra_radar`)."""
    script = Path(sys.executable).with_name("radar")
    return [str(script)] if script.exists() else [sys.executable, "-m", "infra_radar"]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without RADAR_* settings and with compiled modules cached (as installed), plus `extra`."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env
