"""The team's judgment over the rules', applied wherever analysed items are read for an output.

`judge(settings, store, items)` lays over each item the team's label (shown at once, marked as the team's) or,
for an item the team did not label, the calibration the labels give (analyse/learn.py); analyse/judge.py
re-derives the decision and importance. The stored analyses are never changed: labels live in their own tables
(store/labels.py), so they survive re-analysis and new rule versions, and the calibration is fitted again
whenever the labels, their windows or the rules change.

The calibration is keyed by the digest of what it is fitted on (every label, every window, the version and
content of the labelled items' analyses). Writing commands (`radar label`, `radar analyze`) fit and store it
(`refit`); a read finds it stored under the current digest, or fits it in memory (and keeps it for the rest
of the process) when the store holds an older one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..config import Settings, load_rule_file
from ..models import AnalysedItem
from ..store import labels as stored

if TYPE_CHECKING:  # the judge and the calibration are imported where labels exist (a card of a store without any
    from ..analyse.learn import Calibration, Example  # never loads them)

__all__ = ["calibration", "examples", "judge", "judging", "judging_tables", "keyed_examples", "refit", "store_examples"]

_FITTED: dict[str, tuple[Calibration, dict[str, Any]]] = {}  # digest -> (calibration, tables), for the process
_KEEP = 4  # digests kept (a long-running `radar serve` sees the labels change)


def judge(settings: Settings, store, found: Sequence[AnalysedItem]) -> Sequence[AnalysedItem]:
    """`found` with the team's labels and the calibration laid over their analyses (in place); returned."""
    if not found:
        return found
    return judging(settings, store)(found)


def judging(settings: Settings, store) -> Callable[[Sequence[AnalysedItem]], Sequence[AnalysedItem]]:
    """`judge` for many batches of one store: the labels and the calibration read once, laid over each batch
    given to the returned function (in place; the batch returned)."""
    team = stored.all_labels(store)
    if not team:
        return lambda found: found
    from ..analyse.judge import Judge

    model, tables = _calibration(settings, store, team)
    judge_ = Judge(tables, settings.focus_weights, settings.focus)
    by_key = {label.key: label for label in team}

    def overlay(found: Sequence[AnalysedItem]) -> Sequence[AnalysedItem]:
        for ai in found:
            item = ai.item
            label = by_key.get((item.repo.lower(), item.number)) if item.kind in ("pr", "issue") else None
            judge_.overlay(ai.analysis, label.shown() if label is not None else None, model)
        return found
    return overlay


def _digest(store, team: list[stored.TeamLabel]) -> tuple[str, dict[str, dict[str, Any]]]:
    """(digest, windows) of what the calibration is fitted on: every label and window, and the version and
    content of the labelled items' analyses (read without the analyses themselves)."""
    from ..analyse.learn import digest

    windows = stored.label_windows(store)
    key = digest([
        [(lab.repo.lower(), lab.number, lab.priority, lab.grade) for lab in team],
        sorted((part, str(w["since"]), str(w["until"]), sorted(r.lower() for r in w["repos"]))
               for part, w in windows.items()),
        [(repo.lower(), number, version, content) for repo, number, version, content in stored.labelled_versions(store)],
    ])
    return key, windows


def keyed_examples(store, team: list[stored.TeamLabel],
                   windows: dict[str, dict[str, Any]]) -> dict[str, Example]:
    """The labelled items as examples, and the merged PRs of each labelled window the team did not list, by
    `owner/name#n` (lower-case)."""
    from ..analyse.learn import Example

    by_key = {label.key: label for label in team}
    out: dict[str, Example] = {}
    for repo, number, data in stored.labelled_analyses(store):
        label, key = by_key.get((repo.lower(), number)), f"{repo.lower()}#{number}"
        if label is None or key in out or not isinstance(data, dict):
            continue
        out[key] = Example(tuple(data.get("features") or ()), data.get("priority", "none"), data.get("grade", "S"),
                           label.priority, label.grade, ref=f"{repo}#{number}")
    for window in windows.values():
        for repo, number, data in stored.window_items(store, window["since"], window["until"], window["repos"]):
            key = f"{repo.lower()}#{number}"
            if (repo.lower(), number) in by_key or key in out or not isinstance(data, dict):
                continue
            out[key] = Example(tuple(data.get("features") or ()), data.get("priority", "none"),
                               data.get("grade", "S"), listed=False)
    return out


def examples(store, team: list[stored.TeamLabel], windows: dict[str, dict[str, Any]]) -> list[Example]:
    """The examples the store's labels give (see keyed_examples)."""
    return list(keyed_examples(store, team, windows).values())


def store_examples(store) -> dict[str, Example]:
    """Every example of the store's labels and windows, by `owner/name#n` (empty without labels)."""
    team = stored.all_labels(store)
    return keyed_examples(store, team, stored.label_windows(store)) if team else {}


def judging_tables(settings: Settings) -> dict[str, Any]:
    """The rule tables judging reads (the settings' rule files, parsed)."""
    return _tables(settings)


def _tables(settings: Settings) -> dict[str, Any]:
    from ..analyse.judge import tables_of

    return tables_of(load_rule_file("priority", settings), load_rule_file("grades", settings))


def _usable(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("model"), dict) and isinstance(data.get("tables"), dict)


def _calibration(settings: Settings, store, team: list[stored.TeamLabel]) -> tuple[Calibration, dict[str, Any]]:
    """(calibration, judging tables) of the store's labels: cached in this process, else stored under the current
    digest, else fitted here."""
    from ..analyse.learn import Calibration, fit, limits_of

    key, windows = _digest(store, team)
    if key not in _FITTED:
        while len(_FITTED) >= _KEEP:
            _FITTED.pop(next(iter(_FITTED)))
        data = stored.stored_model(store, key)
        if _usable(data):
            tables = data["tables"]
            _FITTED[key] = (Calibration.from_data(data["model"], limits_of(tables["learning"])), tables)
        else:
            tables = _tables(settings)
            _FITTED[key] = (fit(examples(store, team, windows), limits_of(tables["learning"])), tables)
    return _FITTED[key]


def calibration(settings: Settings, store) -> Calibration | None:
    """The calibration of the store's labels (None without labels)."""
    team = stored.all_labels(store)
    return _calibration(settings, store, team)[0] if team else None


def refit(settings: Settings, engine) -> Calibration | None:
    """Fit the calibration of the store's labels and keep it in the store unless it is there already (writing
    commands call this after changing labels or analyses)."""
    team = stored.all_labels(engine)
    if not team:
        return None
    key, _ = _digest(engine, team)
    if not _usable(stored.stored_model(engine, key)):
        _FITTED.pop(key, None)  # fitted here with the rule files as they are now
        model, tables = _calibration(settings, engine, team)
        stored.save_model(engine, key, {"model": model.as_data(), "tables": tables})
    return _calibration(settings, engine, team)[0]
