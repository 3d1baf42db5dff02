"""Model sentences as evidence records: what `radar show ITEM --evidence`, the export and the site's item page
list beside the rules' records. Read from the cache only (nothing is sent): the item prompt's cached reply,
checked again against the item's records (llm/cited.py), each kept sentence with the ids and text of the
records it cites (`source: model`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Engine

from ..config import Settings
from ..models import AnalysedItem

__all__ = ["model_evidence", "model_evidence_lines"]


def model_evidence(settings: Settings, engine: Engine, items: Iterable[AnalysedItem], lang: str,
                   flag: bool | None = None) -> dict[str, list[dict[str, Any]]]:
    """{item ref: [record]} of the model sentences the cache holds for the items (none without a model, with
    `flag` False, or for an item whose prompt was never answered). A record: statement (the sentence),
    source "model", field, records (the cited ids), text (the cited records, each `[id] text`), rule."""
    from ..errors import ConfigError
    from .prompts import use_llm
    from .stage import apply_llm, settings_prompt

    try:
        config = use_llm(settings, flag)
    except ConfigError:
        return {}
    items = list(items)
    if config is None or not items:
        return {}
    run = apply_llm(settings, engine, items, lang, dry_run=True, config=config)  # the cache only: nothing sent
    prompt = settings_prompt(settings, "item")
    rule = f"prompts/item.toml v{prompt.version} · {config.model}"
    out: dict[str, list[dict[str, Any]]] = {}
    for ref, fields in run.cited.items():
        records = {r.id: r for r in run.records.get(ref, [])}
        out[ref] = [{"statement": c.text, "source": "model", "field": name, "records": list(c.records),
                     "text": " | ".join(f"[{i}] {records[i].text}" for i in c.records if i in records),
                     "rule": rule} for name, cited in fields.items() for c in cited]
    return out


def model_evidence_lines(found: list[dict[str, Any]]) -> list[str]:
    """The model records as `radar show --evidence` prints them, after the rules' records."""
    lines: list[str] = []
    for e in found:
        lines.append(f"- {e['statement']}")
        lines.append(f"  source: model · field: {e['field']} · records: {', '.join(map(str, e['records']))} "
                     f"· rule: {e['rule']}")
        lines.append(f"  text: {' '.join(e['text'].split())}")
    return lines
