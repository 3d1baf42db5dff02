"""Benchmark: `radar label --import` of SMALL and LARGE labels (2,000 and 20,000 by default), both measured in the
same run, each into its own copy of one store, and the import of the large file again into its copy (every
label unchanged). The import must be linear in the labels: the exit status is 1 when the large import takes
more than RATIO (10) times the small one (issue 36: 2,000 / 8,000 / 32,000 labels took 1.5 s / 7.4 s / 120 s
when each label was its own transaction, looked up by a scan of every label).

The store is the bundled sample, imported and analysed once (a few seconds); the labels name its items first
(so the calibration fitted after the import has examples), then further numbers in its repositories (labels of
items not imported yet, as a team may give them).

usage: python bench/label_import.py [--small 2000] [--large 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchlib import copy_store, run

RATIO = 10.0
PRIORITIES = ("P0", "P1", "P2", "none")
GRADES = ("S", "M", "L")


def radar_cmd() -> list[str]:
    script = Path(sys.executable).with_name("radar")
    return [str(script)] if script.exists() else [sys.executable, "-m", "infra_radar"]


def labels_file(path: Path, count: int, items: list[tuple[str, int]]) -> Path:
    """`count` labels: the store's items first, then numbers past them in the same repositories."""
    repos = sorted({repo for repo, _ in items}) or ["acme/infer"]
    top = max((number for _, number in items), default=0)
    refs = list(items[:count])
    refs += [(repos[i % len(repos)], top + 1 + i) for i in range(count - len(refs))]
    with path.open("w", encoding="utf-8") as fh:
        for i, (repo, number) in enumerate(refs):
            fh.write(json.dumps({"item": f"{repo}#{number}", "priority": PRIORITIES[i % 4], "grade": GRADES[i % 3],
                                 "note": f"bench label {i}"}) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=20000)
    opts = parser.parse_args()
    from infra_radar.pipeline.demo import sample_files

    radar = radar_cmd()
    with tempfile.TemporaryDirectory(prefix="radar-bench-labels-") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RADAR_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        base = root / "base"
        base.mkdir()
        env["RADAR_HOME"] = str(base)
        run([*radar, "import-jsonl", *map(str, sample_files())], env)
        run([*radar, "analyze"], env)
        exported = json.loads(run([*radar, "export", "--format", "json"], env)[1])
        items = sorted({(o["repo"], int(o["number"])) for o in exported if o.get("number") is not None})
        took = {}
        for name, count in (("small", opts.small), ("large", opts.large)):
            home = root / name
            copy_store(base, home)
            env["RADAR_HOME"] = str(home)
            path = labels_file(root / f"{name}.jsonl", count, items)
            took[name], out = run([*radar, "label", "--import", str(path), "--by", "bench"], env)
            print(f"{count:>7,} labels: {took[name]:6.2f} s  ({out.strip()})")
            if name == "large":
                again, out = run([*radar, "label", "--import", str(path), "--by", "bench"], env)
                print(f"{count:>7,} labels again: {again:6.2f} s  ({out.strip()})")
        ratio = took["large"] / took["small"]
        print(f"large / small: {ratio:.1f}x for {opts.large / opts.small:.0f}x the labels (at most {RATIO:.0f}x)")
        if ratio > RATIO:
            sys.exit(1)


if __name__ == "__main__":
    main()
