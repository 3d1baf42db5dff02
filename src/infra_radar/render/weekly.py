"""The weekly report's template context."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..analyse.porting import applied
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
from .clusters import clusters
from .conclusion import claim_text, conclusion, headline_claim
from .deepdive import grade_with_porting
from .explain import clip, described, explain_body, explain_rules, file_role, sentences
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


def _theme_name(cluster: dict[str, Any], t: dict[str, Any], ubiquitous: set[str]) -> str:
    w = t["weekly"]
    topics = Counter(topic for ai in cluster["members"] for topic in ai.analysis.topics if topic not in ubiquitous)
    topic = name(t, "topics", topics.most_common(1)[0][0]) if topics else ""
    label = cluster["label"] if cluster["kind"] != "ref" else cluster["label"].rsplit("/", 1)[-1]
    return w[f"theme_{cluster['kind']}"].format(label=label, topic=topic)


def _themes(ranked: list[AnalysedItem], t: dict[str, Any], target: str, cap: int = 5) -> list[dict]:
    """Items grouped by mechanism (shared identifiers, modules, linked PRs); each item in one theme."""
    out = []
    found = clusters(ranked)
    # the week's main movements first: the themes holding the key PRs and the most importance
    found.sort(key=lambda c: (-sum(ai.analysis.priority in TOP for ai in c["members"]),
                              -sum(ai.analysis.importance for ai in c["members"]), -len(c["members"])))
    share = float(explain_rules().get("weekly", {}).get("max_topic_share", 0.4))
    per_topic = Counter(topic for ai in ranked for topic in set(ai.analysis.topics))
    ubiquitous = {topic for topic, n in per_topic.items() if n > share * len(ranked)}
    for cluster in found:
        members = cluster["members"]
        figure = next(((short_ref(ai), headline_claim(ai.analysis.perf_claims)) for ai in members
                       if ai.analysis.perf_claims), None)
        out.append({"name": _theme_name(cluster, t, ubiquitous), "count": len(members), "total": len(members), "above": 0,
                    "refs": [short_ref(ai) for ai in members[:3]], "all": [short_ref(ai) for ai in members],
                    "figure": f"{figure[0]} {claim_text(figure[1], t)}" if figure and figure[1] else "",
                    "shared": t["common"]["sep"].join(f"`{x}`" for x in cluster["shared"]),
                    "members": [_listed(ai, t, target) for ai in members[:cap]], "more": max(len(members) - cap, 0)})
    return out


def _listed(ai: AnalysedItem, t: dict[str, Any], target: str) -> dict[str, Any]:
    view = row(ai, t)
    porting = applied(ai.item, target, text=described(ai.item.body))
    view["summary"] = conclusion(ai, t, porting)
    view["grade_reason"] = grade_with_porting(ai, t, porting)
    return view


def _kind_trend(now: list[AnalysedItem], before: list[AnalysedItem], t: dict[str, Any]) -> list[str]:
    cur = Counter(ai.analysis.item_kind for ai in now)
    prev = Counter(ai.analysis.item_kind for ai in before)
    fmt = t["weekly"]["kind_count"]
    kinds = sorted(set(cur) | set(prev), key=lambda k: (-cur[k], -prev[k], k))
    return [fmt.format(kind=name(t, "kinds", k), n=cur[k], delta=signed(cur[k] - prev[k])) for k in kinds]


def _risk_why(code: str, ai: AnalysedItem, t: dict[str, Any]) -> str:
    """Why an item carries a risk label, from its own facts."""
    why = t["weekly"]["risk_why"]
    files = ai.item.files
    code_files = [f for f in files if file_role(f.path) not in ("tests", "docs", "config")] or files
    top = max(code_files, key=lambda f: ((f.additions or 0) + (f.deletions or 0), f.path), default=None)
    lines = sum((f.additions or 0) + (f.deletions or 0) for f in files)
    if code in ("core-path", "platform-specific") and top is not None:
        return why["file"].format(file=top.path)
    if code == "no-test":
        return why["no_test"].format(lines=lines, n=len(files))
    if code == "large-change":
        return why["large"].format(lines=lines, n=len(files))
    if code in ("silent-accuracy", "breaking"):
        hit = next((s for _, b in explain_body(ai.item.body).motivation + explain_body(ai.item.body).mechanism
                    for s in sentences(b) if _RISK_WORDS[code].search(s)), "")
        if hit and clip(hit, 100):  # a sentence with no clause to stop at is not quoted (never cut)
            return why["quote"].format(text=clip(hit, 100))
    return why["title"].format(title=ai.item.title)


_RISK_WORDS = {
    "silent-accuracy": re.compile(r"accura|precision|nan\b|wrong|incorrect|mismatch|garbage|drop", re.I),
    "breaking": re.compile(r"break|remov|renam|deprecat|incompatib|no longer|drop", re.I),
}


def _risk_rows(ranked: list[AnalysedItem], t: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for code in t["codes"]["weekly_risks"]:
        hits = [ai for ai in ranked if code in ai.analysis.risk_labels]
        rows.append({"label": name(t, "risks", code), "n": len(hits),
                     "meaning": t["weekly"]["risk_meaning"].get(code, ""),
                     "refs": [{"ref": short_ref(ai), "url": ai.item.url} for ai in hits[:3]],
                     "examples": [{"ref": short_ref(ai), "url": ai.item.url, "why": _risk_why(code, ai, t)}
                                  for ai in hits[:3]]})
    return rows


def _quick_view(ai: AnalysedItem, t: dict[str, Any], target: str = "ascend") -> dict[str, Any]:
    view = _listed(ai, t, target)
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
    """The week's movements: counts with what they count, the main themes with PR numbers and figures, and
    where the risk concentrates."""
    w, c, sep = t["weekly"], t["common"], t["weekly"]["exec_sep"]
    if not ctx["merged"] and not ctx["commits"]:
        return w["exec_empty"].format(this=ctx["this"])
    head = w["exec_merged"].format(this=ctx["this"], merged=ctx["merged"])
    if ctx["has_previous"]:
        head += c["paren"].format(w["exec_vs"].format(previous=ctx["previous_word"], before=ctx["merged_before"],
                                                      change=ctx["merged_delta"]))
    else:
        head += c["paren"].format(w["exec_no_previous"].format(previous=ctx["previous_word"]))
    head += w["exec_key"].format(key=ctx["key"], previous=ctx["previous_word"], key_before=ctx["key_before"])
    parts = [head]
    moves = []
    for th in ctx["themes"][:3]:
        refs = c["sep"].join(th["refs"])
        figure = w["exec_figure"].format(figure=th["figure"]) if th["figure"] else ""
        moves.append(w["exec_move"].format(name=th["name"], n=th["count"], refs=refs, figure=figure))
    if moves:
        parts.append(w["exec_moves"].format(items=c["semi"].join(moves)))
    else:
        notable = [f"{short_ref(ai)} {ai.item.title}" for ai in ranked if ai.analysis.priority != "none"][:3]
        if notable:
            parts.append(w["exec_notable"].format(items=c["semi"].join(notable)))
    risky = max((r for r in ctx["risks"] if r["n"]), key=lambda r: r["n"], default=None)
    if risky:
        parts.append(w["exec_risk"].format(label=risky["label"], n=risky["n"],
                                           refs=c["sep"].join(r["ref"] for r in risky["refs"])))
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
        "key_before": sum(1 for ai in before if ai.analysis.priority in TOP),
        "merged_delta": delta(merged, merged_before),
        "top_topics": [w["topic_count"].format(topic=name(t, "topics", k), n=n) for k, n in topic_counts],
    }
    ctx["themes"] = _themes(relevant, t, inp.target)
    themed = {r for th in ctx["themes"] for r in th["all"]}
    ctx["unthemed"] = [{"short": short_ref(ai), "url": ai.item.url} for ai in relevant if short_ref(ai) not in themed]
    ctx["risks"] = _risk_rows(ranked, t)
    ctx["summary"] = _summary(ctx, ranked, t)
    ctx["categories"] = _kind_trend(changes, before, t)
    files = _per_item(changes, lambda ai: (f.path for f in ai.item.files))
    dirs = _per_item(changes, lambda ai: (_directory(f.path) for f in ai.item.files))
    ctx["hot_files"] = [w["path_count"].format(path=p, n=n) for p, n in _top_counts(files, 10)]
    ctx["hot_dirs"] = [w["path_count"].format(path=p, n=n) for p, n in _top_counts(dirs, 5)]
    authors = _top_counts(_per_item(changes, lambda ai: [ai.item.author]), 5)
    ctx["authors"] = [w["author_count"].format(author=a, n=n) for a, n in authors]
    keyed = [ai for ai in ranked if ai.analysis.priority in TOP] or \
        [ai for ai in ranked if ai.analysis.priority != "none"]
    ctx["quick"] = [_quick_view(ai, t, inp.target) for ai in keyed[: inp.key_prs]]
    ctx["quick_more"] = [{"short": short_ref(ai), "url": ai.item.url} for ai in keyed[inp.key_prs:]]
    ctx["recommendations"] = _recommendations(ranked, t, [k for k, _ in topic_counts])
    ctx["adapted"] = adapted_views(inp.adapted, t, full_up=True)
    return ctx
