"""`radar eval` with learning: the figures the calibration (analyse/learn.py) gives, cross-validated so that no
item is scored by a calibration fitted on its own label.

The labels of the file are cut into folds: each team part (one team radar's day) is a fold of its own (leave
one team day out), the other labels go into `K` folds by a hash of their id (k-fold). An item of a fold is
scored by the calibration fitted on every other fold's labels (a team part's window's unlisted merged PRs
included) and on the team labels the store holds, except those of the fold's own items. The store's labels
themselves are never scored: the file is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..analyse.judge import Judge
from ..analyse.learn import Calibration, Example, fit, limits_of
from ..models import AnalysedItem
from .labels import Label, LabelFile, _is_team

__all__ = ["K", "cross_validated", "examples_of", "fold_of", "judged"]

K = 5


def fold_of(label: Label) -> str:
    """The fold of a label: its team part, else one of K folds by the sha1 of its id."""
    if _is_team(label.split):
        return label.split
    return f"fold-{int(hashlib.sha1(label.item.strip().encode('utf-8')).hexdigest(), 16) % K}"


def _scalar(values: list[str] | None) -> str | None:
    return values[0] if values else None


def examples_of(labels: Sequence[Label], found: Mapping[str, AnalysedItem]) -> list[Example]:
    """The labels as examples of the calibration (the rules' flags and answers of their items in `found`)."""
    out = []
    for label in labels:
        analysed = found.get(f"{label.repo.lower()}#{label.number}")
        if analysed is None:
            continue
        a = analysed.analysis
        out.append(Example(tuple(a.features), a.priority, a.grade, tuple(label.values.get("priority") or ()) or None,
                           tuple(label.values.get("grade") or ()) or None, ref=label.item.strip()))
    return out


def _unlisted(part: str, labels: LabelFile, windows: Mapping[str, Sequence[AnalysedItem]]) -> list[Example]:
    listed = {(lab.repo.lower(), lab.number) for lab in labels.labels if lab.split == part}
    return [Example(tuple(ai.analysis.features), ai.analysis.priority, ai.analysis.grade, listed=False)
            for ai in windows.get(part, []) if (ai.item.repo.lower(), ai.item.number) not in listed]


def cross_validated(labels: LabelFile, found: Mapping[str, AnalysedItem],
                    windows: Mapping[str, Sequence[AnalysedItem]], radar: Mapping[str, Sequence[AnalysedItem]],
                    store_examples: Mapping[str, Example], tables: Mapping, focus_weights: Mapping[str, float],
                    focus: list[str]) -> tuple[dict[str, AnalysedItem], dict[str, list[AnalysedItem]],
                                               dict[str, list[AnalysedItem]], dict[str, Calibration]]:
    """(found, windows, radar) as the calibration of each item's fold judges them, and the calibration per fold.
    `store_examples` are the store's labelled items by `owner/name#n` (lower-case)."""
    limits = limits_of(tables.get("learning", {}))
    judge = Judge(tables, focus_weights, focus)
    folds: dict[str, list[Label]] = {}
    for label in labels.labels:
        folds.setdefault(fold_of(label), []).append(label)
    models: dict[str, Calibration] = {}
    out_found: dict[str, AnalysedItem] = {}
    out_windows: dict[str, list[AnalysedItem]] = {}
    out_radar: dict[str, list[AnalysedItem]] = {}
    for name in sorted(folds):
        inside = {f"{lab.repo.lower()}#{lab.number}" for lab in folds[name]}
        train = [lab for other, labs in folds.items() if other != name for lab in labs]
        examples = examples_of(train, found)
        examples += [ex for key, ex in store_examples.items() if key not in inside]
        for part in {lab.split for lab in train if _is_team(lab.split)}:
            examples += _unlisted(part, labels, windows)
        model = models[name] = fit(examples, limits)
        for key in inside:
            if key in found:
                out_found[key] = judged(found[key], judge, model)
        if name in windows:
            out_windows[name] = [judged(ai, judge, model) for ai in windows[name]]
        if name in radar:
            out_radar[name] = [judged(ai, judge, model) for ai in radar[name]]
    return out_found, out_windows, out_radar, models


def judged(ai: AnalysedItem, judge: Judge, model: Calibration) -> AnalysedItem:
    """A copy of `ai` as `model` judges it (the stored analysis is left as it is)."""
    copy = AnalysedItem(ai.item, replace(ai.analysis, label=None, rules=None, learned=None))
    judge.overlay(copy.analysis, None, model)
    return copy
