"""The daily radar's template context."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from ..models import RELEASE, AnalysedItem, Link
from .base import (
    PRIORITY_ORDER,
    TOP,
    claim_rows,
    day,
    files_total,
    iso,
    link_url,
    link_views,
    name,
    pick,
    rank,
    ref_url,
    row,
    top_files,
)
from .explain import mechanism
from .inputs import DailyInput, WatchRecheck

# --- daily -----------------------------------------------------------------------------------------

def _first_clause(text: str, limit: int = 80) -> str:
    clause = re.split(r"(?<=[。；;])|(?<=[.!?])\s", text, maxsplit=1)[0].strip().rstrip("。；;.")
    return clause if len(clause) <= limit else clause[: limit - 1].rstrip() + "…"


def short_note(ai: AnalysedItem, t: dict[str, Any]) -> str:
    """One-line note of the short table: grade letter and a short reason, else the kind."""
    reason = pick(ai.analysis.grade_reason, t["lang"])
    if reason:
        return f"{ai.analysis.grade}{t['common']['colon']}{_first_clause(reason)}"
    return name(t, "kinds", ai.analysis.item_kind)


def deep_view(ai: AnalysedItem, t: dict[str, Any]) -> dict[str, Any]:
    """A deep dive: the row plus mechanism, files and claims."""
    view = row(ai, t)
    summary = pick(ai.analysis.summary, t["lang"])
    body = mechanism(ai.item.body)
    # the summary already stands in the P0/P1 table: the deep dive explains, from the author's own words
    view["mechanism"] = body or summary or t["common"]["no_summary"]
    view["files"] = top_files(ai.item.files)
    view["files_total"] = files_total(ai.item.files, t)
    view["claims"] = claim_rows(ai.analysis.perf_claims, t)
    return view


def watch_view(w: WatchRecheck, t: dict[str, Any]) -> dict[str, Any]:
    """A rechecked watch item with translated states and linked new references."""
    return {
        "ref": w.ref, "url": w.url, "title": w.title,
        "before": name(t, "states", w.state_before) if w.state_before else None,
        "now": name(t, "states", w.state_now), "sha": (w.merge_commit or "")[:10],
        "files_moved": w.files_moved, "new_refs": [{"ref": r, "url": ref_url(r)} for r in w.new_refs],
    }


def _releases(items: list[AnalysedItem], t: dict[str, Any]) -> list[str]:
    rels = sorted((ai.item for ai in items if ai.item.kind == RELEASE),
                  key=lambda i: (i.when or i.created_at or datetime.min.replace(tzinfo=UTC), i.repo))
    entry = t["daily"]["release_entry"]
    return [entry.format(repo=r.repo, tag=r.key, date=day(r.when or r.created_at)) for r in rels]


def _references(views: list[dict[str, Any]], deep: list[AnalysedItem], watch: list[dict[str, Any]],
                related: dict[str, list[Link]] | None = None) -> list:
    refs: dict[str, dict[str, str]] = {}
    for v in views + watch:
        refs.setdefault(v["ref"], {"ref": v["ref"], "url": v["url"], "title": v["title"]})
    for ai in deep:  # what the deep-dive items point at, so a reader can follow the mechanism
        for link in [*ai.analysis.links, *(related or {}).get(ai.item.ref, [])]:
            if link.ref and link_url(link):
                refs.setdefault(link.ref, {"ref": link.ref, "url": link_url(link), "title": link.detail})
    return list(refs.values())


def daily_context(inp: DailyInput, t: dict[str, Any], weights: dict[str, float] | None = None) -> dict:
    """The daily radar's facts, in section order."""
    ranked = rank((ai for ai in inp.items if ai.analysis.priority in PRIORITY_ORDER
                   and ai.analysis.priority != "none"), weights)
    top = [ai for ai in ranked if ai.analysis.priority in TOP]
    deep = top[: max(inp.deep_dive_limit, 0)]
    explained = {id(ai) for ai in deep}
    short = [ai for ai in ranked if id(ai) not in explained]
    counts = Counter(ai.analysis.priority for ai in ranked)
    watch = [watch_view(w, t) for w in inp.watch]
    top_rows = [row(ai, t) for ai in top]
    short_rows = [{**row(ai, t), "note": short_note(ai, t)} for ai in short]
    deep_views = [{**deep_view(ai, t), "related": link_views(inp.related.get(ai.item.ref, []))} for ai in deep]
    return {
        "date": day(inp.window.until), "since": iso(inp.window.since), "until": iso(inp.window.until),
        "hours": round((inp.window.until - inp.window.since) / timedelta(hours=1)),
        "first_run": inp.first_run, "explicit": inp.explicit, "generated": iso(inp.generated_at), "repos": inp.repos,
        "releases": _releases(inp.items, t), "scanned": len(inp.items), "ranked": len(ranked),
        "by_priority": " · ".join(f"{p} {counts[p]}" for p in ("P0", "P1", "P2")),
        "limit": inp.deep_dive_limit, "top": top_rows, "deep": deep_views,
        "watch": watch, "short": short_rows, "checks": [r for r in top_rows if r["checklist"]],
        "refs": _references(top_rows + short_rows, deep, watch, inp.related),
    }
