"""What a change does, read from its diff: a call replaced by another in the same change block, a backend or op
registered, a class's attribute patched, the files it adds. The rules are data (`defaults/rules/diff_moves.toml`);
`code_facts.ChangeFacts` feeds the files, hunks and +/- lines it reads into a `DiffMoves`, whose record is the
code facts' `moves` (`radar show --evidence`, the export's `code.moves`). The deep dive says them as the
change's mechanism (render/diff_mechanism.py).

Linear in the diff: each line is matched once by bounded patterns; a change block (a run of -/+ lines) is
paired through a dict keyed by the line with its called names masked, at most `block_lines` lines a block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..config import rule_data, rules_cache

_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w{0,60}(?:\.[A-Za-z_]\w{0,60}){0,4})\s{0,2}\(")
_ASSIGN = re.compile(r"^\s{0,40}([A-Za-z_][\w.]{0,80})\s{0,2}=\s{0,2}([A-Za-z_]\w{0,60}(?:\.[A-Za-z_]\w{0,60}){0,4})\s{0,2}\(")
_LINE_CHARS = 200


@dataclass(frozen=True, slots=True)
class MoveRules:
    block_lines: int
    kept: int
    ignore: frozenset[str]
    registered: tuple[tuple[str, re.Pattern[str]], ...]
    assign: re.Pattern[str]
    setattr: re.Pattern[str]
    not_values: frozenset[str]
    not_calls: tuple[str, ...] = ()


def compile_move_rules(data: dict[str, Any]) -> MoveRules:
    caps, patched = data.get("caps", {}), data["patched"]
    return MoveRules(block_lines=int(caps.get("block_lines", 60)), kept=int(caps.get("kept", 8)),
                     ignore=frozenset(data.get("replaced", {}).get("ignore", [])),
                     registered=tuple((r["gate"], re.compile(r["pattern"])) for r in data.get("registered", [])),
                     assign=re.compile(patched["assign"]), setattr=re.compile(patched["setattr"]),
                     not_values=frozenset(patched.get("not_values", [])),
                     not_calls=tuple(data.get("registered_rules", {}).get("not_calls", [])))


@rules_cache
def load_move_rules() -> MoveRules:
    """diff_moves.toml of the active rules directory over the packaged one, compiled once."""
    return compile_move_rules(rule_data("diff_moves"))


def _calls(text: str) -> list[str]:
    return [m.group(1) for m in _CALL.finditer(text)]


def _skeleton(text: str) -> str:
    """The line with its called names masked and its spaces collapsed: two lines with the same skeleton differ
    only in what they call."""
    return " ".join(_CALL.sub("\x00(", text).split())


def _same_call(a: str, b: str) -> bool:
    """The same method on another receiver (`idx.numel` → `piece.idx.numel`), or a name too short to say
    anything (`c`, `f`): no call replaced."""
    return a.rsplit(".", 1)[-1] == b.rsplit(".", 1)[-1] or len(a) < 3 or len(b) < 3


def _bare_opening(shape: str, line: str) -> bool:
    """A line that is only a call opening its arguments on the next lines: two such lines share nothing but
    their indentation, so one is no replacement of the other."""
    return line.rstrip().endswith("(") and not any(ch.isalnum() or ch == "_" for ch in shape.replace("\x00(", ""))


class DiffMoves:
    """The mechanism facts of one change, fed the files, hunks and changed lines the code facts read."""

    def __init__(self, rules: MoveRules | None = None) -> None:
        self.rules = rules or load_move_rules()
        self.path = ""
        self.block: dict[str, list[str]] = {"+": [], "-": []}
        self.replaced: dict[tuple[str, str], dict[str, str]] = {}
        self.registered: dict[tuple[str, str], dict[str, str]] = {}
        self.patched: dict[str, dict[str, str]] = {}
        self.added: list[str] = []

    # --- feeding ---------------------------------------------------------------------------------------

    def file(self, path: str) -> None:
        self._pair()
        self.path = path

    def hunk(self, path: str, header: str) -> None:
        """A hunk starts (`path`: its file, read or not); "@@ -0,0 " opens a file the change adds."""
        self._pair()
        if header.startswith("@@ -0,0 ") and path and path not in self.added and len(self.added) < 400:
            self.added.append(path)

    def context(self) -> None:
        self._pair()

    def line(self, sign: str, text: str) -> None:
        if "(" not in text and "=" not in text:
            return  # no call, no assignment: nothing replaced, registered or patched
        side = self.block[sign]
        if "(" in text and len(side) < self.rules.block_lines:
            side.append(text[:_LINE_CHARS])
        if sign == "+" and self.path:
            self._added(text[:_LINE_CHARS])

    def close(self) -> None:
        self._pair()
        self.path = ""

    # --- reading ---------------------------------------------------------------------------------------

    def _added(self, text: str) -> None:
        r, kept = self.rules, self.rules.kept
        bare = text.strip()
        if not bare or bare.startswith(("#", "//", "*", "def ", "async def ")):
            return  # a comment, or a definition's signature: nothing registered or patched
        if len(self.registered) < kept and "(" in text:
            for gate, pattern in r.registered:
                if gate in text and (m := pattern.search(text)):
                    call, name = m.group("call"), m.group("name")
                    if call.endswith(r.not_calls):
                        break
                    self.registered.setdefault((call, name), {"call": call, "name": name, "file": self.path,
                                                              "line": bare})
                    break
        eq = text.find("=")
        if len(self.patched) < kept and eq > 0 and "." in text[:eq]:  # `Cls.attr = …`: a dot before the "="
            m = r.assign.search(text)
            if m is not None and m.group("value") not in r.not_values and "==" not in text:
                target = f"{m.group('cls')}.{m.group('attr')}"
                self.patched.setdefault(target, {"target": target, "file": self.path, "line": bare})
        if len(self.patched) < kept and "setattr" in text and (m := r.setattr.search(text)):
            target = f"{m.group('cls')}.{m.group('attr')}"
            self.patched.setdefault(target, {"target": target, "file": self.path, "line": bare})

    def _pair(self) -> None:
        """The change block just closed: its removed and added lines paired by skeleton or assigned name."""
        minus, plus = self.block["-"], self.block["+"]
        if minus and plus and self.path and len(self.replaced) < self.rules.kept:
            self._replacements(minus, plus)
        self.block = {"+": [], "-": []}

    def _replacements(self, minus: list[str], plus: list[str]) -> None:
        ignore = self.rules.ignore
        calls_minus = {c for line in minus for c in _calls(line)}
        calls_plus = {c for line in plus for c in _calls(line)}
        by_shape: dict[str, str] = {}
        by_name: dict[str, tuple[str, str]] = {}
        for line in minus:
            by_shape.setdefault(_skeleton(line), line)
            if m := _ASSIGN.match(line):
                by_name.setdefault(m.group(1), (m.group(2), line))
        for line in plus:
            pair: tuple[str, str] | None = None
            shape = _skeleton(line)
            old = by_shape.get(shape)
            if old is not None and _bare_opening(shape, line):
                old = None  # "self._format(" and "calls.append(" open calls whose arguments differ: nothing shared
            if old is not None:
                a, b = _calls(old), _calls(line)
                diff = [(x, y) for x, y in zip(a, b, strict=False) if x != y]
                if len(a) == len(b) and len(diff) == 1:
                    pair = diff[0]
            if pair is None and (m := _ASSIGN.match(line)) and m.group(1) in by_name:
                pair = (by_name[m.group(1)][0], m.group(2))
            if pair is None:
                continue
            a, b = pair
            if _same_call(a, b) or a in ignore or b in ignore or a in calls_plus or b in calls_minus:
                continue  # the old call is still made, or the new one was made already: no replacement
            self.replaced.setdefault((a, b), {"old": a, "new": b, "file": self.path, "line": line.strip()})
            if len(self.replaced) >= self.rules.kept:
                return

    def facts(self) -> dict[str, Any]:
        self._pair()
        return {"replaced": list(self.replaced.values()), "registered": list(self.registered.values()),
                "patched": list(self.patched.values()), "added": self.added[:40]}
