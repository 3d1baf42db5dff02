"""The weekly report's prose: each theme in two or three sentences (its PRs, what they do, the week's
figures, what stands out), the executive summary's movements (each with its evidence and what to take from
it) and the trends (the week's mix, the areas that moved, test coverage, contributors), all from facts of
the week and the week before. Every sentence names its PRs or numbers, so no two are alike.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..models import AnalysedItem
from .base import name, signed
from .cjk import tidy
from .clusters import Theme, subgroups
from .conclusion import headline_claim
from .escape import Md, code, plain, text
from .explain import file_role
from .weekly_risks import Found, _code, series
from .weekly_words import Refs, figure, fitted, gist, term_md
from .zh_words import function_words

_ENGINEERING = ("ci", "test", "docs")


def _count(n: int, before: int | None, t: dict[str, Any]) -> str:
    w = t["weekly"]
    return w["count_vs"].format(n=n, before=before) if before is not None else w["count"].format(n=n)


def _facts(th: Theme, found: Found, ref: Callable[[AnalysedItem], Md], t: dict[str, Any], native: bool) -> list[Md]:
    """What stands out in a theme, most telling first: a precision fix, a removal, a series under way,
    changes without tests, the grades."""
    w, c = t["weekly"], t["common"]

    def many(items: list[AnalysedItem]) -> str:
        return c["sep"].join(ref(ai) for ai in items)

    members = set(id(ai) for ai in th.members)
    out: list[Md] = []
    acc = [ai for ai in found.accuracy if id(ai) in members]
    if acc:
        out.append(Md(w["fact_accuracy"].format(refs=many(acc[:3]))))
    gone = [(ai, what) for ai, what in found.removed if id(ai) in members]
    if gone:
        out.append(Md(w["fact_removed"].format(items=c["semi"].join(f"{ref(ai)} {_said(what, t)}"
                                                                     for ai, what in gone[:2]))))
    steps = sorted(((s, ai) for ai in th.members if (s := series(ai))), key=lambda x: x[0][0])
    if len(steps) >= 2:
        out.append(Md(w["fact_series"].format(refs=many([ai for _, ai in steps][:4]),
                                              first=steps[0][0][0], last=steps[-1][0][0], n=steps[-1][0][1])))
    bare = [ai for ai in th.members if "no-test" in ai.analysis.risk_labels and "core-path" in ai.analysis.risk_labels]
    if len(bare) >= 2:
        more = w["and_more"].format(n=len(bare) - 3) if len(bare) > 3 else ""  # the count covers the refs
        out.append(Md(w["fact_untested"].format(n=len(bare), refs=many(bare[:3]) + more)))
    # what to do on the target is the theme's last sentence (its PRs' consequence, read from their diffs): no
    # grade verdict here, which could say "reuse as is" of a change whose diff was never read
    return out


def affected(th: Theme, t: dict[str, Any], most: int = 3) -> Md:
    """Who the theme's changes reach: the models and hardware its PRs' titles, descriptions and figures name
    (checklists.toml families), most named first; "" when they name none."""
    from .conclusion import _models_and_hardware

    named = Counter(m for ai in th.members for m in dict.fromkeys(_models_and_hardware(ai)) if _model_name(m))
    if not named:
        return Md("")
    shown: list[str] = []
    for m, _ in sorted(named.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(shown) < most and m.lower() not in {x.lower() for x in shown}:  # "Deepseek-V4" and "Deepseek-v4"
            shown.append(m)
    return Md(t["weekly"]["theme_affected"].format(models=t["common"]["sep"].join(str(code(m)) if "/" in m
                                                                                  else str(text(m)) for m in shown)))


# two plain English words in a row outside code ("local hit"): a clause of the author's, not a term of the field
_ENGLISH_RUN = re.compile(r"(?<![\w-])[a-z]+ [a-z]+(?![\w-])")
_CODE = re.compile(r"`[^`\n]*`")
# a class or module name the model rule also finds ("Glm4vModel", "DeepseekV32IndexerCache", "minimax_m3")
_IDENTIFIER = re.compile(r"_|\.(?:py|md)$|[a-z0-9][A-Z][a-z]+[A-Z]|[a-z][A-Z][a-z]{2,}$")


def _model_name(name: str) -> bool:
    """A model or hardware name as people write it, not an identifier of code."""
    return not _IDENTIFIER.search(name)


def why_said(th: Theme, refs: Refs, t: dict[str, Any], links: int) -> Md:
    """Why the theme's lead change was made, in its author's asserting words: the first causal sentence
    (render/why.py) of a member's description, said in our frame, with the PR it is from; "" when none
    states one (a docs change explains, it argues nothing)."""
    from .why import causes, say_cause

    ref = refs.capped(links)
    for ai in th.members[:6]:
        if ai.analysis.item_kind in _ENGINEERING:
            continue
        found = causes(ai.item.body, 1)
        if found:
            said = say_cause(found[0], t["lang"])
            if t["lang"] == "zh" and (function_words(said) or _ENGLISH_RUN.search(_CODE.sub(" ", str(said)))):
                continue  # the author's English spliced into a Chinese clause ("local hit 与会导致"): not said
            return Md(t["weekly"]["theme_why"].format(ref=ref(ai), why=said))
    return Md("")


def _said(what: Md, t: dict[str, Any]) -> Md:
    """An author's phrase in a zh theme: held together by English grammar words, it is said with Chinese
    joints (the title reading's phrase); code and names stay."""
    from .mechanism import _TOKEN
    from .saying import phrase
    from .zh_words import function_words

    if t["lang"] != "zh" or not function_words(what):
        return what
    return phrase(_TOKEN.findall(plain(what)), 12, "zh")


def _listing(th: Theme, groups: list, refs: Refs, t: dict[str, Any], named: int, size: int, links: int) -> Md:
    """The theme's PRs in one sentence: by subgroup, or the first `named` with their gist and the rest by
    number; at most `links` of them linked."""
    w, c = t["weekly"], t["common"]
    ref = refs.capped(links)
    head = _count(len(th.members), th.before, t)
    if groups:
        shown = [w["group"].format(term=text(label), refs=c["sep"].join(ref(ai) for ai in prs)) for label, prs in groups]
        rest = [ai for ai in th.members if not any(ai in prs for _, prs in groups)]
        listing = c["semi"].join(shown)
        if rest:
            listing += w["group_rest"].format(refs=c["sep"].join(ref(ai) for ai in rest))
        return Md(w["theme_groups"].format(count=head, groups=listing))
    said: dict[str, list[AnalysedItem]] = {}  # PRs saying the same (a change and its backport) share a gist
    for ai in th.members[:named]:
        said.setdefault(str(gist(ai, t, size)), []).append(ai)
    listing = c["semi"].join(f"{c['sep'].join(ref(ai) for ai in prs)} {what}" for what, prs in said.items())
    rest = th.members[named:]
    if rest and th.kind in ("target", "topic"):
        # the target's work or a mechanism's: the rest said by what they are ("文档 6 个（…）"), not bare numbers
        kinds: dict[str, list[AnalysedItem]] = {}
        for ai in rest:
            kinds.setdefault(ai.analysis.item_kind, []).append(ai)
        listing += w["group_rest_kinds"].format(kinds=c["sep"].join(
            w["group_kind"].format(kind=name(t, "kinds", k), n=len(prs), refs=c["sep"].join(ref(ai) for ai in prs))
            for k, prs in sorted(kinds.items(), key=lambda kv: -len(kv[1]))))
    elif rest:
        listing += w["group_rest"].format(refs=c["sep"].join(ref(ai) for ai in rest))
    return Md(w["theme_items"].format(count=head, items=listing))


def _for_target(th: Theme, refs: Refs, t: dict[str, Any], target: str, links: int) -> Md:
    """What the theme changes for the target, in one sentence: the consequence most of its PRs share (the daily
    radar's short consequence, conclusions.toml [[consequence]]) and the PRs it holds for."""
    from ..analyse.porting import applied
    from .conclusion import consequence, target_short
    from .explain import described

    said = Counter()
    who: dict[str, list[AnalysedItem]] = {}
    for ai in th.members:
        what = str(consequence(ai, t, applied(ai.item, target, text=described(ai.item.body)), target, short=True))
        said[what] += 1
        who.setdefault(what, []).append(ai)
    if not said:
        return Md("")
    what, n = said.most_common(1)[0]
    ref = refs.capped(links)
    shown = t["common"]["sep"].join(ref(ai) for ai in who[what][:3])
    return Md(t["story"]["theme_target"].format(target=target_short(target, t["lang"]), what=what,
                                                refs=shown, n=n, total=len(th.members)))


def theme_text(th: Theme, found: Found, refs: Refs, t: dict[str, Any], native: bool,
               rules_dir: Path | None = None, limit: int = 400, target: str = "ascend") -> Md:
    """Two or three sentences, one a line: the PRs (grouped by a second shared term when there are many),
    the week's figures, and what stands out; each sentence built to fit in `limit` characters."""
    w, c = t["weekly"], t["common"]
    # a theme of the target's work or of one mechanism lists what its PRs do, not a second keyword
    groups = subgroups(th, rules_dir) if len(th.members) >= 5 and th.kind not in ("target", "topic") else []
    tries = [(3, 55, 3), (3, 55, 2), (3, 45, 2), (3, 45, 1), (3, 40, 0), (2, 40, 0), (1, 30, 0)]
    sentences = [fitted(refs, limit, [lambda r, a=a: _listing(th, groups, r, t, *a) for a in tries])]
    measured = [(ai, headline_claim(ai.analysis.perf_claims)) for ai in th.members if ai.analysis.perf_claims]
    measured = [(ai, cl) for ai, cl in measured if cl is not None and (cl.change_pct is not None or cl.ratio)]

    def figures(r: Refs, k: int) -> Md:
        ref = r.capped(k)
        said = c["semi"].join(f"{ref(ai)} {figure(cl, t, k > 0)}" for ai, cl in measured[:max(k, 1)])
        return Md(w["theme_figures"].format(figures=said))

    def facts(r: Refs, k: int, links: int) -> Md:
        found_facts = _facts(th, found, r.capped(links), t, native)[:k]
        return Md(w["theme_facts"].format(facts=c["semi"].join(found_facts))) if found_facts else Md("")

    # why: the author's own reason, else the figures the change was made for
    end = "。" if t["lang"] == "zh" else "."
    why = fitted(refs, limit, [lambda r, k=k: why_said(th, r, t, k) for k in (1, 0)])
    shown = fitted(refs, limit, [lambda r, k=k: figures(r, k) for k in (2, 1, 0)]) if measured else Md("")
    if why or shown:  # one sentence: the reason and the figures the change was made for
        sentences.append(Md(c["semi"].join(str(x).rstrip(end) for x in (why, shown) if x) + end))
    # who is affected, and what stands out (a removal, a silent-accuracy fix, a series, untested changes)
    who = affected(th, t)
    said = fitted(refs, limit, [lambda r, k=k, n=n: facts(r, k, n) for k, n in ((2, 3), (2, 1), (1, 0))])
    if who and said and t["lang"] != "zh":
        said = Md(str(said)[:1].lower() + str(said)[1:])
    if who or said:
        sentences.append(Md(c["semi"].join(str(x).rstrip(end) for x in (who, said) if x) + end))
    # what the theme changes for the target: the story's last sentence (2-4 in all)
    if len(sentences) < 4:
        target_said = fitted(refs, limit, [lambda r, k=k: _for_target(th, r, t, target, k) for k in (1, 0)])
        if target_said:
            sentences.append(target_said)
    # one line when the sentences fit on one, else one sentence a line (a Markdown paragraph either way)
    one = w["sentence_sep"].join(sentences)
    return Md(one if len(plain(Md(one))) <= limit else "\n".join(sentences))


# --- the executive summary -------------------------------------------------------------------------


def takeaways(th: Theme, found: Found, t: dict[str, Any], native: bool, target: str = "ascend") -> list[str]:
    """What the team could take from a theme, most telling first (each from one of its facts)."""
    w = t["weekly"]
    ids = set(id(ai) for ai in th.members)
    out = []
    if any(id(ai) in ids for ai in found.accuracy):
        out.append(w["take_accuracy"])
    if any(id(ai) in ids for ai, _ in found.removed):
        out.append(w["take_removed"])
    steps = [s for ai in th.members if (s := series(ai))]
    if len(steps) >= 2 and (steps[-1][1] == "N" or max(s[0] for s in steps) < int(steps[-1][1])):
        out.append(w["take_series"])
    if any(headline_claim(ai.analysis.perf_claims) for ai in th.members):
        out.append(w["take_figure"])
    if th.before is not None and len(th.members) >= 2 * max(th.before, 1) and len(th.members) - th.before >= 3:
        out.append(w["take_rising"])
    kinds = Counter(ai.analysis.item_kind for ai in th.members)
    if kinds["docs"] >= 0.6 * len(th.members):
        out.append(w["take_docs"])
    grades = Counter(ai.analysis.grade for ai in th.members)
    grade = grades.most_common(1)[0][0]
    if not native and grade == "S" and _unread_most(th, target):
        out.append(w["take_unread"])  # "cheap to reuse" is not said of changes whose diff was never read
    else:
        out.append(w["take_native"] if native else w[f"take_grade_{grade}"])
    return out


def _unread_most(th: Theme, target: str = "ascend") -> bool:
    """Most of the theme's grade-S PRs have no diff read (analyse/target_code.py TargetCode.primary())."""
    from ..analyse.target_code import for_target

    s = [ai for ai in th.members if ai.analysis.grade == "S"]
    return bool(s) and 2 * sum(for_target(ai.item, target).primary() == "unread" for ai in s) > len(s)


def takeaway(th: Theme, found: Found, t: dict[str, Any], native: bool, used: set[str] | None = None,
             target: str = "ascend") -> str:
    """The most telling takeaway of a theme that an earlier movement has not already given."""
    options = takeaways(th, found, t, native, target)
    fresh = [x for x in options if x not in (used or set())]
    chosen = (fresh or options)[0]
    if used is not None:
        used.add(chosen)
    return chosen


def movements(named: list[tuple[Theme, Md]], found: Found, refs: Refs, t: dict[str, Any], native: bool,
              most: int = 4, target: str = "ascend") -> list[Md]:
    """The week's main movements: each theme's name, its size against last week, its lead PR or figure, and
    what to take from it."""
    w = t["weekly"]
    out: list[Md] = []
    used: set[str] = set()
    for th, title in named[:most]:
        lead = th.members[0]
        claim = next((cl for ai in th.members if (cl := headline_claim(ai.analysis.perf_claims))), None)
        holder = next((ai for ai in th.members if headline_claim(ai.analysis.perf_claims) is claim), lead)
        evidence = w["move_figure"].format(ref=refs(holder), figure=figure(claim, t)) if claim else \
            w["move_lead"].format(ref=refs(lead), what=gist(lead, t, 50))
        out.append(Md(w["movement"].format(name=title, count=_count(len(th.members), th.before, t),
                                           evidence=evidence, take=takeaway(th, found, t, native, used, target))))
    return out


def summary_head(ctx: dict[str, Any], t: dict[str, Any]) -> Md:
    """The summary's opening: merged and key PRs against the week before, and where the data ends early."""
    w = t["weekly"]
    if not ctx["merged"] and not ctx["commits"]:
        return Md(w["exec_empty"].format(this=ctx["this"]))
    vs = w["exec_vs"].format(previous=ctx["previous_word"], before=ctx["merged_before"],
                             change=ctx["merged_delta"]) if ctx["has_previous"] else \
        w["exec_no_previous"].format(previous=ctx["previous_word"])
    head = w["exec_head"].format(this=ctx["this"], merged=ctx["merged"], vs=vs, key=ctx["key"],
                                 key_before=ctx["key_before"], previous=ctx["previous_word"])
    head += target_said(ctx, t)
    grew = ctx.get("grew")
    if grew:
        head += w["exec_grew"].format(name=grew[0], n=grew[1], before=grew[2], previous=ctx["previous_word"])
    if ctx.get("partial"):
        head += w["exec_partial"].format(date=ctx["data_end"])
    return Md(head)


def target_facts(prs: list[AnalysedItem], before: list[AnalysedItem], target: str = "") -> dict[str, Any]:
    """What the week's merged PRs were for the target: how many were written for it or are about it (its
    profile's topic, grades.toml) this week and the one before, their kinds and grades, and whether every PR
    was (the target's own repository)."""
    from ..analyse.porting import profile_topics
    from ..analyse.target_code import for_target as for_target_code

    topic = profile_topics().get(target, "")

    def for_target(ai: AnalysedItem) -> bool:
        return ai.analysis.native or bool(topic and topic in ai.analysis.topics)

    mine = [ai for ai in prs if for_target(ai)]
    # an S grade is "reuse as is" only where the diff was read: of a change whose diff is unread, the grade
    # says what its files are, not what its code holds (analyse/target_code.py)
    unread = sum(1 for ai in mine if ai.analysis.grade == "S" and for_target_code(ai.item, target).primary() == "unread")
    return {"target_unread": unread,"target_n": len(mine), "target_all": bool(prs) and all(ai.analysis.native for ai in prs),
            "target_before": sum(1 for ai in before if for_target(ai)),
            "target_kinds": Counter(ai.analysis.item_kind for ai in mine).most_common(3),
            "target_grades": Counter(ai.analysis.grade for ai in mine)}


def target_said(ctx: dict[str, Any], t: dict[str, Any]) -> str:
    """The summary's sentence on the target: its share of the week, its kinds and what its grades mean."""
    w, c = t["weekly"], t["common"]
    n, merged, target = ctx.get("target_n", 0), ctx["merged"], ctx.get("target_name", "")
    if not merged or not target:
        return ""
    if not n:
        return w["exec_target_none"].format(target=target)
    kinds = c["sep"].join(w["exec_kind"].format(kind=name(t, "kinds", k), n=k_n) for k, k_n in ctx["target_kinds"])
    grades = ctx["target_grades"]
    ml = grades.get("M", 0) + grades.get("L", 0)
    unread = ctx.get("target_unread", 0)
    s_read = grades.get("S", 0) - unread
    if unread:  # the S-graded changes whose diff was never read are said apart, without a reuse verdict
        parts = [w[key].format(n=n, target=target) for key, n in (("exec_grades_s", s_read),
                 ("exec_grades_unread", unread), ("exec_grades_ml", ml)) if n]
        said = c["comma"].join(parts)
    else:
        said = w["exec_grades"].format(s=s_read, ml=ml, target=target) if ml else w["exec_grades_all_s"]
    if ctx.get("target_all"):
        out = w["exec_target_own"].format(target=target, n=n, kinds=kinds, grades=said)
    else:
        out = w["exec_target"].format(n=n, share=round(100 * n / merged), target=target, kinds=kinds, grades=said,
                                      before=ctx.get("target_before", 0), previous=ctx["previous_word"])
    return tidy(out) if t["lang"] == "zh" else out


# --- trends ----------------------------------------------------------------------------------------


def _share(items: list[AnalysedItem]) -> int:
    n = sum(1 for ai in items if ai.analysis.item_kind in _ENGINEERING)
    return round(100 * n / len(items)) if items else 0


def mix_line(now: list[AnalysedItem], before: list[AnalysedItem], t: dict[str, Any]) -> Md:
    """The week's kinds of change with their moves against last week, and what the shift says."""
    w, c = t["weekly"], t["common"]
    cur, prev = Counter(ai.analysis.item_kind for ai in now), Counter(ai.analysis.item_kind for ai in before)
    kinds = sorted(set(cur) | set(prev), key=lambda k: (-cur[k], -prev[k], k))[:5]
    # the kinds past the first five are counted together, so the parts add up to the week's changes
    rest = sum(n for k, n in cur.items() if k not in kinds)
    other = w["kind_rest"].format(n=rest) if rest else ""
    if not before:  # nothing to compare with: the counts alone
        listed = c["sep"].join([*(w["kind_alone"].format(kind=name(t, "kinds", k), n=cur[k]) for k in kinds
                                  if cur[k]), *([other] if other else [])])
        return Md(w["mix_alone"].format(kinds=listed, eng=_share(now)))
    # a kind absent this week says how many it had the week before, not a change from nothing
    listed = c["sep"].join([*(w["kind_gone"].format(kind=name(t, "kinds", k), before=prev[k]) if not cur[k] else
                              w["kind_count"].format(kind=name(t, "kinds", k), n=cur[k],
                                                     delta=signed(cur[k] - prev[k])) for k in kinds),
                            *([other] if other else [])])
    eng, eng_before = _share(now), _share(before)
    fix = round(100 * cur["bugfix"] / len(now)) if now else 0
    if before and eng - eng_before >= 10:
        reading = w["mix_more_engineering"]
    elif before and eng_before - eng >= 10:
        reading = w["mix_less_engineering"]
    elif fix >= 35:
        reading = w["mix_fixes"].format(share=fix)
    else:
        reading = w["mix_steady"]
    return Md(w["mix"].format(kinds=listed, eng=eng, eng_before=eng_before if before else "—", reading=reading))


def _areas(items: list[AnalysedItem]) -> Counter:
    """Per code directory (two or three levels deep), how many of the items change it."""
    found: Counter = Counter()
    for ai in items:
        dirs = set()
        for f in ai.item.files:
            if file_role(f.path) in ("tests", "docs", "config"):
                continue
            parts = f.path.split("/")[:-1]
            for depth in (2, 3):
                if len(parts) >= depth:
                    dirs.add("/".join(parts[:depth]) + "/")
        found.update(dirs)
    return found


def areas_line(now: list[AnalysedItem], before: list[AnalysedItem], t: dict[str, Any]) -> Md | None:
    """The code areas that gained and lost the most PRs against last week."""
    w, c = t["weekly"], t["common"]
    if not before:
        return None  # every area "gains" against a week with no data
    cur, prev = _areas(now), _areas(before)
    moves = sorted(((cur[d] - prev[d], d) for d in set(cur) | set(prev)), key=lambda x: (-x[0], x[1]))
    # a directory and its parent moving alike say one thing: keep the deeper one
    up = _distinct([d for delta, d in moves if delta >= 2])[:3]
    down = _distinct([d for delta, d in reversed(moves) if delta <= -2])[:2]
    if not up and not down:
        return None
    fmt = w["area_count"]
    rising = c["sep"].join(fmt.format(path=code(d), n=cur[d], before=prev[d]) for d in up) or c["none"]
    falling = c["sep"].join(fmt.format(path=code(d), n=cur[d], before=prev[d]) for d in down) or c["none"]
    line = w["areas"].format(up=rising, down=falling)
    reading = _area_reading(now, up[0], t) if up else ""
    return Md(w["areas_reading"].format(line=line, reading=reading) if reading else line)


def _in_area(ai: AnalysedItem, area: str) -> bool:
    """The item changes code under `area` (as _areas counts it: tests, docs and configuration apart)."""
    return any(f.path.startswith(area) and file_role(f.path) not in ("tests", "docs", "config") for f in ai.item.files)


def _area_reading(now: list[AnalysedItem], area: str, t: dict[str, Any]) -> str:
    """What the area that grew most is doing, from its PRs' own counts: fixes, new features, work for the
    target itself, or device-dependent (grade M/L) changes, whichever holds for at least half; else ""."""
    w = t["weekly"]
    members = [ai for ai in now if _in_area(ai, area)]
    n = len(members)
    counts = [("areas_fixes", sum(ai.analysis.item_kind == "bugfix" for ai in members)),
              ("areas_features", sum(ai.analysis.item_kind == "feature" for ai in members)),
              ("areas_native", sum(bool(ai.analysis.native) for ai in members)),
              ("areas_device", sum(ai.analysis.grade in ("M", "L") for ai in members))]
    key, k = next(((key, k) for key, k in counts if n and 2 * k >= n), ("", 0))
    return w[key].format(path=code(area), n=n, k=k) if key else ""


def _distinct(dirs: list[str]) -> list[str]:
    out: list[str] = []
    for d in dirs:
        if not any(d.startswith(o) or o.startswith(d) for o in out):
            out.append(d)
    return out


def quality_line(found: Found, before: Found, t: dict[str, Any], has_before: bool) -> Md | None:
    """Core-path changes without a test against last week: a count that means something as a comparison."""
    w = t["weekly"]
    if not found.core:
        return None
    vs = w["quality_vs"].format(core=before.core, bare=before.core_untested) if has_before and before.core else ""
    # what the counts mean: the untested share against last week's (ten points or more is a move), or alone
    now = round(100 * found.core_untested / found.core)
    if vs:
        was = round(100 * before.core_untested / before.core)
        key = "quality_up" if now - was >= 10 else "quality_down" if was - now >= 10 else "quality_same"
        reading = w[key].format(before=was, now=now)
    else:
        reading = w["quality_high"].format(now=now) if now >= 30 else ""
    return Md(w["quality"].format(core=found.core, bare=found.core_untested, vs=vs) + reading)


def people_line(now: list[AnalysedItem], themes: list[Theme], is_bot: Any, t: dict[str, Any]) -> Md | None:
    """Contributors (bots apart), the most active with the theme their PRs fall in, and the bots' share."""
    w, c = t["weekly"], t["common"]
    humans = [ai for ai in now if ai.item.author and not is_bot(ai.item.author)]
    bots = len([ai for ai in now if ai.item.author and is_bot(ai.item.author)])
    if not humans:
        return None
    counts = Counter(ai.item.author for ai in humans)
    where = {id(ai): term_md(th) for th in themes for ai in th.members}
    top = []
    for author, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]:
        if n < 2:
            break
        labels = Counter(where[id(ai)] for ai in humans if ai.item.author == author and id(ai) in where)
        kinds = Counter(ai.analysis.item_kind for ai in humans if ai.item.author == author)
        focus = labels.most_common(1)[0][0] if labels else name(t, "kinds", kinds.most_common(1)[0][0])
        top.append(w["person"].format(author=text(author), n=n, focus=focus))
    active = w["people_top"].format(items=c["sep"].join(top)) if top else ""
    robots = w["people_bots"].format(n=bots) if bots else ""
    return Md(w["people"].format(n=len(counts), active=active, bots=robots))


def code_share(items: list[AnalysedItem]) -> int:
    """How many of the items change code (not only tests, docs or configuration)."""
    return sum(1 for ai in items if _code(ai))
