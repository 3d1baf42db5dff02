"""Benchmark: what the team's labels cost. On a copy of a store (--home's radar.db, or one built from
../shared/data), the labels of a labels file are imported (`radar label --import`), then it times, in process:
the calibration's fit, judging one card (the labels and the stored calibration read, one item overlaid) and
judging every analysed item of the store; and `radar show REF` with and without labels (subprocess medians).

usage: python bench/judgment.py [--home RADAR_HOME] [--labels data/labels/dev.jsonl] [--runs 5] [REF]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from show_card import build_store, copy_store, radar_cmd, run  # noqa: E402

LABELS = Path(__file__).resolve().parents[1] / "data" / "labels" / "dev.jsonl"


def timed(fn, runs: int) -> float:
    took = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="RADAR_HOME whose radar.db is copied (default: build one)")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("ref", nargs="?", default="verl-project/verl#6901")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="radar-bench-judgment-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR_")}
        env.update(RADAR_HOME=tmp)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if opts.home:
            copy_store(opts.home, Path(tmp))
        else:
            build_store(Path(tmp), env)
        show = [*radar_cmd(), "show", opts.ref]
        run(show, env)  # warm-up
        bare = statistics.median(run(show, env)[0] for _ in range(opts.runs))
        subprocess.run([*radar_cmd(), "label", "--import", str(opts.labels), "--by", "bench"], env=env, check=True,
                       capture_output=True)
        run(show, env)
        labelled = statistics.median(run(show, env)[0] for _ in range(opts.runs))
        os.environ["RADAR_HOME"] = tmp
        from infra_radar.analyse.learn import fit, limits_of
        from infra_radar.config import load_settings
        from infra_radar.pipeline import judgment
        from infra_radar.pipeline.home import open_store
        from infra_radar.store import labels, queries

        settings = load_settings()
        engine = open_store(settings)
        team = labels.all_labels(engine)
        examples = judgment.examples(engine, team, labels.label_windows(engine))
        limits = limits_of(judgment.judging_tables(settings)["learning"])
        fitting = timed(lambda: fit(examples, limits), opts.runs)
        repo, number = opts.ref.split("#")

        def one_card() -> None:
            judgment._FITTED.clear()  # as a new process finds it: read from the store
            judgment.judge(settings, engine, [queries.analysed_item(engine, repo, int(number))])

        card = timed(one_card, opts.runs)
        everything = queries.analysed_in_window(engine, None)
        start = time.perf_counter()
        judgment.judge(settings, engine, everything)
        whole = time.perf_counter() - start
        moved = sum(1 for a in everything if a.analysis.learned)
        print(f"{len(team)} labels, {len(examples)} examples: fit {fitting * 1000:.1f} ms | judge one card "
              f"{card * 1000:.1f} ms | judge {len(everything)} items {whole:.3f} s ({moved} moved by the calibration)")
        print(f"radar show {opts.ref}: {bare:.3f} s without labels, {labelled:.3f} s with them "
              f"(medians of {opts.runs})")
        engine.dispose()


if __name__ == "__main__":
    main()
