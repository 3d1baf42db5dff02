"""Benchmark: `radar import-git` of the real vllm-ascend clone with its diffs read, without them, and `git log -p`
of the same branches (the baseline), alternated in one run; then `radar show` of a card with code facts.

The clone is ../shared/data/clones/vllm-project+vllm-ascend.git.tar, extracted to a temporary folder (or give
--clone). Each import goes into a fresh store and analyses alongside, as `radar import-git` does. Wall time
and CPU time (user + system of the command and the git processes it waits for, from os.wait4) are printed
per variant as medians, with the ratios the issue asks about: import with diffs against `git log -p`, and
what reading the diffs adds to the import against `git log -p`.

usage: python bench/import_diffs.py [--rounds 3] [--clone DIR] [--show-runs 5] [--ref OWNER/NAME#N]
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

from benchlib import DATA
from benchlib import timed as benchlib_timed

ARCHIVE = DATA / "clones" / "vllm-project+vllm-ascend.git.tar"
REPO = "vllm-project/vllm-ascend"
BRANCHES = ("main", "releases/v0.23.0")


def radar_cmd() -> list[str]:
    script = Path(sys.executable).with_name("radar")
    return [str(script)] if script.exists() else [sys.executable, "-m", "infra_radar"]


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and the children it waited for) of one command."""
    wall, cpu, _rss = benchlib_timed(cmd, env)
    return wall, cpu


def git_log_p(clone: Path) -> list[list[str]]:
    """The `git log -p` commands reading what import-git reads: main's first-parent history, then the release
    branch's commits not on main."""
    base = ["git", "-C", str(clone), "log", "-p", "--first-parent", "--no-renames", "--format=%H%x1f%s%x1f%b"]
    return [[*base, BRANCHES[0]], [*base, BRANCHES[1], f"^{BRANCHES[0]}"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clone", type=Path, help="an extracted clone instead of the shared archive")
    ap.add_argument("--show-runs", type=int, default=5)
    ap.add_argument("--ref", default="vllm-project/vllm-ascend#12427", help="a card with code facts to show")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="radar-bench-diffs-") as tmp:
        work = Path(tmp)
        clone = args.clone
        if clone is None:
            if not ARCHIVE.is_file():
                sys.exit(f"{ARCHIVE} is not available: give --clone")
            with tarfile.open(ARCHIVE) as tar:
                tar.extractall(work, filter="data")
            clone = work / "vllm-project+vllm-ascend.git"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR_")}
        results: dict[str, list[tuple[float, float]]] = {"git log -p": [], "import, no diffs": [],
                                                         "import with diffs": []}
        home_with = None
        for i in range(args.rounds):
            walls = [timed(cmd) for cmd in git_log_p(clone)]
            results["git log -p"].append((sum(w for w, _ in walls), sum(c for _, c in walls)))
            for name, extra in (("import, no diffs", ["--no-diffs"]), ("import with diffs", [])):
                home = work / f"{name.replace(' ', '-').replace(',', '')}-{i}"
                home.mkdir()
                results[name].append(timed([*radar_cmd(), "import-git", str(clone), "--repo", REPO, "--branches",
                                            ",".join(BRANCHES), *extra], {**env, "RADAR_HOME": str(home)}))
                if extra == []:
                    home_with = home
        med = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for name, runs in results.items()}
        commits = subprocess.run(["git", "-C", str(clone), "rev-list", "--first-parent", "--count", BRANCHES[0]],
                                 capture_output=True, text=True, check=True).stdout.strip()
        print(f"{REPO}: {commits} first-parent commits on {BRANCHES[0]} (+ {BRANCHES[1]}), {args.rounds} rounds,"
              f" medians")
        for name, (wall, cpu) in med.items():
            print(f"  {name:<18} wall {wall:6.2f} s   cpu {cpu:6.2f} s")
        (gw, gc), (nw, nc), (dw, dc) = med["git log -p"], med["import, no diffs"], med["import with diffs"]
        print(f"  import with diffs / git log -p:            wall {dw / gw:5.2f}x   cpu {dc / gc:5.2f}x")
        print(f"  diffs' added cost / git log -p:            wall {(dw - nw) / gw:5.2f}x   cpu {(dc - nc) / gc:5.2f}x")
        if home_with is not None and args.show_runs > 0:
            show = [*radar_cmd(), "show", args.ref]
            envs = {**env, "RADAR_HOME": str(home_with)}
            timed(show, envs)  # warm-up: compiled modules cached
            runs = [timed(show, envs)[0] for _ in range(args.show_runs)]
            print(f"  radar show {args.ref} (code facts): median {statistics.median(runs):.3f} s over {len(runs)}")


if __name__ == "__main__":
    main()
