"""Benchmark: build the static site from the real vllm-ascend and verl history.

Imports both exports from ../shared/data into a fresh store, analyses them (not timed as the site build),
then times a full `site build` and a no-change rebuild (which renders no page: publish/inputs.py).
Prints the page counts and seconds of each.

usage: python bench/site_build.py [--keep DIR] [--no-charts]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "git"
EXPORTS = ["vllm-project+vllm-ascend.jsonl.gz", "verl-project+verl.jsonl.gz"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the site here and keep it (default: a temp dir)")
    ap.add_argument("--no-charts", action="store_true", help="build as if matplotlib were missing")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="radar-site-bench-"))
    os.environ["RADAR_HOME"] = str(work / "home")
    from infra_radar.config import load_settings
    from infra_radar.pipeline.analysis import analyze
    from infra_radar.pipeline.home import open_store
    from infra_radar.pipeline.imports import import_jsonl
    from infra_radar.publish import charts
    from infra_radar.publish.build import build_site

    if args.no_charts:
        charts.available = lambda: False
    try:
        settings = load_settings()
        engine = open_store(settings)
        started = time.perf_counter()
        import_jsonl(settings, engine, [DATA / name for name in EXPORTS])
        analyze(settings, engine)
        print(f"import + analyse: {time.perf_counter() - started:.1f} s", flush=True)
        out = args.keep or work / "site"
        for label in ("full build", "no-change rebuild"):
            r = build_site(settings, engine, out)
            print(f"{label}: {r.seconds:.1f} s | {r.pages} files ({r.item_pages} item pages, {r.daily_pages} daily,"
                  f" {r.weekly_pages} weekly) | {r.written} written, {r.unchanged} unchanged, {r.skipped} not rendered "
                  f"again (inputs unchanged) | "
                  f"charts {'svg' if r.charts else 'tables'}", flush=True)
        print(f"cores: {os.cpu_count()}")
        engine.dispose()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
