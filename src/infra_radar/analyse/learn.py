"""The team's labels calibrate the rules for the items they did not label: a small linear model over the rules'
own flags, pure Python and deterministic.

Each labelled item is one example: the flags the rules computed for it (`Analysis.features`: kind, topics,
grade, risks, focus, native, size marks, the priority rule that decided, the repository ...) and how far the
team's label lies from the rules' answer, in steps (none < P2 < P1 < P0; S < M < L). A ridge regression, solved
by coordinate descent over a fixed number of sweeps in a fixed order, gives every flag seen on enough labelled
items a weight in steps; an unlabelled item's shift is the sum of its flags' weights, and a shift of at least
`threshold` moves it one step, never more, and only with precedent: at least `min_precedents` labelled items
the rules answered alike and the team moved the same way must resemble it (Jaccard over their flags, a flag
weighing more the fewer labelled items carry it). The weights are the explanation: the flags that moved an item are named on its card.

The model may not override the hard rules (priority.toml [learning]): items it never moves (bots, noise,
CI), ceilings (a backport is at most P1; docs, tests and releases at most P1), grades it never moves (docs, CI,
tests, dependency bumps) and floors (target-platform work stays at P1 or above, silent accuracy corruption at
P0). The merged PRs of a labelled team window that the team did not list are examples too (at most P2, at
`unlisted_weight`), and the promotion threshold is raised until the calibration ranks at most
`max_unlisted_high` of them P0/P1. The decision and importance are re-derived from the moved priority and
grade by the rules' own tables (analyse/judge.py), so docs are never "adapt now".
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GRADE_STEPS", "PRIORITY_STEPS", "Calibration", "Example", "Limits", "fit", "limits_of"]

PRIORITY_STEPS = ("none", "P2", "P1", "P0")
GRADE_STEPS = ("S", "M", "L")
_STEPS = {"priority": PRIORITY_STEPS, "grade": GRADE_STEPS}
_SWEEPS = 30
_HIGH = ("P0", "P1")


@dataclass(frozen=True, slots=True)
class Example:
    """One item the team judged: the rules' flags and answers, and the team's (None: that field not labelled).
    `listed` False: a merged PR of a labelled window the team did not list (at most P2 for the team)."""

    features: tuple[str, ...]
    priority: str
    grade: str
    label_priority: str | Sequence[str] | None = None  # several: any of them is the team's answer
    label_grade: str | Sequence[str] | None = None
    listed: bool = True
    ref: str = ""  # the labelled item (`owner/name#n`): named by the moves its label makes on kin items


@dataclass(frozen=True, slots=True)
class _Cond:
    all: frozenset[str]
    any: frozenset[str]
    none: frozenset[str]
    value: str

    def holds(self, flags: set[str] | frozenset[str]) -> bool:
        return self.all <= flags and not (self.none & flags) and (not self.any or bool(self.any & flags))


@dataclass(frozen=True, slots=True)
class Limits:
    """The learning's settings and the hard rules it may not override (priority.toml [learning])."""

    l2: float = 2.0
    threshold: float = 0.6
    min_support: int = 2
    min_labels: int = 3
    max_unlisted_high: float = 0.30
    unlisted_weight: float = 0.5
    min_precedents: int = 2  # labelled items the team moved the same way that a moved item must resemble
    similarity: float = 0.6  # ... by this share of their flags (Jaccard, rarer flags weighing more) at least
    # kin of a labelled item (its series: title words shared at this Jaccard with at least `kin_words` of them;
    # or its files and mechanism: a changed directory and the rule that decided) follow its label's direction
    kin_title: float = 0.6
    kin_words: int = 3
    keep: tuple[_Cond, ...] = ()  # never moved
    keep_grade: tuple[_Cond, ...] = ()  # grade never moved
    priority_max: tuple[_Cond, ...] = ()
    priority_min: tuple[_Cond, ...] = ()  # floors that hold only where the rules ranked at least that high


def _conds(entries: Iterable[Mapping[str, Any]], key: str) -> tuple[_Cond, ...]:
    return tuple(_Cond(frozenset(e.get("all", [])), frozenset(e.get("any", [])), frozenset(e.get("none", [])),
                       str(e.get(key, ""))) for e in entries)


def limits_of(data: Mapping[str, Any]) -> Limits:
    """The [learning] table of priority.toml as Limits."""
    return Limits(
        l2=float(data.get("l2", 2.0)), threshold=float(data.get("threshold", 0.6)),
        min_support=int(data.get("min_support", 2)), min_labels=int(data.get("min_labels", 3)),
        max_unlisted_high=float(data.get("max_unlisted_high", 0.30)),
        unlisted_weight=float(data.get("unlisted_weight", 0.5)),
        min_precedents=int(data.get("min_precedents", 2)), similarity=float(data.get("similarity", 0.6)),
        kin_title=float(data.get("kin_title", 0.6)), kin_words=int(data.get("kin_words", 3)),
        keep=_conds(data.get("keep", []), "why"), keep_grade=_conds(data.get("keep_grade", []), "why"),
        priority_max=_conds(data.get("priority_max", []), "max"),
        priority_min=_conds(data.get("priority_min", []), "min"),
    )


@dataclass(slots=True)
class Calibration:
    """Weights per flag (in steps) for priority and grade, and the thresholds that turn a shift into a move."""

    priority: dict[str, float] = field(default_factory=dict)
    grade: dict[str, float] = field(default_factory=dict)
    threshold: float = 0.6
    up_threshold: float = 0.6  # priority promotions (raised to keep unlisted merged PRs out of P0/P1)
    labels: int = 0
    support: dict[str, int] = field(default_factory=dict)  # flag -> labelled items that carry it
    limits: Limits = field(default_factory=Limits)
    # field -> the labelled items the team moved away from the rules' answer: (rules' answer, direction, flags,
    # the labelled item)
    precedents: dict[str, list[tuple[str, int, frozenset[str], str]]] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)  # flag -> labelled items that carry it (all flags)
    kin_up: bool = True  # kin may promote (off when that would rank too many unlisted merged PRs P0/P1)

    def as_data(self) -> dict[str, Any]:
        """JSON-able (what the store keeps under the digest of its inputs)."""
        return {"priority": self.priority, "grade": self.grade, "threshold": self.threshold,
                "up_threshold": self.up_threshold, "labels": self.labels, "support": self.support,
                "precedents": {name: [[row[0], row[1], sorted(row[2]), row[3] if len(row) > 3 else ""] for row in rows]
                               for name, rows in self.precedents.items()}, "seen": self.seen,
                "kin_up": self.kin_up}

    @classmethod
    def from_data(cls, data: Mapping[str, Any], limits: Limits) -> Calibration:
        precedents = {name: [(str(row[0]), int(row[1]), frozenset(row[2]), str(row[3]) if len(row) > 3 else "")
                             for row in rows]
                      for name, rows in data.get("precedents", {}).items()}
        return cls({k: float(v) for k, v in data.get("priority", {}).items()},
                   {k: float(v) for k, v in data.get("grade", {}).items()},
                   float(data.get("threshold", limits.threshold)), float(data.get("up_threshold", limits.threshold)),
                   int(data.get("labels", 0)), {k: int(v) for k, v in data.get("support", {}).items()}, limits,
                   precedents, {k: int(v) for k, v in data.get("seen", {}).items()}, bool(data.get("kin_up", True)))

    @property
    def empty(self) -> bool:
        return not self.priority and not self.grade and not any(self.precedents.values())

    def move(self, features: Sequence[str], priority: str, grade: str) -> dict[str, Any] | None:
        """The calibration's move of one unlabelled item: {"priority": ..., "grade": ..., "moved_by":
        [[flag, weight], ...]} with the fields it changed, or None when it leaves the item as the rules put it."""
        flags = frozenset(features)
        if self.empty or any(c.holds(flags) for c in self.limits.keep):
            return None
        out: dict[str, Any] = {}
        reasons: list[tuple[str, float]] = []
        kin: list[str] = []
        new_priority, why = self._step("priority", flags, priority)
        if new_priority == priority:  # the weights leave it: a labelled kin item may move it its label's way
            new_priority, by = self._kin_step("priority", flags, priority)
            why, kin = [(f"label:{r}", 1.0) for r in by], kin + by
        new_priority = self._bounded(flags, priority, new_priority)
        if new_priority != priority:
            out["priority"] = new_priority
            reasons += why
        elif kin:
            kin = []
        if not any(c.holds(flags) for c in self.limits.keep_grade):
            new_grade, why = self._step("grade", flags, grade)
            if new_grade == grade:
                new_grade, by = self._kin_step("grade", flags, grade)
                why = [(f"label:{r}", 1.0) for r in by]
                if new_grade != grade:
                    kin += [r for r in by if r not in kin]
            if new_grade != grade:
                out["grade"] = new_grade
                reasons += why
        if not out:
            return None
        out["moved_by"] = [[name, round(w, 3)] for name, w in reasons]
        if kin:
            out["by"] = kin  # the labelled items whose labels moved it (kin: same series, or files and mechanism)
        return out

    def _kin_step(self, name: str, flags: frozenset[str], value: str) -> tuple[str, list[str]]:
        """One step the labels of this item's kin agree on: labelled items the rules answered alike and the team
        moved, sharing its series (most of the title's words) or its files and mechanism (a changed directory
        and the rule that decided). Kin that disagree move nothing."""
        steps = _STEPS[name]
        if value not in steps:
            return value, []
        signs: dict[int, list[str]] = {}
        for was, sign, other, *ref in self.precedents.get(name, ()):
            ref = ref[0] if ref else ""
            if was == value and ref and _kin(flags, other, self.limits):
                signs.setdefault(sign, []).append(ref)
        if len(signs) != 1:
            return value, []
        sign, refs = next(iter(signs.items()))
        if sign > 0 and name == "priority" and not self.kin_up:
            return value, []
        at = steps.index(value) + sign
        if not 0 <= at < len(steps):
            return value, []
        return steps[at], sorted(set(refs))[:3]

    def shift(self, name: str, flags: Iterable[str]) -> float:
        weights = self.priority if name == "priority" else self.grade
        return sum(weights.get(f, 0.0) for f in flags)

    def _step(self, name: str, flags: frozenset[str], value: str) -> tuple[str, list[tuple[str, float]]]:
        steps = _STEPS[name]
        if value not in steps:
            return value, []
        weights = self.priority if name == "priority" else self.grade
        total = sum(weights.get(f, 0.0) for f in flags)
        up = self.up_threshold if name == "priority" else self.threshold
        at = steps.index(value)
        if total >= up and at + 1 < len(steps):
            sign, at = 1, at + 1
        elif total <= -self.threshold and at > 0:
            sign, at = -1, at - 1
        else:
            return value, []
        if not self._precedented(name, flags, value, sign):
            return value, []
        moved = sorted(((f, weights[f]) for f in flags if weights.get(f, 0.0) * sign > 0),
                       key=lambda fw: (-abs(fw[1]), fw[0]))
        return steps[at], moved[:3]

    def _precedented(self, name: str, flags: frozenset[str], value: str, sign: int) -> bool:
        """At least `min_precedents` labelled items the rules answered alike and the team moved the same way, each
        sharing at least `similarity` of its flags with this item: a move follows what the team did to items
        like it, never a sum of weights alone."""
        need, like = self.limits.min_precedents, self.limits.similarity
        found = 0
        for was, direction, other, *_ in self.precedents.get(name, ()):
            if was == value and direction == sign and self._similarity(flags, other) >= like:
                found += 1
                if found >= need:
                    return True
        return need <= 0

    def _similarity(self, flags: frozenset[str], other: frozenset[str]) -> float:
        """Jaccard of two items' flags, each flag weighted by how rare it is among the labelled items (log of
        the inverse share): flags nearly every item carries ("merged", "code") tell little."""
        total = self.labels + 1

        def weight(flag: str) -> float:
            return math.log(total / (self.seen.get(flag, 0) + 1)) + 1e-6

        flags, other = _unkin(flags), _unkin(other)  # kin features tie items by name, not by what the rules saw
        union = sum(weight(f) for f in flags | other)
        return sum(weight(f) for f in flags & other) / union if union else 0.0

    def _bounded(self, flags: frozenset[str], rules: str, moved: str) -> str:
        """`moved` within the hard rules: ceilings always, floors where the rules ranked at least that high."""
        if moved == rules:
            return moved
        at = PRIORITY_STEPS.index(moved)
        for cap in self.limits.priority_max:
            if cap.holds(flags) and cap.value in PRIORITY_STEPS:
                at = min(at, max(PRIORITY_STEPS.index(cap.value), PRIORITY_STEPS.index(rules)))
        for floor in self.limits.priority_min:
            if floor.holds(flags) and floor.value in PRIORITY_STEPS:
                at = max(at, min(PRIORITY_STEPS.index(floor.value), PRIORITY_STEPS.index(rules)))
        return PRIORITY_STEPS[at]


_KIN = ("series:", "dir:")


def _unkin(flags: frozenset[str]) -> frozenset[str]:
    return frozenset(f for f in flags if not f.startswith(_KIN))


def _series(flags: Iterable[str]) -> set[str]:
    return {w for f in flags if f.startswith("series:") for w in f[7:].split("-") if w}


def _kin(flags: frozenset[str], other: frozenset[str], limits: Limits) -> bool:
    """Two items of one repository and one series (most title words shared) or one place and mechanism (a changed
    code directory and most of their topics)."""
    if not {f for f in flags if f.startswith("repo:")} & {f for f in other if f.startswith("repo:")}:
        return False  # kin live in one repository
    mine, theirs = _series(flags), _series(other)
    shared = mine & theirs
    if len(shared) >= limits.kin_words and len(shared) >= limits.kin_title * len(mine | theirs):
        return True
    # one place and mechanism: a changed code directory and most of the topics (the same share as a series)
    dirs = {f for f in flags if f.startswith("dir:")} & {f for f in other if f.startswith("dir:")}
    mine = {f for f in flags if f.startswith("topic:")}
    theirs = {f for f in other if f.startswith("topic:")}
    return bool(dirs and mine & theirs) and len(mine & theirs) >= limits.kin_title * len(mine | theirs)


def _residual(name: str, rules: str, label: str | Sequence[str] | None) -> float | None:
    """Steps from the rules' answer to the team's (to the nearest accepted one when several are)."""
    steps = _STEPS[name]
    accepted = [label] if isinstance(label, str) else list(label or [])
    accepted = [a for a in accepted if a in steps]
    if not accepted or rules not in steps:
        return None
    here = steps.index(rules)
    return float(min((steps.index(a) - here for a in accepted), key=lambda d: (abs(d), d)))


def _ridge(rows: list[tuple[tuple[str, ...], float, float]], l2: float, keep: set[str]) -> dict[str, float]:
    """Ridge regression without intercept over binary features: minimise sum w*(d - x.b)^2 + l2*|b|^2 by coordinate
    descent, `_SWEEPS` sweeps over the features in sorted order (the same answer on every run)."""
    names = sorted(keep)
    at = {n: i for i, n in enumerate(names)}
    members: list[list[int]] = [[] for _ in names]
    rows_x = []
    for r, (features, _, _) in enumerate(rows):
        xs = sorted({at[f] for f in features if f in at})
        rows_x.append(xs)
        for j in xs:
            members[j].append(r)
    resid = [d for _, d, _ in rows]
    weight = [w for _, _, w in rows]
    mass = [sum(weight[r] for r in m) + l2 for m in members]
    beta = [0.0] * len(names)
    for _ in range(_SWEEPS):
        for j, rows_j in enumerate(members):
            if not rows_j:
                continue
            old = beta[j]
            new = (sum(weight[r] * resid[r] for r in rows_j) + (mass[j] - l2) * old) / mass[j]
            if new != old:
                delta = new - old
                for r in rows_j:
                    resid[r] -= delta
                beta[j] = new
    return {n: round(b, 6) for n, b in zip(names, beta, strict=True) if abs(b) >= 1e-4}


def fit(examples: Sequence[Example], limits: Limits) -> Calibration:
    """The calibration the examples give (empty with fewer than `limits.min_labels` labelled items); the same
    whatever the order of the examples."""
    examples = sorted(examples, key=lambda e: (sorted(e.features), e.priority, e.grade, str(e.label_priority),
                                               str(e.label_grade), e.listed, e.ref))
    listed = [e for e in examples if e.listed and (e.label_priority or e.label_grade)]
    if len(listed) < limits.min_labels:
        return Calibration(threshold=limits.threshold, up_threshold=limits.threshold, labels=len(listed),
                           limits=limits)
    support: dict[str, int] = {}
    for e in listed:
        for f in set(e.features):
            support[f] = support.get(f, 0) + 1
    keep = {f for f, n in support.items() if n >= limits.min_support and not f.startswith(_KIN)}
    weights: dict[str, dict[str, float]] = {}
    precedents: dict[str, list[tuple[str, int, frozenset[str], str]]] = {"priority": [], "grade": []}
    for name in ("priority", "grade"):
        rows = []
        for e in examples:
            rules = e.priority if name == "priority" else e.grade
            if e.listed:
                d = _residual(name, rules, e.label_priority if name == "priority" else e.label_grade)
                w = 1.0
            elif name == "priority":  # the team did not list it: at most P2 for the team
                d, w = (_residual(name, rules, "P2") if rules in _HIGH else 0.0), limits.unlisted_weight
            else:
                d = None
            if d is not None:
                rows.append((e.features, d, w))
                if e.listed and d:
                    precedents[name].append((rules, 1 if d > 0 else -1, frozenset(e.features), e.ref))
        weights[name] = _ridge(rows, limits.l2, keep) if rows else {}
    model = Calibration(weights["priority"], weights["grade"], limits.threshold, limits.threshold, len(listed),
                        {f: n for f, n in sorted(support.items()) if f in keep}, limits,
                        {name: sorted(rows, key=lambda r: (r[0], r[1], sorted(r[2]), r[3]))
                         for name, rows in precedents.items()},
                        dict(sorted(support.items())))
    _guard_unlisted(model, [e for e in examples if not e.listed])
    return model


def _guard_unlisted(model: Calibration, unlisted: Sequence[Example]) -> None:
    """Raise the promotion threshold until the calibration ranks at most `max_unlisted_high` of the unlisted
    merged PRs P0/P1 (or no more than the rules did, when the rules alone rank more)."""
    if not unlisted:
        return
    rules_share = sum(e.priority in _HIGH for e in unlisted) / len(unlisted)
    bound = max(model.limits.max_unlisted_high, rules_share)
    for kin_up in (True, False):  # with promotions by kin first; without them when no threshold holds it back
        model.kin_up, model.up_threshold = kin_up, model.limits.threshold
        for _ in range(40):
            high = 0
            for e in unlisted:
                moved = model.move(e.features, e.priority, e.grade)
                high += ((moved or {}).get("priority", e.priority)) in _HIGH
            if high / len(unlisted) <= bound + 1e-9:
                return
            model.up_threshold = round(model.up_threshold + 0.1, 3)


def digest(parts: Iterable[Any]) -> str:
    """The digest of what a calibration is fitted on (labels, windows, the rules' version): its cache key."""
    return hashlib.sha256(json.dumps(list(parts), sort_keys=True, default=str).encode("utf-8")).hexdigest()[:24]
