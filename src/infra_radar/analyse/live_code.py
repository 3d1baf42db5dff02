"""The live code of a changed line: what the code-fact rules read once comments, docstrings and string literals
that read as code are taken out.

A commented-out `os.getenv("X", "1")`, a version check in a docstring's example or a help text naming
`is_310p()` is no code the change runs. Per file kind (`[live_code]` of code_facts.toml): `#` or `//` comments
are cut, `/* */` blocks and triple-quoted strings are followed across lines (a line inside one has no live
code), and a string literal whose text reads as code (a rule's gate word with a space or a parenthesis, e.g.
"call os.getenv(...) first") is blanked; a short literal (a name, a value, a version, a device) stays, as the
rules read those. Each side of the diff (+ and -) keeps its own state; context lines move both; a hunk starts
outside any string (what lies before it is not shown). One pass over the line, jumping from one quote or
comment mark to the next: linear in the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# a context line that can open or close a docstring or a block comment (the others never change the state)
MULTI_LINE = re.compile(r'"""|\x27\x27\x27|/\*|\*/')
MULTI_LINE_BYTES = re.compile(rb'"""|\x27\x27\x27|/\*|\*/')
_CODE_LIKE = re.compile(r"[\s(]")  # a literal holding a space or a parenthesis may read as code


@dataclass(frozen=True, slots=True)
class Syntax:
    """How one file kind writes comments and strings."""

    hash: bool = False  # `#` starts a comment
    hash_word: bool = False  # ... only at a word's start (shell, YAML: `${#a}`, `a#b` are no comments)
    slash: bool = False  # `//` line comments and `/* */` blocks (C, C++)
    triple: bool = False  # triple-quoted strings span lines (Python, TOML)
    mask: bool = False  # string literals reading as code are blanked (Python, C)
    special: re.Pattern[str] | None = None  # the characters the scan stops at


def syntaxes(table: dict[str, Any]) -> dict[str, Syntax]:
    """The `[live_code]` table as one Syntax per file kind."""
    def kinds(key: str) -> set[str]:
        return set(table.get(key, []))

    found: dict[str, Syntax] = {}
    for kind in kinds("hash") | kinds("hash_word") | kinds("slash") | kinds("triple") | kinds("mask"):
        slash = kind in kinds("slash")
        hashes = kind in kinds("hash") or kind in kinds("hash_word")
        marks = "\"'\\" + ("#" if hashes else "") + ("/" if slash else "")
        found[kind] = Syntax(hashes, kind in kinds("hash_word"), slash, kind in kinds("triple"), kind in kinds("mask"),
                             re.compile(f"[{re.escape(marks)}]"))
    return found


class LiveCode:
    """The live code of one file's changed lines, line by line (see the module's docstring)."""

    __slots__ = ("syntax", "gate", "state")

    def __init__(self, syntax: Syntax, gate: re.Pattern[str] | None) -> None:
        self.syntax, self.gate = syntax, gate
        self.state = {"+": "", "-": ""}  # the open triple quote or "/*" of each side ("" outside)

    def reset(self) -> None:
        """A hunk starts: what lies before it is not shown, so it starts outside any string or comment."""
        self.state["+"] = self.state["-"] = ""

    def context(self, text: str) -> None:
        """An unchanged line: it moves both sides' state (only one holding a triple quote or a block mark can)."""
        if MULTI_LINE.search(text) is not None:
            for sign in ("+", "-"):
                self.line(sign, text)

    def line(self, sign: str, text: str) -> str:
        """The live code of a changed line ("" when none): comments cut, strings reading as code blanked."""
        syntax, state = self.syntax, self.state[sign]
        start = 0
        if state:
            close = "*/" if state == "/*" else state
            end = text.find(close)
            if end < 0:
                return ""
            start, self.state[sign] = end + len(close), ""
        special = syntax.special
        assert special is not None
        if start == 0 and special.search(text) is None:
            return text  # most lines: nothing to cut
        out: list[str] = []
        at, n = start, len(text)
        while at < n:
            found = special.search(text, at)
            if found is None:
                out.append(text[at:])
                break
            i = found.start()
            out.append(text[at:i])
            c = text[i]
            if c == "\\":
                out.append(text[i:i + 2])
                at = i + 2
            elif c == "#":
                if not syntax.hash_word or i == 0 or text[i - 1] in " \t":
                    break  # a comment: the rest of the line
                out.append(c)
                at = i + 1
            elif c == "/":
                nxt = text[i + 1:i + 2]
                if nxt == "/":
                    break
                if nxt == "*":
                    end = text.find("*/", i + 2)
                    if end < 0:
                        self.state[sign] = "/*"
                        break
                    out.append(" ")
                    at = end + 2
                else:
                    out.append(c)
                    at = i + 1
            elif syntax.triple and text.startswith(c * 3, i):
                end = text.find(c * 3, i + 3)
                if end < 0:
                    self.state[sign] = c * 3  # a docstring or long string runs on: the rest is no code
                    break
                out.append(self._literal(c, text[i + 3:end]))
                at = end + 3
            else:
                end = _closing(text, c, i + 1)
                out.append(self._literal(c, text[i + 1:end]))
                at = end + 1
        return "".join(out).rstrip()

    def _literal(self, quote: str, body: str) -> str:
        """A string literal as the rules see it: kept, or blanked when its text reads as code."""
        if self.syntax.mask and _CODE_LIKE.search(body) is not None and (self.gate is None or
                                                                          self.gate.search(body) is not None):
            return quote + quote
        return quote + body + quote


def _closing(text: str, quote: str, at: int) -> int:
    """Where the one-line string opened before `at` closes (a backslash escapes the next character); its end
    when it does not."""
    n = len(text)
    while at < n:
        end = text.find(quote, at)
        if end < 0:
            return n
        slashes = 0
        while end - slashes - 1 >= at and text[end - slashes - 1] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            return end
        at = end + 1
    return n
