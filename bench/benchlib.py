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
