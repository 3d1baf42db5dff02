"""Benchmark: `radar daily` wall time and output size on the full store, this checkout against a baseline
commit (default: the branch's merge base with main), both measured in the same run, interleaved.

The baseline's `src/` is exported with `git archive` into a temporary directory (nothing is checked out in
the repository or any worktree) and run with PYTHONPATH pointing at it. Each side gets its own copy of the
store (--home's radar.db copied file by file, or one built from ../shared/data: ~20 s on 2 cores), analysed
once by its own rules before anything is timed, so each `radar daily` only reads and renders.

usage: python bench/daily_radar.py [--home RADAR_HOME] [--baseline REV] [--runs 5] [--lang zh]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from benchlib import copy_store, import_shared, run

REPO = Path(__file__).resolve().parents[1]
WINDOWS = [("2026-06-29T02:00Z", "2026-07-02T02:12Z"), ("2026-07-02T02:12Z", "2026-07-03T02:11:27Z"),
           ("2026-07-03T02:11:27Z", "2026-07-04T02:14Z")]


def radar(src: Path) -> list[str]:
    return [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
            "from infra_radar.cli import main; main()", str(src)]


def export_baseline(rev: str, into: Path) -> Path:
    """The baseline commit's src/ in `into` (git archive: no checkout anywhere)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "baseline.tar"
    with open(archive, "wb") as fh:
        subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def build_store(home: Path, src: Path, env: dict[str, str]) -> None:
    import_shared(radar(src), {**env, "RADAR_HOME": str(home)})


def merge_base() -> str:
    for main in ("main", "origin/main"):
        done = subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", main], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout.strip()
    return "HEAD~1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="RADAR_HOME whose radar.db is copied (default: build one)")
    parser.add_argument("--baseline", default=None, help="git revision to compare with (default: merge base with main)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lang", default="zh")
    opts = parser.parse_args()
    rev = opts.baseline or merge_base()
    with tempfile.TemporaryDirectory(prefix="radar-bench-daily-") as tmp:
        root = Path(tmp)
        base_src = export_baseline(rev, root / "baseline")
        env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        sides = {"baseline": base_src, "this": REPO / "src"}
        homes = {name: root / name / "home" for name in sides}
        if opts.home:
            for home in homes.values():
                copy_store(opts.home, home)
        else:
            build_store(homes["this"], sides["this"], env)
            copy_store(homes["this"], homes["baseline"])
        for name, src in sides.items():  # each side analyses its copy with its own rules, untimed
            run([*radar(src), "analyze"], {**env, "RADAR_HOME": str(homes[name])})
        print(f"baseline {rev[:12]} vs this checkout, {opts.runs} runs each, interleaved, lang {opts.lang}")
        for since, until in WINDOWS:
            times: dict[str, list[float]] = {name: [] for name in sides}
            sizes: dict[str, int] = {}
            for _ in range(opts.runs):
                for name, src in sides.items():
                    took, out = run([*radar(src), "daily", "--since", since, "--until", until, "--lang", opts.lang],
                                    {**env, "RADAR_HOME": str(homes[name])})
                    times[name].append(took)
                    sizes[name] = len(out.encode("utf-8"))
            b, t = statistics.median(times["baseline"]), statistics.median(times["this"])
            print(f"{since[:10]}..{until[:10]}: daily {b:.2f} s -> {t:.2f} s ({t / b:.2f}x); "
                  f"size {sizes['baseline']:,} -> {sizes['this']:,} bytes")


if __name__ == "__main__":
    main()
