"""The kind of a code fact, checked against what the lines do (defaults/rules/code_facts.toml [fact_kinds]):

- a switch is a user-facing option: `getattr(hf_config, "x")` reads the model's config and `meta_info.get("x")`
  a runtime dict, neither is a switch (`not_switch_objects`);
- an environment variable is what the code reads from the environment: `os.environ["X"] = ...` sets it for
  child processes, no switch of the change;
- a definition removed is not removed when the change defines the same name again (a signature changed, a
  method moved into another class) or keeps it as an alias (`Old = New`);
- a default that only moves (removed in one file, set to the same value in another) is no new default.

`code_facts.ChangeFacts` feeds a `KindCheck` the Python lines it reads and lets it correct its record at the
end. Each line is matched only when it holds one of a few literal gates; the patterns have no nested or
adjacent unbounded repeats.
"""

from __future__ import annotations

import re
from typing import Any

_READ = re.compile(r"""(?:getattr\(\s*(?P<obj>[\w.]{1,80})\s*,|(?P<obj2>[\w.]{1,80})\.get\()\s*["'](?P<name>\w{1,80})["']""")
_ENV_WRITE = re.compile(r"""os\.environ\[\s*["'](?P<name>[A-Z][A-Z0-9_]{1,80})["']\s*\]\s*=(?!=)""")
_ENV_SET = re.compile(r"""os\.environ\.setdefault\(\s*["'](?P<name>[A-Z][A-Z0-9_]{1,80})["']""")
_ENV_READ = re.compile(r"""(?:getenv\(|environ\.get\(|environ\[)\s*["'](?P<name>[A-Z][A-Z0-9_]{1,80})["']""")
_DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(?P<name>[A-Za-z_]\w{0,80})")
_ALIAS = re.compile(r"^\s*(?P<name>[A-Za-z_]\w{0,80}) = [A-Za-z_(]")

DEFAULT_NOT_SWITCH = ("hf_config", "model_config", "text_config", "hf_text_config", "vision_config",
                      "pretrained_config", "meta_info", "non_tensor_batch", "extra_info", "metadata")


class KindCheck:
    """What the Python lines of one change say about the kinds of its facts."""

    def __init__(self, not_switch: tuple[str, ...] = DEFAULT_NOT_SWITCH) -> None:
        self.not_switch = frozenset(not_switch)
        self.reads: dict[tuple[str, str], list[int]] = {}  # (file, name) -> [model/runtime reads, other reads]
        self.env: dict[tuple[str, str], list[int]] = {}  # (file, name) -> [writes, reads]
        self.defined: set[str] = set()  # names the added lines define (at any depth)
        self.aliases: set[str] = set()  # names the added lines assign (`Old = New`)

    def line(self, path: str, sign: str, text: str) -> None:
        if "get" in text:  # getattr( / .get( / getenv(
            for m in _READ.finditer(text):
                obj = (m.group("obj") or m.group("obj2") or "").rpartition(".")[2]
                counts = self.reads.setdefault((path, m.group("name")), [0, 0])
                counts[obj not in self.not_switch] += 1
        if "environ" in text or "getenv" in text:
            written = {m.group("name") for r in (_ENV_WRITE, _ENV_SET) for m in r.finditer(text)}
            for name in written:
                self.env.setdefault((path, name), [0, 0])[0] += 1
            for m in _ENV_READ.finditer(text):
                if m.group("name") not in written:
                    self.env.setdefault((path, m.group("name")), [0, 0])[1] += 1
        if sign == "+":
            if "def " in text or "class " in text:
                m = _DEFINED.match(text)
                if m:
                    self.defined.add(m.group("name"))
            if " = " in text:
                m = _ALIAS.match(text)
                if m:
                    self.aliases.add(m.group("name"))

    def correct(self, out: dict[str, Any], files: list[Any]) -> None:
        """Correct the change's record `out` (ChangeFacts.facts) in place; `files`: its read files (their
        defaults before and after)."""
        kept = []
        for s in out.get("switches", []):
            if s["kind"] == "config":
                model, other = self.reads.get((s["file"], s["name"]), [0, 0])
                if model and not other:
                    continue  # a model-config or runtime-dict read, no user-facing option
            elif s["kind"] == "env":
                writes, reads = self.env.get((s["file"], s["name"]), [0, 0])
                if writes and not reads:
                    continue  # set for child processes, not read
            kept.append(s)
        out["switches"] = kept
        out["removed"] = [r for r in out.get("removed", []) if r["kind"] not in ("function", "class")
                          or (r["name"] not in self.defined and r["name"] not in self.aliases)]
        gone = {(name, value): f.path for f in files for name, value in f.defaults["-"].items()}
        out["defaults"] = [d for d in out.get("defaults", []) if d.get("previous") is not None
                           or gone.get((d["name"], d["value"]), d["file"]) == d["file"]]
