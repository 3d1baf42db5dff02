"""A deep dive built from the item's own description: motivation, mechanism (bullets kept), the author's
validation, files grouped by role, the numbers, the porting view and the decision with its reason.
Author text is labelled as quoted; only our own lines are our prose.
"""

from __future__ import annotations

from typing import Any

from ..analyse.porting import Applied
from ..models import AnalysedItem
from .base import claim_rows, files_total, pick, row
from .escape import Md, fmt
from .explain import clip, explain_body, explain_rules, files_by_role, sentences


def _blocks(blocks: list[tuple[str, str]], limits: dict[str, Any]) -> list[dict[str, Any]]:
    out, bullets = [], 0
    for kind, text in blocks:
        if kind in ("b", "b1"):
            bullets += 1
            if bullets > int(limits["deep_bullets"]):
                continue
            out.append({"bullet": True, "nested": kind == "b1", "text": clip(text, int(limits["deep_sentence"]))})
        else:
            kept = " ".join(sentences(text)[: int(limits["deep_paragraph_sentences"])])
            out.append({"bullet": False, "nested": False, "text": clip(kept, int(limits["deep_sentence"]) * 2)})
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
    view["tests"] = [clip(b, int(limits["deep_sentence"])) for _, b in explained.tests[:2]]
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
