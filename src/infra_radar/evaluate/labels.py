"""The labels `radar eval` scores against: the JSON Lines format (docs/labelling.md), its checks and the
tune/held-out split; the team's parts and their windows. Scoring and output are in evaluate/score.py."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..guard.files import open_file
from ..models import DECISIONS, GRADES, PRIORITIES, REF_FORM

PARTS = ("all", "tune", "holdout")
TEAM = "team"
SCALAR_FIELDS = ("kind", "priority", "grade", "decision")
# A team part names a team radar's day: `team` or `team-NAME` (the store keeps it in 64 characters)
_TEAM_PART = re.compile(r"team(?:-[A-Za-z0-9._-]{1,59})?")

# What a labels file may hold: it is read a line at a time, and a file past these is refused before anything is
# stored (a day of the team's labels is tens of lines; the shipped sets a few hundred)
MAX_LINES = 100_000
MAX_LINE = 100_000  # characters of one line: a longer line is reported and skipped, never held whole
NOTE_MAX = 2_000  # characters of a label's note (`radar label --note` too)
BY_MAX = 200  # characters of who labelled (`--by`, RADAR_LABEL_BY): the store's column
PROBLEMS_KEPT = 20  # problems kept (and shown) per file; the others are counted


# --------------------------------------------------------------------------- labels


class Problems(list):
    """The problems found in a file, one `file:line: message` each: the first PROBLEMS_KEPT are kept, the others
    only counted (`more`), so a file of a million bad lines costs neither memory nor a million warnings."""

    def __init__(self) -> None:
        super().__init__()
        self.more = 0

    def append(self, problem: str) -> None:
        if len(self) < PROBLEMS_KEPT:
            super().append(problem)
        else:
            self.more += 1

    def summary(self, path: str) -> str | None:
        """The line that says how many problems were not shown, or None."""
        return (f"{path}: {self.more:,} more problem(s) not shown (the first {len(self)} are above)"
                if self.more else None)


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
    problems: Problems = field(default_factory=Problems)
    windows: dict[str, dict[str, Any]] = field(default_factory=dict)  # team part -> since, until, repos


def split_of(item: str) -> str:
    """The fixed part of an item id: `holdout` when sha1(id) % 10 < 3, else `tune`."""
    digest = int(hashlib.sha1(item.strip().encode("utf-8")).hexdigest(), 16)
    return "holdout" if digest % 10 < 3 else "tune"


def load_labels(path: Path, known: Mapping[str, Iterable[str]] | None = None) -> LabelFile:
    """Read a labels file a line at a time; bad lines and bad values are reported (naming the file and line),
    never fatal. A file of more than MAX_LINES lines is refused whole (InputError), before anything is used.

    `known` maps a field (kind, priority, grade, decision, topics) to its valid codes; values
    outside them are reported and dropped.
    """
    codes = {name: set(values) for name, values in (known or default_codes()).items()}
    result, seen = LabelFile(str(path)), set()
    try:
        with open_file(path, InputError) as fh:  # a pipe or a device is refused, never waited on
            for number, raw in _lines(fh, path, result.problems):
                where = f"{path}:{number}"
                if raw is None or not raw.strip() or raw.lstrip().startswith("//"):
                    continue
                try:
                    obj = json.loads(raw)
                except ValueError as exc:  # JSONDecodeError, or an integer of more than 4,300 digits
                    result.problems.append(f"{where}: not JSON ({getattr(exc, 'msg', None) or str(exc)[:80]})")
                    continue
                except RecursionError:  # "[[[[..." thousands deep
                    result.problems.append(f"{where}: not JSON (nested too deeply)")
                    continue
                if not isinstance(obj, dict):
                    result.problems.append(f"{where}: not a JSON object")
                    continue
                if "window" in obj and "item" not in obj:
                    _window(obj["window"], where, result)
                    continue
                label = _parse_line(obj, number, where, codes, result.problems)
                if label is None:
                    continue
                key = (label.repo.lower(), label.number, label.split if _is_team(label.split) else "")
                if key in seen:
                    result.problems.append(f"{where}: {label.item} is labelled twice; the first label is used")
                    continue
                seen.add(key)
                result.labels.append(label)
    except OSError as exc:
        raise InputError(f"{path}: cannot read labels: {exc.strerror or exc}") from None
    return result


def _lines(fh, path: Path, problems: Problems) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of each line of a binary file, read a line at a time: None for a line that is not
    UTF-8 or longer than MAX_LINE characters (reported, and skipped without being held whole). InputError past
    MAX_LINES lines."""
    for number in range(1, MAX_LINES + 2):
        data = fh.readline(4 * MAX_LINE + 1)  # UTF-8: at most 4 bytes a character
        if not data:
            return
        if number > MAX_LINES:
            raise InputError(f"{path}: more than {MAX_LINES:,} lines; a labels file holds at most that many "
                             "(split it): none of it was used")
        if len(data) > 4 * MAX_LINE and not data.endswith(b"\n"):
            while data and not data.endswith(b"\n"):  # the rest of the line, a bounded piece at a time
                data = fh.readline(1 << 16)
            problems.append(f"{path}:{number}: longer than {MAX_LINE:,} characters; line skipped")
            yield number, None
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{path}:{number}: not UTF-8 (byte {exc.start + 1}); line skipped")
            yield number, None
            continue
        if number == 1:
            text = text.removeprefix("\ufeff")
        if len(text.rstrip("\r\n")) > MAX_LINE:
            problems.append(f"{path}:{number}: longer than {MAX_LINE:,} characters; line skipped")
            yield number, None
            continue
        yield number, text


def _is_team(part: str) -> bool:
    return part == TEAM or part.startswith(TEAM + "-")


def _window(window: Any, where: str, result: LabelFile) -> None:
    """A `{"window": {...}}` line: the window of a team part; a bad one is reported and ignored."""
    from ..errors import RadarError
    from ..models import repo_problem
    from ..windows import parse_when

    if not isinstance(window, dict):
        result.problems.append(f"{where}: a window must be an object with part, since, until and repos; ignored")
        return
    part = window.get("part", TEAM)
    if not isinstance(part, str) or not _TEAM_PART.fullmatch(part):
        result.problems.append(f"{where}: a window's part must be \"team\" or \"team-NAME\" (letters, digits, "
                               f"'.', '_', '-'; at most 64 characters), got {_shown(part)}; ignored")
        return
    for key in ("since", "until"):
        if not isinstance(window.get(key), str):
            result.problems.append(f"{where}: window {part}: \"{key}\" must be a time (YYYY-MM-DD or "
                                   f"YYYY-MM-DDTHH:MMZ), got {_shown(window.get(key))}; ignored")
            return
    try:
        since, until = parse_when(window["since"]), parse_when(window["until"])
    except RadarError as exc:  # an invalid time ("NaN", "2026-13-01", a year past the range)
        result.problems.append(f"{where}: window {part}: {exc}; ignored")
        return
    if since >= until:
        result.problems.append(f"{where}: window {part}: since must be before until; ignored")
        return
    repos = window.get("repos", [])
    if isinstance(repos, str):  # one name given as text, not a list: one repository, never its characters
        result.problems.append(f"{where}: window {part}: \"repos\" should be a list; read as [{repos[:80]!r}]")
        repos = [repos]
    if not isinstance(repos, list):
        result.problems.append(f"{where}: window {part}: \"repos\" must be a list of OWNER/NAME; ignored")
        return
    for repo in repos:
        problem = repo_problem(repo)
        if problem:
            result.problems.append(f"{where}: window {part}: repository {_shown(repo)}: {problem}; ignored")
            return
    result.windows[part] = {"since": since, "until": until, "repos": list(repos)}


def _shown(value: Any) -> str:
    """A value from a file as a problem names it: its repr, at most 80 characters of it."""
    return repr(value)[:80]


def default_codes() -> dict[str, list[str]]:
    """The valid codes of the packaged rules (kinds and topics) and the models."""
    import tomllib

    from ..analyse.rules import KINDS
    from ..config import DEFAULTS

    topics = tomllib.loads((DEFAULTS / "rules" / "topics.toml").read_text(encoding="utf-8"))
    return {"kind": list(KINDS), "priority": list(PRIORITIES), "grade": list(GRADES),
            "decision": list(DECISIONS), "topics": list(topics.get("topics", {}))}


def _parse_line(obj: dict[str, Any], number: int, where: str, codes: Mapping[str, set[str]],
                problems: list[str]) -> Label | None:
    from ..errors import RefError
    from ..models import parse_ref

    item = obj.get("item")
    try:
        if not isinstance(item, str):
            raise RefError("not text")
        repo, num = parse_ref(item)  # the one reading of a reference every command shares
    except RefError:
        problems.append(f"{where}: \"item\" must be {REF_FORM}, got {_shown(item)}; line skipped")
        return None
    if _lone_surrogate({k: v for k, v in obj.items() if k not in ("note", "by")}):
        problems.append(f"{where}: a field holds a lone surrogate escape (\\ud800-\\udfff), which is not text; "
                        "line skipped")
        return None
    item = f"{repo}#{num}"
    split = obj.get("split") if obj.get("split") in ("tune", "holdout") else split_of(item)
    part = obj.get("part")
    if isinstance(part, str) and _is_team(part):
        if not _TEAM_PART.fullmatch(part):
            problems.append(f"{where}: part must be \"team\" or \"team-NAME\" (letters, digits, '.', '_', '-'; "
                            f"at most 64 characters), got {_shown(part)}; line skipped")
            return None
        split = part
    label = Label(item, repo, num, number, split)
    for name, limit in (("note", NOTE_MAX), ("by", BY_MAX)):
        if isinstance(obj.get(name), str):
            setattr(label, name, _person_text(obj[name], name, limit, where, problems))
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


def _lone_surrogate(value: Any) -> bool:
    """Whether a decoded JSON value holds a lone surrogate (JSON's "\\ud800" alone): no UTF-8 encodes it."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _person_text(value: str, name: str, limit: int, where: str, problems: list[str]) -> str:
    """A note or name from a file as stored: one line without control characters, at most `limit` characters
    (each change reported)."""
    from ..models import one_line_text

    text, changed = one_line_text(value)
    if changed:
        problems.append(f"{where}: \"{name}\" held control characters or line breaks; they were removed")
    if len(text) > limit:
        problems.append(f"{where}: \"{name}\" is {len(text):,} characters; its first {limit:,} are kept")
        text = text[:limit].rstrip()
    return text


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
