"""Benchmark: reading pasted pages (`radar import-page`'s parser), real and adversarial.

Prints milliseconds per page for every saved page under ../shared/data/pages (browser copy and thread
renderings), then for the adversarial page of tests/test_page_linear.py at growing sizes, with the time
per kilobyte (flat when reading is linear).

usage: python bench/page_parse.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from infra_radar.config import load_settings
from infra_radar.sources.page import load_page_rules, parse_page, read_page

PAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "pages"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.test_page_linear import _page  # noqa: E402


def best(text: str, rules, stem: str = "", rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        parse_page(text, rules, None if stem else "acme/x", None if stem else 12, file_stem=stem)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    rules = load_page_rules(load_settings())
    for path in sorted(PAGES.rglob("*.txt")):
        text = read_page(path)
        print(f"{path.relative_to(PAGES)}: {len(text) / 1024:.1f} KB, {best(text, rules, path.stem) * 1000:.1f} ms")
    for k in (1, 4, 16, 64):
        text = _page(k * 1024)
        seconds = best(text, rules)
        print(f"adversarial {len(text) / 1024:.0f} KB: {seconds * 1000:.1f} ms, "
              f"{seconds * 1000 / (len(text) / 1024):.3f} ms/KB")


if __name__ == "__main__":
    main()
