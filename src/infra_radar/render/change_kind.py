"""The kind of a change as its verification needs it (dives.toml [[kind]]): a removal (the migration), a new
kernel (numerical parity, backward, a dtype/shape matrix, a long run), a version gate (the version matrix), an
accuracy fix (the accuracy check under its condition), a performance change (A/B of its own switch). Read from
the diff's facts (target code removed, kernels added, version gates), the title's own action and the item's kind,
never from a word of a path. The dive's "要测" and the checklist's `kind:<id>` steps follow it.
"""

from __future__ import annotations

import re
from typing import Any

from ..models import AnalysedItem

__all__ = ["ChangeKind", "change_kind", "kinds", "removed_names"]


class ChangeKind(tuple):
    """(kind id, the evidence it rests on: a field and its text), or ("", ...) for none."""

    @property
    def id(self) -> str:
        return self[0]

    @property
    def evidence(self) -> str:
        return self[1]


def kinds() -> list[dict[str, Any]]:
    from .why import dive_rules

    return dive_rules().get("kind", [])


def removed_names(ai: AnalysedItem, target: str = "ascend") -> list[str]:
    """What of the target's code or of the project's API the change removes (names, at most three)."""
    from ..analyse.target_code import for_target

    # what the change removes by name first (a function, a class, a key, a file), then the target's libraries
    gone = [r for r in (ai.item.code or {}).get("removed", []) if r.get("kind") != "env" and r.get("top", True)]
    names = [r["name"] for r in gone]
    if not names:
        tc = for_target(ai.item, target)
        names = [*tc.removed, *tc.removed_guards]
    return list(dict.fromkeys(names))[:3]


def _evidence(ai: AnalysedItem, target: str, rule: dict[str, Any]) -> dict[str, str]:
    """Each evidence name of `rule` that holds for the item, with what it rests on."""
    from ..analyse.target_code import for_target

    item, a = ai.item, ai.analysis
    code = item.code or {}
    from .mechanism import clean_title

    # the title's own first word, its tags and conventional prefix ("[ci, trainer] feat:") dropped
    title = clean_title(item.title)[0].lower().split()
    first = title[0].strip(",.:") if title else ""
    out: dict[str, str] = {}
    tc = for_target(item, target)
    if tc.removes_target:
        out["removes-target"] = ", ".join([*tc.removed, *tc.removed_guards][:3])
    if first in rule.get("remove_verbs", []) and code.get("removed"):
        out["removes-api"] = ", ".join(r["name"] for r in code["removed"][:3])
    added = [k["file"] for k in (code.get("device") or {}).get("kernels", []) if k.get("change") == "added"]
    if added:
        out["kernel-added"] = ", ".join(added[:3])
    if first in rule.get("add_verbs", []) and any(w.strip(".,:") in rule.get("kernel_words", []) for w in title):
        out["kernel-title"] = item.title
    # a gate the change adds or moves (a gate it only removes leaves no branch to test both sides of)
    gates = [g for g in code.get("version_gates") or [] if g.get("after") not in (None, "", "None")]
    if gates:
        from ..analyse.code_facts import gate_said

        out["version-gate"] = gate_said(gates[0])
    if a.item_kind in rule.get("kinds", []):
        out["kinds"] = a.item_kind
    words = rule.get("words", [])
    if words:
        from .explain import explain_body

        said = f"{item.title}\n" + " ".join(t for _, t in explain_body(item.body).motivation)[:4000]
        low = said.lower()
        # whole words: "nan" is not in "num_nans_k"
        hit = next((w for w in words if re.search(rf"(?<![\w]){re.escape(w)}(?![\w])", low)), "")
        if hit:
            out["words"] = hit
    if a.perf_claims:
        out["claims"] = a.perf_claims[0].source
    topics = set(a.topics) & set(rule.get("topics", []))
    if topics:
        out["topics"] = ", ".join(sorted(topics))
    return out


def change_kind(ai: AnalysedItem, target: str = "ascend") -> ChangeKind:
    """The first kind of dives.toml [[kind]] whose evidence holds (`any` of its names, or `all` of them)."""
    for rule in kinds():
        found = _evidence(ai, target, rule)
        need_any, need_all = rule.get("any", []), rule.get("all", [])
        if need_all and all(n in found for n in need_all):
            return ChangeKind((rule["id"], "; ".join(f"{n}: {found[n]}" for n in need_all)))
        if need_any and any(n in found for n in need_any):
            n = next(n for n in need_any if n in found)
            return ChangeKind((rule["id"], f"{n}: {found[n]}"))
    return ChangeKind(("", ""))


