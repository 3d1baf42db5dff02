"""Benchmark: `radar show REF` wall time against `radar --version` (issue 45: ≤ 2.5×) and on the stdlib sqlite3
path (pipeline/card.py) against the SQLAlchemy path (RADAR_SHOW_SQLALCHEMY=1, what `show` did before), all
measured in the same run, with the bare interpreter start as a floor.

The store is a copy, so nothing given is written or even opened as a database: --home's radar.db (and its
-wal, if any) copied file by file (give a store nobody is writing), or one built from ../shared/data (every
history export and pasted page, imported and analysed: ~20 s on 2 cores). A warm-up run of each path comes
first (the SQLAlchemy one analyses the copy when its rules are newer), and the two paths must print the same
card before anything is timed.

With --baseline REV, revision REV of this repository (its src/ extracted from git) is timed in the same
interleaved runs on its own copy of the store (analysed by it first): its card against its own `--version`, so
the two ratios are read side by side.

usage: python bench/show_card.py [--home RADAR_HOME] [--runs 5] [--baseline REV] [REF ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchlib import copy_store, import_shared, run, timed

DEFAULT_REFS = ["vllm-project/vllm#47352", "vllm-project/vllm-ascend#7756"]


def radar_cmd() -> list[str]:
    script = Path(sys.executable).with_name("radar")
    return [str(script)] if script.exists() else [sys.executable, "-m", "infra_radar"]


def build_store(into: Path, env: dict[str, str]) -> None:
    import_shared(radar_cmd(), env)
    run([*radar_cmd(), "analyze"], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="RADAR_HOME whose radar.db is copied (default: build one)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", help="a revision of this repository to time beside this tree")
    parser.add_argument("refs", nargs="*", default=DEFAULT_REFS)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="radar-bench-show-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR_")}
        env.update(RADAR_HOME=tmp)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled modules are cached
        if opts.home:
            copy_store(opts.home, Path(tmp))
        else:
            build_store(Path(tmp), env)
        old = {**env, "RADAR_SHOW_SQLALCHEMY": "1"}
        base_env = None
        if opts.baseline:
            from site_build import source_of

            base_home = Path(tmp) / "baseline-home"
            copy_store(Path(tmp), base_home)
            base_env = {**env, "RADAR_HOME": str(base_home),
                        "PYTHONPATH": str(source_of(opts.baseline, Path(tmp) / "baseline-src"))}
        for ref in opts.refs:
            show = [*radar_cmd(), "show", ref]
            if run(show, old)[1] != run(show, env)[1]:  # warm-up (the SQLAlchemy path analyses what is pending)
                sys.exit(f"{ref}: the two paths print different cards")
            times: dict[str, list[tuple]] = {"start": [], "version": [], "stdlib": [], "sqlalchemy": [],
                                             "base": [], "base version": []}
            base_show = [sys.executable, "-m", "infra_radar", "show", ref]
            if base_env is not None and run(base_show, base_env)[1] != run(show, env)[1]:  # warm-up: analyses
                print(f"{ref}: the baseline prints another card (its analysis differs)", file=sys.stderr)
            for _ in range(opts.runs):  # interleaved, so a busy moment hits every kind alike
                times["start"].append(timed([sys.executable, "-c", "pass"], env))
                times["version"].append(timed([*radar_cmd(), "--version"], env))
                times["stdlib"].append(timed(show, env))
                times["sqlalchemy"].append(timed(show, old))
                if base_env is not None:
                    times["base version"].append(timed([sys.executable, "-m", "infra_radar", "--version"], base_env))
                    times["base"].append(timed(base_show, base_env))
            (fast, slow, start, version), (fast_cpu, _, _, version_cpu) = (
                [statistics.median(t[i] for t in times[k]) for k in ("stdlib", "sqlalchemy", "start", "version")]
                for i in (0, 1))
            print(f"radar show {ref}: {fast:.3f} s against radar --version {version:.3f} s: "
                  f"{fast / version:.2f}x wall, {fast_cpu / version_cpu:.2f}x CPU ({fast_cpu:.3f} s against "
                  f"{version_cpu:.3f} s; goal ≤ 2.5x) | SQLAlchemy path {slow:.3f} s ({slow / fast:.1f}x) | "
                  f"python start {start:.3f} s  (medians of {opts.runs}; show runs "
                  f"{', '.join(f'{t[0]:.3f}' for t in times['stdlib'])}; load average {os.getloadavg()[0]:.1f})")
            if base_env is not None:
                b_wall, b_cpu, bv_wall, bv_cpu = (statistics.median(t[i] for t in times[k])
                                                  for k, i in (("base", 0), ("base", 1), ("base version", 0),
                                                               ("base version", 1)))
                print(f"  baseline {opts.baseline}: {b_wall:.3f} s against its --version {bv_wall:.3f} s: "
                      f"{b_wall / bv_wall:.2f}x wall, {b_cpu / bv_cpu:.2f}x CPU ({b_cpu:.3f} s against {bv_cpu:.3f} s); "
                      f"this tree {fast_cpu / b_cpu:.2f}x the baseline's card CPU")


if __name__ == "__main__":
    main()
