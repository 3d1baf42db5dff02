"""The daily radar's template context.

Upstream items (the projects the team follows) fill the P0/P1 table, the deep dives and the short table;
items of downstream repositories (role "downstream": the team's own target repository) get a short section of
their own, tied to the upstream PRs they adapt. Every part is capped (rows, notes, links, P2 items), so the
radar's size comes from its design, not from the day: what is left out is counted, never cut.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from ..analyse.porting import Applied, applied, target_name
from ..analyse.stories import one_per_story
from ..models import RELEASE, AnalysedItem, Link
from .base import (
    PRIORITY_ORDER,
    TOP,
    day,
    grade_shown,
    iso,
    link_url,
    name,
    rank,
    ref_url,
    row,
    shown_url,
)
from .checklist import checklist_options, spread_out
from .code_view import with_contradiction
from .conclusion import conclusion_parts, join_sentence
from .deepdive import dive, grade_with_porting
from .escape import Md, fmt, join, link, plain, text
from .explain import clickable, described
from .inputs import DailyInput
from .recheck import recheck_views, since_last_line
from .titles import title_head

CHECK_LINES = 6  # checklist lines at most: the deep dives' and the P0 items', in table order

# --- labels ----------------------------------------------------------------------------------------


def labels(repos: list[str]) -> dict[str, str]:
    """Short names of repositories ("verl" for verl-project/verl) where the name alone is unique."""
    names = Counter(r.split("/")[-1].lower() for r in repos)
    return {r.lower(): (r.split("/")[-1] if names[r.split("/")[-1].lower()] == 1 else r) for r in repos}


def ref_label(ref: str, short: dict[str, str]) -> str:
    """The link text of an item: its full reference ("verl-project/verl#6901"), the form every report, card
    and search uses (`short` names repositories in counts only)."""
    return ref


# --- rows ------------------------------------------------------------------------------------------


def _porting(ai: AnalysedItem, target: str) -> list[Applied]:
    return applied(ai.item, target, text=described(ai.item.body))


def state_text(ai: AnalysedItem, t: dict[str, Any]) -> str:
    """The state as it stood in the window; where a close or merge is known only from a page saved later (no
    source dates it), the state in the window is unknown, and the later state is said beside it."""
    later = t["daily"]["later"].get(ai.later_state, "") if ai.later_state else ""
    if later:
        return t["daily"]["state_unknown"] + t["common"]["paren"].format(later)
    return name(t, "states", "draft" if ai.item.draft else ai.item.state)


def _base(ai: AnalysedItem, t: dict[str, Any], short: dict[str, str]) -> dict[str, Any]:
    view = row(ai, t)
    view["label"] = ref_label(ai.item.ref, short)
    view["head"] = title_head(view["title"])
    view["state"] = state_text(ai, t)
    return view


def short_note(ai: AnalysedItem, t: dict[str, Any], target: str = "ascend",
               parts: tuple[list[Md], list[Md]] | None = None) -> Md:
    """One-line note of the short table: what changes and what it means for the target, in one sentence (a grade
    the team labelled leads it, with the team's mark: the short table has no grade column). `parts`: the
    item's short conclusion parts, when the caller has them already."""
    if parts is None:
        parts = conclusion_parts(ai, t, _porting(ai, target), short=True, target=target, compact=True,
                                  title_shown=True)
    note = join_sentence(withdrawn_parts(ai, t, parts), t)
    if (ai.analysis.label or {}).get("grade"):
        return Md(f"{grade_shown(ai.analysis, t)}{t['common']['colon']}{note}")
    return note


def downstream_note(ai: AnalysedItem, t: dict[str, Any], target: str) -> Md:
    """What landed downstream, in one short sentence: the change in a few words and the short consequence
    (the target's own repository needs no porting view; its identifiers are in its card)."""
    from .conclusion import Titled, consequence, mechanism

    what = mechanism(ai, t, 4, 0, 1)
    if isinstance(what, Titled) and title_head(ai.item.title) == plain(what):  # the line shows the title
        what = Md(text(name(t, "kinds", ai.analysis.item_kind)))
    return join_sentence(([what], [consequence(ai, t, _porting(ai, target), target, short=True)]), t)


def withdrawn_parts(ai: AnalysedItem, t: dict[str, Any], parts: tuple[list[Md], list[Md]]
                    ) -> tuple[list[Md], list[Md]]:
    """An item its author withdrew or superseded in a comment: what it does, then that, never reuse advice."""
    w = ai.withdrawn
    if w is None:
        return parts
    said = t["daily"]["superseded"].format(by=w.by) if w.kind == "superseded" and w.by else t["daily"]["withdrawn"]
    return parts[0], [text(said)]


def _row(ai: AnalysedItem, t: dict[str, Any], target: str, tname: str, short: dict[str, str]) -> dict[str, Any]:
    porting = _porting(ai, target)
    view = _base(ai, t, short)
    parts = withdrawn_parts(ai, t, conclusion_parts(ai, t, porting, target=target, title_shown=True))
    view["summary"] = with_contradiction(join_sentence(parts, t), ai, t)  # the code against the description
    view["summary_rest"] = parts[1]  # the figure and the consequence: the rules' facts, kept beside model prose
    view["grade_reason"] = grade_with_porting(ai, t, porting)
    view["checklist"], view["alternates"] = checklist_options(ai, t["lang"], tname, porting)
    return view


def _releases(items: list[AnalysedItem], t: dict[str, Any]) -> list[Md]:
    rels = sorted((ai.item for ai in items if ai.item.kind == RELEASE),
                  key=lambda i: (i.when or i.created_at or datetime.min.replace(tzinfo=UTC), i.repo))
    d = t["daily"]

    def entry(r) -> str:
        # a release record (GitHub) or an annotated tag (a tagger, a date of its own) dates the release; a
        # lightweight tag (no tagger) dates only the commit it points at
        return d["release_entry"] if r.source == "github" or r.author else d["release_tag_commit"]
    return [fmt(entry(r), repo=r.repo, tag=r.key, date=day(r.when or r.created_at)) for r in rels]


def _references(deep: list[AnalysedItem], shown: set[str], related: dict[str, list[Link]],
                short: dict[str, str], most: int = 4, kinds: dict[str, str] | None = None) -> list[dict[str, str]]:
    """What the deep dives point at that the report does not already link: the references a reader follows
    to understand the mechanism (an upstream issue, a library PR), at most `most`. An item is linked to the
    page the radar builds from its repository and number (`shown_url`: a pull request's page where `kinds`, what
    the store holds, says it is one); an address quoted in a description is shown as text, never as a link."""
    kinds = kinds or {}
    refs: dict[str, dict[str, str]] = {}
    for ai in deep:
        for lk in [*ai.analysis.links, *related.get(ai.item.ref, [])]:
            url = link_url(lk)
            if lk.ref and lk.ref not in shown and url and clickable(url) and len(refs) < most:
                label = ref_label(lk.ref, short) if lk.repo else lk.ref
                refs.setdefault(lk.ref, {"ref": lk.ref, "label": label, "url": shown_url(lk, kinds.get(lk.ref.lower())),
                                         # a cherry-pick link's detail is how it was found ("cherry-pick
                                         # of", "subject"), not the other item's title
                                         "title": title_head(lk.detail) if lk.detail != url
                                         and lk.kind != "cherry-pick" else ""})
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


def _story_text(ai: AnalysedItem, inp: DailyInput, t: dict[str, Any], short: dict[str, str]) -> Md:
    """"one change: #6886 original (main), #6881 backport (release/v0.8.0)" for a story member, else ""."""
    story = inp.stories.get(ai.item.ref)
    if story is None:
        return Md("")
    d = t["daily"]
    members = []
    listed, more = story.listed()
    for ref in listed:
        branches = story.branches.get(ref) or []
        label = "#" + ref.rsplit("#", 1)[1] if ref.split("#")[0] == ai.item.repo else ref_label(ref, short)
        members.append(fmt(d["story_member"], ref=label, role=d["story_roles"].get(story.roles[ref], ""),
                           branches=fmt(d["story_branches"], branches=join(branches, ", ")) if branches else ""))
    if more:
        members.append(fmt(d["story_more"], n=more))
    return fmt(d["story"], members=join(members, t["common"]["sep"]))


def short_p2(leftover: list[AnalysedItem], most: int) -> list[AnalysedItem]:
    """The P2 rows of the short table: open items first (still moving, worth a line), then merged or closed
    ones, each group in rank order; at most `most`."""
    p2 = [ai for ai in leftover if ai.analysis.priority == "P2"]
    return sorted(p2, key=lambda ai: ai.item.state != "open")[:most]


def _more_line(rest: list[AnalysedItem], t: dict[str, Any], short: dict[str, str]) -> Md:
    """"另有 P1 2 项、P2 7 项未列出（verl 5、vllm 4）": what the short table leaves out, counted."""
    if not rest:
        return Md("")
    d, c = t["daily"], t["common"]
    by_p = Counter(ai.analysis.priority for ai in rest)
    counts = c["sep"].join(d["short_more_count"].format(p=p, n=by_p[p]) for p in ("P0", "P1", "P2") if by_p[p])
    by_repo = Counter(short.get(ai.item.repo.lower(), ai.item.repo) for ai in rest)
    repos = join([fmt("{r} {n}", r=r, n=n) for r, n in sorted(by_repo.items(), key=lambda kv: (-kv[1], kv[0]))],
                 c["sep"])
    return fmt(d["short_more"], counts=Md(counts), repos=repos)


# --- downstream ------------------------------------------------------------------------------------


STATE_ORDER = ("merged", "open", "closed", "published")


def downstream_count(repo: str, mine: list[AnalysedItem], t: dict[str, Any]) -> Md:
    """"vllm-ascend：窗口内 60 项（已合并 59 · 已关闭 1）；入选 43 项（P0 4 · P1 8 · P2 31），未入选 17 项":
    every item of the repository in the window once, by state and by priority, so each total is the sum of its
    parts (the scope line's "下游 N 项另列" is the sum of these totals)."""
    d = t["daily"]
    by_state = Counter(ai.item.state for ai in mine)
    order = [s for s in STATE_ORDER if by_state[s]] + sorted(s for s in by_state if s not in STATE_ORDER)
    states = " · ".join(d["downstream_state"].format(state=name(t, "states", s), n=by_state[s]) for s in order)
    ranked = [ai for ai in mine if ai.analysis.priority in ("P0", "P1", "P2")]
    by_p = Counter(ai.analysis.priority for ai in ranked)
    if ranked:
        part = d["downstream_ranked"].format(
            n=len(ranked), by_priority=" · ".join(f"{p} {by_p[p]}" for p in ("P0", "P1", "P2") if by_p[p]))
        part += d["downstream_unranked"].format(n=len(mine) - len(ranked)) if len(mine) > len(ranked) else ""
    else:
        part = d["downstream_none"]
    return fmt(d["downstream_counts"], repo=repo, total=len(mine), states=Md(states), ranked=Md(part))


def _downstream(inp: DailyInput, items: list[AnalysedItem], t: dict[str, Any], short: dict[str, str],
                weights: dict[str, float] | None) -> dict[str, Any]:
    """What landed in the downstream repositories: counts, the first items with a short note and the
    upstream PRs each adapts (the ledger), and how many more."""
    d, c = t["daily"], t["common"]
    adapts: dict[str, list[str]] = {}
    for e in inp.adapted:
        adapts.setdefault(e.down_ref.lower(), [])
        if e.up_ref not in adapts[e.down_ref.lower()]:
            adapts[e.down_ref.lower()].append(e.up_ref)
    counts = []
    for repo in inp.downstream:
        mine = [ai for ai in items if ai.item.repo.lower() == repo.lower()]
        if mine:
            counts.append(downstream_count(short.get(repo.lower(), repo), mine, t))
    ranked = rank((ai for ai in items if ai.analysis.priority in ("P0", "P1", "P2") and ai.item.kind != RELEASE),
                  weights)
    # the highest-ranked first, then the adaptation PRs the ledger knows
    chosen = ranked[: max(inp.downstream_limit, 0)]
    chosen += [ai for ai in ranked if ai.item.ref.lower() in adapts and ai not in chosen][:1]
    lines = []
    for ai in chosen:
        ups = adapts.get(ai.item.ref.lower(), [])
        note = downstream_note(ai, t, inp.target)
        if ups:
            shown = join([link(ref_label(u, short), ref_url(u, inp.kinds.get(u.lower()))) for u in ups[:3]], c["sep"])
            more = c["more"].format(n=len(ups)) if len(ups) > 3 else ""
            note = Md(f"{note.rstrip('。.')}{c['semi']}{d['adapts'].format(refs=shown + more)}"
                      f"{'。' if t['lang'] == 'zh' else '.'}")
        lines.append({"ref": ai.item.ref, "label": ref_label(ai.item.ref, short), "url": ai.item.url,
                      "head": title_head(ai.item.title), "title": ai.item.title, "priority": ai.analysis.priority,
                      "note": note})
    left = len(items) - len(lines)  # the rest of the section's totals (releases too): lines + rest = total
    return {"counts": counts, "lines": lines, "more": d["downstream_more"].format(n=left) if left > 0 else ""}


# --- deep dives -------------------------------------------------------------------------------------


def choose_dives(candidates: list[AnalysedItem], limit: int, target: str = "ascend") -> list[AnalysedItem]:
    """The few items the radar deep-dives, in table order: the best by how directly they touch the target and
    the evidence their sources hold (render/why.dive_score); an item with no mechanism to explain gets its row
    only. An item touching the target directly whose page says why (a causal or motivation sentence) is chosen
    before any other (dives.toml [select] direct_first): an item that only scores on figures never takes its slot."""
    from .why import causes, dive_rules, dive_score, rooted, target_direct

    rules = dive_rules()["select"]
    floor = float(rules.get("min_score", 0.0))
    first = bool(rules.get("direct_first", True))
    scored = [(dive_score(ai, bool(causes(ai.item.body)), target), i, ai) for i, ai in enumerate(candidates)]
    kept = [x for x in scored if x[0] > 0 and x[0] >= floor]
    direct = {x[1]: target_direct(x[2], target) for x in kept}
    tier = {x[1]: 0 if first and direct[x[1]] and rooted(x[2]) else 1 for x in kept}
    # equal scores: the one touching the target first
    best = sorted(kept, key=lambda x: (tier[x[1]], -x[0], not direct[x[1]], x[1]))
    chosen = {x[1] for x in best[: max(limit, 0)]}
    return [ai for i, ai in enumerate(candidates) if i in chosen]


_PARTS = ("why", "mechanism", "where", "changes", "moves", "evidence", "boundary", "measure", "decide")


def distinct_dives(views: list[dict[str, Any]], t: dict[str, Any]) -> None:
    """No sentence of one report's dives is said twice: a part an earlier dive said word for word (a porting
    caveat, "no figures", a decision's reason) is left out of the later ones; the first line's fixed labels
    stay."""
    said: set[str] = set()
    for v in views:
        for part in _PARTS:
            value = str(v.get(part) or "")
            if not value:
                continue
            if value in said and part != "mechanism":
                v[part] = Md("")
            said.add(value)


# --- the context -----------------------------------------------------------------------------------


def daily_context(inp: DailyInput, t: dict[str, Any], weights: dict[str, float] | None = None) -> dict:
    """The daily radar's facts, in section order."""
    down = {r.lower() for r in inp.downstream}
    upstream = [ai for ai in inp.items if ai.item.repo.lower() not in down]
    downstream = [ai for ai in inp.items if ai.item.repo.lower() in down]
    short = labels(sorted({*inp.repos, *(ai.item.repo for ai in inp.items)}))
    # what the previous radar tabled and has not changed since is in the recheck, not tabled again
    ranked = rank((ai for ai in upstream if ai.analysis.priority in PRIORITY_ORDER
                   and ai.analysis.priority != "none" and ai.item.ref.lower() not in inp.unchanged), weights)
    counts = Counter(ai.analysis.priority for ai in ranked)
    n_ranked = len(ranked)
    ranked = _together(ranked, inp)  # a story's ranked members side by side; each row names all of them
    every_top = [ai for ai in ranked if ai.analysis.priority in TOP]
    # the P0/P1 table holds the highest-ranked items (the deep dives first); the short table the rest, so no
    # item is listed twice
    # a story's other members (a backport, a same-title PR) are named in its lead's row, not given rows of
    # their own in the P0/P1 table: they go to the short table
    # what was opened before the window and moved at no known time in it is never a lead
    leads, _ = one_per_story([ai for ai in every_top if ai.item.ref.lower() not in inp.open_before], inp.stories)
    top = leads[:inp.top_table_limit] if inp.top_table_limit > 0 else leads
    # what an earlier radar deep-dived or carries is rechecked, not deep-dived again
    # nor is what its author withdrew or superseded
    deep = choose_dives([ai for ai in top if ai.item.ref.lower() not in inp.no_deep and ai.withdrawn is None],
                        inp.deep_dive_limit, inp.target)
    tabled = {id(ai) for ai in top}
    watch = recheck_views(inp.watch, t)
    target, tname = inp.target, target_name(inp.target, t["lang"])
    # an item's row and short parts are worked out once, whichever sections show it (a deep dive's row is
    # also its checklist line; a P0/P1 item of the short table also has its line for the model stage)
    rows: dict[int, dict[str, Any]] = {}
    shorts: dict[int, tuple[list[Md], list[Md]]] = {}

    def row(ai: AnalysedItem) -> dict[str, Any]:
        if id(ai) not in rows:
            rows[id(ai)] = _row(ai, t, target, tname, short)
        return dict(rows[id(ai)])  # a copy: sections take their own keys off it

    def short_parts(ai: AnalysedItem) -> tuple[list[Md], list[Md]]:
        if id(ai) not in shorts:
            shorts[id(ai)] = conclusion_parts(ai, t, _porting(ai, target), short=True, target=target, compact=True,
                                  title_shown=True)
        return shorts[id(ai)]

    top_rows = [{**row(ai), "story": _story_text(ai, inp, t, short)} for ai in top]
    # the short table: the P0/P1 items the table left out, then the first P2 items, at most short_table_limit
    # every P0/P1 item of the window is listed (one compact line each); P2 rows follow while the table is under
    # short_table_limit rows, open work first (it may still change; a merged P2 is done), at most short_p2_limit
    leftover = [ai for ai in ranked if id(ai) not in tabled]
    listed = [ai for ai in leftover if ai.analysis.priority in TOP]
    # what moved in the window first; what was open before it at no dated time (a first radar) after
    listed.sort(key=lambda ai: ai.item.ref.lower() in inp.open_before)
    listed += short_p2(leftover, max(min(inp.short_p2_limit, inp.short_table_limit - len(listed)), 0))
    listed_ids = {id(ai) for ai in listed}
    rest = [ai for ai in leftover if id(ai) not in listed_ids]
    short_rows = [{**_base(ai, t, short), "note": short_note(ai, t, target, short_parts(ai)),
                   "story": _story_text(ai, inp, t, short)} for ai in listed]
    for ai, view in zip(listed, short_rows, strict=True):
        # open before the window and closed at a time no source gives: how it stood in the window is not known
        if ai.item.ref.lower() in inp.open_before and ai.later_state:
            view["state"] = state_text(ai, t)
    more_top = [ai for ai in every_top if id(ai) not in tabled and id(ai) in listed_ids]
    # the checklist: one line per deep-dived or P0 item, on the item's own switches, models and metrics
    checked = deep + [ai for ai in top + listed if ai.analysis.priority == "P0" and ai not in deep]
    check_rows = [row(ai) for ai in checked]
    spread = spread_out([r["checklist"] for r in check_rows], [r.pop("alternates") for r in check_rows], most=2)
    checks = []
    for r, steps in zip(check_rows, spread, strict=True):
        if steps and len(checks) < CHECK_LINES:
            checks.append({**r, "checklist": steps[:2]})
    for r in top_rows:
        r.pop("alternates", None)
    # each dive beside its own row (the dives are chosen among the table's rows, not its first ones)
    deep_views = [{**dive(ai, t, _porting(ai, target), target, shown=row(ai)["summary"]),
                   "label": ref_label(ai.item.ref, short),
                   "head": title_head(ai.item.title, 100), "state": state_text(ai, t)}
                  for ai in deep]
    distinct_dives(deep_views, t)
    shown = {ai.item.ref for ai in top + listed} | {w.ref for w in inp.watch}
    with_data = {ai.item.repo.lower() for ai in inp.items}
    scope_repos = [r for r in inp.repos if r.lower() not in down]
    return {
        # the date of the window's last instant: [D 00:00Z, D+1) is D, and a morning run ending 02:12Z is that day
        "date": day(inp.window.until - timedelta(microseconds=1)), "calendar_day": inp.calendar_day,
        "since": iso(inp.window.since), "until": iso(inp.window.until),
        "hours": round((inp.window.until - inp.window.since) / timedelta(hours=1)),
        "first_run": inp.first_run, "explicit": inp.explicit, "generated": iso(inp.generated_at),
        # the scope line names the repositories with items in the window, and apart those with none
        "repos": [r for r in scope_repos if r.lower() in with_data],
        "repos_no_data": [r for r in scope_repos if r.lower() not in with_data],
        "repos_down": [r for r in inp.repos if r.lower() in down],
        "releases": _releases(inp.items, t), "scanned": len(upstream), "ranked": n_ranked,
        # named short ("vllm-omni#4344"): each is linked in its short-table row
        "open_before": [text(f"{short.get(ai.item.repo.lower(), ai.item.repo)}#{ai.item.number}") for ai in listed
                        if ai.item.ref.lower() in inp.open_before],
        "scanned_down": len(downstream), "since_last": since_last_line(inp, t, watch),
        "by_priority": " · ".join(f"{p} {counts[p]}" for p in ("P0", "P1", "P2")),
        "limit": inp.deep_dive_limit, "top": top_rows, "deep": deep_views,
        # the P0/P1 items the table left out (the model stage writes their line too; the short table shows it
        # in their note)
        "more_top": [{**row(ai), "short_rest": short_parts(ai)[1]}
                     for ai in more_top],
        "watch": watch, "short": short_rows,
        "short_more": _more_line(rest, t, short), "checks": checks,
        "downstream": _downstream(inp, downstream, t, short, weights) if inp.downstream else None,
        "refs": _references(deep, shown, inp.related, short, kinds=inp.kinds),
    }

