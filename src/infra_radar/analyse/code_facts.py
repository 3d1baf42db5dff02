"""Code facts from a change's diff: the rules of `defaults/rules/code_facts.toml` applied to each changed line.

A source feeds one change at a time (`ChangeFacts`): `file(path, status)` for each file of the diff, then
`line("+"|"-", text)` for its changed lines; `facts(source)` gives the JSON-able record the store keeps
(never the diff itself). Each line is matched once against the rules of its file kind: linear in the diff,
and bounded by the caps (lines per file and per change, files per change; a capped change is incomplete).
Generated files, lock files, vendored code and binaries are skipped and counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import translate
from functools import lru_cache
from pathlib import Path
from typing import Any

from .fact_kinds import DEFAULT_NOT_SWITCH, KindCheck
from .live_code import LiveCode, Syntax, syntaxes

FACT_KINDS = ("defaults", "switches", "version_gates", "device_checks", "kernels", "removed", "tests", "casts")
_LIST_CAP = 40  # facts kept per kind and change: what is stored stays linear in the history
_FILE_CAP = 8  # facts kept per kind and file, so one big file cannot crowd out the others
_SKIP_REASONS = ("generated", "lock", "vendored", "binary")
_MOVE_KINDS = frozenset({"python", "cpp"})  # the file kinds whose lines say what a change does (diff_moves.py)


def _globs(patterns: list[str]) -> re.Pattern[str] | None:
    """One regex matching a path (or its file name) against any of the glob patterns."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns))


def _glob_match(regex: re.Pattern[str] | None, path: str) -> bool:
    return regex is not None and (regex.match(path) is not None or regex.match(path.rpartition("/")[2]) is not None)


@dataclass(slots=True)
class _Rule:
    regex: re.Pattern[str]
    kinds: frozenset[str]  # file kinds it applies to; empty: every file
    kind: str = ""  # switch kind, definition kind, kernel kind
    package: str = ""  # version gates: the package when the pattern does not name it
    gate: tuple[str, ...] = ()  # substrings one of which a line must hold before the pattern is tried
    paths: re.Pattern[str] | None = None  # only files with these paths (None: every file of its kinds)


@dataclass(slots=True)
class CodeRules:
    """The compiled tables of code_facts.toml."""

    caps: dict[str, int]
    skip: dict[str, re.Pattern[str] | None]
    kinds: list[tuple[str, re.Pattern[str]]]
    tests: re.Pattern[str] | None
    no_defaults: re.Pattern[str] | None
    kernel_paths: list[tuple[str, re.Pattern[str]]]
    kernel_lines: list[_Rule]
    defaults: list[_Rule]
    switches: list[_Rule]
    env_table: _Rule | None
    gates: list[_Rule]
    devices: list[_Rule]
    definitions: list[_Rule]
    casts: _Rule | None
    phrases: dict[str, re.Pattern[str] | None] = field(default_factory=dict)
    boundary: dict[str, list[str]] = field(default_factory=dict)
    pathspecs: list[str] = field(default_factory=list)  # what a clone's `git log -p` is kept to
    path_cache: dict[str, tuple[str, str, bool, str]] = field(default_factory=dict)
    ignore_values: frozenset[str] = frozenset()  # a default with this value is no setting
    ignore_prefixes: tuple[str, ...] = ()
    by_kind: dict[str, list[tuple[str, _Rule]]] = field(default_factory=dict)
    gate_regex: dict[str, re.Pattern[str] | None] = field(default_factory=dict)
    gate_rules: dict[str, dict[str, list[tuple[str, _Rule]]]] = field(default_factory=dict)
    live: dict[str, Syntax] = field(default_factory=dict)  # how each file kind writes comments and strings
    device: Any = None  # device_facts.DeviceRules of the same rules directory (None: the packaged ones)
    not_switch: tuple[str, ...] = ()  # [fact_kinds] objects whose reads are no switch (fact_kinds.py)

    def gate_for(self, kind: str) -> tuple[re.Pattern[str] | None, dict[str, list[tuple[str, _Rule]]]]:
        """One regex finding the gates of the rules of `kind`, and the rules each gate it finds lets through
        (a found word lets through every rule with a gate inside it: "is_sm" lets "is_" rules through too).
        (None, {}): a rule of `kind` has no gate, so every rule is tried on every line."""
        if kind not in self.gate_regex:
            rules = self.rules_for(kind)
            words = sorted({g for _, r in rules for g in r.gate}, key=len, reverse=True)
            if words and all(r.gate for _, r in rules):
                self.gate_regex[kind] = re.compile("|".join(map(re.escape, words)))
                self.gate_rules[kind] = {w: [(c, r) for c, r in rules if any(g in w for g in r.gate)] for w in words}
            else:
                self.gate_regex[kind], self.gate_rules[kind] = None, {}
        return self.gate_regex[kind], self.gate_rules[kind]

    def rules_for(self, kind: str) -> list[tuple[str, _Rule]]:
        """(category, rule) of every line rule that applies to files of `kind`, in the order they are tried."""
        if kind not in self.by_kind:
            found: list[tuple[str, _Rule]] = [("kernel", r) for r in self.kernel_lines if not r.kinds or kind in r.kinds]
            if kind:
                groups = [("default", self.defaults), ("switch", self.switches),
                          ("env", [self.env_table] if self.env_table else []), ("gate", self.gates),
                          ("device", self.devices), ("definition", self.definitions),
                          ("cast", [self.casts] if self.casts else [])]
                found += [(name, r) for name, rules in groups for r in rules if not r.kinds or kind in r.kinds]
            self.by_kind[kind] = found
        return self.by_kind[kind]

    def classes(self, path: str) -> tuple[str, str, bool, str]:
        """(file kind, skip reason, is a test, kernel kind by path) of a path: the same paths recur in every
        change of a history, so each is classified once (the cache is emptied past 50,000 paths)."""
        found = self.path_cache.get(path)
        if found is None:
            kind = next((k for k, regex in self.kinds if _glob_match(regex, path)), "")
            reason = next((r for r in _SKIP_REASONS if _glob_match(self.skip.get(r), path)), "")
            kernel = next((k for k, regex in self.kernel_paths if _glob_match(regex, path)), "")
            if len(self.path_cache) >= 50_000:
                self.path_cache.clear()
            found = self.path_cache[path] = (kind, reason, _glob_match(self.tests, path), kernel)
        return found

    def file_kind(self, path: str) -> str:
        return self.classes(path)[0]

    def skip_reason(self, path: str) -> str:
        return self.classes(path)[1]

    def is_test(self, path: str) -> bool:
        return self.classes(path)[2]


def _rule(entry: dict[str, Any]) -> _Rule:
    return _Rule(re.compile(entry["pattern"]), frozenset(entry.get("kinds", ())), entry.get("kind", ""),
                 entry.get("package", ""), tuple(entry.get("gate", ())), _globs(entry.get("paths", [])))


def pathspecs(data: dict[str, Any]) -> list[str]:
    """Git pathspecs a clone's `git log -p` is kept to ([git] exclude: a few big folders the rules never read;
    their paths come from the change's file list, see `with_file_list`). Few on purpose: git matches every
    pathspec against every changed path, and a long list costs it more than the lines it saves."""
    return [f":(exclude,glob){p}" for p in data.get("git", {}).get("exclude", [])]


def compile_rules(data: dict[str, Any]) -> CodeRules:
    """Compile the tables of code_facts.toml (a malformed pattern raises re.error naming it)."""
    skip = data.get("skip", {})
    kernels = data.get("kernels", {})
    phrases = data.get("contradictions", {})
    return CodeRules(
        caps={"file_lines": 2000, "change_lines": 20000, "files": 400, "line_chars": 400, **data.get("caps", {})},
        skip={reason: _globs(skip.get(reason, [])) for reason in _SKIP_REASONS},
        kinds=[(kind, regex) for kind, globs in data.get("kinds", {}).items() if (regex := _globs(globs))],
        tests=_globs(data.get("tests", {}).get("paths", [])),
        no_defaults=_globs(data.get("no_defaults", {}).get("paths", [])),
        kernel_paths=[(e["kind"], regex) for e in kernels.get("paths", []) if (regex := _globs(e["globs"]))],
        kernel_lines=[_rule(e) for e in kernels.get("lines", [])],
        defaults=[_rule(e) for e in data.get("defaults", [])],
        switches=[_rule(e) for e in data.get("switches", [])],
        env_table=_rule(data["env_table"]) if data.get("env_table") else None,
        gates=[_rule(e) for e in data.get("version_gates", [])],
        devices=[_rule(e) for e in data.get("device_checks", [])],
        definitions=[_rule(e) for e in data.get("definitions", [])],
        casts=_rule(data["casts"]) if data.get("casts") else None,
        phrases={name: re.compile("|".join(f"(?:{p})" for p in words), re.IGNORECASE) if words else None
                 for name, words in phrases.items()},
        boundary={k: list(v) for k, v in data.get("boundary", {}).items()},
        pathspecs=pathspecs(data),
        ignore_values=frozenset(data.get("no_defaults", {}).get("ignore_values", [])),
        ignore_prefixes=tuple(data.get("no_defaults", {}).get("ignore_prefixes", [])),
        live=syntaxes(data.get("live_code", {})),
        not_switch=tuple(data.get("fact_kinds", {}).get("not_switch_objects", DEFAULT_NOT_SWITCH)),
    )


@lru_cache(maxsize=8)
def _load(rules_dir: str | None) -> CodeRules:
    from ..config import load_rules_in

    # the packaged file, its tables replaced by the user's copy (read capped, its patterns checked)
    data = load_rules_in("code_facts", Path(rules_dir) if rules_dir is not None else None)
    from .device_facts import load_device_rules

    compiled = compile_rules(data)
    compiled.device = load_device_rules(rules_dir)
    return compiled


def load_code_rules(settings=None) -> CodeRules:
    """The code-fact rules (the packaged file, its tables replaced by the user's copy), compiled once."""
    rules_dir = getattr(settings, "rules_dir", None)
    return _load(str(rules_dir) if rules_dir is not None else None)


def _group(match: re.Match[str], name: str) -> str:
    """A named group, or its alternative `name2` (a pattern with two ways to say the same field)."""
    groups = match.groupdict()
    return (groups.get(name) or groups.get(f"{name}2") or "").strip()


def _value(text: str) -> str:
    return text.strip().rstrip(",").strip()


@dataclass(slots=True)
class _File:
    path: str
    kind: str
    lines: int = 0
    defaults: dict[str, dict[str, str]] = field(default_factory=lambda: {"+": {}, "-": {}})
    switches: dict[tuple[str, str], dict[str, set[str]]] = field(default_factory=dict)
    gates: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    devices: dict[str, list[int]] = field(default_factory=dict)
    pending: dict[str, str] = field(default_factory=dict)  # a line ending in "(" joined to the next one
    rules: list[tuple[str, _Rule]] = field(default_factory=list)
    gate: re.Pattern[str] | None = None
    gate_rules: dict[str, list[tuple[str, _Rule]]] = field(default_factory=dict)
    classes: dict[str, int | None] = field(default_factory=dict)  # indent of the class the +/- lines are in
    excluded: frozenset[int] = frozenset()  # ids of the rules whose paths this file is not on
    no_defaults: bool = False  # a path whose key = value lines are not the project's defaults (CI, docs)
    live: LiveCode | None = None  # the live code of its lines (comments, docstrings cut); None: read as is


class ChangeFacts:
    """The code facts of one change, fed file by file and line by line."""

    def __init__(self, rules: CodeRules) -> None:
        self.rules = rules
        self.complete = True
        self.skipped = dict.fromkeys(_SKIP_REASONS, 0)
        self.files_read = 0
        self.lines_read = 0
        self.current: _File | None = None
        self.done: list[_File] = []
        self.tests: list[str] = []
        self.kernels: dict[tuple[str, str], None] = {}
        self.definitions: dict[str, dict[tuple[str, str], str]] = {"+": {}, "-": {}}  # (kind, name) -> file
        self.top_level: set[tuple[str, str]] = set()  # removed definitions at a module's top level
        self.env_entries: dict[str, dict[str, str]] = {"+": {}, "-": {}}
        self.removed_files: list[str] = []
        self.casts: list[dict[str, str]] = []
        self.last_reason = ""  # why the last file started was skipped ("" when it was not)
        self.last_path = ""
        from .device_facts import DeviceFacts, load_device_rules

        self.device = DeviceFacts(rules.device or load_device_rules())
        from .diff_moves import DiffMoves

        self.moves = DiffMoves()
        self.kinds = KindCheck(rules.not_switch or DEFAULT_NOT_SWITCH)
        caps = rules.caps
        self._file_cap, self._change_cap, self._line_cap = caps["file_lines"], caps["change_lines"], caps["line_chars"]

    # --- feeding ---------------------------------------------------------------------------------------------

    def file(self, path: str, status: str = "modified", binary: bool = False) -> bool:
        """Start the next file; False when its lines are not read (skipped, tests, past the caps)."""
        self._close_file()
        self.last_path = path
        self.moves.file(path)
        if status == "removed":
            self.removed_files.append(path)
        reason = self.last_reason = "binary" if binary else self.rules.skip_reason(path)
        if reason:
            self.skipped[reason] += 1
            return False
        if self.rules.is_test(path):
            self.tests.append(path)
            return False
        if self.files_read >= self.rules.caps["files"] or self.lines_read >= self.rules.caps["change_lines"]:
            self.complete = False
            return False
        self.files_read += 1
        kind, _, _, kernel = self.rules.classes(path)
        if kernel:
            self.kernels.setdefault((path, kernel), None)
        if not kind:
            return False  # a file kind no line rule reads (docs, data): only its path counts
        gate, gate_rules = self.rules.gate_for(kind)
        rules = self.rules.rules_for(kind)
        excluded = frozenset(id(r) for _, r in rules if r.paths is not None and not _glob_match(r.paths, path))
        syntax = self.rules.live.get(kind)
        self.current = _File(path, kind, rules=rules, gate=gate, gate_rules=gate_rules, excluded=excluded,
                             no_defaults=_glob_match(self.rules.no_defaults, path),
                             live=LiveCode(syntax, gate) if syntax is not None else None)
        self.device.file(path, status, kind)
        return True

    def binary(self) -> None:
        """The file just started turns out binary (git says so): counted as such, not as read."""
        if self.last_reason:
            return  # skipped and counted already (a binary by its name, a lock file)
        if self.current is not None:
            self.current = None
            self.files_read -= 1
        if self.tests and self.tests[-1] == self.last_path:
            return  # a test's binary fixture: listed with the tests
        self.skipped["binary"] += 1
        self.last_reason = "binary"

    def incomplete(self) -> None:
        """What was read is not the whole change (a patch the source left out or cut)."""
        self.complete = False

    def line(self, sign: str, text: str) -> bool:
        """One changed line of the current file ("+" or "-"); False once the caps stop the file."""
        f = self.current
        if f is None:
            return False
        if f.lines >= self._file_cap or self.lines_read >= self._change_cap:
            self.complete = False
            self._close_file()
            return False
        f.lines += 1
        self.lines_read += 1
        if len(text) > self._line_cap:
            text = text[:self._line_cap]
        self.device.line(sign, text)
        if f.kind in _MOVE_KINDS and ("(" in text or "=" in text):  # a call or an assignment in code
            self.moves.line(sign, text)
        if f.kind == "python":
            self.kinds.line(f.path, sign, text)
        if f.pending:
            pending = f.pending.pop(sign, "")
            if pending:
                text = pending + text.strip()
        if f.kind == "python" and text.endswith("(") and len(text) < 200:
            f.pending[sign] = text
        hit = f.gate is None or f.gate.search(text) is not None  # most lines hold no rule's gate
        if f.live is not None:  # read as live code (analyse/live_code.py)
            if hit or f.live.marks(text):
                if not (text := f.live.line(sign, text)) or not hit:
                    return True  # a comment, a docstring's line; or a line that only opens or closes one
            elif text:
                f.live.prev[sign] = text
        if hit:
            self._apply(f, sign, text)
        return True

    def context(self, text: str) -> None:
        """An unchanged line of the current file: it may open or close a docstring or a block comment."""
        if self.current is not None and self.current.live is not None:
            self.current.live.context(text)
        self.device.context(text)  # a docstring opened on an unchanged line
        self.moves.context()

    def hunk(self, header: str = "") -> None:
        """A hunk of the current file starts (`header`: its "@@" line; see live_code.LiveCode.reset)."""
        self.moves.hunk(self.last_path, header)
        if self.current is not None and self.current.live is not None:
            self.current.live.reset(header)

    def _apply(self, f: _File, sign: str, text: str) -> None:
        if f.gate is None:
            rules = f.rules
        else:
            found = f.gate.findall(text)
            if not found:
                return  # no rule's gate in the line: most lines stop here
            if len(found) == 1:
                rules = f.gate_rules[found[0]]
            else:
                wanted = {id(r) for w in set(found) for _, r in f.gate_rules[w]}
                rules = [(c, r) for c, r in f.rules if id(r) in wanted]
        defaults_done = f.no_defaults
        for category, rule in rules:
            if f.excluded and id(rule) in f.excluded:
                continue
            if category == "default":
                if not defaults_done and (m := rule.regex.search(text)):
                    value = _value(_group(m, "value"))
                    if value not in self.rules.ignore_values and not value.startswith(self.rules.ignore_prefixes):
                        f.defaults[sign].setdefault(_group(m, "name"), value)
                    defaults_done = True
            elif category == "kernel":
                if rule.regex.search(text):
                    self.kernels.setdefault((f.path, rule.kind), None)
            elif category == "switch":
                if f.no_defaults:
                    continue  # CI, docs, examples and tooling read their own switches, not the project's
                for m in rule.regex.finditer(text):
                    sides = f.switches.setdefault((rule.kind, _group(m, "name")), {"+": set(), "-": set()})
                    sides[sign].add(text.strip())
            elif category == "env":
                if m := rule.regex.search(text):
                    self.env_entries[sign].setdefault(_group(m, "name"), f.path)
            elif category == "gate":
                for m in rule.regex.finditer(text):
                    package = (_group(m, "package") or rule.package).lower()  # `_VLLM_VERSION`: vllm
                    op = _group(m, "op")
                    version = f"{op} {_group(m, 'version')}".strip() if op else _group(m, "version")
                    f.gates.setdefault(package, {"+": [], "-": []})[sign].append(version)
            elif category == "device":
                for m in rule.regex.finditer(text):
                    counts = f.devices.setdefault(" ".join(_group(m, "check").split()), [0, 0])
                    counts[sign == "-"] += 1
            elif category == "definition":
                if m := rule.regex.search(text):
                    self._definition(f, sign, rule.kind, _group(m, "name"), len(text) - len(text.lstrip()))
            elif category == "cast" and len(self.casts) < _LIST_CAP and rule.regex.search(text):
                self.casts.append({"line": " ".join(text.split())[:200], "change": "added" if sign == "+" else "removed",
                                   "file": f.path})

    def _definition(self, f: _File, sign: str, kind: str, name: str, indent: int) -> None:
        """A definition line: a method inside a class the same lines define (or remove) is part of that class."""
        owner = f.classes.get(sign)
        if owner is not None and indent > owner:
            return
        f.classes[sign] = indent if kind == "class" else None
        if kind == "function" and name.startswith("__") and name.endswith("__"):
            return
        self.definitions[sign].setdefault((kind, name), f.path)
        if indent == 0 and sign == "-":
            self.top_level.add((kind, name))

    def _close_file(self) -> None:
        self.device.close()
        self.moves.close()
        if self.current is not None:
            self.done.append(self.current)
            self.current = None

    # --- the record ------------------------------------------------------------------------------------------

    def facts(self, source: str) -> dict[str, Any]:
        """The change's code facts as the store keeps them (see the export's `code`)."""
        self._close_file()
        out: dict[str, Any] = {"source": source, "complete": self.complete, **{k: [] for k in FACT_KINDS}}
        for f in self.done:
            _file_facts(f, out)
        out["kernels"] = [{"file": path, "kind": kind} for path, kind in self.kernels]
        out["removed"] = self._removed()
        out["tests"] = list(dict.fromkeys(self.tests))
        out["casts"] = self.casts
        self.kinds.correct(out, self.done)
        for kind in FACT_KINDS:
            if len(out[kind]) > _LIST_CAP:
                out[kind] = out[kind][:_LIST_CAP]
                out["complete"] = False
        out["skipped"] = {k: v for k, v in self.skipped.items() if v}
        out["read"] = {"files": self.files_read, "lines": self.lines_read}
        out["device"] = self.device.facts(self.removed_files)
        out["moves"] = self.moves.facts()
        return out

    def _removed(self) -> list[dict[str, str]]:
        added, removed = self.definitions["+"], self.definitions["-"]
        found = [{"name": name, "kind": kind, "file": path, "top": (kind, name) in self.top_level}
                 for (kind, name), path in removed.items() if (kind, name) not in added and kind != "config_key"]
        # a config key is removed when no file of the change sets it again (a YAML key at any depth)
        added_keys = {name for (kind, name) in added if kind == "config_key"}
        found += [{"name": name, "kind": "config", "file": path} for (kind, name), path in removed.items()
                  if kind == "config_key" and name not in added_keys]
        found += [{"name": name, "kind": "env", "file": path} for name, path in self.env_entries["-"].items()
                  if name not in self.env_entries["+"]]
        found += [{"name": path, "kind": "file", "file": path} for path in self.removed_files]
        return found


def _file_facts(f: _File, out: dict[str, Any]) -> None:
    """One file's paired facts: a default's value before and after, a gate's version moved, a check added
    (at most _FILE_CAP of each kind per file)."""
    found: dict[str, list[dict[str, Any]]] = {k: [] for k in ("defaults", "switches", "version_gates", "device_checks")}
    new, old = f.defaults["+"], f.defaults["-"]
    for name, value in new.items():
        if old.get(name) != value:
            found["defaults"].append({"name": name, "value": value, "previous": old.get(name), "file": f.path})
    for (kind, name), sides in f.switches.items():
        if sides["+"] and not sides["-"]:
            change = "added"
        elif sides["-"] and not sides["+"]:
            change = "removed"
        elif sides["+"] != sides["-"]:
            change = "changed"
        else:
            continue
        found["switches"].append({"name": name, "kind": kind, "change": change, "file": f.path})
    for package, sides in f.gates.items():
        before, after = list(dict.fromkeys(sides["-"])), list(dict.fromkeys(sides["+"]))
        if sorted(before) == sorted(after):
            continue
        gone = [v for v in before if v not in after]
        came = [v for v in after if v not in before]
        for i in range(max(len(gone), len(came))):
            found["version_gates"].append({"package": package, "before": gone[i] if i < len(gone) else None,
                                           "after": came[i] if i < len(came) else None, "file": f.path})
    for check, (plus, minus) in f.devices.items():
        if plus != minus:
            found["device_checks"].append({"check": check, "change": "added" if plus > minus else "removed",
                                           "file": f.path})
    for kind, facts in found.items():
        out[kind] += facts[:_FILE_CAP]


def with_file_list(facts: dict[str, Any] | None, files: list[tuple[str, bool]], rules: CodeRules) -> dict[str, Any] | None:
    """Facts read from a diff kept to the rules' files (`pathspecs`), completed from the change's whole file list
    ((path, binary) pairs): its tests, its skipped files by reason, the kernels its paths name."""
    if facts is None:
        return None
    tests, skipped = [], dict.fromkeys(_SKIP_REASONS, 0)
    kernels = {(k["file"], k["kind"]) for k in facts["kernels"]}
    for path, binary in files:
        reason = rules.skip_reason(path)
        if rules.is_test(path):
            tests.append(path)
        elif reason or binary:
            skipped[reason or "binary"] += 1
        kind = rules.classes(path)[3]
        if kind and (path, kind) not in kernels and len(facts["kernels"]) < _LIST_CAP:
            kernels.add((path, kind))
            facts["kernels"].append({"file": path, "kind": kind})
    from .device_facts import add_file_list

    add_file_list(facts.get("device"), [path for path, _ in files], rules.device or load_code_rules().device)
    facts["tests"] = list(dict.fromkeys(tests))[:_LIST_CAP]
    facts["skipped"] = {k: v for k, v in skipped.items() if v}
    return facts


def empty_facts(source: str, complete: bool = False) -> dict[str, Any]:
    """The record of a change whose diff was looked for and not read (nothing in it)."""
    return ChangeFacts(load_code_rules()).facts(source) | {"complete": complete}


def gate_said(gate: dict[str, Any]) -> str:
    """A version gate as the code asks it: "vllm >= 0.19.0" (a bound is not one version)."""
    return f"{gate['package']} {' '.join(str(gate['after']).split())}"

