"""Grounding of generated prose: a sentence survives only if its numbers and references are known.

A number counts as grounded when it occurs (after normalisation: 1,048.64 = 1048.64 = 1048.640) in the
source text the prompt was built from (item bodies, titles, extracted claims, counts). A reference
`#N` or `owner/name#N` counts when it names an item of the prompt's context. Everything else in a
sentence is the model's wording and is not checked here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_REF = re.compile(r"(?<![\w/.-])(?:([A-Za-z0-9][\w.-]*/[\w.-]+))?#(\d+)\b")
# A number: digits with optional thousands commas and decimals; not part of a longer digit run.
_NUMBER = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])|(?<![\d.,])\d+(?:\.\d+)?(?![\d])")
# Sentence ends: CJK stops anywhere, Latin stops only before whitespace (keeps 1.5 and v0.9 whole).
_SENTENCE = re.compile(r"(?<=[。！？；])|(?<=[.!?;])\s+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{3,}")


def normalise(number: str) -> str:
    """One spelling per value: thousands commas, leading zeros and trailing decimal zeros removed."""
    whole, _, frac = number.replace(",", "").partition(".")
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole


def numbers(text: str) -> set[str]:
    """The normalised numbers in `text`, references (#N) excluded."""
    return {normalise(m.group()) for m in _NUMBER.finditer(_REF.sub(" ", text))}


def refs(text: str, default_repo: str) -> set[str]:
    """The item references in `text` as `owner/name#N` (a bare #N belongs to `default_repo`)."""
    return {f"{(m.group(1) or default_repo).lower()}#{m.group(2)}" for m in _REF.finditer(text)}


def claim_numbers(values: Iterable[float | None]) -> set[str]:
    """Normalised spellings of extracted claim values (2.45, 42.0 -> 42, and their rounded forms)."""
    found: set[str] = set()
    for v in values:
        if v is None:
            continue
        found |= {normalise(f"{abs(v):.{d}f}") for d in range(4)}
    return found


@dataclass(slots=True)
class Grounds:
    """What a prompt's generated text may mention."""

    numbers: set[str]
    refs: set[str]  # lowercase owner/name#N
    default_repo: str

    @classmethod
    def of(cls, source: str, item_refs: Iterable[str], default_repo: str,
           extra_numbers: Iterable[str] = ()) -> Grounds:
        """Grounds from the prompt's source text, the refs of its items and extra (claim) numbers."""
        allowed = {r.lower() for r in item_refs}
        return cls(numbers(source) | set(extra_numbers), allowed, default_repo.lower())


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (Latin and CJK punctuation)."""
    return [s for s in (p.strip() for p in _SENTENCE.split(text)) if s]


def sentence_ok(sentence: str, grounds: Grounds) -> bool:
    """True when every number and reference in `sentence` is grounded."""
    if not refs(sentence, grounds.default_repo) <= grounds.refs:
        return False
    return numbers(sentence) <= grounds.numbers


def ground(text: str, grounds: Grounds) -> tuple[str, int]:
    """`text` without its ungrounded sentences, and how many were dropped."""
    parts = sentences(text)
    kept = [s for s in parts if sentence_ok(s, grounds)]
    joined = "".join(s if i == 0 or kept[i - 1].endswith(("。", "！", "？", "；")) else f" {s}"
                     for i, s in enumerate(kept))
    return joined, len(parts) - len(kept)


def language_ok(text: str, lang: str) -> bool:
    """Whether prose is in `lang`: zh needs Chinese characters to dominate words, en needs none of them."""
    cjk = len(_CJK.findall(text))
    if lang == "zh":
        return cjk > 0 and cjk >= len(_LATIN_WORD.findall(text))
    return cjk == 0
