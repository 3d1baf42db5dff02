"""English grammar words in a Chinese phrase (defaults/rules/zh_words.toml): the joints a title's phrase is
held together by ("based on", "instead of", "for", "of", "when") said in Chinese, articles and auxiliaries
dropped, so a zh row never shows an English function word outside code spans and names; and the check that
finds one (`function_words`), used by the title reading to know when it is unsure and by the tests.

Linear in the phrase: one left-to-right walk, each word looked at a bounded number of times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..config import rule_data, rules_cache

__all__ = ["Zh", "function_words", "glossary_extra", "joint", "spliced", "words"]


class Zh(str):
    """A piece of a phrase already said in Chinese: shown as it is, never escaped or glossed again."""


@dataclass(frozen=True)
class _Words:
    function: frozenset[str]
    phrases: dict[tuple[str, ...], str]
    single: dict[str, Any]
    glossary: dict[str, str]
    longest: int
    spliced: frozenset[str] = frozenset()
    endings: tuple[str, ...] = ()
    terms: frozenset[str] = frozenset()


@rules_cache
def words() -> _Words:
    data = rule_data("zh_words")
    phrases = {tuple(k.lower().split()): v for k, v in data.get("phrases", {}).items()}
    return _Words(function=frozenset(w.lower() for w in data["function"]["words"]), phrases=phrases,
                  single={k.lower(): v for k, v in data.get("words", {}).items()},
                  glossary=dict(data.get("glossary", {})), longest=max((len(k) for k in phrases), default=1),
                  spliced=frozenset(w.lower() for w in data.get("spliced", {}).get("words", [])),
                  endings=tuple(data.get("spliced", {}).get("suffixes", [])),
                  terms=frozenset(w.lower() for w in data.get("spliced", {}).get("terms", [])))


def glossary_extra() -> dict[str, str]:
    """The field's everyday words said in Chinese (added to the conclusion rules' glossary)."""
    return words().glossary


_TRAIL = ".,:;!?\"'“”"


def _low(tok: str) -> str:
    return tok.strip(_TRAIL).lower()


def _name_like(tok: str) -> bool:
    """An all-capital word of two letters or more, or a word with a digit: a name, never a grammar word."""
    w = tok.strip(_TRAIL)
    return (len(w) > 1 and w.isupper()) or any(ch.isdigit() for ch in w)


def joint(tokens: list[str], i: int) -> tuple[int, Any]:
    """(words taken, what they are) when a grammar word or phrase begins at tokens[i]: a Chinese string, ""
    (dropped), or a dict with an `np` frame; (0, None) otherwise."""
    w = words()
    if _name_like(tokens[i]) or tokens[i].startswith("`"):
        return 0, None
    for n in range(min(w.longest, len(tokens) - i), 1, -1):
        key = tuple(_low(x) for x in tokens[i:i + n])
        if key in w.phrases:
            return n, w.phrases[key]
    low = _low(tokens[i])
    if low in w.single:
        return 1, w.single[low]
    if low in w.phrases.keys() or (low,) in w.phrases:
        return 1, w.phrases[(low,)]
    return 0, None


_CODE_OR_LINK = re.compile(r"`+[^`]*`+|\[[^\]]*\]\([^)]*\)|<[^>]*>")
_LATIN = re.compile(r"(?<![\w/.\-@#\[])[A-Za-z][A-Za-z']*(?![\w/\-@])")


def function_words(md: str) -> list[str]:
    """The English grammar words of `md` outside code spans and link targets (all-capital words are names)."""
    rest = _CODE_OR_LINK.sub(" ", str(md).replace("\\", ""))
    fw = words().function
    return [m for m in _LATIN.findall(rest) if m.lower() in fw and not (len(m) > 1 and m.isupper())]


_WORD_RUN = re.compile(r"(?<![\w/.\-@#\[])[A-Za-z][A-Za-z'-]*(?![\w/@])")


def spliced(md: str) -> list[str]:
    """The English words of a Chinese sentence `md` that are not terms of the field: its grammar words
    (`function_words`) and the determiners, adjectives, adverbs, participles and plain verbs of zh_words.toml
    [spliced] (listed, or made by an ending such as "-ly", "-ed", "-ible", "-ing" and not a listed term).
    Code spans, links, all-capital names and words with digits are never looked at; a capitalised word next to
    another capitalised word is a name ("Context Parallel"). One left-to-right pass over the words."""
    w = words()
    rest = _CODE_OR_LINK.sub(" ", str(md).replace("\\", ""))
    found = list(_WORD_RUN.finditer(rest))
    out: list[str] = []
    for i, m in enumerate(found):
        word = m.group(0).strip("'-")
        low = word.lower()
        if not word or (len(word) > 1 and word.isupper()):
            continue
        if any(ch.isupper() for ch in word[1:]):  # a CamelCase name ("MindSpeed", "vLLM")
            continue
        if low in w.function or (len(low) == 1 and word.islower()):  # a stray "s" of a possessive cut off
            out.append(word)
            continue
        if word[0].isupper() and (_name_pair(rest, found[i - 1] if i else None, m)
                                  or _name_pair(rest, m, found[i + 1] if i + 1 < len(found) else None)):
            continue
        if low in w.terms or ("-" in low and not any(_made(p, w) or p in w.spliced for p in low.split("-"))):
            continue
        if low in w.spliced or _made(low, w):
            out.append(word)
    return out


def _made(low: str, w: _Words) -> bool:
    """Whether a word is made by an adjective, adverb or participle ending (three letters of stem at least)."""
    return low not in w.terms and any(low.endswith(e) and len(low) >= len(e) + 3 for e in w.endings)


def _name_pair(rest: str, a: re.Match[str] | None, b: re.Match[str] | None) -> bool:
    """Whether two found words are capitalised and one space apart: a name ("Context Parallel")."""
    return (a is not None and b is not None and b.start() == a.end() + 1 and rest[a.end()] == " "
            and a.group(0)[:1].isupper() and b.group(0)[:1].isupper())
