"""The daily radar's template context."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from ..analyse.porting import Applied, applied, target_name
from ..models import RELEASE, AnalysedItem, Link
from .base import (
    PRIORITY_ORDER,
    TOP,
    day,
    iso,
    link_url,
    link_views,
    name,
    rank,
    ref_url,
    row,
)
from .checklist import checklist_options, spread_out
from .conclusion import conclusion_parts
from .deepdive import deep_view, grade_with_porting
from .explain import clickable, described
from .inputs import DailyInput, WatchRecheck

# --- daily -----------------------------------------------------------------------------------------

def _porting(ai: AnalysedItem, target: str) -> list[Applied]:
    return applied(ai.item, target, text=described(ai.item.body))


def short_note(ai: AnalysedItem, t: dict[str, Any], target: str = "ascend") -> str:
    """One-line note of the short table: grade letter and the item's conclusion, short (a clipped quote, the
    headline figure and the decision; the module and porting caveat are the P0/P1 table's)."""
    what, rest = conclusion_parts(ai, t, _porting(ai, target), short=True)
    return f"{ai.analysis.grade}{t['common']['colon']}{t['common']['semi'].join(what + rest)}"


def _row(ai: AnalysedItem, t: dict[str, Any], target: str, target_name: str) -> dict[str, Any]:
    porting = _porting(ai, target)
    view = row(ai, t)
    what, rest = conclusion_parts(ai, t, porting)
    view["summary"] = t["common"]["semi"].join(what + rest)
    view["summary_rest"] = rest  # where, figure, decision: the rules' facts, kept beside model prose
    view["grade_reason"] = grade_with_porting(ai, t, porting)
    view["checklist"], view["alternates"] = checklist_options(ai, t["lang"], target_name, porting)
    return view


def watch_view(w: WatchRecheck, t: dict[str, Any]) -> dict[str, Any]:
    """A rechecked watch item with translated states and linked new references."""
    return {
        "ref": w.ref, "url": w.url, "title": w.title,
        "before": name(t, "states", w.state_before) if w.state_before else None,
        "now": name(t, "states", w.state_now), "sha": (w.merge_commit or "")[:10],
        "files_moved": w.files_moved, "new_refs": [{"ref": r, "url": ref_url(r)} for r in w.new_refs],
        "risks": [name(t, "risks", r) for r in w.risks],
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
            if link.ref and link_url(link) and clickable(link_url(link)):
                refs.setdefault(link.ref, {"ref": link.ref, "url": link_url(link), "title": link.detail})
    return list(refs.values())


def _together(ranked: list[AnalysedItem], inp: DailyInput) -> list[AnalysedItem]:
    """The ranked items with each story's other ranked members right after its best-ranked one, in story
    order (the tables keep their priorities: a member only moves within the rows of its own table)."""
    by_ref = {ai.item.ref: ai for ai in ranked}
    out: list[AnalysedItem] = []
    placed: set[str] = set()
    for ai in ranked:
        if ai.item.ref in placed:
            continue
        story = inp.stories.get(ai.item.ref)
        for member in [by_ref[r] for r in story.refs if r in by_ref] if story else [ai]:
            if member.item.ref not in placed:
                placed.add(member.item.ref)
                out.append(member)
    return out


def _story_text(ai: AnalysedItem, inp: DailyInput, t: dict[str, Any]) -> str:
    """"one change: #6886 original (main), #6881 backport (release/v0.8.0)" for a story member, else ""."""
    story = inp.stories.get(ai.item.ref)
    if story is None:
        return ""
    d = t["daily"]
    members = []
    listed, more = story.listed()
    for ref in listed:
        branches = story.branches.get(ref) or []
        short = "#" + ref.rsplit("#", 1)[1] if ref.split("#")[0] == ai.item.repo else ref
        members.append(d["story_member"].format(ref=short, role=d["story_roles"].get(story.roles[ref], ""),
                                                branches=d["story_branches"].format(branches=", ".join(branches))
                                                if branches else ""))
    if more:
        members.append(d["story_more"].format(n=more))
    return d["story"].format(members=t["common"]["sep"].join(members))


def daily_context(inp: DailyInput, t: dict[str, Any], weights: dict[str, float] | None = None) -> dict:
    """The daily radar's facts, in section order."""
    ranked = rank((ai for ai in inp.items if ai.analysis.priority in PRIORITY_ORDER
                   and ai.analysis.priority != "none"), weights)
    counts = Counter(ai.analysis.priority for ai in ranked)
    n_ranked = len(ranked)
    ranked = _together(ranked, inp)  # a story's ranked members side by side; each row names all of them
    every_top = [ai for ai in ranked if ai.analysis.priority in TOP]
    # the P0/P1 table holds the highest-ranked items (the deep dives first); the short table the rest, so no
    # item is listed twice
    top = every_top[:inp.top_table_limit] if inp.top_table_limit > 0 else every_top
    deep = top[: max(inp.deep_dive_limit, 0)]
    tabled = {id(ai) for ai in top}
    short = [ai for ai in ranked if id(ai) not in tabled]
    watch = [watch_view(w, t) for w in inp.watch]
    target, tname = inp.target, target_name(inp.target, t["lang"])
    top_rows = [{**_row(ai, t, target, tname), "story": _story_text(ai, inp, t)} for ai in top]
    spread = spread_out([r["checklist"] for r in top_rows], [r.pop("alternates") for r in top_rows])
    for r, steps in zip(top_rows, spread, strict=True):
        r["checklist"] = steps
    # the short table: the P0/P1 rows the table left out and the first P2 rows in full; further P2 items by
    # reference only
    p2 = [ai for ai in short if ai.analysis.priority == "P2"]
    rest = p2[max(inp.short_p2_limit, 0):]
    folded = {id(ai) for ai in rest}
    short_rows = [{**row(ai, t), "note": short_note(ai, t, target), "story": _story_text(ai, inp, t)}
                  for ai in short if id(ai) not in folded]
    short_rest = [row(ai, t) for ai in rest]
    deep_views = [{**deep_view(ai, t, _porting(ai, target), tname),
                   "related": link_views(inp.related.get(ai.item.ref, []))} for ai in deep]
    with_data = {ai.item.repo.lower() for ai in inp.items}
    return {
        # the date of the window's last instant: [D 00:00Z, D+1) is D, and a morning run ending 02:12Z is that day
        "date": day(inp.window.until - timedelta(microseconds=1)), "calendar_day": inp.calendar_day, "since": iso(inp.window.since), "until": iso(inp.window.until),
        "hours": round((inp.window.until - inp.window.since) / timedelta(hours=1)),
        "first_run": inp.first_run, "explicit": inp.explicit, "generated": iso(inp.generated_at),
        # the scope line names the repositories with items in the window, and apart those with none
        "repos": [r for r in inp.repos if r.lower() in with_data],
        "repos_no_data": [r for r in inp.repos if r.lower() not in with_data],
        "releases": _releases(inp.items, t), "scanned": len(inp.items), "ranked": n_ranked,
        "by_priority": " · ".join(f"{p} {counts[p]}" for p in ("P0", "P1", "P2")),
        "limit": inp.deep_dive_limit, "top": top_rows, "deep": deep_views,
        # the P0/P1 items the table left out, in full (the model stage writes their line too; the short
        # table shows it in their note)
        "more_top": [{**_row(ai, t, target, tname),  # the rules' rest of a short-table note, beside model prose
                      "short_rest": conclusion_parts(ai, t, _porting(ai, target), short=True)[1]}
                     for ai in every_top[len(top):]],
        "watch": watch, "short": short_rows, "short_rest": short_rest, "checks": [r for r in top_rows if r["checklist"]],
        "refs": _references(top_rows + short_rows, deep, watch, inp.related),
    }
