"""Reading a pasted page is linear in its size, even for a page built to make regexes backtrack.

Proven by a ratio between two sizes in one run (8x the text must cost far less than 64x the time), never by
wall-clock limits.
"""

from __future__ import annotations

import gc
import time

import pytest

from infra_radar.config import load_settings
from infra_radar.sources.page import load_page_rules, parse_page

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

TITLE = "Title of the page #12\n"


def _parts(k: int) -> list[str]:
    """Adversarial pieces of about k characters each: long blank runs, `#1 ` repeated, long lines, many blocks."""
    return [
        "x" + " " * k + "\n",
        "#1 " * (k // 3) + "\n",
        "word " * (k // 5) + "\n",
        "|\nsome text of a comment here\n" * (k // 30),
        "".join(f"alice commented on Mar 4, 2026\nunique text {i} {'z' * 30} {i}\n" for i in range(k // 70)),
        "intro ## Heading | a | b | |---|---| " + "| 1 | 2 | " * (k // 10) + "\n",
        "a" + "\t " * (k // 2) + "requested to merge x into y\n",
        " " * k + "Signed-off-by: a\n",
        "x" + " " * k + "y |\n",
        "owner\n" + " \n" * (k // 2) + "/\n",
        "deadbeef" + " " * k + "to\n",
        "a/" * (k // 2) + "\n",
        "Summary of Changes " * (k // 19) + "\n",
        "\n".join(f"… commit {i}" for i in range(k // 12)) + "\n",
    ]


def _page(k: int) -> str:
    return TITLE + "".join(_parts(k))


def _ratio(large: str, small: str, rules, rounds: int = 5) -> float:
    """Best CPU time of `large` over best CPU time of `small` (process time: a busy machine's other
    processes do not count), measured in alternation, with the garbage collector paused."""
    best = {"small": float("inf"), "large": float("inf")}
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, text in (("small", small), ("large", large)):
                start = time.process_time()
                parse_page(text, rules, "acme/x", 12)
                best[name] = min(best[name], time.process_time() - start)
    finally:
        gc.enable()
    return best["large"] / best["small"]


def test_adversarial_page_parses_in_linear_time():
    rules = load_page_rules(load_settings())
    small, large = _page(1024), _page(8 * 1024)
    assert 8 * len(small) * 0.9 < len(large) < 8 * len(small) * 1.1
    ratio = _ratio(large, small, rules)
    assert ratio < 24, f"8x the text cost {ratio:.1f}x the time (linear ~8, quadratic ~64)"


def test_a_64_kb_adversarial_page_imports_whole():
    rules = load_page_rules(load_settings())
    text = _page(64 * 1024 // 14)
    assert len(text) > 60_000
    item = parse_page(text, rules, "acme/x", 12)
    assert item.ref == "acme/x#12" and item.title == "Title of the page"


def test_structured_shapes_are_linear_too():
    rules = load_page_rules(load_settings())

    def thread(n: int) -> str:
        turns = "".join(f"u{i} · comment · 2026-07-01\ntext {i} {'#1 ' * 20} path/to/f{i}.py\n" for i in range(n))
        return ("url: https://github.com/a/b/pull/1\ntitle: T\nstate: open\n\na/b · pull request #1 · open · Python\n"
                f"# T\n\nme · description · 2026-07-01\n{'a/' * n * 20}\n{turns}")

    def gh(n: int) -> str:
        return "title:\tT\nstate:\tOPEN\nnumber:\t3\nurl:\thttps://github.com/a/b/pull/3\n--\nbody\n" + \
            "--\nauthor:\tx\nstatus:\tcommented\n--\nbody words here\n" * n

    for make in (thread, gh):
        ratio = _ratio(make(8000), make(1000), rules)
        assert ratio < 24, (make.__name__, ratio)
