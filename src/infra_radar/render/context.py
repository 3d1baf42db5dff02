"""Report inputs and the facts the templates show: ranking, grouping, counts and formatted values.

The pipeline builds a DailyInput, WeeklyInput or CardInput; the builders here turn one into a plain
dict of strings, numbers and lists (the template context). All wording comes from i18n.toml through
`t`; templates decide the layout.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from ..analyse.claims import format_number
from ..errors import ConfigError
from ..models import COMMIT, MERGED, PR, RELEASE, AnalysedItem, FileChange, Link, PerfClaim, Text, Window

LANGS = ("zh", "en")
PRIORITY_ORDER = {"P0": 0, "P1": 1, "P2": 2, "none": 3}
TOP = ("P0", "P1")
CHANGE_KINDS = (PR, COMMIT)


@dataclass
class WatchRecheck:
    """One watched item as rechecked this run."""

    ref: str
    url: str
    title: str
    state_before: str | None
    state_now: str
    merge_commit: str | None
    files_moved: bool | None  # None = unknown (first recheck)
    new_refs: list[str]  # refs of items that newly reference it ("owner/name#N")


@dataclass
class DailyInput:
    """Everything the daily radar shows."""

    window: Window
    repos: list[str]
    items: list[AnalysedItem]  # everything in the window, releases too
    watch: list[WatchRecheck]
    deep_dive_limit: int
    first_run: bool
    generated_at: datetime
    explicit: bool = False  # the window was given on the command line
    related: dict[str, list[Link]] = field(default_factory=dict)  # by item ref: duplicates, parts, elsewhere
    stories: dict[str, Any] = field(default_factory=dict)  # by item ref: analyse.stories.Story (one change)


@dataclass
class WeeklyInput:
    """Everything a weekly report of one repository shows."""

    repo: str
    window: Window
    week_label: str | None  # "2026-W31" or None for a date range
    items: list[AnalysedItem]
    previous: list[AnalysedItem]  # previous window of equal length
    key_prs: int  # quick-view size (settings.weekly_key_prs)
    adapted: list = field(default_factory=list)  # store.ledger.LedgerEntry: upstream PRs adapted in the window


@dataclass
class CardInput:
    """One item and the relations the pipeline computed for it."""

    item: AnalysedItem
    referenced_by: list[Link]
    duplicates: list[Link]  # computed by the pipeline
    related: list[Link] = field(default_factory=list)  # same mechanism elsewhere
    chain: list[Link] = field(default_factory=list)  # follow-ups: other parts of a split change
    adapted: list = field(default_factory=list)  # store.ledger.LedgerEntry: where this upstream PR was adapted
    known: bool = True  # False: an upstream ref known only through the ledger (no item, no analysis)


# --- strings ---------------------------------------------------------------------------------------

def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_strings(lang: str, template_dir: Path | None = None) -> dict[str, Any]:
    """The fixed strings of language `lang`, with a template directory's i18n.toml merged over them."""
    if lang not in LANGS:
        raise ConfigError(f"report language must be one of {', '.join(LANGS)}, not {lang!r}")
    text = (resources.files("infra_radar") / "defaults" / "i18n.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    user = template_dir / "i18n.toml" if template_dir else None
    if user is not None and user.exists():
        try:
            data = _deep_merge(data, tomllib.loads(user.read_text(encoding="utf-8")))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{user}: invalid TOML: {exc}") from None
    return {**data[lang], "codes": data["codes"], "lang": lang}


def name(t: dict[str, Any], table: str, code: str) -> str:
    """Display name of `code` in name table `table` (kinds, topics, risks, ...); the code if unknown."""
    return t[table].get(code, code)


def pick(text: Text, lang: str) -> str:
    """The `lang` version of a bilingual text, falling back to the other language."""
    return text.get(lang) or next((v for v in text.values() if v), "")


# --- small formatting helpers ----------------------------------------------------------------------

def iso(dt: datetime | None) -> str:
    """ISO-8601 UTC with a Z, or "" for no time."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if dt else ""


def day(dt: datetime | None) -> str:
    """The UTC date of `dt` as YYYY-MM-DD, or ""."""
    return dt.astimezone(UTC).strftime("%Y-%m-%d") if dt else ""


def signed(x: float, digits: int = 0, suffix: str = "") -> str:
    """A number with an explicit sign, using the typographic minus: +3, −42.0%."""
    body = f"{abs(x):.{digits}f}{suffix}"
    if body == f"{0:.{digits}f}{suffix}":
        return f"±{body}"
    return f"−{body}" if x < 0 else f"+{body}"


def with_unit(x: float | None, unit: str) -> str:
    """A measured value with its unit: 0.51 s, 93%, 2.45×; an em dash when unknown."""
    if x is None:
        return "—"
    value = format_number(x)
    if unit in ("%", "x", "×"):
        return f"{value}{'%' if unit == '%' else '×'}"
    return f"{value} {unit}" if unit else value


def mean(values: list[int]) -> str:
    """Average with one decimal, or an em dash for no values."""
    return f"{sum(values) / len(values):.1f}" if values else "—"


def delta(now: int, before: int) -> str:
    """Change between two counts: "+10 / +12.5%", or just "+10" when the base is zero."""
    text = signed(now - before)
    return f"{text} / {signed((now - before) / before * 100, 1, '%')}" if before else text


def short_ref(ai: AnalysedItem) -> str:
    """`#N` inside a one-repository report; the tag or short sha otherwise."""
    item = ai.item
    return f"#{item.number}" if item.number is not None else item.key[:10]


def link_url(link: Link) -> str:
    """Where a link points: its URL, else the GitHub page of the referenced number."""
    if link.url:
        return link.url
    return f"https://github.com/{link.repo}/issues/{link.number}" if link.repo else ""


def ref_url(ref: str) -> str:
    """GitHub URL of an `owner/name#N` reference (the issues URL redirects to pull requests)."""
    repo, _, number = ref.partition("#")
    return f"https://github.com/{repo}/issues/{number}" if number else f"https://github.com/{repo}"


# --- ranking ---------------------------------------------------------------------------------------

def focus_weight(ai: AnalysedItem, weights: dict[str, float]) -> float:
    """The largest focus weight among the item's topics (1.0 per unweighted topic)."""
    return max((weights.get(topic, 1.0) for topic in ai.analysis.topics), default=0.0)


def rank(items: Iterable[AnalysedItem], weights: dict[str, float] | None = None) -> list[AnalysedItem]:
    """Items by priority, then importance, insight and focus weight (highest first), then reference."""
    weights = weights or {}

    def key(ai: AnalysedItem) -> tuple:
        a = ai.analysis
        return (PRIORITY_ORDER.get(a.priority, 9), -a.importance, -a.insight, -focus_weight(ai, weights),
                ai.item.repo, ai.item.number or 0, ai.item.key)

    return sorted(items, key=key)


# --- body → mechanism ------------------------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_TEMPLATE_LINE = re.compile(
    r"^\s*(#{1,6}\s|\|"  # headings, table rows
    r"|[-*]\s*\[[ xX]\]"  # checklist boxes
    r"|(\*\*|__)[^*_]+(\*\*|__):?\s*$"  # a bold-only line: a template heading
    r"|(signed-off-by|co-authored-by)\s*:"  # trailers
    r"|(fix(es|ed)?|close[sd]?|resolve[sd]?|related( to)?)\b[^.]*#\d+\s*$"  # issue closers
    r"|[-*]\s*(vllm|torch|cann)\s+version\b)",  # version stamps of PR templates
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_BULLET = re.compile(r"^\s*([-*+]|\d+[.)])\s+")


def _is_template_line(line: str) -> bool:
    stripped = line.strip()
    # A short line that is only a question or label ("Test Plan:", "Why?") is a template heading.
    short_label = len(stripped) <= 80 and stripped.endswith(("?", ":", "？", "："))
    return bool(_TEMPLATE_LINE.match(line)) or short_label


def _meaningful(text: str) -> bool:
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 30 or (letters >= 10 and any("\u4e00" <= ch <= "\u9fff" for ch in text))


def mechanism(body: str, sentences: int = 3, limit: int = 420) -> str:
    """First meaningful paragraph of a PR body, template headings removed, trimmed to a few sentences."""
    text = _FENCE.sub("", _COMMENT.sub("", body.replace("\r\n", "\n")))
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [_BULLET.sub("", ln).strip() for ln in paragraph.splitlines()
                 if ln.strip() and not _is_template_line(ln)]
        joined = " ".join(lines)
        if _meaningful(joined):
            kept = " ".join(_SENTENCE_END.split(joined)[:sentences])
            return kept if len(kept) <= limit else kept[: limit - 1].rstrip() + "…"
    return ""


# --- shared views ----------------------------------------------------------------------------------

def _lines(change: FileChange) -> int:
    return (change.additions or 0) + (change.deletions or 0)


def files_total(files: list[FileChange], t: dict[str, Any]) -> str:
    """"+412/−88, 6 files" in the report language."""
    add = sum(f.additions or 0 for f in files)
    dele = sum(f.deletions or 0 for f in files)
    key = "files_total_one" if len(files) == 1 else "files_total"
    return t["common"][key].format(add=add, dele=dele, n=len(files))


def top_files(files: list[FileChange], n: int = 5) -> list[str]:
    """The `n` paths with the most changed lines."""
    return [f.path for f in sorted(files, key=lambda f: (-_lines(f), f.path))[:n]]


def _context_text(context: dict[str, str], t: dict[str, Any]) -> str:
    order = ["model", "hardware", "batch", "concurrency", "config"]
    keys = [k for k in order if context.get(k)] + sorted(k for k in context if k not in order and context[k])
    fmt = t["context"]
    return fmt["joiner"].join(fmt.get(k, fmt["other"]).format(k=k, v=context[k]) for k in keys)


def change_text(claim: PerfClaim) -> str:
    """"−42.0%", "2.45×" or both; an em dash when the author gave neither."""
    parts = []
    if claim.change_pct is not None:
        parts.append(signed(claim.change_pct, 1, "%"))
    if claim.ratio is not None:
        parts.append(f"{format_number(claim.ratio)}×")
    return " / ".join(parts) or "—"


def claim_rows(claims: list[PerfClaim], t: dict[str, Any]) -> list[dict[str, str]]:
    """One table row per reported figure."""
    return [{"metric": c.metric, "before": with_unit(c.before, c.unit), "after": with_unit(c.after, c.unit),
             "change": change_text(c), "context": _context_text(c.context, t) or "—"} for c in claims]


def claim_phrase(claim: PerfClaim) -> str:
    """A reported figure in one phrase: "TTFT p50 0.88 s → 0.51 s (−42.0%)"."""
    if claim.before is not None and claim.after is not None:
        return f"{claim.metric} {with_unit(claim.before, claim.unit)} → {with_unit(claim.after, claim.unit)} " \
               f"({change_text(claim)})"
    return f"{claim.metric} {change_text(claim) if claim.after is None else with_unit(claim.after, claim.unit)}"


def names(t: dict[str, Any], table: str, codes: list[str]) -> str:
    """Display names of several codes, joined, or the word for none."""
    return t["common"]["sep"].join(name(t, table, c) for c in codes) or t["common"]["none"]


def row(ai: AnalysedItem, t: dict[str, Any]) -> dict[str, Any]:
    """The facts every listing of an item shows."""
    item, a, lang = ai.item, ai.analysis, t["lang"]
    return {
        "ref": item.ref, "short": short_ref(ai), "url": item.url, "title": item.title,
        "priority": a.priority, "state": name(t, "states", "draft" if item.draft else item.state),
        "grade": a.grade, "grade_name": name(t, "grades", a.grade),
        "grade_reason": pick(a.grade_reason, lang), "decision": name(t, "decisions", a.decision),
        "decision_reason": pick(a.decision_reason, lang), "kind": name(t, "kinds", a.item_kind),
        "topics": names(t, "topics", a.topics), "risks": [name(t, "risks", r) for r in a.risk_labels],
        "summary": pick(a.summary, lang) or t["common"]["no_summary"],
        "importance": a.importance, "insight": a.insight,
        "checklist": [pick(step, lang) for step in a.checklist if pick(step, lang)],
    }


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


def _with_data(items) -> set[str]:
    return {ai.item.repo.lower() for ai in items}


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
    for ref in story.refs:
        branches = story.branches.get(ref) or []
        short = "#" + ref.rsplit("#", 1)[1] if ref.split("#")[0] == ai.item.repo else ref
        members.append(d["story_member"].format(ref=short, role=d["story_roles"].get(story.roles[ref], ""),
                                                branches=d["story_branches"].format(branches=", ".join(branches))
                                                if branches else ""))
    return d["story"].format(members=t["common"]["sep"].join(members))


def daily_context(inp: DailyInput, t: dict[str, Any], weights: dict[str, float] | None = None) -> dict:
    """The daily radar's facts, in section order."""
    ranked = rank((ai for ai in inp.items if ai.analysis.priority in PRIORITY_ORDER
                   and ai.analysis.priority != "none"), weights)
    counts = Counter(ai.analysis.priority for ai in ranked)
    n_ranked = len(ranked)
    ranked = _together(ranked, inp)  # a story's ranked members side by side; each row names all of them
    top = [ai for ai in ranked if ai.analysis.priority in TOP]
    deep = top[: max(inp.deep_dive_limit, 0)]
    explained = {id(ai) for ai in deep}
    short = [ai for ai in ranked if id(ai) not in explained]
    watch = [watch_view(w, t) for w in inp.watch]
    top_rows = [{**row(ai, t), "story": _story_text(ai, inp, t)} for ai in top]
    short_rows = [{**row(ai, t), "note": short_note(ai, t), "story": _story_text(ai, inp, t)} for ai in short]
    deep_views = [{**deep_view(ai, t), "related": _link_views(inp.related.get(ai.item.ref, []))} for ai in deep]
    with_data = _with_data(inp.items)
    return {
        "date": day(inp.window.until), "since": iso(inp.window.since), "until": iso(inp.window.until),
        "hours": round((inp.window.until - inp.window.since) / timedelta(hours=1)),
        "first_run": inp.first_run, "explicit": inp.explicit, "generated": iso(inp.generated_at),
        # the scope line names the repositories with items in the window, and apart those with none
        "repos": [r for r in inp.repos if r.lower() in with_data],
        "repos_no_data": [r for r in inp.repos if r.lower() not in with_data],
        "releases": _releases(inp.items, t), "scanned": len(inp.items), "ranked": n_ranked,
        "by_priority": " · ".join(f"{p} {counts[p]}" for p in ("P0", "P1", "P2")),
        "limit": inp.deep_dive_limit, "top": top_rows, "deep": deep_views,
        "watch": watch, "short": short_rows, "checks": [r for r in top_rows if r["checklist"]],
        "refs": _references(top_rows + short_rows, deep, watch, inp.related),
    }


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


# --- card ------------------------------------------------------------------------------------------

_REFERENCE_KINDS = ("references", "url", "cherry-pick")


def _link_views(links: Iterable[Link]) -> list[dict[str, str]]:
    seen: dict[str, dict[str, str]] = {}
    for link in links:
        if link.ref:
            seen.setdefault(link.ref, {"ref": link.ref, "url": link_url(link), "detail": link.detail})
    return list(seen.values())


def _file_groups(files: list[FileChange]) -> list[dict[str, Any]]:
    groups: dict[str, list[FileChange]] = {}
    for f in files:
        top = f.path.split("/")[0] + "/" if "/" in f.path else ""
        groups.setdefault(top, []).append(f)

    def total(fs: list[FileChange]) -> int:
        return sum(_lines(f) for f in fs)

    ordered = sorted(groups.items(), key=lambda kv: (-total(kv[1]), kv[0]))
    return [{"dir": d, "n": len(fs), "additions": sum(f.additions or 0 for f in fs),
             "deletions": sum(f.deletions or 0 for f in fs),
             "files": sorted(fs, key=lambda f: (-_lines(f), f.path))} for d, fs in ordered]


def adapted_views(entries: Iterable[Any], t: dict[str, Any], full_up: bool = False) -> list[dict[str, str]]:
    """Ledger entries (upstream PR adapted in downstream PR) as report lines: links, title, files, how."""
    k, sep = t["card"], t["common"]["sep"]
    views = []
    for e in entries:
        files = k["adapted_files"].format(files=sep.join(f"`{f}`" for f in e.files[:6])) if e.files else ""
        how = k["adapted_how"].format(how=e.how) if e.how else ""
        views.append({"ref": e.down_ref, "url": ref_url(e.down_ref), "title": e.down_title,
                      "up_ref": e.up_ref, "up_url": ref_url(e.up_ref), "date": day(e.when),
                      "short": f"#{e.down_number}", "up_short": e.up_ref if full_up else f"#{e.up_number}",
                      "files": files, "how": how})
    return views


def card_context(inp: CardInput, t: dict[str, Any]) -> dict[str, Any]:
    """One item's card: facts, analysis, files by directory and its links."""
    ai, links = inp.item, inp.item.analysis.links
    item = ai.item
    view = row(ai, t)
    view.update({
        "author": item.author or "—", "created": iso(item.created_at), "merged": iso(item.merged_at),
        "closed": iso(item.closed_at), "imported": iso(item.updated_at) if item.time_source == "import" else "",
        "branches": item.branches, "merge_commit": item.merge_commit or "",
        "labels": item.labels, "native": ai.analysis.native, "risks": [name(t, "risks", r) for r in
                                                                         ai.analysis.risk_labels],
        "claims": claim_rows(ai.analysis.perf_claims, t), "file_groups": _file_groups(item.files),
        "files_total": files_total(item.files, t), "named_paths": item.named_paths[:20],
        "references": _link_views(lk for lk in links if lk.kind in _REFERENCE_KINDS),
        "referenced_by": _link_views([*inp.referenced_by, *(lk for lk in links if lk.kind == "follow-up")]),
        "duplicates": _link_views([*inp.duplicates, *(lk for lk in links if lk.kind == "duplicate")]),
        "related": _link_views([*inp.related, *(lk for lk in links if lk.kind == "same-mechanism")]),
        "follow_ups": _link_views(inp.chain), "adapted": adapted_views(inp.adapted, t),
        "known": inp.known, "upstream_repo": item.repo,
    })
    return view
