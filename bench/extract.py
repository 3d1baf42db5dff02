"""Benchmark: claim and reference extraction over every body of a real history export.

Prints seconds per export for extract_claims and extract_refs, against a baseline measured in the same
run: one pass of a trivial regex (`\\d`) over the same bodies.

usage: python bench/extract.py [EXPORT.jsonl.gz ...]
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
from pathlib import Path

from infra_radar.analyse.claims import extract_claims
from infra_radar.analyse.refs import extract_refs, pr_number_from_subject

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "git"


def bodies(path: Path) -> tuple[str, list[tuple[str, str]]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        repo = json.loads(fh.readline())["full_name"]
        rows = [json.loads(line) for line in fh]
    return repo, [(r["subject"], r["body"]) for r in rows if r["kind"] == "commit"]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(paths: list[Path]) -> None:
    digit = re.compile(r"\d")
    for path in paths:
        repo, rows = bodies(path)
        base = timed(lambda rows=rows: [digit.findall(b) for _, b in rows])
        claims = timed(lambda rows=rows: [extract_claims(b) for _, b in rows])
        refs = timed(lambda rows=rows, repo=repo: [extract_refs(b, repo, pr_number_from_subject(s)[0])
                                                   for s, b in rows])
        print(f"{path.name}: {len(rows)} bodies | baseline regex {base:.3f}s | claims {claims:.2f}s "
              f"({claims / base:.0f}x) | refs {refs:.2f}s ({refs / base:.0f}x)")


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or sorted(DATA.glob("*.jsonl.gz")))
