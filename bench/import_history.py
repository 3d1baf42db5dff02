"""Benchmark: import + analyse a whole history against `git log --numstat` of the same clone.

Builds the vllm-ascend replica from ../shared/data (or uses --replica), then alternates, in one run,
`git log -z --numstat` over the whole history (the baseline) with `radar import-git` + `radar analyze`
into a fresh store. Prints both medians, their ratio and the radar commands' peak memory.

usage: python bench/import_history.py [--rounds 3] [--replica DIR] [--export FILE]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
EXPORT = SHARED / "data" / "git" / "vllm-project+vllm-ascend.jsonl.gz"
RADAR = [sys.executable, "-m", "infra_radar"]


def run(cmd: list[str], env: dict | None = None) -> tuple[float, int]:
    """Seconds and peak RSS (MB) of one command, measured on that child alone (os.wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--replica", type=Path, help="an existing clone to use instead of building the replica")
    ap.add_argument("--export", type=Path, default=EXPORT, help="history export the replica is built from")
    ap.add_argument("--repo", default="vllm-project/vllm-ascend")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="radar-bench-"))
    try:
        replica = args.replica
        if replica is None:
            replica = work / "replica"
            print(f"building replica of {args.export.name} ...", flush=True)
            subprocess.run([sys.executable, str(SHARED / "tools" / "replica_repo.py"), str(args.export),
                            str(replica)], check=True, stdout=subprocess.DEVNULL)
        commits = subprocess.run(["git", "-C", str(replica), "rev-list", "--count", "HEAD"], check=True,
                                 capture_output=True, text=True).stdout.strip()
        baseline, radar, peaks = [], [], []
        for i in range(args.rounds):
            log = ["git", "-C", str(replica), "log", "-z", "--numstat", "--first-parent", "--format=%H%x1f%s%x1f%b"]
            baseline.append(run(log)[0])
            home = work / f"home{i}"
            env = {**os.environ, "RADAR_HOME": str(home)}
            # against git log --numstat: reading the diffs is bench/import_diffs.py's measure
            t1, m1 = run([*RADAR, "import-git", str(replica), "--repo", args.repo, "--branches", "main",
                          "--no-diffs"], env)
            t2, m2 = run([*RADAR, "analyze"], env)
            radar.append(t1 + t2)
            peaks.append(max(m1, m2))
            print(f"round {i + 1}: git log {baseline[-1]:.2f}s | import {t1:.2f}s + analyze {t2:.2f}s "
                  f"= {t1 + t2:.2f}s | peak {max(m1, m2)} MB", flush=True)
        b, r = statistics.median(baseline), statistics.median(radar)
        print(f"\ncommits: {commits}")
        print(f"git log --numstat median:        {b:.2f} s")
        print(f"radar import-git + analyze median: {r:.2f} s")
        print(f"ratio: {r / b:.2f}x   peak memory: {max(peaks)} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
