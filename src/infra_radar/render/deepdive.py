"""A deep dive built from the item's own description: motivation, mechanism (bullets kept), the author's
validation, files grouped by role, the numbers, the porting view and the decision with its reason.
Author text is labelled as quoted; only our own lines are our prose.
"""

from __future__ import annotations

from typing import Any

from ..analyse.porting import Applied
from ..models import AnalysedItem
from .base import claim_rows, files_total, name, pick, row
from .escape import Md, fmt
from .explain import clip, explain_body, explain_rules, files_by_role, sentences


def _blocks(blocks: list[tuple[str, str]], limits: dict[str, Any]) -> list[dict[str, Any]]:
    out, bullets = [], 0
    for kind, text in blocks:
        if kind in ("b", "b1"):
            bullets += 1
            shown = clip(text, int(limits["deep_sentence"]))
            if bullets > int(limits["deep_bullets"]) or not shown:
                continue
            out.append({"bullet": True, "nested": kind == "b1", "text": shown})
        else:
            kept = clip(" ".join(sentences(text)[: int(limits["deep_paragraph_sentences"])]),
                        int(limits["deep_sentence"]) * 2)
            if kept:
                out.append({"bullet": False, "nested": False, "text": kept})
        if len(out) >= int(limits["deep_bullets"]) + 3:
            break
    return out


def porting_views(porting: list[Applied], t: dict[str, Any]) -> list[Md]:
    """One line per porting-map entry that applied: mechanism → counterpart, and the caveat."""
    e, lang = t["explain"], t["lang"]
    return [fmt(e["porting_line"], name=pick(p.entry.name, lang), evidence=p.evidence,
                counterpart=pick(p.counterpart, lang), caveat=pick(p.caveat, lang))
            for p in porting]


def grade_with_porting(ai: AnalysedItem, t: dict[str, Any], porting: list[Applied]) -> str:
    """The grade reason (issue-13's judgement, unchanged) with the applied porting entry's caveat after it."""
    reason = pick(ai.analysis.grade_reason, t["lang"])
    gpu = [p for p in porting if p.entry.id != "npu-native"] or porting
    if not gpu:
        return reason
    p = gpu[0]
    return reason.rstrip("。. ") + t["explain"]["grade_porting"].format(name=pick(p.entry.name, t["lang"]),
                                                         caveat=pick(p.caveat, t["lang"]))


def deep_view(ai: AnalysedItem, t: dict[str, Any], porting: list[Applied], target: str) -> dict[str, Any]:
    """Everything a deep dive shows, in order."""
    limits = explain_rules()["limits"]
    view = row(ai, t)
    explained = explain_body(ai.item.body)
    mech = explained.mechanism
    motivation = [b for b in explained.motivation if b not in mech]
    view["motivation"] = clip(" ".join(t_ for _, t_ in motivation[:2]), int(limits["motivation"])) if motivation else ""
    view["mech_blocks"] = _blocks(mech, limits)
    view["tests"] = [x for x in (clip(b, int(limits["deep_sentence"])) for _, b in explained.tests[:2]) if x]
    # the model stage may put its own mechanism here; the template shows it only when it differs
    view["mechanism"] = view["mechanism_rule"] = " ".join(b["text"] for b in view["mech_blocks"][:2])
    view["roles"] = files_by_role(ai.item.files, t["lang"])
    view["files"] = [p for r in view["roles"] for p in r["paths"]][:5]
    view["files_total"] = files_total(ai.item.files, t)
    view["claims"] = claim_rows(ai.analysis.perf_claims, t)
    view["porting"] = porting_views(porting, t)
    view["target"] = target
    view["grade_reason"] = grade_with_porting(ai, t, porting)
    return view


_TABLE_ROWS = 5  # figures a deep dive's table shows


def figures_said(body: str, claims: list, t: dict[str, Any], most: int = 2) -> Md:
    """What the description's figures are when none is a before/after claim: the author's figures in the other
    shapes (analyse/figures.py), else what was read ("no figures in the description", or that it is cut)."""
    from ..analyse.figures import description_cut, extract_figures, figure_subject, unread_figure
    from .escape import join, text

    d, c = t["daily"], t["common"]
    found = extract_figures(body, taken=[x.span for x in claims])
    if found:
        # each figure with what it was measured on, when its line says so (a sanity check is not the kernel)
        said = [text(f.text + c["paren"].format(about) if (about := figure_subject(f)) else f.text)
                for f in found[:most]]
        return fmt(d["dive_figure"], text=join(said, c["sep"]))
    if description_cut(body):
        return Md(d["dive_cut"])
    seen, _line = unread_figure(body)
    return fmt(d["dive_figures_unread"], figure=text(seen)) if seen else Md(d["dive_no_figures"])


# --- the daily radar's deep dive: one paragraph of our own -----------------------------------------



def dive(ai: AnalysedItem, t: dict[str, Any], porting: list[Applied], profile: str, shown: str = "") -> dict[str, Any]:
    """The parts of one deep dive of the daily radar, in reading order (motivation, mechanism, evidence,
    target boundary, decision), each our own sentence; the author's text is reached by the item's link.
    `mechanism` is the part model prose may replace (`mechanism_rule` keeps the rules' one)."""
    from .checklist import checklist_rules
    from .cjk import tidy
    from .conclusion import (
        central_identifiers,
        claim_text,
        consequence,
        headline_claim,
        mechanism,
        target_short,
    )
    from .escape import code, join, plain, text
    from .explain import code_module, file_role
    from .mechanism import is_identifier
    from .why import causes, say_cause, validation_cues

    d, c, lang = t["daily"], t["common"], t["lang"]
    item, a = ai.item, ai.analysis
    view = row(ai, t)
    found = causes(item.body)
    from .why import motivation_cues

    cues = motivation_cues(ai, lang)
    # why it works, from the description's own causal sentence; else what it says went wrong
    view["why"] = (fmt(t["dive"]["cause"], text=say_cause(found[0], lang)) if found else
                   fmt(d["dive_why"], text=c["sep"].join(cues)) if cues else Md(""))
    if not view["why"]:  # what the listed changes are for, in the author's own sentences
        from .diff_mechanism import purposes_said

        aims = purposes_said(ai, lang)
        view["why"] = fmt(d["dive_purpose"], text=join([x for x, _ in aims], c["semi"])) if aims else Md("")
    what = mechanism(ai, t)
    # identifiers the table row did not already name (`shown`: the row's conclusion)
    what_said = plain(what)
    from ..analyse.change_list import change_names

    # the author's own list of changes names what the change does, one name per change sentence; else the
    # identifiers the description uses most
    from .diff_mechanism import changes_said, moves_said
    from .why import dive_rules

    # the author's list of changes said one by one ("封装 `FusedMoE.weight_loader`；新增 `create_tcp_store` helper"),
    # and what the diff shows (a call replaced, an op registered, a class patched, files added by role)
    listed = changes_said(ai, lang)
    view["changes"] = fmt(d["dive_changes"], text=join([x for x, _ in listed], c["semi"])) if listed else Md("")
    moved = moves_said(ai, t)
    view["moves"] = fmt(d["dive_moves"], text=join([x for x, _, _ in moved], c["semi"])) if moved else Md("")
    ids: list[str] = []
    if not listed:  # the listed changes name their code; else the names of the list, or the central ones
        ids = [i for i in change_names(item.body, item.repo, dive_rules().get("changes", {}), item.title)
               if i not in what_said]
        ids = ids or [i for i in central_identifiers(ai, 6) if i not in what_said and code(i) not in shown
                      and is_identifier(i)][:2]
    if ids:
        what = Md(f"{what}{c['paren'].format(join([code(i) for i in ids], c['sep']))}")
    view["mechanism"] = view["mechanism_rule"] = what
    module = code_module(item.files) if item.files else ""
    view["where"] = fmt(d["dive_where"], module=code(module), files=files_total(item.files, t)) if module else Md("")
    claims = a.perf_claims
    evidence: list[Md] = []
    best = headline_claim(claims, set(item.title.lower().split()))
    if best is not None:
        evidence.append(claim_text(best, t))
        if len(claims) > _TABLE_ROWS:  # the table shows the first rows: say how many of all
            evidence.append(fmt(d["dive_figures_first"], n=len(claims), k=_TABLE_ROWS))
        elif len(claims) >= 3:
            evidence.append(fmt(d["dive_figures_more"], n=len(claims)))
        elif len(claims) == 2:
            evidence.append(claim_text(next(x for x in claims if x is not best), t))
    else:
        evidence.append(figures_said(item.body, claims, t))
    checked = validation_cues(ai, lang)
    if checked:
        evidence.append(fmt(d["dive_checked"], what=c["sep"].join(checked)))
    hardware = list(dict.fromkeys(checklist_rules()["_hardware"].findall(item.body[:20000])))[:2]
    if hardware:
        evidence.append(fmt(d["dive_hardware"], hardware=join(hardware, c["sep"])))
    if item.files:
        evidence.append(Md(d["dive_tests"] if any(file_role(f.path) == "tests" for f in item.files)
                           else d["dive_no_tests"]))
    view["evidence"] = fmt(d["dive_evidence"], text=join(evidence, c["comma"]))
    # the boundary in full: the porting caveat of the mechanism it rests on, else the row's consequence
    gpu = [p for p in porting if p.entry.id != "npu-native"]
    caveat = pick(gpu[0].caveat, lang) if gpu and not a.native and a.grade != "S" else ""
    said = consequence(ai, t, porting, profile)
    # the row above already says the consequence: the dive adds the boundary only when it says more
    short_target = target_short(profile, lang)
    if found and not a.native:  # what the gain depends on: the cost the description names, argued for the target
        gain = fmt(t["dive"]["gain"], target=short_target, cause=_words(found[0].y, lang))
        gain = Md(tidy(gain)) if lang == "zh" else gain
        view["boundary"] = Md(f"{gain}{c['semi']}{text(caveat)}。" if caveat and lang == "zh" else
                              f"{gain}; {text(caveat)}." if caveat else f"{gain}{'。' if lang == 'zh' else '.'}")
    else:
        view["boundary"] = (fmt(d["dive_boundary"], target=short_target, text=text(caveat))
                            if caveat and caveat not in plain(shown) else Md("") if said in shown else
                            fmt(d["dive_boundary"], target=short_target, text=said))
    # what to verify follows the kind of change (render/change_kind.py): the migration, a kernel's parity matrix,
    # the version matrix, an accuracy check under its condition; a performance change's own A/B (measure)
    from .change_kind import change_kind
    from .checklist import verify_text

    kind = change_kind(ai, profile)
    said_verify = verify_text(ai, t, short_target, profile, kind.id) if kind.id else Md("")
    view["measure"] = fmt(t["dive"]["verify"], text=said_verify) if said_verify else measure(ai, t, short_target)
    view["kind"] = kind.id
    from .code_view import code_boundary, contradiction_clause

    # what the diff says: where it contradicts the description (both sides, the files), the boundary it draws
    said_code = [part for part in (code_boundary(item, t), contradiction_clause(ai, t)) if part]
    if lang == "en":  # each part is a sentence of the dive: "The code branches on …"
        said_code = [Md(p[:1].upper() + p[1:]) for p in said_code]
    view["code"] = join(said_code, t["code"]["end"] + (" " if lang == "en" else "")) if said_code else Md("")
    # the decision is in the dive's first line; its reason is the rules' text, shown only where no other dive of
    # the report says it (daily.distinct_dives)
    # a dive that says what to measure, with the item's own switch or metric, has said more than the rules'
    # reason for the decision (the decision itself is on its first line)
    view["decide"] = Md("") if view["measure"] else fmt(
        d["dive_decide"], decision=name(t, "decisions", a.decision),
        reason=pick(a.decision_reason, lang).rstrip("。. ") or c["none"])
    rows = claim_rows(claims[:_TABLE_ROWS], t) if len(claims) >= 3 else []
    # one condition for every row: said once under the table, not in a column
    same = {r["context"] for r in rows}
    view["claims_context"] = same.pop() if len(same) == 1 and rows and rows[0]["context"] != "—" else ""
    view["claims"] = rows
    return view


def _words(words: list[str], lang: str) -> str:
    from .saying import phrase

    return str(phrase(words, len(words), lang))


def measure(ai: AnalysedItem, t: dict[str, Any], target: str) -> Md:
    """What to measure on the target, naming the item's own switch and metrics ("" when it names neither)."""
    from .checklist import item_switches
    from .escape import code, join
    from .metrics import metric_name
    from .why import dive_rules

    switches, envs = item_switches(ai)
    # a switch is named without the value the author gave it ("use_triton_gdn=True" is the switch use_triton_gdn):
    # "on vs off" is said of the switch, never of one of its settings
    # (a switch the author names only with a value, such as a precondition "use_remove_padding=False", is named
    # only when the item has no bare switch; one switch spelt as config key and env variable is named once)
    given = [*switches, *envs]
    chosen = [sw for sw in given if "=" not in sw] or [sw.split("=", 1)[0].strip() for sw in given[:1]]
    names = list({n.lower(): n for n in reversed([n for n in chosen if n])}.values())[::-1][:2]
    metrics = list(dict.fromkeys(metric_name(c.metric, t["lang"]) for c in ai.analysis.perf_claims))[:3]
    sep, dv = t["common"]["sep"], t["dive"]
    shown = join([code(n.rsplit(".", 1)[-1] if len(n) > 32 else n) for n in names], sep)
    if names and metrics:
        return fmt(dv["measure_switch"], target=target, switches=shown, metrics=Md(sep.join(metrics)))
    # time and memory are what to compare only for a change whose gain is time or memory (dives.toml [measure]);
    # for an adaptation or a fix the checklist says what to verify, and the dive keeps its decision instead
    m = dive_rules().get("measure", {})
    timed = ai.analysis.item_kind in m.get("kinds", []) or bool(set(ai.analysis.topics) & set(m.get("topics", [])))
    if names and timed:
        return fmt(dv["measure_switch_only"], target=target, switches=shown)
    if metrics:
        return fmt(dv["measure_metrics"], target=target, metrics=Md(sep.join(metrics)))
    return Md("")
