"""The team's judgment over one analysis, pure: a team label, or the calibration's move (analyse/learn.py), sets
the priority and grade the outputs show; the decision and the importance are derived again from them by the
same rule tables the analysis used (grades.toml [[decision]], priority.toml [importance]), so a moved item
obeys every rule a rule-made one does (docs are never "adapt now", housekeeping ranks below code).

What the rules said stays on the analysis (`Analysis.rules`), the label as the team gave it
(`Analysis.label`) and the move with the flags that made it (`Analysis.learned`): every output shows the
team's answer, marked as the team's, and the card says why it differs from the rules'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..models import Analysis, Text
from .flags import _score
from .learn import Calibration
from .ruleset import _Rule, _rule, _Scores, _scores, _text

__all__ = ["Judge", "tables_of"]

_LANGS = ("en", "zh")


def tables_of(priority: Mapping[str, Any], grades: Mapping[str, Any]) -> dict[str, Any]:
    """What judging reads of the rule files (priority.toml's [learning] and [importance], grades.toml's
    decisions), as plain data: kept with a stored calibration, so a read needs no rule file parsed."""
    return {"learning": dict(priority.get("learning", {})), "importance": dict(priority.get("importance", {})),
            "decision": list(grades.get("decision", []))}


class Judge:
    """The decision rules, importance scores and reason texts, compiled from the rule tables once."""

    def __init__(self, tables: Mapping[str, Any], focus_weights: Mapping[str, float], focus: list[str]) -> None:
        self.decisions: list[_Rule] = [_rule(r, (r["decision"], _text(r.get("reason"), "grades.decision")))
                                       for r in tables.get("decision", [])]
        self.importance: _Scores = _scores(tables.get("importance", {}))
        self.factor = float(tables.get("importance", {}).get("focus_weight_factor", 1.0))
        texts = tables.get("learning", {}).get("text", {})
        self.texts = {k: _text(v, f"priority.learning.text.{k}") for k, v in texts.items()}
        self.focus_weights, self.focus = dict(focus_weights), set(focus)

    def overlay(self, analysis: Analysis, label: Mapping[str, Any] | None, model: Calibration | None) -> None:
        """Lay the team's label (or, for an unlabelled item, the calibration's move) over `analysis`, in place."""
        if analysis.rules is not None or analysis.label is not None:
            return  # judged already (an item read twice)
        priority, grade = analysis.priority, analysis.grade
        learned = None
        if label is not None:
            priority, grade = label.get("priority") or priority, label.get("grade") or grade
        elif model is not None:
            learned = model.move(analysis.features, priority, grade)
            if learned:
                priority, grade = learned.get("priority", priority), learned.get("grade", grade)
        if label is None and learned is None:
            return
        analysis.label = dict(label) if label is not None else None
        analysis.learned = learned
        analysis.rules = {"priority": analysis.priority, "grade": analysis.grade, "decision": analysis.decision,
                          "importance": analysis.importance, "why": dict(analysis.why),
                          "grade_reason": dict(analysis.grade_reason)}
        if grade != analysis.grade:
            analysis.grade_reason = self._grade_reason(analysis, grade, label, learned)
        why = analysis.why
        if priority != analysis.priority:
            why = self._why(analysis.why, "label_why" if label is not None else "learned_why")
            if label is None and (learned or {}).get("by") and "kin_why" in self.texts:
                refs = ", ".join(learned["by"])
                why = {lang: self.texts["kin_why"][lang].format(refs=refs) for lang in _LANGS}
        analysis.priority, analysis.grade = priority, grade
        self._derive(analysis, why)

    def _derive(self, analysis: Analysis, why: Text) -> None:
        flags = {f for f in analysis.features
                 if not f.startswith(("grade:", "priority:", "why:", "repo:", "series:", "dir:"))}
        flags |= {f"grade:{analysis.grade}", f"priority:{analysis.priority}"}
        decision, reason = next((r.value for r in self.decisions if r.holds(flags)),
                                ("track-only", {lang: "-" for lang in _LANGS}))
        if analysis.item_kind in ("docs", "ci", "test") and decision == "adapt-now":  # never, whatever moved
            decision = "track-only"
        analysis.decision = decision
        analysis.decision_reason = {lang: reason.get(lang, "").format(why=why.get(lang, "")) for lang in _LANGS}
        analysis.importance = self._importance(analysis, flags)

    def _importance(self, analysis: Analysis, flags: set[str]) -> int:
        weights = [self.focus_weights.get(t, 1.0) for t in analysis.topics if t in self.focus]
        return _score(self.importance, flags, (max(weights) - 1.0) * self.factor if weights else 0.0)

    def _why(self, rules_why: Text, key: str) -> Text:
        return dict(self.texts.get(key) or rules_why)

    def _grade_reason(self, analysis: Analysis, grade: str, label: Mapping[str, Any] | None,
                      learned: Mapping[str, Any] | None) -> Text:
        key = "label_grade" if label is not None else "learned_grade"
        template = self.texts.get(key)
        if template is None:
            return dict(analysis.grade_reason)
        flags = ", ".join(name for name, _ in (learned or {}).get("moved_by", []))
        who = (label or {}).get("by") or ""
        shape = self.texts.get("label_who")
        out = {}
        for lang in _LANGS:
            by = shape[lang].format(who=who) if who and shape else ""
            out[lang] = template[lang].format(grade=grade, rules=analysis.grade, who=by, flags=flags,
                                              reason=analysis.grade_reason.get(lang, ""))
        return out
