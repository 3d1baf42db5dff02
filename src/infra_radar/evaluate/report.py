"""What `radar eval` prints: the scores of each part as text or JSON, the calibration learnt from the team's
labels beside the rules' own, the moves a labelled kin item made, and the goals with their cross-validated
figures (evaluate/score.py computes them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .labels import SCALAR_FIELDS, _is_team
from .score import (
    TEAM_THRESHOLDS,
    THRESHOLDS,
    Evaluation,
    PartScore,
    Report,
    check,
)


def kin_text(evaluation: Evaluation) -> str:
    """One line on the moves labelled kin made (cross-validated), and a few of them."""
    moves = evaluation.kin
    if not moves:
        return "moved by a labelled kin item (series, or files and mechanism), cross-validated: none"
    right = sum(m["right"] is True for m in moves)
    fixed = sum(m["right"] is True and m["was_right"] is False for m in moves)
    broke = sum(m["right"] is False and m["was_right"] is True for m in moves)
    shown = "; ".join(f"{m['item']} {m['field']} {m['rules']} -> {m['moved']} by {', '.join(m['by'])}"
                      for m in moves[:4])
    more = f"; {len(moves) - 4} more" if len(moves) > 4 else ""
    return (f"moved by a labelled kin item (series, or files and mechanism), cross-validated: {len(moves)} move(s), "
            f"{right} to the label's answer ({fixed} corrected, {broke} made wrong): {shown}{more}")


def goals_text(evaluation: Evaluation) -> str:
    """The goals `--check` holds the whole set and each team day to, each figure beside its cross-validated one."""
    rules, learned = evaluation.rules, evaluation.learned
    lines = ["goals (the rules; cross-validated with learning: leave one team day out):"]

    def row(label: str, value: float | None, cv: float | None, goal: str) -> None:
        lines.append(f"  {label:<34}{_fmt(value):<8}{goal:<10}cross-validated {_fmt(cv)}")

    a, b = rules.parts["all"], learned.parts.get("all", rules.parts["all"])
    row("grade (all)", a.fields["grade"].accuracy, b.fields["grade"].accuracy, f">= {THRESHOLDS['grade']:.2f}")
    row("P0/P1 recall (all)", a.high_recall, b.high_recall, f">= {THRESHOLDS['high_recall']:.2f}")
    for name, part in rules.parts.items():
        if not _is_team(name):
            continue
        cv = learned.parts.get(name, part)
        row(f"grade ({name})", part.fields["grade"].accuracy, cv.fields["grade"].accuracy,
            f">= {TEAM_THRESHOLDS['grade']:.2f}")
        row(f"P0/P1 recall ({name})", part.high_recall, cv.high_recall, f">= {TEAM_THRESHOLDS['high_recall']:.2f}")
        row(f"unlisted merged PRs P0/P1 ({name})", part.unlisted_high_share, cv.unlisted_high_share,
            f"<= {TEAM_THRESHOLDS['unlisted_high']:.2f}")
    return "\n".join(lines)


def learning_text(evaluation: Evaluation, parts: Sequence[str] | None = None) -> str:
    """The rules' figures beside the cross-validated calibration's (and the radar's as shown), part by part."""
    lines = []
    blocks = [("learned", evaluation.learned)] + ([("shown", evaluation.shown)] if evaluation.shown else [])
    fitted = ", ".join(f"{name} {n}" for name, n in sorted(evaluation.folds.items()))
    for name, report in blocks:
        if name == "learned":
            lines.append("with learning, cross-validated (leave one team day out; "
                         f"{_k()}-fold on the other labels; labels fitted per fold: {fitted or '-'}):")
        else:
            lines.append("as the radar shows them (the store's team labels and calibration):")
        lines.append(f"  {'part':<18}{'priority':<17}{'grade':<17}{'P0/P1 recall':<17}unlisted P0/P1")
        for part in parts or list(evaluation.rules.parts):
            if part not in report.parts:
                continue
            a, b = evaluation.rules.parts[part], report.parts[part]
            cells = [(a.fields["priority"].accuracy, b.fields["priority"].accuracy),
                     (a.fields["grade"].accuracy, b.fields["grade"].accuracy),
                     (a.high_recall, b.high_recall), (a.unlisted_high_share, b.unlisted_high_share)]
            lines.append(f"  {part:<18}" + "".join(f"{_fmt(x)} -> {_fmt(y)}".ljust(17) for x, y in cells).rstrip())
    return "\n".join(lines)


def _k() -> int:
    from .learning import K

    return K


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def report_text(report: Report, parts: Sequence[str] | None = None, details: bool = True) -> str:
    """A plain-text report: one block per part (team parts last), confusion matrices for the whole set."""
    lines = []
    parts = list(parts) if parts else list(report.parts)
    for name in parts:
        part = report.parts[name]
        f = part.fields
        lines.append(f"[{name}] {part.items} item(s)")
        for field_name in SCALAR_FIELDS:
            score = f[field_name]
            lines.append(f"  {field_name:<9} accuracy {_fmt(score.accuracy)}  ({score.correct}/{score.scored})")
        t, c = part.topics, part.claims
        lines.append(f"  topics    micro-F1 {_fmt(t.f1)}  precision {_fmt(t.precision)}  recall {_fmt(t.recall)}"
                     f"  ({t.scored} items)")
        lines.append(f"  claims    precision {_fmt(c.precision)}  recall {_fmt(c.recall)}"
                     f"  ({c.matched} matched, {c.predicted} predicted, {c.labelled} labelled)")
        lines.append(f"  P0/P1 ranked none: {len(part.high_as_none)}")
        lines.append(f"  P0/P1 recall {_fmt(part.high_recall)}  ({len(part.high_found)}/{part.high_labelled})")
        if part.unlisted:
            lines.append(f"  unlisted merged PRs ranked P0/P1 {_fmt(part.unlisted_high_share)}  "
                         f"({len(part.unlisted_high)}/{part.unlisted})")
        if part.in_window or part.outside_window:
            total = len(part.in_window) + len(part.outside_window)
            lines.append(f"  team items in the radar's window {_fmt(part.in_window_share)}  "
                         f"({len(part.in_window)}/{total})"
                         + (f"; outside: {', '.join(part.outside_window)}" if part.outside_window else ""))
    if details and "all" in parts:
        lines += _matrices(report.parts["all"])
    if report.missing:
        lines.append(f"missing from the store ({len(report.missing)}): " + ", ".join(report.missing))
    lines += [f"label problem: {p}" for p in report.problems]
    if report.more_problems:
        lines.append(f"label problem: {report.more_problems:,} more not shown")
    return "\n".join(lines)


def _matrices(part: PartScore) -> list[str]:
    lines = []
    for name in ("grade", "kind", "priority"):
        matrix = part.fields[name].confusion
        if not matrix:
            continue
        cols = sorted({p for row in matrix.values() for p in row})
        width = max(8, *(len(c) + 1 for c in cols))
        lines.append(f"{name} confusion (rows labelled, columns predicted):")
        lines.append(" " * 15 + "".join(c.rjust(width) for c in cols))
        for row in sorted(matrix):
            lines.append(f"  {row:<13}" + "".join(str(matrix[row].get(c, 0)).rjust(width) for c in cols))
    return lines


def report_json(report: Report) -> dict[str, Any]:
    """The report as plain data (the `--json` output)."""
    def part_json(part: PartScore) -> dict[str, Any]:
        return {
            "items": part.items,
            **{name: {"accuracy": s.accuracy, "correct": s.correct, "scored": s.scored, "confusion": s.confusion,
                      "wrong": part.wrong.get(name, [])} for name, s in part.fields.items()},
            "topics": {"f1": part.topics.f1, "precision": part.topics.precision, "recall": part.topics.recall,
                       "tp": part.topics.tp, "fp": part.topics.fp, "fn": part.topics.fn, "scored": part.topics.scored},
            "claims": {"precision": part.claims.precision, "recall": part.claims.recall,
                       "matched": part.claims.matched, "predicted": part.claims.predicted,
                       "labelled": part.claims.labelled, "misses": part.claims.misses, "extras": part.claims.extras},
            "high_as_none": part.high_as_none,
            "high_recall": part.high_recall, "high_found": part.high_found, "high_labelled": part.high_labelled,
            "unlisted": part.unlisted, "unlisted_high": part.unlisted_high,
            "unlisted_high_share": part.unlisted_high_share,
            "in_window": part.in_window, "outside_window": part.outside_window,
            "in_window_share": part.in_window_share,
        }
    return {"labels": report.path, "parts": {name: part_json(p) for name, p in report.parts.items()},
            "missing": report.missing, "problems": report.problems, "more_problems": report.more_problems,
            "failures": check(report)}
