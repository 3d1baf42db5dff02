"""The weekly report's template context: the period (and where its data ends), the executive summary's
movements, themes named after what their PRs share, trends against the week before, argued risks, key PRs
one line each, recommendations from the week's facts, and the upstream changes adapted in the week.

The report is built to a length: at most `factor` times the team's own weekly for a week of the same size
(defaults/rules/weekly.toml [budget]). It starts from the most it would show and shows less (fewer themes,
key PRs, adaptation lines) until it fits; nothing is ever cut inside a sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any

from ..analyse.porting import applied, target_name
from ..models import COMMIT, MERGED, PR, AnalysedItem
from .base import CHANGE_KINDS, TOP, day, delta, grade_shown, mean, name, rank, row
from .cjk import cjk_share
from .clusters import Theme, themes, weekly_rules
from .conclusion import headline_claim
from .escape import Md, code, fmt, link, plain, text
from .evidence_risks import stated_risks
from .explain import described, identifiers
from .inputs import WeeklyInput
from .weekly_risks import Found, chains, find, recommendations, risk_lines
from .weekly_story import (
    areas_line,
    mix_line,
    movements,
    people_line,
    quality_line,
    summary_head,
    takeaway,
    target_facts,
    theme_text,
)
from .weekly_words import Refs, figure, gist, theme_name, title_phrase


def _changes(items: list[AnalysedItem]) -> list[AnalysedItem]:
    """What the week changed: its merged PRs and direct commits. A PR still open, or closed without being
    merged, changed nothing: it is neither counted, nor a theme's lead, nor a key PR."""
    return [ai for ai in items if ai.item.kind in CHANGE_KINDS and (ai.item.kind != PR or ai.item.state == MERGED)]


def _merged(items: list[AnalysedItem]) -> int:
    return sum(1 for ai in items if ai.item.kind == PR and ai.item.state == MERGED)


def _default_is_bot(login: str) -> bool:
    return login.lower().endswith("[bot]")


# --- the period ------------------------------------------------------------------------------------


def _period(inp: WeeklyInput, t: dict[str, Any]) -> dict[str, Any]:
    """Title and headline facts; a week whose data ends before its last day says where it ends."""
    w = t["weekly"]
    start = inp.window.since.astimezone(UTC)
    end = (inp.window.until - timedelta(microseconds=1)).astimezone(UTC)
    data_end = inp.data_end.astimezone(UTC) if inp.data_end else None
    partial = data_end is not None and day(data_end) < day(end)
    note = ""
    if partial and data_end is not None and data_end < start:
        note = w["partial_none"].format(date=day(data_end))
    elif partial and data_end is not None:
        note = w["partial"].format(date=day(data_end), days=(data_end.date() - start.date()).days + 1)
    match = re.fullmatch(r"(\d{4})-W(\d{1,2})", inp.week_label or "")
    mark = w["title_partial"].format(date=data_end.strftime("%m/%d")) if partial and data_end else ""
    if match:
        title = fmt(w["title_week"], repo=inp.repo, year=match[1], week=int(match[2]), start=start.strftime("%m/%d"),
                    end=end.strftime("%m/%d"), partial=mark)
    else:
        title = fmt(w["title_range"], repo=inp.repo, start=day(start), end=day(end), partial=mark)
    return {"title": title, "start": day(start), "end": day(end), "partial": partial, "partial_note": note,
            "data_end": day(data_end) if data_end else ""}


# --- key PRs and the adaptation section ------------------------------------------------------------


def _porting_note(ai: AnalysedItem, target: str, t: dict[str, Any]) -> str:
    """The porting map's entry for this PR, only when its own changed files match it (a scheduler PR that
    mentions FP8 in passing gets none) and the PR is not already written for the target."""
    if ai.analysis.native:
        return ""
    for p in applied(ai.item, target, text=described(ai.item.body)):
        paths = p.entry.paths
        if p.entry.id != "npu-native" and paths is not None and any(paths.match(f.path) for f in ai.item.files):
            return t["weekly"]["quick_porting"].format(name=p.entry.name.get(t["lang"]) or p.entry.name["en"])
    return ""


def _one_per_change(keyed: list[AnalysedItem], rules_dir) -> tuple[list[AnalysedItem], dict[str, list[AnalysedItem]]]:
    """The key PRs, one per change: a backport or a same-title PR of a key PR listed before it is named in
    that PR's line (analyse.stories), not given a line of its own. Returns (the kept PRs, ref -> the others)."""
    from ..analyse.links import relation_rules_in
    from ..analyse.stories import one_per_story, stories

    return one_per_story(keyed, stories(keyed, relation_rules_in(rules_dir)))


def _quick(ai: AnalysedItem, t: dict[str, Any], target: str, limit: int,
           also: list[AnalysedItem] | None = None) -> dict[str, Any]:
    """A key PR in one line: what it does, its headline figure, grade and decision, a risk or porting note
    that applies to it, the other PRs of the same change (`also`: a backport); built shorter (not cut) when it
    runs past `limit` characters."""
    w, c = t["weekly"], t["common"]
    view = row(ai, t)
    claim = headline_claim(ai.analysis.perf_claims)
    grade = w["quick_grade"].format(grade=grade_shown(ai.analysis, t), decision=name(t, "decisions", ai.analysis.decision))
    # a priority the team labelled says so (the key PRs are chosen by it)
    team = [f"{ai.analysis.priority}{c['team_mark']}"] if (ai.analysis.label or {}).get("priority") else []
    risks = [name(t, "risks", r) for r in stated_risks(ai) if r in ("silent-accuracy", "breaking",
                                                                           "new-default")]
    extras = [x for x in (w["quick_risk"].format(risk=risks[0]) if risks else "", _porting_note(ai, target, t)) if x]
    if also:  # the same change elsewhere first: it is why the others have no line of their own
        extras.insert(0, w["quick_also"].format(refs=c["sep"].join(f"#{x.item.number}" for x in also)))
    link_len = len(f"[#{ai.item.number}]({ai.item.url}) ")
    for size, with_context, keep in ((70, True, 2), (70, False, 1), (70, False, 0), (50, False, 0), (35, False, 0)):
        what = gist(ai, t, size, title_ok=True)
        rest = [str(figure(claim, t, with_context))] if claim else []
        rest += [*team, grade, *extras[:keep]]
        line = f"{plain(what)}{c['colon']}{c['semi'].join(plain(Md(x)) for x in rest)}"  # as a reader sees it
        if link_len + len(line) <= limit:
            break
    view.update({"summary": what, "rest": Md(c["semi"].join(rest)), "claims": figure(claim, t) if claim else Md("")})
    return view


def _adapted(entries: list, t: dict[str, Any], limit: int) -> list[Md]:
    """One line per downstream PR: the upstream changes it adapts to (the first few linked), the files, and
    one of its own notes on how; shorter when the line would run past `limit`."""
    w, c = t["weekly"], t["common"]
    by_down: dict[str, list] = {}
    for e in entries:
        by_down.setdefault(e.down_ref, []).append(e)
    lines = []
    for down, group in by_down.items():
        first = group[0]
        ups = list(dict.fromkeys(e.up_ref for e in group))
        files = list(dict.fromkeys(f for e in group for f in e.files))
        hows = [h for h in dict.fromkeys(" ".join(e.how.split()) for e in group) if h and not h.endswith("…")]
        title = title_phrase(first.down_title, 70)
        head = link(f"#{first.down_number}", _pr_url(down))
        for n_up, n_files, n_how in ((3, 2, 1), (2, 1, 1), (2, 1, 0), (1, 0, 0)):
            shown = c["sep"].join(link(u, _pr_url(u)) for u in ups[:n_up])
            more = w["and_more"].format(n=len(ups) - n_up) if len(ups) > n_up else ""
            parts = [w["adapted_ups"].format(n=len(ups), ups=shown + more)]
            if files[:n_files]:
                parts.append(w["adapted_files"].format(files=c["sep"].join(code(f) for f in files[:n_files])))
            how = next((h for h in hows if len(h) <= 140), "") if n_how else ""
            if how and t["lang"] == "zh" and cjk_share(how) < 0.5:
                # the author's English note is not quoted in a Chinese report: the names it gives, if any
                names = identifiers(how, 2)
                if names:
                    parts.append(w["adapted_names"].format(names=c["sep"].join(code(n) for n in names)))
            elif how:
                parts.append(w["adapted_how"].format(how=text(how)))
            line = Md(w["adapted_line"].format(down=head, title=text(title) if title else "",
                                               parts=c["semi"].join(parts)))
            if len(plain(line)) <= limit:  # its length as a reader sees it (escapes apart)
                break
        lines.append(line)
    return lines


def _pr_url(ref: str) -> str:
    from ..models import github_url

    repo, _, number = ref.partition("#")
    return github_url(repo, int(number), PR)


# --- size ------------------------------------------------------------------------------------------


@dataclass
class _Shape:
    """How much the report shows; shrunk step by step until it fits its budget."""

    themes: int
    quick: int
    adapted: int
    risk_items: int
    trends: int
    recommendations: int = 5
    more: bool = True  # the line listing further key PRs


def budget(merged: int, rules: dict[str, Any]) -> tuple[int, int]:
    """(lines, bytes) the report may take for a week of `merged` PRs."""
    b = rules.get("budget", {})
    scale = float(b.get("factor", 2.0)) * merged / max(int(b.get("team_prs", 200)), 1)
    return (max(int(b.get("floor_lines", 34)), int(scale * int(b.get("team_lines", 95)))),
            max(int(b.get("floor_bytes", 3600)), int(scale * int(b.get("team_bytes", 9000)))))


def size(ctx: dict[str, Any], t: dict[str, Any]) -> tuple[int, int]:
    """(lines, bytes) of the report the packaged template makes of `ctx`, counted without rendering: its
    layout is a heading, a blank line, the section's lines and a blank line, in the template's order."""
    w, c = t["weekly"], t["common"]
    commits = w["direct_commits"].format(n=ctx["commits"]) if ctx["commits"] else ""
    head = ctx["headline_text"].format(start=ctx["start"], end=ctx["end"], merged=ctx["merged"], commits=commits,
                                       key=ctx["key"], importance=ctx["importance"], insight=ctx["insight"])
    lines: list[str] = [f"# {ctx['title']}", "", f"{head}{ctx['partial_note']}", "", f"## {w['summary']}", "",
                        str(ctx["summary"])]
    if ctx["movements"]:
        lines += ["", *(f"- {x}" for x in ctx["movements"])]
    lines += ["", f"## {w['changes']}", ""]
    for i, th in enumerate(ctx["themes"], 1):
        lines += [f"### {i}. {th['name']}{c['paren'].format(th['count'])}", "", *str(th["text"]).split("\n"), ""]
    if not ctx["themes"]:
        lines += [w["no_changes"], ""]
    for key, title, empty in (("trends", "trends", "no_trends"), ("risk_lines", "risks", "no_risks")):
        lines += [f"## {w[title]}", "", *(f"- {x}" for x in ctx[key] or [w[empty]]), ""]
    lines += [f"## {w['key_prs']}", ""]
    lines += [w["quick_others"].format(n=len(ctx["quick"]) + ctx["quick_more_n"]), ""] if ctx["quick_others"] else []
    lines += [f"{i}. [{q['short']}]({q['url']}) {q['summary']}{c['colon']}{q['rest']}"
              for i, q in enumerate(ctx["quick"], 1)] or [w["no_key_prs"]]
    if ctx["quick_more"] and not ctx["quick_others"]:
        more = c["sep"].join(f"[{r['short']}]({r['url']})" for r in ctx["quick_more"])
        said = w["quick_more"] if ctx["quick_more_n"] == len(ctx["quick_more"]) else w["quick_more_first"]
        lines += [f"{len(ctx['quick']) + 1}. " + said.format(n=ctx["quick_more_n"], k=len(ctx["quick_more"]),
                                                             links=more)]
    elif ctx["quick_more_n"] and not ctx["quick_others"]:
        lines += [f"{len(ctx['quick']) + 1}. " + w["quick_more_none"].format(n=ctx["quick_more_n"])]
    lines += ["", f"## {w['recommendations']}", "", *(f"- {x}" for x in ctx["recommendations"] or
                                                       [w["no_recommendations"]])]
    if ctx["adapted"]:
        lines += ["", f"## {w['adapted']}", "", *(f"- {x}" for x in ctx["adapted"])]
        lines += ["- " + w["adapted_more"].format(n=ctx["adapted_more"])] if ctx["adapted_more"] else []
    # bytes as a reader sees them: the escapes of author text do not make the report show less
    return len(lines), sum(len(plain(Md(x)).encode("utf-8")) + 1 for x in lines)


# --- the context -----------------------------------------------------------------------------------


def weekly_context(inp: WeeklyInput, t: dict[str, Any], weights: dict[str, float] | None = None) -> dict:
    """The weekly report's facts and prose (see the module docstring)."""
    rules = weekly_rules(inp.rules_dir)
    w = t["weekly"]
    changes, before = _changes(inp.items), _changes(inp.previous)
    ranked, ranked_before = rank(changes, weights), rank(before, weights)
    relevant = [ai for ai in ranked if ai.analysis.priority != "none"]
    merged, merged_before = _merged(changes), _merged(before)
    is_week = inp.week_label is not None
    ctx: dict[str, Any] = {
        **_period(inp, t), "repo": inp.repo, "merged": merged, "commits": sum(1 for ai in changes if ai.item.kind == COMMIT),
        "key_all": sum(1 for ai in changes if ai.analysis.priority in TOP),
        "importance": mean([ai.analysis.importance for ai in changes]),
        "insight": mean([ai.analysis.insight for ai in changes]),
        "this": w["this"] if is_week else w["this_range"],
        "previous_word": w["previous"] if is_week else w["previous_range"],
        "has_previous": bool(inp.previous), "merged_before": merged_before,
        "key_before": sum(1 for ai in before if ai.analysis.priority in TOP),
        "merged_delta": delta(merged, merged_before),
        **target_facts([ai for ai in changes if ai.item.kind == PR], [ai for ai in before if ai.item.kind == PR],
                       inp.target),
        "target_name": target_name(inp.target, t["lang"]) if inp.target else "",
    }
    topics = {}
    for ai in relevant:
        for x in set(ai.analysis.topics):
            topics[x] = topics.get(x, 0) + 1
    ctx["top_topics"] = [w["topic_count"].format(topic=name(t, "topics", k), n=n)
                         for k, n in sorted(topics.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]
    native = sum(ai.analysis.native for ai in relevant) >= 0.6 * len(relevant) if relevant else False
    found = find(ranked, inp.rules_dir)
    found_before = find(ranked_before, inp.rules_dir)
    relevant_before = [ai for ai in ranked_before if ai.analysis.priority != "none"] if inp.previous else None
    found_themes = _themes_with_target(relevant, merged, relevant_before, inp, t)
    found_themes.sort(key=lambda th: (-sum(ai.analysis.priority in TOP for ai in th.members),
                                      -sum(ai.analysis.importance for ai in th.members), -len(th.members)))
    is_bot = inp.is_bot or _default_is_bot
    limit = int(rules.get("budget", {}).get("line_chars", 400))
    key_limit = int(rules.get("budget", {}).get("key_pr_chars", 200))
    keyed = [ai for ai in ranked if ai.analysis.priority in TOP] or relevant
    keyed, picks = _one_per_change(keyed, inp.rules_dir)
    ctx["folded"] = {ref: len(v) for ref, v in picks.items()}
    ctx["backports"] = {x.item.ref for v in picks.values() for x in v}
    lines_max, bytes_max = budget(merged, rules)
    # every key PR has its line: the headline counts the PRs the list shows (fewer key PRs, none unlisted)
    ctx["key_before"] = min(ctx["key_before"], inp.key_prs)
    shape = _Shape(len(found_themes), min(inp.key_prs, len(keyed)), len(inp.adapted), 3, 4, more=False)
    quick = [_quick(ai, t, inp.target, key_limit, picks.get(ai.item.ref, []))
             for ai in keyed[: shape.quick]]  # the same in every round
    adapted = _adapted(inp.adapted, t, limit)
    while True:
        _build(ctx, inp, t, shape, found_themes, found, found_before, relevant, ranked, changes, before,
               keyed, native, is_bot, limit, (quick, adapted))
        if _fits(ctx, t, lines_max, bytes_max) or not _shrink(shape):
            break
    once_each(ctx, t)
    return ctx


# a sentence ends at a Chinese stop, or at an English one before a space that is no abbreviation's ("e.g. #12")
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)(?<!\bvs\.)(?=\s)")


def once_each(ctx: dict[str, Any], t: dict[str, Any]) -> None:
    """No sentence twice in one report: a sentence said already (its text as a reader sees it, links apart) is
    left out where it comes again, in the template's order; a line left empty goes. One pass over the text."""
    seen: set[str] = set()

    def keep(md: Any) -> Md:
        out = []
        for part in _SENTENCE_END.split(str(md)):
            key = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", plain(Md(part))).strip(" -\n")
            if len(key) >= 8 and key in seen:
                continue
            seen.add(key)
            out.append(part)
        return Md("".join(out).strip())

    ctx["summary"] = keep(ctx["summary"])
    ctx["movements"] = [x for x in (keep(m) for m in ctx["movements"]) if x]
    for th in ctx["themes"]:
        th["text"] = Md("\n".join(x for x in (keep(line) for line in str(th["text"]).split("\n")) if x))
    for key in ("trends", "risk_lines"):
        ctx[key] = [x for x in (keep(m) for m in ctx[key]) if x]
    ctx["recommendations"] = [x for x in (keep(m) for m in ctx["recommendations"]) if x]


def _themes_with_target(relevant: list[AnalysedItem], merged: int, before: list[AnalysedItem] | None,
                        inp: WeeklyInput, t: dict[str, Any]) -> list[Theme]:
    """The week's themes. In a repository that is not the target's own, the PRs written for the target are one
    theme first (the team reads "what was done for Ascend" as one story, as its weekly tells a platform's work),
    whatever keyword or directory they share with others (a vLLM-on-NPU adaptation tagged `[fully_async]` is
    Ascend work, not asynchronous training); the other PRs are themed by what they share, and those no shared
    term holds by the mechanism they are first about (`by_mechanism`)."""
    rules = weekly_rules(inp.rules_dir).get("themes", {})
    per = max(int(rules.get("prs_per_theme", 10)), 1)
    most = max(int(rules.get("least", 2)), min(int(rules.get("most", 6)), len(relevant) // per))
    own = [ai for ai in relevant if ai.analysis.native]
    found: list[Theme] = []
    rest, rest_before = relevant, before
    if inp.target and len(own) >= int(rules.get("target_least", 3)) and len(own) < len(relevant):
        label = t["weekly"]["theme_target_label"].format(target=target_name(inp.target, t["lang"]))
        found.append(Theme(f"t:{inp.target}", label, own,
                           before=sum(1 for ai in before if ai.analysis.native) if before is not None else None))
        rest = [ai for ai in relevant if not ai.analysis.native]
        rest_before = [ai for ai in before if not ai.analysis.native] if before is not None else None
    if most > len(found):
        found += themes(rest, merged, rest_before, inp.rules_dir, most=most - len(found))
    if most > len(found):
        found += by_mechanism(rest, found, rest_before, t, inp.rules_dir, most - len(found))
    return found


def by_mechanism(items: list[AnalysedItem], found: list[Theme], before: list[AnalysedItem] | None,
                 t: dict[str, Any], rules_dir, most: int) -> list[Theme]:
    """Themes of the PRs no shared term holds: those first about one mechanism (clusters.primary_topic), at
    least `min_size` of them, largest first, named by it ("混合专家")."""
    from .clusters import generic_topics, primary_topic

    rules = weekly_rules(rules_dir).get("themes", {})
    taken = {id(ai) for th in found for ai in th.members}
    spread: dict[str, int] = {}
    for ai in items:
        for x in set(ai.analysis.topics):
            spread[x] = spread.get(x, 0) + 1
    generic = generic_topics(rules) | {k for k, n in spread.items() if n > 0.4 * len(items)}
    groups: dict[str, list[AnalysedItem]] = {}
    for ai in items:
        if id(ai) not in taken and (topic := primary_topic(ai, generic)):
            groups.setdefault(topic, []).append(ai)
    out = []
    least = int(rules.get("min_size", 2))
    for topic, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(members) < least or len(out) >= most:
            continue
        was = sum(1 for ai in before if primary_topic(ai, generic) == topic) if before is not None else None
        out.append(Theme(f"c:{topic}", name(t, "topics", topic), members, before=was))
    return out


def _fits(ctx: dict[str, Any], t: dict[str, Any], lines_max: int, bytes_max: int) -> bool:
    lines, size_bytes = size(ctx, t)
    return lines <= lines_max and size_bytes <= bytes_max


def _shrink(shape: _Shape) -> bool:
    """Show one thing less, the least telling first; False when nothing is left to drop."""
    # the key-PR list is the last to shrink: its lines are the week's key PRs (the headline counts them)
    if shape.themes > 4:
        shape.themes -= 1
    elif shape.adapted > 4:
        shape.adapted -= 1
    elif shape.themes > 3:
        shape.themes -= 1
    elif shape.risk_items > 2:
        shape.risk_items -= 1
    elif shape.trends > 2:
        shape.trends -= 1
    elif shape.adapted > 1:
        shape.adapted -= 1
    elif shape.themes > 2:
        shape.themes -= 1
    elif shape.recommendations > 3:
        shape.recommendations -= 1
    elif shape.risk_items > 1:
        shape.risk_items -= 1
    elif shape.trends > 1:
        shape.trends -= 1
    elif shape.more:
        shape.more = False
    elif shape.themes > 1:
        shape.themes -= 1
    else:
        return False
    return True


def _build(ctx: dict[str, Any], inp: WeeklyInput, t: dict[str, Any], shape: _Shape, found_themes: list[Theme],
           found: Found, found_before: Found, relevant: list[AnalysedItem], ranked: list[AnalysedItem],
           changes: list[AnalysedItem], before: list[AnalysedItem], keyed: list[AnalysedItem], native: bool,
           is_bot: Callable[[str], bool], limit: int, built: tuple[list[dict[str, Any]], list[Md]]) -> None:
    """Every section of `ctx` at `shape`, in the order the template shows them (a PR is linked where it is
    first mentioned)."""
    w = t["weekly"]
    refs = Refs()
    ctx["quick"] = built[0][: shape.quick]
    ctx["key"] = 0 if not ctx["key_all"] else sum(1 + ctx["folded"].get(q["ref"], 0) for q in ctx["quick"])
    shown = found_themes[: shape.themes]
    # a topic most of the week carries (RL training in an RL repository) glosses no theme
    counts: dict[str, int] = {}
    for ai in relevant:
        for x in set(ai.analysis.topics):
            counts[x] = counts.get(x, 0) + 1
    common = frozenset(k for k, n in counts.items() if n > 0.4 * len(relevant))
    names = [theme_name(th, t, inp.rules_dir, common) for th in shown]
    named = [(th, short) for th, (short, _) in zip(shown, names, strict=True)]
    ctx["headline_text"] = w["headline"]
    grown = [(th, short) for th, short in named if th.before is not None and len(th.members) > th.before]
    top = max(grown, key=lambda x: (len(x[0].members) - (x[0].before or 0), len(x[0].members)), default=None)
    ctx["grew"] = (top[1], len(top[0].members), top[0].before) if top else None
    ctx["summary"] = summary_head(ctx, t)
    moves = movements(named, found, refs, t, native, most=3, target=inp.target)
    themed = {id(ai) for th in shown for ai in th.members}
    # a key PR no theme shown holds, with a figure, is a movement of the week too (a 25% step-time gain of
    # one PR is what the week was, whatever the themes); then others, until there are three
    alone = [x for x in relevant if id(x) not in themed and x.item.ref not in ctx["backports"]]
    measured = [x for x in alone if x.analysis.priority in TOP and headline_claim(x.analysis.perf_claims)]
    for ai in measured[: max(0, 5 - len(moves))]:
        moves.append(_single_movement(ai, found, refs, t, native, inp.target))
    for ai in [x for x in alone if x not in measured][: max(0, 3 - len(moves))]:
        moves.append(_single_movement(ai, found, refs, t, native, inp.target))
    ctx["movements"] = moves
    ctx["themes"] = [{"name": full, "text": theme_text(th, found, refs, t, native, inp.rules_dir, limit,
                                                     target=inp.target),
                      "count": len(th.members), "term": th.label, "key": th.key,
                      "refs": [f"#{ai.item.number}" for ai in th.members],
                      "members": [row(ai, t) for ai in th.members[:5]]} for th, (_, full) in zip(shown, names,
                                                                                                 strict=True)]
    trends = [mix_line(changes, before, t) if changes else None, areas_line(changes, before, t),
              quality_line(found, found_before, t, bool(before)), people_line(changes, shown, is_bot, t)]
    ctx["trends"] = [x for x in trends if x][: shape.trends]
    ctx["risk_lines"] = risk_lines(found, refs, t, shape.risk_items, limit, inp.rules_dir)
    ctx["quick_more"] = [{"short": f"#{ai.item.number}", "url": ai.item.url}
                         for ai in keyed[shape.quick: shape.quick + 4] if ai.item.number is not None and shape.more]
    # the PRs the lines after the shown ones stand for: a backport named in its original's line counts too
    ctx["quick_more_n"] = 0  # none unlisted: a PR without its line is not called a key PR
    # no key PR this week: the quick view lists the first-ranked others, and says so (the headline counts 0)
    ctx["quick_others"] = bool(keyed) and not ctx["key_all"]
    ongoing = [(k, v) for k, v in chains(ranked) if _ongoing(v)]
    # advice names a change once: a backport goes with its original (as in the key-PR lines)
    once = [ai for ai in ranked if ai.item.ref not in ctx["backports"]]
    ctx["recommendations"] = recommendations(once, found, ongoing, refs, t, shape.recommendations, inp.target)
    ctx["adapted"] = built[1][: shape.adapted]
    ctx["adapted_more"] = max(len({e.down_ref for e in inp.adapted}) - shape.adapted, 0)


def _ongoing(members: list[AnalysedItem]) -> bool:
    from .weekly_risks import series

    last = series(members[-1])
    return last is not None and (last[1] == "N" or last[0] < int(last[1]))


def _single_movement(ai: AnalysedItem, found: Found, refs: Refs, t: dict[str, Any], native: bool, target: str = "ascend") -> Md:
    """A movement of one PR, for a week with fewer themes than movements."""
    w = t["weekly"]
    solo = Theme(f"r:{ai.item.ref}", ai.item.ref, [ai])
    claim = headline_claim(ai.analysis.perf_claims)
    evidence = w["move_figure"].format(ref=refs(ai), figure=figure(claim, t)) if claim else \
        w["move_single"].format(ref=refs(ai), kind=name(t, "kinds", ai.analysis.item_kind),
                                grade=ai.analysis.grade, decision=name(t, "decisions", ai.analysis.decision))
    return Md(w["movement_one"].format(what=gist(ai, t, 80), evidence=evidence,
                                       take=takeaway(solo, found, t, native, target=target)))
