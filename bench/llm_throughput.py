"""Benchmark: 200 item prompts at concurrency 16 against the local stand-in with 50 ms latency.

The bound is 1.5 x the ideal 200 x 50 ms / 16 = 0.625 s, i.e. 0.94 s. Prints the figure and exits
non-zero when it is missed. Run: /tmp/venv/bin/python bench/llm_throughput.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# The stage imports the renderers' helpers lazily (a plain `radar fetch` never needs them); a real `radar
# daily --llm` has imported them to build its report before the stage runs. Imported here with the rest, so
# the figure is the stage's work (prompts, requests, validation, grounding, cache) and not module loading.
import infra_radar.render.context  # noqa: E402, F401
from infra_radar.config import Settings  # noqa: E402
from infra_radar.llm.client import LlmConfig  # noqa: E402
from infra_radar.llm.stage import apply_llm  # noqa: E402
from infra_radar.models import AnalysedItem, Analysis, FileChange, Item  # noqa: E402
from infra_radar.pipeline.home import open_store  # noqa: E402

N, CONCURRENCY, LATENCY = 200, 16, 0.050


def items() -> list[AnalysedItem]:
    """N invented items, each a distinct prompt (so nothing is served from the cache)."""
    return [AnalysedItem(Item(repo="acme/infer-npu", kind="pr", key=str(n), number=n,
                              title=f"Tune the scheduler path {n}", body=f"Batch size {n} no longer stalls.",
                              files=[FileChange("infer_npu/core/sched.py", n, 1)],
                              merged_at=datetime(2026, 7, 30, tzinfo=UTC)),
                         Analysis(item_kind="perf", priority="P1")) for n in range(1, N + 1)]


def main() -> int:
    # The stand-in runs in its own process, as a real server would: sharing this one's GIL would bill its
    # JSON and HTTP work to the client.
    stub = Path(__file__).resolve().parents[1] / "tests" / "llm_stub.py"
    server = subprocess.Popen([sys.executable, str(stub), str(LATENCY)], stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        return run(base_url)
    finally:
        server.terminate()
        server.wait()


def run(base_url: str) -> int:
    """Time apply_llm over N fresh items against the server at `base_url`."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp), db_url=f"sqlite:///{tmp}/bench.db", lang="en")
        engine = open_store(settings)
        config = LlmConfig(base_url, "stub-model", max_concurrency=CONCURRENCY, token_budget=0)
        batch = items()
        start = time.perf_counter()
        run = apply_llm(settings, engine, batch, "en", config=config)
        seconds = time.perf_counter() - start
    bound = 1.5 * N * LATENCY / CONCURRENCY
    print(f"llm throughput: {N} items at concurrency {CONCURRENCY}, {LATENCY * 1000:.0f} ms latency: "
          f"{seconds:.3f} s (bound {bound:.3f} s, ideal {N * LATENCY / CONCURRENCY:.3f} s); "
          f"{run.requests} requests, {run.failed} failed, {run.dropped} sentences dropped")
    return 0 if seconds <= bound and run.requests == N else 1


if __name__ == "__main__":
    sys.exit(main())
