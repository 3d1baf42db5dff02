"""Chinese text, wherever a report writes it: the share of CJK characters among a text's letters, and Chinese
spacing (one space between Latin and CJK, none between CJK characters or around CJK punctuation).

Linear in the text: each function is one or two regular-expression passes.
"""

from __future__ import annotations

import re

from .escape import Md

__all__ = ["cjk_share", "squeeze_cjk", "tidy"]

_CJK = re.compile(r"[\u4e00-\u9fff]")


def cjk_share(s: str) -> float:
    """The share of CJK characters among the letters of `s`."""
    letters = sum(ch.isalpha() for ch in s)
    return len(_CJK.findall(s)) / letters if letters else 0.0


_SPACE_CJK = re.compile(r"(?<=[\u4e00-\u9fff（），、；：。])\s+(?=[\u4e00-\u9fff（），、；：。])"
                        r"|(?<=[（，、；：])\s+|\s+(?=[（），、；：。])")
_LATIN_CJK = re.compile(r"(?<=[A-Za-z0-9`+%)])(?=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9`(])")


def tidy(s: str) -> str:
    """Chinese spacing: one space between Latin and CJK, none between CJK and CJK or around CJK punctuation."""
    s = re.sub(r"\s{2,}", " ", s).strip()
    return _LATIN_CJK.sub(" ", _SPACE_CJK.sub("", s))


def squeeze_cjk(s: str) -> str:
    """`s` without the spaces that sit between CJK characters or around CJK punctuation: a spaced template
    ("在 {target} 上") filled with a value that begins or ends in CJK. Adds nothing (code is left as it is)."""
    out = _SPACE_CJK.sub("", s)
    return Md(out) if isinstance(s, Md) else out
