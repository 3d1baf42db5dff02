"""Scoring the rules against a labelled set: accuracy, confusion matrices, topic F1, claim precision/recall.
The labels are read and checked by evaluate/labels.py; this module scores and reports them.

A labels file is JSON Lines, one object per item: `{"item": "OWNER/NAME#N", "kind", "topics",
"priority", "grade", "decision", "perf_claims"}`. Every field but `item` is optional; unknown
fields are ignored. A scalar field may hold a list of acceptable values. `topics` is the set of
topics; a topic ending in `?` is optional (a hit counts, a miss does not), and a list of lists
gives alternative sets (the one closest to the prediction is used). A claim is
`{"metric", "before", "after", "unit"}` (optionally `ratio`, `change_pct`); `metric` may be a list
of acceptable names. See docs/labelling.md.

The set is split by a hash of the item id: `sha1(item) % 10 < 3` is the held-out part (an explicit
`"split": "tune" | "holdout"` in a line wins). Rules are tuned on the rest; both parts are reported.

A line with `"part": "team..."` (e.g. `"team"`, `"team-2026-07-02"`) labels an item as the team's own
daily radar ranked it; each such part is scored on its own and is not in all/tune/holdout. Its
checks are the recall of the team's P0/P1 items (ranked P0/P1 by the rules), the grade, and, when a
line `{"window": {"part": ..., "since": ..., "until": ..., "repos": [...]}}` gives the radar's window,
the share of that window's merged PRs the team did not list that the rules rank P0/P1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models import DECISIONS, GRADES, PRIORITIES, AnalysedItem, Analysis, PerfClaim
from .labels import PARTS, SCALAR_FIELDS, Label, LabelFile, _is_team, _metric_key, load_labels, split_of

__all__ = [
    "PARTS", "THRESHOLDS", "ClaimScore", "FieldScore", "Label", "LabelFile", "PartScore", "Report",
    "TopicScore", "check", "evaluate", "evaluate_store", "load_labels",
    "split_of",
]

# Minimum figures on the whole set, and the largest lead of the tune part over the held-out part.
THRESHOLDS: dict[str, float] = {
    "grade": 0.85, "kind": 0.90, "priority": 0.85, "topics_f1": 0.80,
    "claims_precision": 0.95, "claims_recall": 0.90, "max_gap": 0.10,
    "high_recall": 0.90,  # labelled P0/P1 items ranked P0/P1 (the whole set; team days: TEAM_THRESHOLDS)
}
# Figures that tune and held-out must each reach (their floor is the whole set's threshold).
PART_THRESHOLDS: dict[str, float] = {"priority": 0.85, "grade": 0.85}
# Floors of every team part.
TEAM_THRESHOLDS: dict[str, float] = {"high_recall": 0.90, "grade": 0.85, "unlisted_high": 0.30}
_TOLERANCE = 0.005  # before/after/ratio agree within 0.5% relative


# --------------------------------------------------------------------------- scores


@dataclass(slots=True)
class FieldScore:
    """Accuracy of one scalar field and its confusion matrix (labelled -> predicted -> count)."""

    scored: int = 0
    correct: int = 0
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None


@dataclass(slots=True)
class TopicScore:
    """Micro-averaged topic precision, recall and F1 over the items that label topics."""

    scored: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        total = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / total if total else None


@dataclass(slots=True)
class ClaimScore:
    """Performance-claim precision and recall over the items that label claims."""

    scored: int = 0
    matched: int = 0
    predicted: int = 0
    labelled: int = 0
    misses: list[str] = field(default_factory=list)  # "item: metric" of unmatched labelled claims
    extras: list[str] = field(default_factory=list)  # "item: metric" of unmatched predicted claims

    @property
    def precision(self) -> float | None:
        return self.matched / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.labelled if self.labelled else None


@dataclass(slots=True)
class PartScore:
    """Every figure of one part of the set (all, tune or holdout)."""

    part: str
    items: int = 0
    fields: dict[str, FieldScore] = field(default_factory=lambda: {n: FieldScore() for n in SCALAR_FIELDS})
    topics: TopicScore = field(default_factory=TopicScore)
    claims: ClaimScore = field(default_factory=ClaimScore)
    high_as_none: list[str] = field(default_factory=list)  # labelled P0/P1, predicted "none"
    high_labelled: int = 0  # labelled P0/P1 only
    high_found: list[str] = field(default_factory=list)  # ... and ranked P0/P1
    unlisted: int = 0  # team parts: merged PRs of the window the team did not list
    unlisted_high: list[str] = field(default_factory=list)  # ... that the rules rank P0/P1
    in_window: list[str] = field(default_factory=list)  # team parts: listed items the radar's window holds
    outside_window: list[str] = field(default_factory=list)  # ... and those it does not
    wrong: dict[str, list[str]] = field(default_factory=dict)  # field -> "item: labelled -> predicted"

    def metrics(self) -> dict[str, float | None]:
        """The thresholded figures by name (None when nothing was scored)."""
        return {"grade": self.fields["grade"].accuracy, "kind": self.fields["kind"].accuracy,
                "priority": self.fields["priority"].accuracy, "topics_f1": self.topics.f1,
                "claims_precision": self.claims.precision, "claims_recall": self.claims.recall}

    @property
    def high_recall(self) -> float | None:
        """Labelled P0/P1 items ranked P0/P1 by the rules, over labelled P0/P1 items."""
        return len(self.high_found) / self.high_labelled if self.high_labelled else None

    @property
    def in_window_share(self) -> float | None:
        """The team's listed items that `radar daily` of the part's window holds: their share."""
        listed = len(self.in_window) + len(self.outside_window)
        return len(self.in_window) / listed if listed else None

    @property
    def unlisted_high_share(self) -> float | None:
        """Merged PRs of the window the team did not list, ranked P0/P1: their share."""
        return len(self.unlisted_high) / self.unlisted if self.unlisted else None


@dataclass(slots=True)
class Report:
    """The scores of every part, what was not found, and the problems of the labels file."""

    parts: dict[str, PartScore]
    missing: list[str]
    problems: list[str]
    path: str = ""
    more_problems: int = 0  # problems of the labels file counted past those kept (evaluate.labels.Problems)


def evaluate(labels: LabelFile, found: Mapping[str, AnalysedItem],
             windows: Mapping[str, Sequence[AnalysedItem]] | None = None,
             radar: Mapping[str, Sequence[AnalysedItem]] | None = None) -> Report:
    """Score `labels` against analysed items keyed by `owner/name#n` (lower-case); `windows` gives the
    analysed items of each team part's window (for the share of unlisted merged PRs ranked P0/P1), `radar`
    the items `radar daily` of that window holds (for the share of the team's items it holds)."""
    parts = {name: PartScore(name) for name in PARTS}
    for label in labels.labels:
        if _is_team(label.split) and label.split not in parts:
            parts[label.split] = PartScore(label.split)
    missing = []
    for label in labels.labels:
        analysed = found.get(f"{label.repo.lower()}#{label.number}")
        if analysed is None:
            missing.append(label.item)
            continue
        scored = (parts[label.split],) if _is_team(label.split) else (parts["all"], parts[label.split])
        for part in scored:
            _score_item(part, label, analysed.analysis)
    for name, in_window in (windows or {}).items():
        part = parts.setdefault(name, PartScore(name))
        listed = {(lab.repo.lower(), lab.number) for lab in labels.labels if lab.split == name}
        for analysed in in_window:
            item = analysed.item
            if item.kind != "pr" or item.state != "merged" or (item.repo.lower(), item.number) in listed:
                continue
            part.unlisted += 1
            if analysed.analysis.priority in ("P0", "P1"):
                part.unlisted_high.append(f"{item.repo}#{item.number}")
    for name, held in (radar or {}).items():
        part = parts.setdefault(name, PartScore(name))
        present = {(a.item.repo.lower(), a.item.number) for a in held}
        for lab in labels.labels:
            if lab.split == name:
                inside = (lab.repo.lower(), lab.number) in present
                (part.in_window if inside else part.outside_window).append(f"{lab.repo}#{lab.number}")
    return Report(parts, missing, list(labels.problems), labels.path, getattr(labels.problems, "more", 0))


def _score_item(part: PartScore, label: Label, analysis: Analysis) -> None:
    part.items += 1
    predicted = {"kind": analysis.item_kind, "priority": analysis.priority, "grade": analysis.grade,
                 "decision": analysis.decision}
    for name, accepted in label.values.items():
        _score_field(part, name, label.item, accepted, predicted[name])
    priority = label.values.get("priority")
    if priority and set(priority) <= {"P0", "P1"}:
        part.high_labelled += 1
        if analysis.priority in ("P0", "P1"):
            part.high_found.append(label.item)
        elif analysis.priority == "none":
            part.high_as_none.append(label.item)
    if label.topics is not None:
        _score_topics(part.topics, label.topics, set(analysis.topics))
    if label.claims is not None:
        _score_claims(part.claims, label.item, label.claims, analysis.perf_claims)


def _score_field(part: PartScore, name: str, item: str, accepted: list[str], got: str) -> None:
    score = part.fields[name]
    score.scored += 1
    hit = got in accepted
    score.correct += hit
    # With alternatives the matrix row is the accepted value that matched, else the first one.
    row = score.confusion.setdefault(got if hit else accepted[0], {})
    row[got] = row.get(got, 0) + 1
    if not hit:
        part.wrong.setdefault(name, []).append(f"{item}: {'/'.join(accepted)} -> {got}")


def _score_topics(score: TopicScore, alternatives: list[tuple[set[str], set[str]]], got: set[str]) -> None:
    def counts(required: set[str], optional: set[str]) -> tuple[int, int, int]:
        tp = len(got & (required | optional))
        return tp, len(got - required - optional), len(required - got)

    # The alternative with the fewest errors (then the most hits) is the reading the labeller meant.
    tp, fp, fn = min((counts(r, o) for r, o in alternatives), key=lambda c: (c[1] + c[2], -c[0]))
    score.scored += 1
    score.tp, score.fp, score.fn = score.tp + tp, score.fp + fp, score.fn + fn


def _score_claims(score: ClaimScore, item: str, labelled: list[dict[str, Any]], got: Sequence[PerfClaim]) -> None:
    score.scored += 1
    score.labelled += len(labelled)
    score.predicted += len(got)
    free = list(got)
    for claim in labelled:
        match = next((c for c in free if _claim_matches(claim, c)), None)
        if match is None:
            score.misses.append(f"{item}: {claim['shown']} {claim['before']} -> {claim['after']}")
            continue
        free.remove(match)
        score.matched += 1
    score.extras += [f"{item}: {c.metric} {c.before} -> {c.after}" for c in free]


def _claim_matches(label: dict[str, Any], claim: PerfClaim) -> bool:
    if _metric_key(claim.metric) not in label["metric"]:
        return False
    pairs = [(label["before"], claim.before), (label["after"], claim.after)]
    pairs += [(label[k], getattr(claim, k)) for k in ("ratio", "change_pct") if label[k] is not None]
    return all(_agree(want, have) for want, have in pairs)


def _agree(want: float | None, have: float | None) -> bool:
    if want is None or have is None:
        return want is None and have is None
    return abs(want - have) <= _TOLERANCE * max(abs(want), abs(have)) or want == have


# --------------------------------------------------------------------------- store, checks, output


@dataclass(slots=True)
class Evaluation:
    """The scores of a labels file: by the rules alone, cross-validated with learning (each item judged by the
    calibration fitted without its fold), and as the radar shows the items (the store's own team labels and
    calibration; None when the store holds no labels)."""

    rules: Report
    learned: Report
    shown: Report | None = None
    folds: dict[str, int] = field(default_factory=dict)  # fold -> labelled items the calibration was fitted on
    # the cross-validated moves a labelled kin item made (same series, or files and mechanism): item, field,
    # the rules' answer, the moved one, the labelled items that moved it, and whether it is now the label's
    kin: list[dict[str, Any]] = field(default_factory=list)


def evaluate_store(settings, engine, path: Path) -> Report:
    """Score a labels file against the items of the store by the rules alone (analysing what is not analysed)."""
    return evaluate_all(settings, engine, path, learning=False).rules


def evaluate_all(settings, engine, path: Path, learning: bool = True) -> Evaluation:
    """Score a labels file against the items of the store (analysing what is not analysed yet): by the rules,
    and (with `learning`) cross-validated with the calibration and as the radar shows them."""
    from ..analyse.rules import KINDS, RuleSet
    from ..models import Window
    from ..pipeline.analysis import analyze
    from ..store import queries

    analyze(settings, engine)
    rules = RuleSet.load(settings)
    codes = {"kind": list(KINDS), "priority": list(PRIORITIES), "grade": list(GRADES),
             "decision": list(DECISIONS), "topics": [t.id for t in rules.topics]}
    labels = load_labels(path, codes)
    found = {}
    for label in labels.labels:
        analysed = queries.analysed_item(engine, label.repo, label.number)
        if analysed is not None:
            found[f"{label.repo.lower()}#{label.number}"] = analysed
    # what `radar daily` of the window holds (opened items and date-only days included), and among them the
    # PRs merged in it
    radar = {name: queries.analysed_in_window(engine, Window(w["since"], w["until"]), w["repos"] or None,
                                              opened=True)
             for name, w in labels.windows.items()}
    windows = {name: [a for a in held if a.item.kind == "pr" and a.item.state == "merged"
                      and labels.windows[name]["since"] <= a.item.when < labels.windows[name]["until"]]
               for name, held in radar.items()}
    base = evaluate(labels, found, windows, radar)
    if not learning:
        return Evaluation(base, base)
    from ..pipeline.judgment import judge, judging_tables, store_examples
    from .learning import cross_validated

    cv_found, cv_windows, cv_radar, models = cross_validated(
        labels, found, windows, radar, store_examples(engine), judging_tables(settings), settings.focus_weights,
        list(settings.focus))
    result = Evaluation(base, evaluate(labels, cv_found, cv_windows, cv_radar),
                        folds={name: model.labels for name, model in models.items()},
                        kin=kin_moves(labels, cv_found))
    shown = [_copy(a) for a in found.values()]
    if shown and judge(settings, engine, shown) and any(a.analysis.label or a.analysis.learned for a in shown):
        by_key = {f"{a.item.repo.lower()}#{a.item.number}": a for a in shown}
        judged_windows = {n: list(judge(settings, engine, [_copy(a) for a in held])) for n, held in windows.items()}
        judged_radar = {n: list(judge(settings, engine, [_copy(a) for a in held])) for n, held in radar.items()}
        result.shown = evaluate(labels, by_key, judged_windows, judged_radar)
    return result


def kin_moves(labels: LabelFile, judged: Mapping[str, AnalysedItem]) -> list[dict[str, Any]]:
    """The moves the labels of kin items made on the labelled items, as cross-validation judged them."""
    by_key = {f"{lab.repo.lower()}#{lab.number}": lab for lab in labels.labels}
    out = []
    for key in sorted(judged):
        a = judged[key].analysis
        learned, rules = a.learned or {}, a.rules or {}
        if not learned.get("by") or key not in by_key:
            continue
        for name in ("priority", "grade"):
            if name in learned:
                accepted = by_key[key].values.get(name)
                out.append({"item": judged[key].item.ref, "field": name, "rules": rules.get(name),
                            "moved": learned[name], "by": list(learned["by"]),
                            "right": None if not accepted else learned[name] in accepted,
                            "was_right": None if not accepted else rules.get(name) in accepted})
    return out


def _copy(ai: AnalysedItem) -> AnalysedItem:
    from dataclasses import replace

    return AnalysedItem(ai.item, replace(ai.analysis))


def check(report: Report, thresholds: Mapping[str, float] = THRESHOLDS) -> list[str]:
    """Every threshold the report misses, one line each (empty: the rules pass)."""
    failures = []
    whole = report.parts["all"]
    for name, value in whole.metrics().items():
        if value is not None and value < thresholds[name]:
            failures.append(f"{name} {value:.3f} < {thresholds[name]:.2f} (all)")
    recall = whole.high_recall
    if recall is not None and recall < thresholds.get("high_recall", 0.0):
        failures.append(f"P0/P1 recall {recall:.3f} < {thresholds['high_recall']:.2f} (all)")
    if whole.high_as_none:
        failures.append(f"{len(whole.high_as_none)} labelled P0/P1 item(s) ranked none: "
                        + ", ".join(whole.high_as_none[:5]))
    tune, held = report.parts["tune"].metrics(), report.parts["holdout"].metrics()
    for part_name, figures in (("tune", tune), ("holdout", held)):
        for name in PART_THRESHOLDS:
            value, floor = figures[name], thresholds.get(name, PART_THRESHOLDS[name])
            if value is not None and value < floor:
                failures.append(f"{name} {value:.3f} < {floor:.2f} ({part_name})")
    for name, part in report.parts.items():
        if _is_team(name):
            failures += _team_failures(part)
    for name, value in tune.items():
        if value is not None and held[name] is not None and value - held[name] > thresholds["max_gap"]:
            failures.append(f"{name}: holdout {held[name]:.3f} trails tune {value:.3f} by more than "
                            f"{thresholds['max_gap'] * 100:.0f} points")
    return failures


def _team_failures(part: PartScore, floors: Mapping[str, float] = TEAM_THRESHOLDS) -> list[str]:
    failures = []
    recall, grade = part.high_recall, part.fields["grade"].accuracy
    if recall is not None and recall < floors["high_recall"]:
        failures.append(f"P0/P1 recall {recall:.3f} < {floors['high_recall']:.2f} ({part.part})")
    if grade is not None and grade < floors["grade"]:
        failures.append(f"grade {grade:.3f} < {floors['grade']:.2f} ({part.part})")
    share = part.unlisted_high_share
    if share is not None and share > floors["unlisted_high"]:
        failures.append(f"unlisted merged PRs ranked P0/P1 {share:.3f} > {floors['unlisted_high']:.2f} ({part.part})")
    return failures


def check_all(evaluation: Evaluation) -> list[str]:
    """Every threshold missed by the rules, by the cross-validated calibration ("(learned)") and as shown."""
    failures = check(evaluation.rules)
    if evaluation.learned is not evaluation.rules:
        failures += [f"{line} (learned)" for line in check(evaluation.learned)]
    if evaluation.shown is not None:
        failures += [f"{line} (shown)" for line in check(evaluation.shown)]
    return failures
