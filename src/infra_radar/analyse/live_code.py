"""The live code of a changed line: what the code-fact rules read once comments, docstrings and string literals
that read as code are taken out.

A commented-out `os.getenv("X", "1")`, a version check in a docstring's example or a help text naming
`is_310p()` is no code the change runs. Per file kind (`[live_code]` of code_facts.toml): `#` or `//` comments
are cut, `/* */` blocks and triple-quoted strings are followed across lines (a line inside one has no live
code), and a string literal whose text reads as code (a rule's gate word with a space or a parenthesis, e.g.
"call os.getenv(...) first") is blanked; a short literal (a name, a value, a version, a device) stays, as the
rules read those. Each side of the diff (+ and -) keeps its own state; context lines move both. A hunk starting
at a file's first line starts outside any string; one starting further down does not know, until its first
triple quote or block mark says which side of it its lines were (a closing quote has text before it, or
follows a line that opens nothing); until then its lines are read as code, so a wrong guess reads a
docstring's line and never skips a line of code. Only a line holding a rule's gate or such a mark is read
(code_facts.ChangeFacts.line): the others change nothing. One pass over the line, jumping from one quote or
comment mark to the next: linear in the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# a context line that can open or close a docstring or a block comment (the others never change the state)
MULTI_LINE = re.compile(r'"""|\x27\x27\x27|/\*|\*/')
_HUNK = re.compile(r"@@ -(\d{1,12})(?:,\d{1,12})? \+(\d{1,12})")
_CODE_LIKE = re.compile(r"[\s(]")  # a literal holding a space or a parenthesis may read as code


@dataclass(frozen=True, slots=True)
class Syntax:
    """How one file kind writes comments and strings."""

    hash: bool = False  # `#` starts a comment
    hash_word: bool = False  # ... only at a word's start (shell, YAML: `${#a}`, `a#b` are no comments)
    slash: bool = False  # `//` line comments and `/* */` blocks (C, C++)
    triple: bool = False  # triple-quoted strings span lines (Python, TOML)
    mask: bool = False  # string literals reading as code are blanked (Python, C)
    special: re.Pattern[str] = re.compile("[\"'\\\\]")  # the characters the scan stops at
    marks: re.Pattern[str] | None = None  # what opens or closes a string or comment across lines
    comment: tuple[str, ...] = ()  # what a line that is only a comment starts with


def syntaxes(table: dict[str, Any]) -> dict[str, Syntax]:
    """The `[live_code]` table as one Syntax per file kind."""
    def kinds(key: str) -> set[str]:
        return set(table.get(key, []))

    found: dict[str, Syntax] = {}
    for kind in kinds("hash") | kinds("hash_word") | kinds("slash") | kinds("triple") | kinds("mask"):
        slash = kind in kinds("slash")
        hashes = kind in kinds("hash") or kind in kinds("hash_word")
        marks = "\"'\\" + ("#" if hashes else "") + ("/" if slash else "")
        multi = ([r'"""', r"\x27\x27\x27"] if kind in kinds("triple") else []) + ([r"/\*", r"\*/"] if slash else [])
        found[kind] = Syntax(hashes, kind in kinds("hash_word"), slash, kind in kinds("triple"), kind in kinds("mask"),
                             re.compile(f"[{re.escape(marks)}]"), re.compile("|".join(multi)) if multi else None,
                             (("#",) if hashes else ()) + (("//",) if slash else ()))
    return found


class LiveCode:
    """The live code of one file's changed lines, line by line (see the module's docstring)."""

    __slots__ = ("syntax", "gate", "state", "prev", "marks")

    def __init__(self, syntax: Syntax, gate: re.Pattern[str] | None) -> None:
        self.syntax, self.gate = syntax, gate
        # whether a line may open or close a docstring or a block comment (one without such a mark and without
        # a rule's gate needs no reading: it changes no state and no rule would match it)
        self.marks = _marks(syntax)
        # the open triple quote or "/*" of each side; "" outside; "?" not known (a hunk's start, until its first
        # triple quote or block mark says which side of it the lines before were); "~" not known after a lone
        # triple quote first in a hunk (the lines after it are read as code until the next one says)
        self.state = {"+": "?", "-": "?"}  # lines fed without a hunk header (a page's review hunk): not known
        # each side's last line in the hunk that was not empty (ChangeFacts.line sets it for the lines it does
        # not give to `line`): what a lone triple quote follows
        self.prev = {"+": "", "-": ""}

    def reset(self, header: str = "") -> None:
        """A hunk starts (`header`: its "@@ -a,b +c,d @@" line): a side starting at its file's first line starts
        outside any string; otherwise what lies before is not shown, so whether it starts inside one is not known."""
        found = _HUNK.match(header)
        self.state["-"] = "" if found and int(found.group(1)) <= 1 else "?"
        self.state["+"] = "" if found and int(found.group(2)) <= 1 else "?"
        self.prev["+"] = self.prev["-"] = ""

    def context(self, text: str) -> None:
        """An unchanged line: it moves both sides' state (only one holding a triple quote or a block mark can)."""
        if MULTI_LINE.search(text) is not None:
            for sign in ("+", "-"):
                self.line(sign, text)
        elif text:
            self.prev["+"] = self.prev["-"] = text

    def line(self, sign: str, text: str) -> str:
        """The live code of a changed line ("" when none): comments cut, strings reading as code blanked."""
        state = self.state[sign]
        if self.syntax.special.search(text) is None:  # most lines: no quote, no comment mark, no state change
            if text:
                self.prev[sign] = text
            return "" if state and state not in ("?", "~") else text  # "": inside a docstring or block comment
        live = self._live(sign, self._known(sign, text) if state == "?" or state == "~" else text)
        if text:
            self.prev[sign] = text
        return live

    def _known(self, sign: str, text: str) -> str:
        """A line of a hunk whose start state is not known: unchanged until its first triple quote or block mark
        says it. A closing one (text before it, a `*/` before any `/*`, a lone one not after a line ending in
        `:`, `=`, `(` or `,` nor after only comments) shows the lines before were inside: the line is read from
        after it. A lone one first in the hunk leaves it unknown ("~") until the next one."""
        if self.syntax.marks is None or (found := self.syntax.marks.search(text)) is None:
            return text
        mark, at = found.group(), found.start()
        closing = mark == "*/"
        if mark not in ("/*", "*/") and self.syntax.triple:
            before, after = text[:at].strip(), text[at + 3:].strip()
            if before:
                closing = not before.endswith(("=", "(", ",", "[", "{", ":", "return", "yield"))
            elif after:
                closing = not (after[0].isalnum() or after.startswith(mark))
            elif not (last := self._ending(self.prev[sign])):
                self.state[sign] = "~"  # a lone one first in the hunk: opening or closing, the next one says
                return ""
            else:  # after a line opening a block or an expression (or a comment: a module's docstring)
                closing = last not in (":", "=", "(", ",", "#")
        self.state[sign] = ""
        return text[found.end():] if closing else text

    def _ending(self, line: str) -> str:
        """How a line ends, for what a lone triple quote after it is: its last character before a comment,
        "#" for a comment line, "" for a blank one."""
        line = line.strip()
        if not line or line.startswith(self.syntax.comment):
            return "#" if line else ""
        if self.syntax.hash and " #" in line:
            line = line.partition(" #")[0].rstrip()
        return line[-1:]

    def _live(self, sign: str, text: str) -> str:
        syntax, state = self.syntax, self.state[sign]
        start = 0
        if state and state not in ("?", "~"):
            close = "*/" if state == "/*" else state
            end = text.find(close)
            if end < 0:
                return ""
            start, self.state[sign] = end + len(close), ""
        special = syntax.special
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
                out.append(self._literal(c, text[i + 3:end], _formatted(text, i)))
                at = end + 3
            else:
                end = _closing(text, c, i + 1)
                out.append(self._literal(c, text[i + 1:end], _formatted(text, i)))
                at = end + 1
        return "".join(out).rstrip()

    def _literal(self, quote: str, body: str, formatted: bool) -> str:
        """A string literal as the rules see it: kept, or blanked when its text reads as code (an f-string is
        kept: its braces hold live code)."""
        if self.syntax.mask and not formatted and _CODE_LIKE.search(body) is not None and (self.gate is None or
                                                                          self.gate.search(body) is not None):
            return quote + quote
        return quote + body + quote


def _marks(syntax: Syntax):
    """A test of a line for the marks that carry a state across lines (substring tests: cheaper than a regex)."""
    if syntax.triple and syntax.slash:
        return lambda t: '"""' in t or "\x27\x27\x27" in t or "/*" in t or "*/" in t
    if syntax.triple:
        return lambda t: '"""' in t or "\x27\x27\x27" in t
    if syntax.slash:
        return lambda t: "/*" in t or "*/" in t
    return lambda _t: False


def _formatted(text: str, at: int) -> bool:
    """Whether the string whose quote is at `at` is a Python f-string (f"", rf"", fr"", any case)."""
    prefix = text[max(0, at - 2):at].lower()
    return prefix[-1:] == "f" or prefix in ("fr", "rf")


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
