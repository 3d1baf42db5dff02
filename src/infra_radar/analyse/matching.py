"""Word and path matching for the rule tables: words of a text, a phrase index that finds every phrase
of every table in one pass, and named glob classes of changed paths.

Text is matched as words, never as raw substrings: titles, descriptions and labels are lower-cased
and split into runs of letters and digits, so `kv_cache`, `KV-cache` and `kv cache` are one phrase
and `doc` never matches `doctor`. Every phrase of every table is compiled into one index that finds
all of them in a single pass over the words; a regex alternation per topic, run over each
description, measured five times slower on the vllm-ascend history.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..errors import ConfigError

__all__ = ["words"]

_GAP = 4  # words allowed between the parts of an `a ... b` phrase
_WORD = re.compile(r"[a-z0-9]+")

# Every byte but [0-9a-z] becomes a space; non-ASCII characters become "?" first, so a space too.
_WORD_BYTES = bytes(c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))


def words(text: str) -> list[str]:
    """The lower-cased words of `text` (runs of ASCII letters and digits), in order."""
    # Same result as re.findall("[a-z0-9]+", text.lower()), in a third of the time.
    return text.lower().encode("ascii", "replace").translate(_WORD_BYTES).decode("ascii").split()


# --------------------------------------------------------------------------- phrase index


@dataclass(frozen=True, slots=True)
class _Phrase:
    pid: int
    parts: tuple[tuple[str, bool, int], ...]  # (word, is_prefix, words allowed before it)
    needs: frozenset[str]  # the exact words after the first: a cheap test before matching in order
    joined: str  # " a b " for phrases of adjacent exact words: a substring test on the joined words
    heads: frozenset[str]  # first three letters of the later prefix words (`qwen*` -> "qwe")


def _parse_phrase(text: str) -> tuple[tuple[str, bool, int], ...]:
    parts: list[tuple[str, bool, int]] = []
    gap = 0
    for token in text.lower().split():
        if token == "...":
            gap = _GAP
            continue
        prefix = token.endswith("*")
        pieces = _WORD.findall(token)
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            parts.append((piece, prefix and last, gap if i == 0 else 0))
        gap = 0
    if not parts or (parts[0][1] and len(parts[0][0]) < 2):
        raise ConfigError(f"rule phrase {text!r} has no words (a prefix needs at least two letters)")
    return tuple(parts)


@dataclass(slots=True)
class _Tables:
    """Lookup tables of the phrases searched in one kind of text."""

    single: dict[str, list[int]] = field(default_factory=dict)  # one exact word -> phrase ids
    plain: dict[str, list[_Phrase]] = field(default_factory=dict)  # first word -> adjacent exact words
    multi: dict[str, list[_Phrase]] = field(default_factory=dict)  # first word -> with gaps or prefixes
    prefix: dict[str, list[_Phrase]] = field(default_factory=dict)  # first two letters -> prefix phrases

    def put(self, phrase: _Phrase) -> None:
        word, prefix, _ = phrase.parts[0]
        if prefix:
            self.prefix.setdefault(word[:2], []).append(phrase)
        elif len(phrase.parts) == 1:
            self.single.setdefault(word, []).append(phrase.pid)
        else:
            (self.plain if phrase.joined else self.multi).setdefault(word, []).append(phrase)


class _Index:
    """Every phrase of every rule table -> the owners that listed it; one pass finds them all.

    Titles, tags and labels are short and searched for every phrase; descriptions are long and only
    searched for the phrases some rule reads there (`body=True`), which keeps the pass cheap.
    """

    def __init__(self) -> None:
        self._tables = {False: _Tables(), True: _Tables()}  # body? -> tables
        self._ids: dict[tuple[tuple[str, bool, int], ...], _Phrase] = {}
        self._placed: set[tuple[int, bool]] = set()
        self.texts: list[str] = []
        self.pids: dict[str, frozenset[int]] = {}  # owner -> the phrase ids it listed

    def add(self, phrases: Iterable[str], owner: str, body: bool = True) -> None:
        """Register `phrases` for `owner`, searched in short texts and (if `body`) in descriptions."""
        for text in phrases:
            parts = _parse_phrase(text)
            phrase = self._ids.get(parts)
            if phrase is None:
                plain = not any(pre or gap for _, pre, gap in parts)
                phrase = self._ids[parts] = _Phrase(
                    len(self.texts), parts, frozenset(w for w, pre, _ in parts[1:] if not pre),
                    " " + " ".join(w for w, _, _ in parts) + " " if plain else "",
                    frozenset(w[:3] for w, pre, _ in parts[1:] if pre and len(w) >= 3))
                self.texts.append(text)
            for where in (False, True) if body else (False,):
                if (phrase.pid, where) not in self._placed:
                    self._placed.add((phrase.pid, where))
                    self._tables[where].put(phrase)
            self.pids[owner] = self.pids.get(owner, frozenset()) | {phrase.pid}

    def find(self, seq: Sequence[str], body: bool = False) -> set[int]:
        """The ids of the phrases found in the word sequence (`pids[owner] & found`: an owner's hits)."""
        if not seq:
            return set()
        tables = self._tables[body]
        distinct = set(seq)
        # Later prefix words are tested by their first letters: cheap, and most candidates fail it.
        heads = {w[:3] for w in distinct} if body else None
        found: set[int] = set()
        for word in distinct & tables.single.keys():
            found.update(tables.single[word])
        joined = ""
        for word in distinct & tables.plain.keys():
            for phrase in tables.plain[word]:
                if phrase.needs <= distinct:
                    joined = joined or " " + " ".join(seq) + " "
                    if phrase.joined in joined:
                        found.add(phrase.pid)
        for word in distinct & tables.multi.keys():
            _find_at(seq, word, tables.multi[word], found, distinct, heads)
        keys = tables.prefix.keys()
        for word in [w for w in distinct if w[:2] in keys]:
            for phrase in tables.prefix[word[:2]]:
                if phrase.pid not in found and word.startswith(phrase.parts[0][0]):
                    if len(phrase.parts) == 1:
                        found.add(phrase.pid)
                    else:
                        _find_at(seq, word, [phrase], found, distinct, heads)
        return found


def _find_at(seq: Sequence[str], word: str, phrases: list[_Phrase], found: set[int], distinct: set[str],
             heads: set[str] | None) -> None:
    """Add the phrases (all starting with `word`) that match at some occurrence of `word`."""
    todo = [p for p in phrases
            if p.pid not in found and p.needs <= distinct and (heads is None or p.heads <= heads)]
    i = -1
    while todo:
        try:
            i = seq.index(word, i + 1)
        except ValueError:
            return
        for phrase in todo:
            if len(phrase.parts) == 1 or _rest_matches(seq, i, phrase.parts):
                found.add(phrase.pid)
        todo = [p for p in todo if p.pid not in found]


def _rest_matches(seq: Sequence[str], i: int, parts: tuple[tuple[str, bool, int], ...]) -> bool:
    pos, size = i, len(seq)
    for word, prefix, gap in parts[1:]:
        for j in range(pos + 1, min(size, pos + 2 + gap)):
            if (seq[j].startswith(word) if prefix else seq[j] == word):
                pos = j
                break
        else:
            return False
    return True


# --------------------------------------------------------------------------- globs


def _glob_regex(pattern: str) -> str:
    """`*` stays in one directory, `**` crosses directories, a pattern without `/` matches a name."""
    if "/" not in pattern:
        pattern = "**/" + pattern
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            ch = pattern[i]
            out.append("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch))
            i += 1
    return "".join(out)


_WILD = re.compile(r"[*?\[\]]")


class _Globs:
    """Named glob classes; tells which classes a path falls in.

    Most globs are of a few simple shapes (`*.ext`, `name`, `**/dir/**`, `dir/**`, `*part*`); those
    are answered by dictionary lookups on the path's parts, the rest by a regex after a cheap
    substring test. A history has ~10k distinct paths and ~50 classes: regexes alone cost a second.
    """

    def __init__(self) -> None:
        self._name: dict[str, set[str]] = {}  # exact file name
        self._ext: dict[str, set[str]] = {}  # ".ext" of the file name
        self._dir: dict[str, set[str]] = {}  # a directory name at any depth
        self._under: dict[str, set[str]] = {}  # "a/b/": a path prefix
        self._part: list[tuple[str, str]] = []  # (text inside the file name, class)
        self._start: list[tuple[str, str]] = []  # (start of the file name, class)
        self._other: list[tuple[str, re.Pattern[str], str]] = []  # (literal, regex, class)
        self._cache: dict[str, frozenset[str]] = {}

    def add(self, name: str, patterns: Iterable[str]) -> None:
        """Register the globs of class `name`."""
        for pattern in patterns:
            self._add(name, pattern if "/" in pattern else "**/" + pattern)

    def _add(self, name: str, pattern: str) -> None:
        rest = pattern.removeprefix("**/")
        anywhere, plain = rest != pattern, not _WILD.search(rest)
        if anywhere and plain and "/" not in rest:
            self._name.setdefault(rest, set()).add(name)
        elif anywhere and "/" not in rest and rest.startswith("*.") and not _WILD.search(rest[1:]):
            self._ext.setdefault(rest[1:], set()).add(name)
        elif anywhere and "/" not in rest and rest[:1] == rest[-1:] == "*" and not _WILD.search(rest[1:-1]):
            self._part.append((rest[1:-1], name))
        elif anywhere and "/" not in rest and rest.endswith("*") and not _WILD.search(rest[:-1]):
            self._start.append((rest[:-1], name))
        elif anywhere and rest.endswith("/**") and not _WILD.search(rest[:-3]) and "/" not in rest[:-3]:
            self._dir.setdefault(rest[:-3], set()).add(name)
        elif not anywhere and pattern.endswith("/**") and not _WILD.search(pattern[:-3]):
            self._under.setdefault(pattern[:-2], set()).add(name)
        else:
            literal = max(re.split(r"[*?\[\]]+", rest), key=len)
            self._other.append((literal, re.compile(_glob_regex(pattern) + r"\Z"), name))

    def classes(self, path: str) -> frozenset[str]:
        """The classes `path` falls in (cached: the same paths recur across a history)."""
        found = self._cache.get(path)
        if found is None:
            found = self._cache[path] = frozenset(self._match(path))
        return found

    def _match(self, path: str) -> set[str]:
        dirs, _, base = path.rpartition("/")
        hits = set(self._name.get(base, ()))
        dot = base.rfind(".")
        if dot > 0:
            hits.update(self._ext.get(base[dot:], ()))
        parts = dirs.split("/") if dirs else []
        for i, part in enumerate(parts):
            hits.update(self._dir.get(part, ()))
            hits.update(self._under.get("/".join(parts[: i + 1]) + "/", ()))
        hits.update(name for text, name in self._part if text in base)
        hits.update(name for text, name in self._start if base.startswith(text))
        hits.update(name for literal, rx, name in self._other if literal in path and rx.match(path))
        return hits

