"""Benchmark: `radar export` of a whole store as one JSON array and as JSON Lines (streamed), alternated in one
run: wall and CPU time, peak memory (issue 45: ≤ 200 MB), the bytes written, and whether progress lines came on
stderr (they do once an export takes longer than a few seconds). The array of the run before streaming is
measured by giving its source tree with --src (a `git archive` of that revision).

The store is a copy of --home's radar.db, or one built from the vllm-ascend and verl exports of ../shared/data.

usage: python bench/export_stream.py [--home RADAR_HOME] [--rounds 1] [--src DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import DATA, clean_env, copy_store, radar_cmd, run

EXPORTS = ["vllm-project+vllm-ascend.jsonl.gz", "verl-project+verl.jsonl.gz"]


def export(cmd: list[str], env: dict[str, str], out: Path) -> tuple[float, float, int, int, int]:
    """(wall, CPU, peak MB, bytes written, progress lines) of one export into `out`."""
    start = time.perf_counter()
    with out.open("wb") as sink:
        proc = subprocess.Popen(cmd, env=env, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    lines = sum(1 for line in err.splitlines() if line.startswith("exporting:"))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, out.stat().st_size, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, help="RADAR_HOME whose radar.db is copied (default: build one)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--src", type=Path, help="another source tree whose JSON array is measured too")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="radar-bench-export-") as tmp:
        work = Path(tmp)
        env = clean_env(RADAR_HOME=str(work / "home"))
        if args.home:
            copy_store(args.home, work / "home")
        else:
            print("building the store from ../shared/data ...", file=sys.stderr, flush=True)
            run([*radar_cmd(), "import-jsonl", *(str(DATA / "git" / name) for name in EXPORTS)], env)
        run([*radar_cmd(), "analyze"], env)
        variants = {"json array": ([*radar_cmd(), "export"], env),
                    "jsonl": ([*radar_cmd(), "export", "--format", "jsonl"], env)}
        if args.src:
            variants["json array, --src"] = ([sys.executable, "-m", "infra_radar", "export"],
                                             {**env, "PYTHONPATH": str(args.src / "src")})
        runs: dict[str, list[tuple]] = {k: [] for k in variants}
        for _ in range(args.rounds):
            for name, (cmd, e) in variants.items():
                runs[name].append(export(cmd, e, work / f"{name.replace(' ', '_')}.out"))
        with (work / "jsonl.out").open("rb") as lines:
            items = sum(1 for _ in lines)
        print(f"{items} items, medians of {args.rounds}; load average {os.getloadavg()[0]:.1f}")
        for name, rs in runs.items():
            wall, cpu = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
            print(f"  {name:<18} wall {wall:7.2f} s   cpu {cpu:7.2f} s   peak {max(r[2] for r in rs):5d} MB "
                  f"(goal ≤ 200)   {rs[-1][3] / 1e6:6.1f} MB written   {rs[-1][4]} progress line(s)")


if __name__ == "__main__":
    main()
