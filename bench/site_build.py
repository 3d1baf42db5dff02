"""Benchmark: a first `radar site build` of a store, by this tree and by a baseline revision, in the same run.

Each revision builds the site from its own copy of the store (--home's radar.db, copied file by file; default: one
built from every export and page of ../shared/data), analysed by that revision first (not timed: a revision
whose analyser differs analyses every item again). Then `radar site build` into an empty folder is timed (wall,
CPU of the command and its workers, peak memory), off a terminal, counting the progress lines it prints. The
two sites are compared file by file: every page must be the same bytes (the input record, .radar-inputs.json,
holds the build's key, a digest of the code, so it differs by design). Issue 45's goal: ≤ 60 s on a quiet
machine. The load average is printed beside each build: on a shared machine run it when it is quiet, or read
the two figures as a pair.

usage: python bench/site_build.py [--home RADAR_HOME] [--baseline REV] [--workers N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import clean_env, copy_store, import_shared, run

ROOT = Path(__file__).resolve().parents[1]


def source_of(rev: str, into: Path) -> Path:
    """The src/ folder of revision `rev` of this repository, extracted under `into`."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def build(src: Path, home: Path, out: Path, workers: int | None) -> dict:
    env = clean_env(RADAR_HOME=str(home), PYTHONPATH=str(src))
    if workers:
        env["RADAR_SITE_WORKERS"] = str(workers)
    radar = [sys.executable, "-m", "infra_radar"]
    run([*radar, "analyze"], env)  # not timed
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen([*radar, "site", "build", str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out_text, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"site build failed:\n{err[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss // 1024,
            "lines": len(err.splitlines()), "load": (load + os.getloadavg()[0]) / 2, "said": out_text.strip()}


def differing(a: Path, b: Path) -> list[str]:
    """The files of the two sites that are not the same bytes (or are in one only), but the input record."""
    names = {str(p.relative_to(a)) for p in a.rglob("*") if p.is_file()} | \
        {str(p.relative_to(b)) for p in b.rglob("*") if p.is_file()}
    names.discard(".radar-inputs.json")
    return sorted(n for n in names if not ((a / n).is_file() and (b / n).is_file()
                                           and filecmp.cmp(a / n, b / n, shallow=False)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, help="RADAR_HOME whose radar.db is copied (default: build one)")
    ap.add_argument("--baseline", default="main", help="revision to compare with (default: main)")
    ap.add_argument("--workers", type=int, help="RADAR_SITE_WORKERS for this tree's build (default: its own)")
    ap.add_argument("--keep", type=Path, help="build the two sites under this folder and keep them")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="radar-site-bench-") as tmp:
        work = args.keep or Path(tmp)
        store = Path(tmp) / "store"
        if args.home:
            copy_store(args.home, store)
        else:
            import_shared([sys.executable, "-m", "infra_radar"], clean_env(RADAR_HOME=str(store),
                                                                          PYTHONPATH=str(ROOT / "src")))
        results = {}
        for label, src in (("baseline", source_of(args.baseline, Path(tmp) / "baseline")), ("this tree", ROOT / "src")):
            home = Path(tmp) / f"home-{len(results)}"
            copy_store(store, home)
            results[label] = build(src, home, work / f"site-{len(results)}", args.workers if src == ROOT / "src"
                                   else None)
            r = results[label]
            print(f"{label}: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU, {r['rss']} MB peak, {r['lines']} progress "
                  f"line(s) off a terminal, load ~{r['load']:.1f} | {r['said']}", flush=True)
        old, new = results["baseline"], results["this tree"]
        diff = differing(work / "site-0", work / "site-1")
        print(f"first site build: {new['wall']:.1f} s against {old['wall']:.1f} s ({args.baseline}): "
              f"{old['wall'] / new['wall']:.2f}x faster wall, {old['cpu'] / new['cpu']:.2f}x less CPU "
              f"({new['cpu']:.1f} s against {old['cpu']:.1f} s); goal ≤ 60 s quiet | "
              f"{'every page the same bytes' if not diff else f'{len(diff)} file(s) differ: ' + ', '.join(diff[:5])}"
              f" | cores {len(os.sched_getaffinity(0))}")


if __name__ == "__main__":
    main()
