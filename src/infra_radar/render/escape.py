"""Markdown built by the radar, and author text kept as text inside it.

Every string that came from outside (titles, bodies, tags, authors, branches, paths, labels, reasons, model
prose) reaches a Markdown report through this module:

- `text(s)` / `cell(s)`: author text on one line, as plain text (in a table cell: pipes escaped too);
- `code(s)`: an identifier, path or sha as an inline code span;
- `link(label, url)`: a link the radar builds itself (the label is author text, the URL ours).

What these return is `Md`: Markdown the radar built, which the templates' filters pass through untouched.
A sentence builder that mixes its own frame with author pieces escapes each piece with the functions above
and returns `Md(...)` of the whole; a plain `str` is author text and is escaped wherever it is shown.
"""

from __future__ import annotations

import html
import re

__all__ = ["Md", "cell", "code", "join", "link", "text"]

_SPACE = re.compile(r"\s+")
_TICKS = re.compile(r"`+")


class Md(str):
    """Markdown the radar built itself: safe to insert as it is."""

    __slots__ = ()


def _one_line(value: object) -> str:
    return _SPACE.sub(" ", html.unescape(str(value))).strip()


def text(value: object) -> Md:
    """Author text as inline Markdown text on one line: HTML entities decoded (`&lt;` is `<`), and `<`
    backslash-escaped so it cannot open raw HTML (CommonMark shows `\\<` as `<`)."""
    if isinstance(value, Md):
        return value
    return Md(_one_line(value).replace("<", "\\<"))


def cell(value: object) -> Md:
    """Text safe inside a Markdown table cell: `text`, and pipes escaped (GFM needs `\\|` in code spans too)."""
    return Md(re.sub(r"(?<!\\)\|", r"\\|", text(value)))


def code(value: object) -> Md:
    """An inline code span holding `value` on one line, fenced with more backticks than any run inside it."""
    body = _SPACE.sub(" ", str(value)).strip()
    longest = max((len(m.group(0)) for m in _TICKS.finditer(body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return Md(f"{fence}{pad}{body}{pad}{fence}")


def link(label: object, url: str) -> Md:
    """A link the radar builds (`url` is ours: a GitHub URL made from a stored repository and number)."""
    return Md(f"[{text(label)}]({url})")


def join(parts: list[Md] | tuple[Md, ...], sep: str) -> Md:
    """Built pieces joined with the radar's own separator."""
    return Md(sep.join(parts))
