"""Benchmark: every text path on normal and adversarial 64 KB bodies, in µs per KB, side by side.

Text paths: import cleanup (the [noise] patterns), page parse, claims, references, rules (a whole item
analysis). The normal body is real PR prose (the bundled sample's bodies, repeated to 64 KB); each
adversarial body is built to make a super-linear pattern or scan blow up (whitespace runs, a line of
`#1 `, repeated bot headers, unclosed brackets and fences...).

Two ratios per path:
  growth   µs/KB of a body at 64 KB over µs/KB of the same body at 8 KB, worst body: 1 is linear, 8 is
           quadratic. The exit status is 1 when any path's growth passes GROWTH (3).
  density  worst adversarial µs/KB over normal µs/KB at 64 KB: 1 is a body costing what prose costs. Bodies
           made only of references or figures carry 50-300x the findings of prose per KB; the extractors
           stop after a per-body budget of matches examined (links.toml max_matches, claims.toml
           [limits]), so such a body costs at most a few times prose. The exit status is 1 when any path's
           density passes DENSITY (5, issue 16).

usage: python bench/text_linear.py [--kb 64] [--only PATH] [--repeats 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from infra_radar.analyse.claims import extract_claims
from infra_radar.analyse.refs import extract_refs
from infra_radar.analyse.rules import RuleSet, analyse_item, load_noise_patterns
from infra_radar.config import load_settings
from infra_radar.models import FileChange, Item
from infra_radar.sources.history import BodyCleaner
from infra_radar.sources.page import load_page_rules, parse_page

GROWTH = 3.0  # per-KB cost at 64 KB over 8 KB: linear is ~1, quadratic 8
DENSITY = 5.0  # the goal for worst adversarial over normal per KB
SAMPLE = Path(__file__).resolve().parents[1] / "src" / "infra_radar" / "defaults" / "sample"


def normal_text() -> str:
    bodies = []
    for path in sorted(SAMPLE.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("body"):
                bodies.append(rec["body"])
    return "\n\n".join(bodies)


def fill(unit: str, size: int) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def adversarial(size: int) -> dict[str, str]:
    """Bodies that made (or could make) a pattern or scan super-linear, each `size` characters."""
    return {
        "blank lines + trailer": fill(" \n", size - 40) + "x Signed-off-by: x <x@y.z>\n",
        "blank run + separator": fill("\n \t", size - 10) + "x ------\n",
        "blank run + pipe": fill(" \n", size - 10) + "x |\n",
        "one line of #1": fill("#1 ", size),
        "#1 lines with a repo": fill("depends on other/repo#1 and #2 ", size),
        "gemini headers": fill("Summary of Changes Hello, I'm Gemini Code Assist. ", size),
        "gemini using": "Summary of Changes\n" + fill("Using Gemini Code Assist ", size - 20),
        "welcome bots": fill("👋 Hi! Thank you for contributing to the vLLM Ascend project. ", size),
        "DCO words": fill("DCO ", size),
        "hex compare": fill("0123456 to ", size),
        "one long word": fill("a", size),
        "open brackets": fill("[", size),
        "link texts": fill("[x](", size),
        "open fences": fill("```\n", size),
        "backticks": fill("`", size),
        "urls": fill("https://github.com/a/b/pull/1 ", size),
        "numbers": fill("1.0 ms -> 2.0 ms ", size),
        "arrows": fill("-> ", size),
        "percents": fill("12% ", size),
        "table pipes": fill("| ", size),
        "bullets": fill(" - ", size),
        "headings": fill(" ## a", size),
        "colons": fill("TTFT: ", size),
    }


def timed(fn: Callable[[], object], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def paths() -> dict[str, Callable[[str], object]]:
    settings = load_settings()
    clean = BodyCleaner(load_noise_patterns())
    page_rules = load_page_rules(settings)
    rules = RuleSet.load(settings)
    when = datetime(2026, 8, 2, tzinfo=UTC)

    def page(text: str) -> object:
        head = "Faster decode #1234\nacme/infer\nMerged\nalice merged 1 commit into main\n\n"
        return parse_page(head + text, page_rules, repo="acme/infer", number=1234)

    def analyse(text: str) -> object:
        item = Item(repo="acme/infer", kind="pr", key="1", number=1, title="[Perf] Faster decode", body=text,
                    author="alice", state="merged", created_at=when, updated_at=when, merged_at=when,
                    files=[FileChange("infer/core/a.py", 10, 2)], source="jsonl")
        return analyse_item(item, rules, extract_claims(text), settings)

    return {"import cleanup": clean, "page parse": page, "claims": extract_claims,
            "refs": lambda text: extract_refs(text, "acme/infer", own=1), "rules": analyse}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=64)
    parser.add_argument("--only", help="one text path")
    parser.add_argument("--repeats", type=int, default=4, help="runs per body and size (the best counts)")
    args = parser.parse_args()
    big, small = args.kb * 1024, args.kb * 1024 // 8
    normal = fill(normal_text(), big)
    bodies, smalls = adversarial(big), adversarial(small)
    failed, dense = [], []
    print(f"{'path':<15} {'normal':>8} {'worst':>9} {'density':>8}  {'worst body':<22} {'growth':>6}  fastest-growing body")
    print(f"{'':<15} {'µs/KB':>8} {'µs/KB':>9}")
    for name, fn in paths().items():
        if args.only and name != args.only:
            continue
        base = timed(lambda fn=fn: fn(normal)) * 1e6 / args.kb
        costs, growth = {}, {}
        for label, text in bodies.items():
            # interleaved, best of several: a loaded machine inflates single runs, never shortens them
            costs[label], little = float("inf"), float("inf")
            for _ in range(args.repeats):
                costs[label] = min(costs[label], timed(lambda fn=fn, text=text: fn(text), 1) * 1e6 / args.kb)
                little = min(little, timed(lambda fn=fn, text=smalls[label]: fn(text), 2) * 1e6 / (args.kb / 8))
            growth[label] = costs[label] / max(little, 1e-3)
        worst = max(costs, key=costs.__getitem__)
        fastest = max(growth, key=growth.__getitem__)
        print(f"{name:<15} {base:>8.1f} {costs[worst]:>9.1f} {costs[worst] / base:>8.1f}  {worst:<22} "
              f"{growth[fastest]:>6.2f}  {fastest}", flush=True)
        if growth[fastest] > GROWTH:
            failed.append(name)
        if costs[worst] / base > DENSITY:
            dense.append(name)
    print(f"growth goal <= {GROWTH:g} (linear): " + (f"over on {', '.join(failed)}" if failed else "every path met it"))
    print(f"density goal <= {DENSITY:g} (bounded work per body): "
          + (f"over on {', '.join(dense)}" if dense else "every path met it"))
    return 1 if failed or dense else 0


if __name__ == "__main__":
    sys.exit(main())
