"""Benchmark: `radar import-git --no-diffs` of the real vllm-ascend clone against `git log --numstat` of the same
branches, alternated in one run, wall and CPU time (the command and the processes it waits for) as medians and
their ratio (issue 45: ≤ 2×). Each import goes into a fresh store and analyses as it goes, as `radar import-git`
does. With --profile FILE, one more import is profiled (cProfile): the reading alone, then the analysis in this
process (one worker), and the costliest functions of each are printed.

The clone is ../shared/data/clones/vllm-project+vllm-ascend.git.tar, extracted to a temporary folder (or give
--clone). bench/import_diffs.py measures the import with diffs against `git log -p`.

usage: python bench/import_history.py [--rounds 3] [--clone DIR] [--profile FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import clean_env, extract_clone, radar_cmd, timed

REPO = "vllm-project/vllm-ascend"
BRANCHES = ("main", "releases/v0.23.0")


def git_log_numstat(clone: Path) -> list[list[str]]:
    """The `git log --numstat` commands reading what import-git --no-diffs reads: main's first-parent history,
    then the release branch's commits not on main."""
    base = ["git", "-C", str(clone), "log", "-z", "--numstat", "--first-parent", "--no-renames",
            "--format=%H%x1f%s%x1f%b"]
    return [[*base, BRANCHES[0]], [*base, BRANCHES[1], f"^{BRANCHES[0]}"]]


def profile(clone: Path, home: Path, out: Path) -> None:
    """cProfile of one import without the analysis alongside, then of the analysis in one process."""
    import pstats

    env = clean_env(RADAR_HOME=str(home), RADAR_ANALYSE_ON_IMPORT="0")
    subprocess.run([sys.executable, "-m", "cProfile", "-o", f"{out}.import", "-m", "infra_radar", "import-git",
                    str(clone), "--repo", REPO, "--branches", ",".join(BRANCHES), "--no-diffs"], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    code = ("import cProfile; from infra_radar.config import load_settings; "
            "from infra_radar.pipeline.home import open_store; from infra_radar.pipeline.analysis import analyze; "
            "s = load_settings(); e = open_store(s); "
            f"cProfile.run('analyze(s, e, workers=1)', {str(out) + '.analysis'!r})")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    for part in ("import", "analysis"):
        print(f"\n--- {part}: {out}.{part}, the 15 costliest functions by own time")
        pstats.Stats(f"{out}.{part}").sort_stats("tottime").print_stats(15)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clone", type=Path, help="an extracted clone instead of the shared archive")
    ap.add_argument("--profile", type=Path, help="also profile one import and its analysis into FILE.*")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="radar-bench-import-") as tmp:
        work = Path(tmp)
        clone = args.clone or extract_clone("vllm-project+vllm-ascend", work)
        runs: dict[str, list[tuple[float, float, int]]] = {"git log --numstat": [], "import-git --no-diffs": []}
        for i in range(args.rounds):  # alternated, so a busy moment hits both alike
            parts = [timed(cmd) for cmd in git_log_numstat(clone)]
            runs["git log --numstat"].append((sum(p[0] for p in parts), sum(p[1] for p in parts), 0))
            home = work / f"home-{i}"
            home.mkdir()
            runs["import-git --no-diffs"].append(timed(
                [*radar_cmd(), "import-git", str(clone), "--repo", REPO, "--branches", ",".join(BRANCHES),
                 "--no-diffs"], clean_env(RADAR_HOME=str(home))))
            print(f"round {i + 1}: " + " | ".join(f"{k} {v[-1][0]:.2f} s wall, {v[-1][1]:.2f} s CPU"
                                                 for k, v in runs.items()), flush=True)
        med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v), max(r[2] for r in v))
               for k, v in runs.items()}
        commits = subprocess.run(["git", "-C", str(clone), "rev-list", "--first-parent", "--count", BRANCHES[0]],
                                 capture_output=True, text=True, check=True).stdout.strip()
        print(f"\n{REPO}: {commits} first-parent commits on {BRANCHES[0]} (+ {BRANCHES[1]}), {args.rounds} "
              f"rounds, medians; load average {os.getloadavg()[0]:.1f}")
        for k, (wall, cpu, peak) in med.items():
            print(f"  {k:<22} wall {wall:6.2f} s   cpu {cpu:6.2f} s" + (f"   peak {peak} MB" if peak else ""))
        (gw, gc, _), (iw, ic, _) = med["git log --numstat"], med["import-git --no-diffs"]
        print(f"  import-git --no-diffs / git log --numstat: wall {iw / gw:5.2f}x   cpu {ic / gc:5.2f}x   (goal ≤ 2x)")
        if args.profile:
            home = work / "home-profile"
            home.mkdir()
            profile(clone, home, args.profile)


if __name__ == "__main__":
    main()
