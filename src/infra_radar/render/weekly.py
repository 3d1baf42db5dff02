"""The weekly report's template context."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..models import COMMIT, MERGED, PR, AnalysedItem
from .base import (
    CHANGE_KINDS,
    TOP,
    claim_phrase,
    day,
    delta,
    mean,
    name,
    names,
    pick,
    rank,
    row,
    short_ref,
    signed,
)
from .card import adapted_views
from .inputs import WeeklyInput

# --- weekly ----------------------------------------------------------------------------------------

def _changes(items: list[AnalysedItem]) -> list[AnalysedItem]:
    return [ai for ai in items if ai.item.kind in CHANGE_KINDS]


def _merged(items: list[AnalysedItem]) -> int:
    return sum(1 for ai in items if ai.item.kind == PR and ai.item.state == MERGED)


def _top_counts(counter: Counter, n: int) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _directory(path: str) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:2]) + "/" if parts else ""


def _per_item(changes: list[AnalysedItem], keys: Callable[[AnalysedItem], Iterable[str]]) -> Counter:
    """How many items each key occurs in (an item counts once per key)."""
    return Counter(k for ai in changes for k in set(keys(ai)) if k)


def _themes(ranked: list[AnalysedItem], topics: list[str], t: dict[str, Any], cap: int = 5) -> list[dict]:
    """Items grouped by top topic. Each item is listed under the first top theme it belongs to, so none
    repeats; `total` counts every item carrying the topic (as the executive summary does) and `above` those
    of them listed under an earlier theme."""
    groups: dict[str, list[AnalysedItem]] = {topic: [] for topic in topics}
    totals = Counter(topic for ai in ranked for topic in set(ai.analysis.topics))
    for ai in ranked:
        first = next((topic for topic in topics if topic in ai.analysis.topics), None)
        if first:
            groups[first].append(ai)
    return [{"name": name(t, "topics", topic), "count": len(members), "total": totals[topic],
             "above": totals[topic] - len(members),
             "members": [row(ai, t) for ai in members[:cap]], "more": max(len(members) - cap, 0)}
            for topic, members in groups.items() if members]


def _kind_trend(now: list[AnalysedItem], before: list[AnalysedItem], t: dict[str, Any]) -> list[str]:
    cur = Counter(ai.analysis.item_kind for ai in now)
    prev = Counter(ai.analysis.item_kind for ai in before)
    fmt = t["weekly"]["kind_count"]
    kinds = sorted(set(cur) | set(prev), key=lambda k: (-cur[k], -prev[k], k))
    return [fmt.format(kind=name(t, "kinds", k), n=cur[k], delta=signed(cur[k] - prev[k])) for k in kinds]


def _risk_rows(ranked: list[AnalysedItem], t: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for code in t["codes"]["weekly_risks"]:
        hits = [ai for ai in ranked if code in ai.analysis.risk_labels]
        rows.append({"label": name(t, "risks", code), "n": len(hits),
                     "refs": [{"ref": short_ref(ai), "url": ai.item.url} for ai in hits[:3]]})
    return rows


def _quick_view(ai: AnalysedItem, t: dict[str, Any]) -> dict[str, Any]:
    view = row(ai, t)
    view["claims"] = t["common"]["semi"].join(claim_phrase(c) for c in ai.analysis.perf_claims[:2])
    return view


def _recommendations(ranked: list[AnalysedItem], t: dict[str, Any], topics: list[str]) -> list[str]:
    w, lang = t["weekly"], t["lang"]
    fmt = {"adapt-now": w["rec_adapt"], "validate-first": w["rec_validate"], "track-only": w["rec_track"]}
    lines = []
    for ai in [ai for ai in ranked if ai.analysis.priority == "P0"][:3]:
        reason = pick(ai.analysis.decision_reason, lang) or pick(ai.analysis.grade_reason, lang)
        template = fmt.get(ai.analysis.decision, w["rec_track"])
        lines.append(template.format(ref=short_ref(ai), title=ai.item.title, reason=reason or "—"))
    rules = [("rec_accuracy", lambda a: "silent-accuracy" in a.risk_labels),
             ("rec_breaking", lambda a: "breaking" in a.risk_labels),
             ("rec_untested", lambda a: {"core-path", "no-test"} <= set(a.risk_labels)),
             ("rec_reuse", lambda a: a.grade == "S" and a.priority in ("P0", "P1", "P2"))]
    for key, test in rules:
        hits = [ai for ai in ranked if test(ai.analysis)]
        if hits:
            refs = t["common"]["sep"].join(short_ref(ai) for ai in hits[:3])
            lines.append(w[key].format(n=len(hits), refs=refs))
    if not any(ai.analysis.priority == "P0" for ai in ranked):
        lines.append(w["rec_default"].format(topics=names(t, "topics", topics[:3])))
    return lines[:5]


def _week_title(inp: WeeklyInput, t: dict[str, Any], start: datetime, end: datetime) -> str:
    w = t["weekly"]
    match = re.fullmatch(r"(\d{4})-W(\d{1,2})", inp.week_label or "")
    if match:
        return w["title_week"].format(repo=inp.repo, year=match[1], week=int(match[2]),
                                      start=start.strftime("%m/%d"), end=end.strftime("%m/%d"))
    return w["title_range"].format(repo=inp.repo, start=day(start), end=day(end))


def _summary(ctx: dict[str, Any], ranked: list[AnalysedItem], t: dict[str, Any]) -> str:
    w, sep = t["weekly"], t["weekly"]["exec_sep"]
    if not ctx["merged"] and not ctx["commits"]:
        return w["exec_empty"].format(this=ctx["this"])
    head = w["exec_merged"].format(this=ctx["this"], merged=ctx["merged"], key=ctx["key"])
    if ctx["has_previous"]:
        vs = w["exec_vs"].format(previous=ctx["previous_word"], before=ctx["merged_before"],
                                 change=ctx["merged_delta"])
    else:
        vs = w["exec_no_previous"].format(previous=ctx["previous_word"])
    parts = [f"{head}{t['common']['paren'].format(vs)}"]
    if ctx["top_topics"]:
        parts.append(w["exec_topics"].format(topics=t["common"]["sep"].join(ctx["top_topics"][:3])))
    notable = [f"{short_ref(ai)} {ai.item.title}" for ai in ranked if ai.analysis.priority != "none"][:3]
    if notable:
        parts.append(w["exec_notable"].format(items=t["common"]["semi"].join(notable)))
    end = "。" if t["lang"] == "zh" else "."
    return sep.join(parts) + end


def weekly_context(inp: WeeklyInput, t: dict[str, Any], weights: dict[str, float] | None = None) -> dict:
    """The weekly report's facts: counts, themes, trends, risks, key PRs and recommendations."""
    w = t["weekly"]
    changes, before = _changes(inp.items), _changes(inp.previous)
    ranked = rank(changes, weights)
    start, end = inp.window.since.astimezone(UTC), (inp.window.until - timedelta(microseconds=1)).astimezone(UTC)
    is_week = inp.week_label is not None
    # themes come from the items that matter to the team, not from the noise
    relevant = [ai for ai in ranked if ai.analysis.priority != "none"]
    topic_counts = _top_counts(_per_item(relevant, lambda ai: ai.analysis.topics), 5)
    merged, merged_before = _merged(changes), _merged(before)
    ctx: dict[str, Any] = {
        "title": _week_title(inp, t, start, end), "start": day(start), "end": day(end),
        "merged": merged, "commits": sum(1 for ai in changes if ai.item.kind == COMMIT),
        "key": sum(1 for ai in changes if ai.analysis.priority in TOP),
        "importance": mean([ai.analysis.importance for ai in changes]),
        "insight": mean([ai.analysis.insight for ai in changes]),
        "importance_before": mean([ai.analysis.importance for ai in before]),
        "insight_before": mean([ai.analysis.insight for ai in before]),
        "this": w["this"] if is_week else w["this_range"],
        "previous_word": w["previous"] if is_week else w["previous_range"],
        "has_previous": bool(inp.previous), "merged_before": merged_before,
        "merged_delta": delta(merged, merged_before),
        "top_topics": [w["topic_count"].format(topic=name(t, "topics", k), n=n) for k, n in topic_counts],
    }
    ctx["summary"] = _summary(ctx, ranked, t)
    ctx["themes"] = _themes(relevant, [k for k, _ in topic_counts], t)
    ctx["categories"] = _kind_trend(changes, before, t)
    files = _per_item(changes, lambda ai: (f.path for f in ai.item.files))
    dirs = _per_item(changes, lambda ai: (_directory(f.path) for f in ai.item.files))
    ctx["hot_files"] = [w["path_count"].format(path=p, n=n) for p, n in _top_counts(files, 10)]
    ctx["hot_dirs"] = [w["path_count"].format(path=p, n=n) for p, n in _top_counts(dirs, 5)]
    authors = _top_counts(_per_item(changes, lambda ai: [ai.item.author]), 5)
    ctx["authors"] = [w["author_count"].format(author=a, n=n) for a, n in authors]
    ctx["risks"] = _risk_rows(ranked, t)
    ctx["quick"] = [_quick_view(ai, t) for ai in ranked if ai.analysis.priority != "none"][: inp.key_prs]
    ctx["recommendations"] = _recommendations(ranked, t, [k for k, _ in topic_counts])
    ctx["adapted"] = adapted_views(inp.adapted, t, full_up=True)
    return ctx
