"""The labels `radar eval` scores against: the JSON Lines format (docs/labelling.md), its checks and the
tune/held-out split; the team's parts and their windows. Scoring and output are in evaluate/score.py."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models import DECISIONS, GRADES, PRIORITIES

PARTS = ("all", "tune", "holdout")
TEAM = "team"
SCALAR_FIELDS = ("kind", "priority", "grade", "decision")
_REF = re.compile(r"^\s*([\w.-]+/[\w.-]+)#(\d+)\s*$")


# --------------------------------------------------------------------------- labels


@dataclass(slots=True)
class Label:
    """One labelled item: its reference, where it was read, and the fields it labels."""

    item: str
    repo: str
    number: int
    line: int
    split: str  # tune | holdout | a team part
    values: dict[str, list[str]] = field(default_factory=dict)  # scalar field -> acceptable values
    topics: list[tuple[set[str], set[str]]] | None = None  # alternatives of (required, optional)
    claims: list[dict[str, Any]] | None = None
    note: str = ""  # `radar label --import` keeps these with the label
    by: str = ""


@dataclass(slots=True)
class LabelFile:
    """The labels read from a file, and the problems found (one `file:line: message` each)."""

    path: str
    labels: list[Label] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    windows: dict[str, dict[str, Any]] = field(default_factory=dict)  # team part -> since, until, repos


def split_of(item: str) -> str:
    """The fixed part of an item id: `holdout` when sha1(id) % 10 < 3, else `tune`."""
    digest = int(hashlib.sha1(item.strip().encode("utf-8")).hexdigest(), 16)
    return "holdout" if digest % 10 < 3 else "tune"


def load_labels(path: Path, known: Mapping[str, Iterable[str]] | None = None) -> LabelFile:
    """Read a labels file; bad lines and bad values are reported, never fatal.

    `known` maps a field (kind, priority, grade, decision, topics) to its valid codes; values
    outside them are reported and dropped.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read labels: {exc}") from None
    codes = {name: set(values) for name, values in (known or default_codes()).items()}
    result, seen = LabelFile(str(path)), set()
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("//"):
            continue
        where = f"{path}:{number}"
        if _window_line(raw, where, result):
            continue
        label = _parse_line(raw, number, where, codes, result.problems)
        if label is None:
            continue
        key = (label.repo.lower(), label.number, label.split if _is_team(label.split) else "")
        if key in seen:
            result.problems.append(f"{where}: {label.item} is labelled twice; the first label is used")
            continue
        seen.add(key)
        result.labels.append(label)
    return result


def _is_team(part: str) -> bool:
    return part == TEAM or part.startswith(TEAM + "-")


def _window_line(raw: str, where: str, result: LabelFile) -> bool:
    """A `{"window": {...}}` line: the window of a team part (True when the line was one)."""
    if '"window"' not in raw:
        return False
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError:
        return False
    if not isinstance(obj, dict) or "window" not in obj or "item" in obj:
        return False
    from ..windows import parse_when

    window = obj["window"]
    try:
        part = str(window.get("part", TEAM))
        since, until = parse_when(str(window["since"])), parse_when(str(window["until"]))
        repos = [str(r) for r in window.get("repos", [])]
    except (AttributeError, KeyError, ValueError, TypeError) as exc:
        result.problems.append(f"{where}: a window needs part, since, until and repos ({exc}); ignored")
        return True
    if not _is_team(part) or since >= until:
        result.problems.append(f"{where}: a window needs a team part and since < until; ignored")
        return True
    result.windows[part] = {"since": since, "until": until, "repos": repos}
    return True


def default_codes() -> dict[str, list[str]]:
    """The valid codes of the packaged rules (kinds and topics) and the models."""
    import tomllib

    from ..analyse.rules import KINDS
    from ..config import DEFAULTS

    topics = tomllib.loads((DEFAULTS / "rules" / "topics.toml").read_text(encoding="utf-8"))
    return {"kind": list(KINDS), "priority": list(PRIORITIES), "grade": list(GRADES),
            "decision": list(DECISIONS), "topics": list(topics.get("topics", {}))}


def _parse_line(raw: str, number: int, where: str, codes: Mapping[str, set[str]],
                problems: list[str]) -> Label | None:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        problems.append(f"{where}: not JSON ({exc.msg})")
        return None
    if not isinstance(obj, dict):
        problems.append(f"{where}: not a JSON object")
        return None
    ref = _REF.match(str(obj.get("item", ""))) if isinstance(obj.get("item"), str) else None
    if ref is None:
        problems.append(f"{where}: \"item\" must be OWNER/NAME#N, got {obj.get('item')!r}")
        return None
    item = f"{ref.group(1)}#{ref.group(2)}"
    split = obj.get("split") if obj.get("split") in ("tune", "holdout") else split_of(item)
    if isinstance(obj.get("part"), str) and _is_team(obj["part"]):
        split = obj["part"]
    label = Label(item, ref.group(1), int(ref.group(2)), number, split)
    for name in ("note", "by"):
        if isinstance(obj.get(name), str):
            setattr(label, name, obj[name].strip()[:2000])
    for name in SCALAR_FIELDS:
        if obj.get(name) is not None:
            values = _scalar(obj[name], name, where, codes.get(name), problems)
            if values:
                label.values[name] = values
    if obj.get("topics") is not None:
        label.topics = _topics(obj["topics"], where, codes.get("topics"), problems)
    if obj.get("perf_claims") is not None:
        label.claims = _claims(obj["perf_claims"], where, problems)
    return label


def _scalar(value: Any, name: str, where: str, known: set[str] | None, problems: list[str]) -> list[str]:
    values = value if isinstance(value, list) else [value]
    good = []
    for v in values:
        if not isinstance(v, str) or (known is not None and v not in known):
            problems.append(f"{where}: unknown {name} {v!r}; the value is ignored")
            continue
        good.append(v)
    return good


def _topics(value: Any, where: str, known: set[str] | None,
            problems: list[str]) -> list[tuple[set[str], set[str]]] | None:
    if not isinstance(value, list):
        problems.append(f"{where}: \"topics\" must be a list; ignored")
        return None
    alternatives = value if value and all(isinstance(v, list) for v in value) else [value]
    found = []
    for alternative in alternatives:
        required, optional = set(), set()
        for topic in alternative:
            name = topic.rstrip("?") if isinstance(topic, str) else None
            if not name or (known is not None and name not in known):
                problems.append(f"{where}: unknown topic {topic!r}; ignored")
                continue
            (optional if topic.endswith("?") else required).add(name)
        found.append((required, optional - required))
    return found


def _claims(value: Any, where: str, problems: list[str]) -> list[dict[str, Any]] | None:
    if not isinstance(value, list):
        problems.append(f"{where}: \"perf_claims\" must be a list; ignored")
        return None
    claims = []
    for claim in value:
        metric = claim.get("metric") if isinstance(claim, dict) else None
        names = metric if isinstance(metric, list) else [metric]
        if not names or not all(isinstance(n, str) and n.strip() for n in names):
            problems.append(f"{where}: a claim needs a \"metric\" (text or list of texts); claim ignored")
            continue
        numbers = {k: claim.get(k) for k in ("before", "after", "ratio", "change_pct")}
        if any(v is not None and not _is_number(v) for v in numbers.values()):
            problems.append(f"{where}: claim {names[0]!r} has a non-numeric figure; claim ignored")
            continue
        claims.append({"metric": {_metric_key(n) for n in names}, "shown": names[0], **numbers})
    return claims


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _metric_key(name: str) -> str:
    return " ".join(name.lower().split())
