"""Benchmark: what `radar daily` and `radar watch list` cost with 10 recorded radars and with 10,000.

Each side gets its own copy of the store (--home's radar.db copied file by file, or one built from
../shared/data), analysed once, untimed; then N published radars are recorded in it, one a day before the team's
day (20 items each, as a real radar shows them), and the commands are timed (median of --runs) with their peak
memory (the process's maxrss). A daily should cost what its carry window holds (14 days), not every record.

usage: python bench/memory_records.py [--home RADAR_HOME] [--runs 3] [--records 10 10000] [--src DIR]
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

from benchlib import copy_store, import_shared, run

REPO = Path(__file__).resolve().parents[1]
SINCE, UNTIL = "2026-07-02T02:12Z", "2026-07-03T02:11:27Z"
RADAR = [sys.executable, "-m", "infra_radar"]
MEASURED = ("import resource, sys\nfrom infra_radar.cli import main\ntry:\n    main()\nfinally:\n"
            "    print(f'maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr)\n")
RECORD = """
import sys
from datetime import UTC, datetime, timedelta
from infra_radar.config import load_settings
from infra_radar.pipeline.home import open_store
from infra_radar.store import published
from infra_radar.store.published import RadarRecord, ShownItem

count, end = int(sys.argv[1]), datetime.fromisoformat(sys.argv[2].replace("Z", "+00:00")).astimezone(UTC)
engine = open_store(load_settings(), writer=True)
batch = []
for k in range(1, count + 1):
    until = end - timedelta(days=k)
    items = [ShownItem("bench/records", 100000 + (k * 7 + j) % 5000, "pr", f"[Perf] change {k}.{j} of the bench",
                       "open", "P1", "M", "track-only", in_table=True, reasons=["track-only"],
                       origin_until=until, carry=j < 3, files=[f"src/mod{j}/file{i}.py" for i in range(8)],
                       files_digest="0" * 40, figures=[["TTFT", 10.0, 8.0, "ms"]], comments=j)
             for j in range(20)]
    batch.append(RadarRecord(until - timedelta(days=1), until, ["bench/records"], items))
    if len(batch) == 500:
        published.save_records(engine, batch)
        batch = []
published.save_records(engine, batch)
"""


def measured(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(seconds, peak KiB) of one radar command."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED, *args], env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"radar {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    rss = next(int(ln.split()[1]) for ln in done.stderr.splitlines() if ln.startswith("maxrss "))
    return took, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="RADAR_HOME whose radar.db is copied (default: build one)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, nargs="+", default=[10, 10_000])
    parser.add_argument("--src", type=Path, default=REPO / "src",
                        help="the src/ folder to run (default this checkout's; e.g. a `git archive` of a baseline)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="radar-bench-memory-") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR_")}
        env["PYTHONPATH"] = str(opts.src.resolve())
        first = root / "base"
        if opts.home:
            copy_store(opts.home, first)
        else:
            import_shared(RADAR, {**env, "RADAR_HOME": str(first)})
        run([*RADAR, "analyze"], {**env, "RADAR_HOME": str(first)})
        results = {}
        for count in opts.records:
            home = root / f"r{count}"
            copy_store(first, home)
            side = {**env, "RADAR_HOME": str(home)}
            started = time.perf_counter()
            run([sys.executable, "-c", RECORD, str(count), SINCE], side)
            print(f"{count:,} radars recorded in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
            daily = [measured(["daily", "--since", SINCE, "--until", UNTIL], side) for _ in range(opts.runs)]
            listed = [measured(["watch", "list"], side) for _ in range(opts.runs)]
            results[count] = (statistics.median(t for t, _ in daily), max(m for _, m in daily),
                              statistics.median(t for t, _ in listed), max(m for _, m in listed))
        print("| recorded radars | daily (median) | daily peak | watch list (median) | watch list peak |")
        print("| --- | --- | --- | --- | --- |")
        for count, (dt, dm, lt, lm) in results.items():
            print(f"| {count:,} | {dt:.2f} s | {dm / 1024:.0f} MB | {lt:.2f} s | {lm / 1024:.0f} MB |")
        low, high = min(results), max(results)
        print(f"daily: {results[high][0] / results[low][0]:.2f}x the time with {high:,} radars as with {low:,} "
              "(goal: within 1.5x)")


if __name__ == "__main__":
    main()
