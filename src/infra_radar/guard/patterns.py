"""Is a rule's regular expression linear in its input? A static reading of the pattern, done once when a rule file
is loaded (the packaged files and the user's copies alike).

Python's `re` backtracks. A pattern costs more than linear time on a line that fails to match when two unbounded
repeats can share the same text: one after the other (`\\s*:\\s*[\\w ]+?\\s*=` on a run of spaces: every split of
the run is tried, n² per start, n³ with two splits) or one inside the other (`(?:\\w+\\s?)*`: exponential). This
module finds those shapes without running the pattern:

- from each unbounded repeat R that can give text back (greedy or lazy; a possessive repeat `*+` and a repeat
  inside an atomic group `(?>…)` never give back), the text R can repeat (its *pump*: a set of characters) is
  followed through what comes after R, through optional parts, alternatives and back round an enclosing loop;
  a required element the pump cannot pass ends the walk; an unbounded repeat the pump can enter is a finding;
- a pattern searched for (`re.search`, `finditer`) is tried from every position: an unanchored pattern whose
  first required element is an unbounded repeat rescans the same run from each start (n²). That is the same
  finding with a virtual `.*?` in front; a `^` ends it.

The reading is over a probe alphabet (ASCII, tab and newline, and a few non-ASCII letters and spaces) and
over-approximates: a finding names the two repeats and a character they share, so the rule's author can make one
of them possessive (`\\s*+`), bound it (`{0,8}`) or require a separator between them. `bench/` and
`tests/test_rule_linearity.py` confirm the reading by timing each packaged rule on adversarial lines of two
lengths in one run.
"""

from __future__ import annotations

import re
import re._constants as C  # noqa: N812 - the parser's opcode names
import re._parser as P  # noqa: N812
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError

_ALPHABET = tuple(chr(i) for i in range(9, 11)) + tuple(chr(i) for i in range(32, 127)) + (
    "\u00a0", "é", "中", "\u3000", "。", "—")
_ALL = frozenset(_ALPHABET)
_WORD = frozenset(ch for ch in _ALL if ch.isalnum() or ch == "_")
_UNBOUNDED = C.MAXREPEAT
_BIG = 100  # a bounded repeat longer than this counts as unbounded: {0,1000} backtracks like *


_Pump = tuple[frozenset[str], bool]  # the characters of the shared run, and whether a \\b lies in it


class UnsafePattern(ConfigError):
    """A rule's pattern whose matching time can grow faster than its input."""


@dataclass(eq=False)
class _Node:
    kind: str  # char, seq, alt, rep, atomic, empty, begin, look
    chars: frozenset[str] = frozenset()
    children: list[_Node] = field(default_factory=list)
    lo: int = 0
    hi: int = 0
    possessive: bool = False
    parent: _Node | None = None
    text: str = ""  # a short description for messages


def _category(cat, ignore: bool) -> frozenset[str]:
    tests = {
        "DIGIT": str.isdecimal,
        "SPACE": lambda ch: ch.isspace(),
        "WORD": lambda ch: ch.isalnum() or ch == "_",
        "LINEBREAK": lambda ch: ch == "\n",
    }
    name = str(cat).replace("CATEGORY_", "").replace("UNI_", "").replace("LOC_", "")
    negate = name.startswith("NOT_")
    test = tests[name.removeprefix("NOT_")]
    return frozenset(ch for ch in _ALPHABET if bool(test(ch)) != negate)


def _fold(chars: set[str] | frozenset[str]) -> frozenset[str]:
    return frozenset(chars) | frozenset(c.swapcase() for c in chars if c.swapcase() in _ALL)


def _in_set(items, ignore: bool) -> frozenset[str]:
    out: set[str] = set()
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            out.add(chr(av))
        elif op is C.RANGE:
            lo, hi = av
            out.update(ch for ch in _ALPHABET if lo <= ord(ch) <= hi)
        elif op is C.CATEGORY:
            out |= _category(av, ignore)
    chars = _fold(out) if ignore else frozenset(out)
    return _ALL - chars if negate else chars & _ALL


def _build(items, flags: int) -> _Node:
    """Our tree of a parsed (sub)pattern: a sequence of its elements."""
    seq = _Node("seq")
    ignore = bool(flags & re.IGNORECASE)
    for op, av in items:
        node: _Node
        if op is C.LITERAL:
            chars = {chr(av)}
            node = _Node("char", _fold(chars) if ignore else frozenset(chars) & _ALL or frozenset({"\x00"}))
        elif op is C.NOT_LITERAL:
            node = _Node("char", _ALL - ({chr(av)} | ({chr(av).swapcase()} if ignore else set())))
        elif op is C.ANY:
            node = _Node("char", _ALL if flags & re.DOTALL else _ALL - {"\n"})
        elif op is C.IN:
            node = _Node("char", _in_set(av, ignore))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            node = _Node("rep", lo=lo, hi=hi, possessive=op is C.POSSESSIVE_REPEAT, children=[_build(sub, flags)])
        elif op is C.SUBPATTERN:
            _group, add, dele, sub = av
            node = _build(sub, (flags | add) & ~dele)
        elif op is C.ATOMIC_GROUP:
            node = _Node("atomic", children=[_build(av, flags)])
        elif op is C.BRANCH:
            node = _Node("alt", children=[_build(b, flags) for b in av[1]])
        elif op is C.AT and av in (C.AT_BOUNDARY, C.AT_UNI_BOUNDARY, C.AT_LOC_BOUNDARY):
            node = _Node("boundary")
        elif op is C.AT and av in (C.AT_END, C.AT_END_STRING):
            # after `$` only a last newline (or, with re.M, any newline) may come; after `\Z` nothing
            node = _Node("begin", chars=frozenset("\n") if av is C.AT_END else frozenset())
        elif op is C.AT:
            begins = (C.AT_BEGINNING, C.AT_BEGINNING_STRING)
            node = _Node("begin" if av in begins and not flags & re.MULTILINE else "empty")
            if av is C.AT_BEGINNING and flags & re.MULTILINE:
                node = _Node("begin", chars=frozenset("\n"))
        elif op in (C.ASSERT, C.ASSERT_NOT):
            node = _Node("look", children=[_build(av[1], flags)])
        elif op is C.GROUPREF_EXISTS:
            _group, yes, no = av
            node = _Node("alt", children=[_build(yes, flags)] + ([_build(no, flags)] if no else [_Node("seq")]))
        else:  # a back-reference and the like: matches some text already read; read as anything, once
            node = _Node("char", _ALL)
        node.parent = seq
        for child in node.children:
            child.parent = node
        seq.children.append(node)
    return seq


def _unbounded(node: _Node) -> bool:
    return node.kind == "rep" and (node.hi == _UNBOUNDED or node.hi > _BIG)


class _Reader:
    def __init__(self, root: _Node) -> None:
        self.root = root
        self._nullable: dict[int, bool] = {}
        self._chars: dict[int, frozenset[str]] = {}

    def nullable(self, n: _Node) -> bool:
        key = id(n)
        if key not in self._nullable:
            if n.kind == "char":
                value = False
            elif n.kind == "seq":
                value = all(self.nullable(c) for c in n.children)
            elif n.kind == "alt":
                value = any(self.nullable(c) for c in n.children)
            elif n.kind == "rep":
                value = n.lo == 0 or self.nullable(n.children[0])
            elif n.kind == "atomic":
                value = self.nullable(n.children[0])
            else:
                value = True
            self._nullable[key] = value
        return self._nullable[key]

    def chars(self, n: _Node) -> frozenset[str]:
        """Every character some match of `n` can hold."""
        key = id(n)
        if key not in self._chars:
            if n.kind == "char":
                value = n.chars
            elif n.kind in ("seq", "alt", "rep", "atomic"):
                value = frozenset().union(*(self.chars(c) for c in n.children)) if n.children else frozenset()
            else:
                value = frozenset()
            self._chars[key] = value
        return self._chars[key]

    def passing(self, n: _Node, chars: frozenset[str]) -> frozenset[str]:
        """The characters of `chars` a run can keep being made of while `n` matches part of it: a required
        element narrows them, an optional one does not."""
        if not chars or n.kind in ("empty", "look", "boundary"):
            return chars
        if n.kind in ("char", "begin"):
            return chars & n.chars
        if n.kind == "seq":
            for child in n.children:
                chars = self.passing(child, chars)
            return chars
        if n.kind == "alt":
            return frozenset().union(*(self.passing(c, chars) for c in n.children))
        if n.kind == "atomic":
            return self.passing(n.children[0], chars)
        if n.kind == "rep":
            after = self.passing(n.children[0], chars)
            return chars | after if n.lo == 0 else after
        return chars

    # -- following a pump through what comes after a repeat
    def enter(self, n: _Node, pump: _Pump, origin: _Node) -> tuple[_Pump, str]:
        """(the pump left after passing `n`, a finding or ""). The pump is the set of characters a run that both
        `origin` and what follows could match may consist of, and whether a word boundary lies in that run."""
        chars, crossed = pump
        if not chars:
            return pump, ""
        if n.kind == "char":
            return (chars & n.chars, crossed), ""
        if n.kind in ("empty", "look"):
            return pump, ""
        if n.kind == "boundary":
            return (chars, True), ""
        if n.kind == "begin":
            return (chars & n.chars, crossed), ""
        if n.kind == "seq":
            for child in n.children:
                pump, found = self.enter(child, pump, origin)
                if found or not pump[0]:
                    return pump, found
            return pump, ""
        if n.kind == "alt":
            left: frozenset[str] = frozenset()
            any_crossed = False
            for child in n.children:
                after, found = self.enter(child, pump, origin)
                if found:
                    return after, found
                left |= after[0]
                any_crossed = any_crossed or after[1]
            return (left, any_crossed), ""
        if n.kind == "atomic":
            return self.enter(n.children[0], pump, origin)
        if n.kind == "rep":
            body = n.children[0]
            after, found = self.enter(body, pump, origin)
            if found:
                return after, found
            shared = after[0]
            # a word boundary inside a run of word characters only (or of others only) cannot be: no split
            if after[1] and (shared <= _WORD or not shared & _WORD):
                shared = frozenset()
            if _unbounded(n) and shared and not self.nullable(body):
                return pump, self._finding(origin, n, shared)
            if n.lo == 0:
                return (chars | after[0], crossed or after[1]), ""
            return after, ""
        return pump, ""

    def follow(self, origin: _Node, chars: frozenset[str]) -> str:
        """Walk what comes after `origin` in the pattern with the pump `chars`; a finding or ""."""
        node = origin
        pump: _Pump = (chars, False)
        looped: set[int] = set()
        while node.parent is not None and pump[0]:
            parent = node.parent
            if parent.kind == "seq":
                at = next(i for i, c in enumerate(parent.children) if c is node)
                for sibling in parent.children[at + 1:]:
                    pump, found = self.enter(sibling, pump, origin)
                    if found:
                        return found
                    if not pump[0]:
                        return ""
            elif parent.kind == "rep":
                if (parent.hi > 1 or parent.hi == _UNBOUNDED) and id(parent) not in looped:
                    looped.add(id(parent))
                    if parent.possessive:
                        return ""
                    pump, found = self.enter(parent.children[0], pump, origin)
                    if found:
                        return found
            elif parent.kind in ("atomic", "look"):
                return ""  # an atomic group gives nothing back; a lookaround is matched on its own
            node = parent
        return ""

    def _finding(self, first: _Node, second: _Node, shared: frozenset[str]) -> str:
        sample = sorted(shared, key=lambda ch: (ch not in " a0_.", ch))[0]
        shown = {" ": "a space", "\t": "a tab", "\n": "a newline"}.get(sample, repr(sample))
        if first is second:
            return f"a repeat nested in a repeat can match the same run of {shown} in many ways"
        if first.kind == "search":
            return f"searched from every position, a leading repeat rescans the same run of {shown}"
        return f"two repeats in a row can both match a run of {shown}"

    def repeats(self, n: _Node, inside_atomic: bool = False):
        if n.kind == "rep" and _unbounded(n) and not n.possessive and not inside_atomic:
            yield n
        for child in n.children:
            yield from self.repeats(child, inside_atomic or n.kind == "atomic")


@lru_cache(maxsize=4096)
def findings(pattern: str, flags: int = 0, searched: bool = True) -> list[str]:
    """What makes `pattern` super-linear, one line each; [] when none of the shapes above is found. `searched`:
    the pattern is tried from every position of the text (search, finditer, sub), not only matched at its
    start."""
    try:
        parsed = P.parse(pattern, flags)
    except re.error:
        return []  # compiling it reports the error itself
    root = _build(parsed, flags | parsed.state.flags)
    reader = _Reader(root)
    out: list[str] = []
    for rep in reader.repeats(root):
        found = reader.follow(rep, reader.passing(rep.children[0], _ALL))
        if found and found not in out:
            out.append(found)
    if searched:
        virtual = _Node("search")
        _pump, found = reader.enter(root, (_ALL, False), virtual)
        if found and found not in out:
            out.append(found)
    return list(out)


def check(pattern: str, where: str, flags: int = 0, searched: bool = True) -> None:
    """Raise UnsafePattern with one line naming `where` when `pattern` is super-linear."""
    found = findings(pattern, flags, searched)
    if found:
        raise UnsafePattern(f"{where}: the pattern {pattern[:80]!r} is not linear in its input ({found[0]}); "
                            "make one repeat possessive (*+, ++), bound it ({0,8}) or put a required "
                            "separator between them")


_META = re.compile(r"[*+?{}]")  # a string without a repeat cannot backtrack: no need to parse it


def check_rule_data(data: Any, source: Path | str, path: str = "") -> None:
    """Refuse a rule file (the user's copy in `rules_dir`) any string of which, read as a regular expression,
    has nested or adjacent repeats that can share text: one line naming the file, the key and the shape. Word
    lists and globs hold no such shape, so every string is read (a file does not say which of its strings are
    patterns)."""
    if isinstance(data, dict):
        for key, value in data.items():
            check_rule_data(value, source, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for value in data:
            check_rule_data(value, source, path)
    elif isinstance(data, str) and _META.search(data):
        try:
            re.compile(data)
        except re.error:
            return
        found = findings(data, 0, False)
        if found:
            raise UnsafePattern(f"{source}: [{path}] the pattern {data[:60]!r} is not linear in its input "
                                f"({found[0]}); make the first repeat possessive (*+, ++), bound it ({{0,8}}) "
                                "or put a required separator between the two")


def _sample(n: _Node, reader: _Reader, ch: str, size: int) -> str:
    """A text `n` matches (or nearly), its repeats filled with `size` copies of `ch` where they can take it."""
    if n.kind == "char":
        if ch in n.chars:
            return ch
        return next((c for c in "a0 _.-" if c in n.chars), min(n.chars) if n.chars else "")
    if n.kind == "seq":
        return "".join(_sample(c, reader, ch, size) for c in n.children)
    if n.kind == "alt":
        branch = next((c for c in n.children if ch in reader.chars(c)), n.children[0])
        return _sample(branch, reader, ch, size)
    if n.kind == "atomic":
        return _sample(n.children[0], reader, ch, size)
    if n.kind == "rep":
        takes = ch in reader.chars(n.children[0])
        filled = takes and _unbounded(n)
        # a repeat inside a filled one is filled twice only: the line grows with `size`, not with its square
        body = _sample(n.children[0], reader, ch, 2 if filled else size)
        count = size if filled else min(max(n.lo, 1 if takes else 0), n.hi)
        return body * count
    return ""


def witnesses(pattern: str, size: int, flags: int = 0) -> list[str]:
    """Lines meant to make `pattern` backtrack: for each of a few characters, the pattern's own shape with
    every repeat that can take the character filled with `size` copies of it, then ended wrongly (its last
    character replaced, or a NUL added); and a plain run of the character. A linear pattern costs about
    `size` on each; a pattern with shared repeats costs `size`² or more on some."""
    parsed = P.parse(pattern, flags)
    root = _build(parsed, flags | parsed.state.flags)
    reader = _Reader(root)
    out: list[str] = []
    for ch in " a0_-.=,:\t\n/#":
        text = _sample(root, reader, ch, size)
        out += [text + "\x00", text[:-1] + "\x00" if text else "\x00", text + ",", ch * size + "\x00"]
    return out
