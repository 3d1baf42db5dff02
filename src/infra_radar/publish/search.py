"""The client-side search index: one JS file that assigns a global, so it loads from file:// too.

Every entry carries a precomputed key string: Latin words and numbers, and Chinese text as character
bigrams (so a two-character query such as 量化 or 调度 matches), plus the item's topic and kind names in
both languages. `search.js` tokenises a query with the same rules and keeps entries that hold every
query token as a key prefix. Keep `tokens` and `tokenize` in search.js in step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..models import AnalysedItem
from .markup import script_json

_LATIN = re.compile(r"[a-z0-9]+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
GLOBAL = "RADAR_INDEX"


def tokens(text: str) -> list[str]:
    """Search tokens of a text: lower-case Latin words and numbers, and Chinese character bigrams."""
    lower = text.lower()
    found = _LATIN.findall(lower)
    for run in _HAN.findall(lower):
        found.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
    return found


def entry_keys(ai: AnalysedItem, names: dict[str, dict[str, dict[str, str]]]) -> str:
    """The key string of one item: title, reference, author, topics and kind in zh and en."""
    item, a = ai.item, ai.analysis
    parts: list[str] = [item.title, item.ref, item.author, a.priority, a.item_kind, *a.topics]
    for strings in names.values():
        parts.extend(strings["topics"].get(code, "") for code in a.topics)
        parts.append(strings["kinds"].get(a.item_kind, ""))
    seen = dict.fromkeys(tok for part in parts for tok in tokens(part))
    return " ".join(seen)


def index_entries(pages: Iterable[tuple[AnalysedItem, str]], names: dict[str, Any]) -> list[list[str]]:
    """[page, ref, title, priority, date, author, keys] per item page, newest first."""
    rows = []
    for ai, page in pages:
        item = ai.item
        when = item.when.strftime("%Y-%m-%d") if item.when else ""
        rows.append([page, item.ref, item.title, ai.analysis.priority, when, item.author,
                     entry_keys(ai, names)])
    rows.sort(key=lambda r: (r[4], r[1]), reverse=True)
    return rows


def index_script(entries: list[list[str]]) -> str:
    """The index as JavaScript: `window.RADAR_INDEX = {...};` with every `<`, `>`, `&` escaped."""
    fields = ["page", "ref", "title", "priority", "date", "author", "keys"]
    return f"window.{GLOBAL} = {script_json({'fields': fields, 'items': entries})};\n"
