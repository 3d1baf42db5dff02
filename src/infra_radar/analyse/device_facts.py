"""Device facts from a change's diff: the device libraries and APIs its changed lines use, the device guards it
adds or removes, the kernel sources it touches by language, and the host-side files it changes.

The rules are data (`defaults/rules/device_facts.toml`, a user's copy in the rules directory replacing its
tables). `code_facts.ChangeFacts` feeds the same files and +/- lines it reads into a `DeviceFacts`; its record
is the code facts' `device` (the export's `code.device`, `radar show --evidence`). Each line is searched once
for the literal gates of every rule (one alternation of fixed strings), and a rule's own pattern (word
bounds) only runs on a line holding one of its gates: linear in the diff.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import translate
from functools import lru_cache
from pathlib import Path
from typing import Any

PLATFORMS = ("gpu", "rocm", "triton", "npu", "other")
_FILES_KEPT = 3  # files named per library
_LINE_CHARS = 160  # characters of the sample line kept per fact
_CAP = 24  # facts kept per list
_CONFIG_KINDS = frozenset({"yaml", "toml", "json"})
_HASH_COMMENTS = ("python", "shell", "yaml", "toml", "cmake")


def _globs(patterns: list[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns)) if patterns else None


def _match(regex: re.Pattern[str] | None, path: str) -> bool:
    return regex is not None and (regex.match(path) is not None or regex.match(path.rpartition("/")[2]) is not None)


@dataclass(frozen=True, slots=True)
class _Rule:
    group: str  # lib, guard, kernel
    id: str
    label: str
    platform: str
    kinds: frozenset[str]
    pattern: re.Pattern[str] | None


@dataclass(slots=True)
class DeviceRules:
    """The compiled tables of device_facts.toml."""

    gate: re.Pattern[str] | None
    by_gate: dict[str, list[_Rule]]
    kernel_paths: list[tuple[str, re.Pattern[str]]]
    host: re.Pattern[str] | None
    aux: re.Pattern[str] | None = None
    labels: dict[str, str] = field(default_factory=dict)  # lib id -> label
    targets: dict[str, str] = field(default_factory=dict)  # profile topic -> device platform
    removal: dict[str, int] = field(default_factory=dict)

    def host_path(self, path: str) -> bool:
        return _match(self.host, path)

    def kernel_lang(self, path: str) -> str:
        return next((lang for lang, regex in self.kernel_paths if _match(regex, path)), "")


def compile_device_rules(data: dict[str, Any]) -> DeviceRules:
    """Compile the tables (a malformed pattern raises re.error)."""
    by_gate: dict[str, list[_Rule]] = {}
    labels: dict[str, str] = {}

    def add(group: str, entry: dict[str, Any], rule_id: str, platform: str) -> None:
        pattern = re.compile(entry["pattern"]) if entry.get("pattern") else None
        rule = _Rule(group, rule_id, entry.get("label", rule_id), platform, frozenset(entry.get("kinds", ())), pattern)
        for word in entry.get("gate", []):
            by_gate.setdefault(word, []).append(rule)

    for entry in data.get("lib", []):
        add("lib", entry, entry["id"], entry.get("platform", "gpu"))
        labels[entry["id"]] = entry.get("label", entry["id"])
    for entry in data.get("guard", []):
        add("guard", entry, entry["id"], entry.get("platform", "other"))
    kernels = data.get("kernels", {})
    for entry in kernels.get("lines", []):
        add("kernel", entry, entry["lang"], entry["lang"])
    labels.update({f"kernel:{lang}": label for lang, label in kernels.get("labels", {}).items()})
    words = sorted(by_gate, key=len, reverse=True)
    return DeviceRules(
        gate=re.compile("|".join(map(re.escape, words))) if words else None, by_gate=by_gate,
        kernel_paths=[(e["lang"], regex) for e in kernels.get("paths", []) if (regex := _globs(e["globs"]))],
        host=_globs(data.get("host", {}).get("paths", [])), aux=_globs(data.get("aux", {}).get("paths", [])),
        labels=labels, targets=dict(data.get("targets", {})),
        removal={"min_lines": 10, "ratio": 5, **data.get("removal", {})})


def kernel_label(lang: str) -> str:
    """How a kernel language is written ("TileLang" for `tilelang`; device_facts.toml [kernels.labels])."""
    return load_device_rules().labels.get(f"kernel:{lang}", lang)


@lru_cache(maxsize=8)
def load_device_rules(rules_dir: str | None = None) -> DeviceRules:
    """The packaged device_facts.toml, its tables replaced by the rules directory's copy, compiled once."""
    from ..config import load_rules_in

    # the packaged file, its tables replaced by the user's copy (read capped, its patterns checked)
    data = load_rules_in("device_facts", Path(rules_dir) if rules_dir is not None else None)
    return compile_device_rules(data)


@dataclass(slots=True)
class _Seen:
    plus: int = 0
    minus: int = 0
    core: int = 0  # lines outside auxiliary files (CI, docs, examples, scripts)
    files: dict[str, None] = field(default_factory=dict)
    line: str = ""

    def add(self, sign: str, path: str, text: str, aux: bool = False) -> None:
        if not aux:
            self.core += 1
        if sign == "+":
            self.plus += 1
        else:
            self.minus += 1
        if len(self.files) < _FILES_KEPT:
            self.files.setdefault(path, None)
        if not self.line or self.line.startswith(("from ", "import ")):  # a use says more than its import
            self.line = " ".join(text.split())[:_LINE_CHARS]


def _change(plus: int, minus: int) -> str:
    return "added" if not minus else "removed" if not plus else "changed"


class DeviceFacts:
    """The device facts of one change, fed the files and the lines the code facts read."""

    def __init__(self, rules: DeviceRules) -> None:
        self.rules = rules
        self.path = ""
        self.kind = ""
        self.libs: dict[str, _Seen] = {}
        self.guards: dict[tuple[str, str], _Seen] = {}  # (guard id, file)
        self.kernel_lines: dict[tuple[str, str], _Seen] = {}  # (file, language)
        self.kernels: dict[tuple[str, str], str] = {}  # (file, language) -> file status
        self.code_files: dict[str, str] = {}  # path -> status, every file a line rule reads
        self.platform: dict[tuple[str, str], str] = {}  # (group, rule id) -> platform
        self.docstring: dict[str, bool] = {}  # sign -> inside a docstring of the current Python file
        self.aux = False  # the current file is auxiliary (CI, docs, examples, scripts)
        self.aux_files = 0
        self.config_files = 0  # config files read (yaml, toml): they run nowhere, host or device

    def file(self, path: str, status: str, kind: str) -> None:
        """The next file whose lines are read (`kind`: its code-fact file kind)."""
        self.path, self.kind = path, kind
        self.aux = _match(self.rules.aux, path)
        if self.aux:
            self.aux_files += 1
        elif len(self.code_files) < 400:
            self.code_files[path] = status
            self.config_files += kind in _CONFIG_KINDS
        lang = self.rules.kernel_lang(path)
        if lang:
            self.kernels.setdefault((path, lang), status)

    def close(self) -> None:
        self.path = self.kind = ""
        self.docstring = {}

    def line(self, sign: str, text: str) -> None:
        gate = self.rules.gate
        if not self.path or gate is None:
            return
        text = self._live(sign, text)
        if not text:
            return  # a comment or a docstring names a library, it does not use it
        found = gate.findall(text)
        if not found:
            return  # most lines: no device word at all
        done: set[tuple[str, str]] = set()
        for word in dict.fromkeys(found):
            for rule in self.rules.by_gate[word]:
                key = (rule.group, rule.id)
                if key in done or (rule.kinds and self.kind not in rule.kinds):
                    continue
                if rule.pattern is not None and rule.pattern.search(text) is None:
                    continue
                done.add(key)
                self.platform[key] = rule.platform
                if rule.group == "lib":
                    self.libs.setdefault(rule.id, _Seen()).add(sign, self.path, text, self.aux)
                elif rule.group == "guard":
                    self.guards.setdefault((rule.id, self.path), _Seen()).add(sign, self.path, text)
                else:
                    self.kernel_lines.setdefault((self.path, rule.id), _Seen()).add(sign, self.path, text)

    def context(self, text: str) -> None:
        """An unchanged line of the hunk: a docstring it opens or closes does so on both sides."""
        if self.path and self.kind == "python" and (text.count('"""') + text.count("\'\'\'")) % 2:
            for sign in "+-":
                self.docstring[sign] = not self.docstring.get(sign, False)

    def _live(self, sign: str, text: str) -> str:
        """The code of a line: "" inside a Python docstring (tracked per side of the diff) or for a comment line,
        a trailing `# comment` cut off (a quote before it keeps the line whole: it may be inside a string)."""
        quotes = text.count('"""') + text.count("\'\'\'")
        inside = self.docstring.get(sign, False)
        if self.kind == "python" and (inside or quotes):
            if quotes % 2:
                self.docstring[sign] = not inside
            return ""
        stripped = text.lstrip()
        if stripped.startswith(("#", "//", "/*", "* ")):
            return ""
        cut = text.find(" #")
        if cut > 0 and self.kind in _HASH_COMMENTS and "'" not in text[:cut] and '"' not in text[:cut]:
            return text[:cut]
        return text

    def facts(self, removed: list[str] = ()) -> dict[str, Any]:
        """The record kept with the code facts (`code.device`); `removed`: the files the change deletes."""
        gone = set(removed)
        libs = [{"id": lib, "label": self.rules.labels.get(lib, lib), "platform": self.platform[("lib", lib)],
                 "change": _change(s.plus, s.minus), "added": s.plus, "removed": s.minus, "core": s.core,
                 "files": list(s.files),
                 "line": s.line} for lib, s in self.libs.items()]
        guards = [{"id": gid, "platform": self.platform[("guard", gid)], "change": _change(s.plus, s.minus), "added": s.plus,
                   "removed": s.minus, "file": path, "line": s.line}
                  for (gid, path), s in self.guards.items() if s.plus != s.minus]
        kernels = [{"file": path, "lang": lang, "change": "removed" if path in gone else status}
                   for (path, lang), status in self.kernels.items()]
        for (path, lang), s in self.kernel_lines.items():
            if (path, lang) not in self.kernels:
                kernels.append({"file": path, "lang": lang, "change": _change(s.plus, s.minus)})
        host = [p for p in self.code_files if self.rules.host_path(p)]
        return {"libs": libs[:_CAP], "guards": guards[:_CAP], "kernels": kernels[:_CAP], "host": host[:_CAP],
                "files": len(self.code_files), "aux_files": self.aux_files, "config_files": self.config_files,
                "removed_files": [p for p in self.code_files if p in gone][:_CAP]}


def add_file_list(device: dict[str, Any] | None, files: list[str], rules: DeviceRules) -> None:
    """Kernel sources named by the change's whole file list (a clone's log leaves some paths out)."""
    if device is None:
        return
    have = {(k["file"], k["lang"]) for k in device["kernels"]}
    for path in files:
        lang = rules.kernel_lang(path)
        if lang and (path, lang) not in have and len(device["kernels"]) < _CAP:
            have.add((path, lang))
            device["kernels"].append({"file": path, "lang": lang, "change": "modified"})
