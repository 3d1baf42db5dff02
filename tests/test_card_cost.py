"""`radar show` of one card reads only what the card needs: counted, not timed (bench: README figures)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from infra_radar.analyse import links as links_module
from infra_radar.analyse import related as related_module
from infra_radar.models import Item
from infra_radar.pipeline.analysis import analyze
from infra_radar.pipeline.card import card_input
from infra_radar.pipeline.home import open_store
from infra_radar.store import queries
from infra_radar.store.save import save_items

WORDS = ["scheduler", "kv cache", "attention", "moe", "quantization", "graph mode", "sampler", "lora"]


def prs(n: int) -> list[Item]:
    start = datetime(2026, 6, 1, tzinfo=UTC)
    found = []
    for i in range(1, n + 1):
        when = start + timedelta(hours=i)
        title = f"[Perf] Tune {WORDS[i % len(WORDS)]} path number {i} for decode"
        if i in (7, 8):
            title = "[Bugfix] Guard the pluggable KV cache manager against empty batches"
        found.append(Item(repo="acme/big", kind="pr", key=str(i), number=i, title=title, body="Faster.",
                          author="a", state="merged", created_at=when, updated_at=when, merged_at=when,
                          source="jsonl"))
    return found


def test_one_card_keys_a_few_titles_not_the_whole_repository(settings, monkeypatch):
    engine = open_store(settings)
    save_items(engine, prs(600))
    analyze(settings, engine)
    calls = {"normalise": 0, "key": 0}
    real_norm, real_key = queries.normalise_title, links_module.title_key

    def norm(title):
        calls["normalise"] += 1
        return real_norm(title)

    def key(title, rules):
        calls["key"] += 1
        return real_key(title, rules)

    monkeypatch.setattr(queries, "normalise_title", norm)
    monkeypatch.setattr(links_module, "title_key", key)
    monkeypatch.setattr(related_module, "title_key", key)  # the index of related PRs keys titles too
    card = card_input(settings, engine, "acme/big#7")
    engine.dispose()
    assert [link.number for link in card.duplicates] == [8]  # still found
    assert calls["normalise"] < 20, calls  # was one per PR of the repository (600)
    assert calls["key"] < 60, calls
