"""Markdown built by the radar, and author text kept as text inside it.

Every string that came from outside (titles, bodies, tags, authors, branches, paths, labels, reasons, model
prose) reaches a Markdown report through this module:

- `text(s)` / `cell(s)`: author text on one line, as plain text (in a table cell: pipes escaped too);
- `code(s)`: an identifier, path or sha as an inline code span;
- `link(label, url)`: a link the radar builds itself (the label is author text, the URL ours);
- `fmt(template, **values)`: one of our phrases (i18n.toml) with author values put in: a placeholder the
  phrase wraps in backticks (`` `{path}` ``) becomes `code(value)`, any other one `text(value)`;
- `join(parts, sep)`: pieces joined with our separator (a plain `str` piece is escaped as text).

What these return is `Md`: Markdown the radar built, which the templates' filters pass through untouched.
A sentence builder that mixes its own frame with author pieces escapes each piece with the functions above
and returns `Md(...)` of the whole; a plain `str` is author text and is escaped wherever it is shown.
`plain(value)` is what a reader sees of a value (escapes removed, code spans kept): for the outputs that are
not Markdown (HTML pages, chat messages, prompts, the export).

What `text` escapes (CommonMark and GitHub's extensions), and what it leaves readable:

- `<` always (raw HTML, comments, autolinks `<http://...>`); HTML entities are decoded first, so
  `&lt;img&gt;` is the text `<img>`, and `&` is escaped where it would start an entity again;
- link and image syntax: a `]` followed by `(` (inline links and images) or ending the piece (our markup may
  follow it), a `!` ending it, and `[label]:` at the start (a reference definition; without one no
  `[text][ref]` or `[text]` is a link, so `[Bugfix][Ops]` stays as it is);
- GitHub's bare autolinks: the `:` of `scheme://`, the dot of `www.`, the `@` of an e-mail address;
- emphasis: every `*`; `_` unless it sits inside a word (`forced_max_seqlen` stays as it is); `~~`;
- what a line may start with: `#` headings, `>` quotes, `-`/`+`/`1.` list items, `===`/`---` underlines;
- a backslash that would escape the next character;
- backticks: a code span the author closed (`` `x` ``, `` ``a`b`` ``) stays a code span (its inside is literal
  text to CommonMark); a backtick run with no closing run of its length is escaped.

Everything is one pass over the text: linear in its length.
"""

from __future__ import annotations

import html
import re
import string
from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = ["Md", "cell", "code", "fill", "fmt", "href", "join", "link", "plain", "plain_line", "start", "text"]

_SPACE = re.compile(r"\s+")
_TICKS = re.compile(r"`+")
# What a line may start with that changes what the line is (the piece may land at a line start): a heading,
# a quote, a list item, an underline or rule, a reference definition (`[label]:`, then nothing or one
# destination and maybe a title: "[RFC]: a long title" is no definition). The character escaped is the
# group that matched.
_LEAD = re.compile(r"(#)#{0,5}(?:\s|$)|(>)|([-+])(?:\s|$)|\d{1,9}([.)])(?:\s|$)|([-=])[-=\s]*$"
                   r"|(\[)[^\]]*\]:[ \t]*(?:$|(?:<[^>]*>|\S+)(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?[ \t]*$)")
_ALNUM = r"[^\W_]"
# What CommonMark or GitHub reads as markup inside a line; each hit gets a backslash before it.
_INLINE = [
    r"\\(?=[!-/:-@\[-`{-~]|$)",  # a backslash that would escape what follows
    r"[<*`]",  # raw HTML and autolinks; emphasis; backticks (those inside a closed code span are skipped)
    rf"_(?!{_ALNUM})|(?<!{_ALNUM})_",  # an underscore that is not inside a word
    r"~(?=~)|(?<=~)~",  # strikethrough
    r"\](?=\(|$)|!$",  # link or image text ending: ]( (a reference needs a definition, kept out by _LEAD);
    #                     ] or ! at the end, where our markup may follow with ( or [
    r"&(?=#?[A-Za-z0-9]+;)",  # an entity
]
_BARE = [r"(?<=[A-Za-z0-9]):(?=//)", r"(?<=\bwww)\.(?=[A-Za-z0-9])",  # GitHub's bare autolinks: scheme://, www.,
         r"(?<=[A-Za-z0-9._%+-])@(?=[A-Za-z0-9-]+\.[A-Za-z0-9])"]  # and e-mail addresses
_MARKUP = re.compile("|".join(_INLINE + _BARE))
_MAYBE = re.compile(r"[\\<*`_~\]!&:.@]")  # a character some escape above starts from
_LINK_LABEL = re.compile("|".join([*_INLINE, r"[\[\]]"]))  # inside link text no autolink is read


class Md(str):
    """Markdown the radar built itself: safe to insert as it is."""

    __slots__ = ()


class _Text(Md):
    """Author text escaped by `text` or `cell`, remembering the text it came from (so `code` of it fences the
    original, not its escapes) and whether it is meant for a table cell."""

    raw: str
    table: bool


def _escaped(value: str, raw: str, table: bool) -> _Text:
    out = _Text(value)
    out.raw, out.table = raw, table
    return out


def _one_line(value: object) -> str:
    text = str(value)
    return _SPACE.sub(" ", html.unescape(text) if "&" in text else text).strip()


# --- code spans -----------------------------------------------------------------------------------

def _pair(runs: list[tuple[int, int]]) -> tuple[list[tuple[int, int, int]], set[int]]:
    """Code spans from backtick runs [(start, length)] in order, as CommonMark pairs them: a run of n opens
    a span closed by the next run of exactly n, else it is literal. ((start, end, n) of each span, the
    starts of the runs that open nothing.) Linear: one pointer per run length."""
    by_len: dict[int, list[int]] = {}
    for i, (_, n) in enumerate(runs):
        by_len.setdefault(n, []).append(i)
    nxt = dict.fromkeys(by_len, 0)  # per length: index into by_len of the first run not yet passed
    spans: list[tuple[int, int, int]] = []
    lone: set[int] = set()
    i = 0
    while i < len(runs):
        start, n = runs[i]
        same = by_len[n]
        while nxt[n] < len(same) and same[nxt[n]] <= i:
            nxt[n] += 1
        if nxt[n] < len(same):
            j = same[nxt[n]]
            spans.append((start, runs[j][0] + n, n))
            i = j + 1
        else:
            lone.add(start)
            i += 1
    return spans, lone


def _escape(s: str, pattern: re.Pattern[str] = _MARKUP, lead: bool = True) -> str:
    """`s` (one line of author text) with everything CommonMark/GFM would read as markup escaped; the code
    spans the author closed kept. `lead`: what a line may start with too (the piece may open a line)."""
    if pattern is _MARKUP and not _MAYBE.search(s) and not (lead and _LEAD.match(s)):
        return s  # most titles: nothing to escape (one scan for the characters that could need it)
    spans: list[tuple[int, int, int]] = []
    if "`" in s:
        spans, _ = _pair([(m.start(), m.end() - m.start()) for m in _TICKS.finditer(s)])
    starts = [a for a, _, _ in spans]

    def escape(m: re.Match[str]) -> str:
        pos = m.start()
        if spans:
            k = bisect_right(starts, pos) - 1
            if k >= 0 and pos < spans[k][1]:
                return m.group(0)  # inside a code span: literal there
        return "\\" + m.group(0) if m.group(0) != "`" else "\\`"

    out = pattern.sub(escape, s)
    return _lead(s, out, spans) if lead else out


def _lead(s: str, out: str, spans: list[tuple[int, int, int]] | None = None) -> str:
    """`out` (`s` escaped) with a line-start marker `s` opens with escaped too: a heading, a quote, a list
    item, an underline or rule, a reference definition."""
    lead = _LEAD.match(s)
    if lead and not (spans and spans[0][0] == 0):
        at = lead.start(next(g for g in range(1, 7) if lead.group(g) is not None))
        out = out[:at] + "\\" + out[at:]  # only digits come before it: nothing there was escaped
    return out


# --- pipes in table cells -------------------------------------------------------------------------

_PIPE = re.compile(r"(\\*)\|")


def _cell_pipes(s: str) -> str:
    """Every `|` escaped for a GFM table, inside code spans too: a pipe needs an odd number of backslashes
    before it (an even run is read as escaped backslashes, and the pipe would end the cell)."""
    return _PIPE.sub(lambda m: m.group(1) + ("\\|" if len(m.group(1)) % 2 == 0 else "|"), s)


# --- the public functions -------------------------------------------------------------------------

def text(value: object, inside: bool = False) -> Md:
    """Author text as inline Markdown text on one line, shown exactly as written (see the module docstring
    for what is escaped). `inside`: the piece goes inside a line the radar builds, never at its start (a word
    of a sentence after our own first word): what only a line's start makes markup (`>`, `#`, `-`, `1.`) is
    left as it is; a sentence that may open a line goes through `start`."""
    if isinstance(value, Md):
        return value
    raw = _one_line(value)
    shown = _escape(raw, lead=not inside)
    return Md(raw) if shown is raw else _escaped(shown, raw, False)  # nothing escaped: the text is its own raw


def start(value: Md) -> Md:
    """A sentence the radar built (its pieces escaped with `inside`) made safe to open a line: a line-start
    marker at its very beginning escaped (`> 1` -> `\\> 1`)."""
    if not _LEAD.match(value):
        return value
    return Md(_lead(value, value))


def cell(value: object) -> Md:
    """Text safe inside a Markdown table cell: `text`, and every pipe escaped (GFM needs `\\|` in code spans
    too)."""
    if isinstance(value, _Text):
        return value if value.table else _escaped(_cell_pipes(value), value.raw, True)
    if isinstance(value, Md):  # still the text a reader sees, for a code span made of it in the cell
        return _escaped(_cell_pipes(value), plain(value), True)
    raw = _one_line(value)
    return _escaped(_cell_pipes(_escape(raw)), raw, True)


def code(value: object) -> Md:
    """An inline code span holding `value` on one line, fenced with more backticks than any run inside it
    ("" for nothing). Of a value `text` or `cell` escaped, the span holds the original text (in a cell, with
    its pipes escaped)."""
    table = isinstance(value, _Text) and value.table
    body = _SPACE.sub(" ", _raw(value)).strip()
    if not body:
        return Md("")
    longest = max((len(m.group(0)) for m in _TICKS.finditer(body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    span = f"{fence}{pad}{body}{pad}{fence}"
    return Md(_cell_pipes(span) if table else span)


_URL_UNSAFE = re.compile(r"[^A-Za-z0-9\-._~:/?#@!$&*+,;=%\u00a0-\U0010ffff]")
_SCHEME = re.compile(r"^(?:https?):(?=//)", re.I)


def href(url: object) -> str:
    """A URL fit for a Markdown link destination: an absolute http(s) URL with the characters that could end
    or bend the destination (spaces, controls, brackets, parentheses, quotes, backslashes, backticks)
    percent-encoded; "" for anything else."""
    value = str(url or "").strip()
    if not _SCHEME.match(value):
        return ""
    return _URL_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8")), value)


def link(label: object, url: str) -> Md:
    """A link the radar builds (`url` is ours: a GitHub URL made from a stored repository and number, or a
    URL shown as its own label); every bracket of the label escaped, so nothing in it can end the link text.
    Only the label, as text, when `url` is not an http(s) URL."""
    target = href(url)
    if not target:
        return text(label)
    shown = label if isinstance(label, Md) else _escape(_one_line(label), _LINK_LABEL)
    return Md(f"[{shown}]({target})") if shown else Md("")


def join(parts: Iterable[object], sep: str) -> Md:
    """Pieces joined with the radar's own separator; a piece that is not `Md` is author text (`text`)."""
    return Md(sep.join(text(p) for p in parts))


@lru_cache(maxsize=1024)
def _fields(template: str) -> tuple[tuple[str, str | None, str, str | None, bool], ...]:
    """The phrase as (literal, field, spec, conversion, in backticks) parts; a field the phrase wraps in
    backticks has those backticks taken out of the literals around it (`code` puts its own fence)."""
    parts = list(string.Formatter().parse(template))
    out = []
    for i, (lit, name, spec, conv) in enumerate(parts):
        ticked = (name is not None and lit.endswith("`") and not lit.endswith("``") and i + 1 < len(parts)
                  and parts[i + 1][0].startswith("`") and not parts[i + 1][0].startswith("``"))
        out.append([lit[:-1] if ticked else lit, name, spec or "", conv, ticked])
    for i in range(1, len(out)):
        if out[i - 1][4]:
            out[i][0] = out[i][0][1:]
    return tuple((lit, name, spec, conv, ticked) for lit, name, spec, conv, ticked in out)


def _raw(value: object) -> str:
    """The text behind a value: what `text` escaped, what an `Md` shows, a value as it is."""
    if isinstance(value, _Text):
        return value.raw
    return plain(value) if isinstance(value, Md) else str(value)


def _format(template: str, args: tuple, values: dict[str, Any], piece: Any) -> Md:
    out: list[str] = []
    auto = 0
    formatter = string.Formatter()
    for lit, name, spec, conv, ticked in _fields(template):
        out.append(lit)
        if name is None:
            continue
        if name == "":
            name, auto = str(auto), auto + 1
        if name in values:  # a plain {field}: no attribute or index to resolve
            value = values[name]
        else:
            value, _ = formatter.get_field(name, args, values)
        if conv:
            value = formatter.convert_field(value, conv)
        if spec:
            value = format(value, spec)
        if ticked:
            is_span = isinstance(value, Md) and not isinstance(value, _Text) and value.startswith("`")
            out.append(value if is_span else code(_raw(value)))
        else:
            out.append(piece(value))
    return Md("".join(out))


def _text_piece(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return text(value)


def fmt(template: str, *args: Any, **values: Any) -> Md:
    """str.format for one of our phrases (i18n.toml) with author values put in: a field the phrase wraps in
    backticks becomes `code(value)`, any other `text(value)` (an `Md` value goes in as it is, a number as it
    is)."""
    return _format(template, args, values, _text_piece)


def fill(template: str, *args: Any, **values: Any) -> Md:
    """`fmt` for the Markdown templates, whose values the template has escaped already (`inline`, `cell`,
    `code`, macros): a field in backticks becomes `code(value)`, any other goes in as it is."""
    return _format(template, args, values, str)


# --- what a reader sees ---------------------------------------------------------------------------

_UNESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def plain(value: object) -> str:
    """What a reader sees of `value` where the output is not Markdown (HTML pages, chat, prompts, the
    export): an `Md` without its backslash escapes, its code spans as they are (backticks show what is code),
    as the radar wrote its sentences before they were escaped; any other value as it is."""
    if not isinstance(value, Md):
        return "" if value is None else str(value)
    if isinstance(value, _Text):
        return value.raw
    s = str(value)
    if "\\" not in s and "`" not in s:
        return s
    spans = _markdown_spans(s)
    out, i = [], 0
    for a, b, _ in spans:
        out.append(_UNESCAPE.sub(r"\1", s[i:a]))
        out.append(s[a:b])  # a code span as written: its fence says where it ends
        i = b
    out.append(_UNESCAPE.sub(r"\1", s[i:]))
    return "".join(out)


# a link the radar built: `[label](url)`, its `[` not escaped, its label's own brackets escaped by `link`
_OUR_LINK = re.compile(r"(?<!\\)\[((?:[^\]\\\n]|\\.)*)\]\([^)\s]*\)")


def plain_line(value: object) -> str:
    """`plain` on one line, for a chat line or a prompt: the radar's own links by their label and its bold
    markers dropped; a value that is not `Md` (author text) as it is."""
    if not isinstance(value, Md) or isinstance(value, _Text):
        return plain(value)
    return plain(Md(_OUR_LINK.sub(r"\1", value).replace("**", ""))).replace("\n", " ")


def _markdown_spans(s: str) -> list[tuple[int, int, int]]:
    """The code spans of Markdown `s`: a backtick run opens one unless its first backtick is escaped (an odd
    run of backslashes before it: then the rest of the run may open); it is closed by the next run of
    exactly its length, backslashes or not (they are literal inside). (start, end, fence) of each."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(s)]
    by_len: dict[int, list[int]] = {}
    for a, b in runs:
        by_len.setdefault(b - a, []).append(a)
    spans: list[tuple[int, int, int]] = []
    pos = 0  # where the text outside code spans resumes
    for a, b in runs:
        if a < pos:
            continue
        k = 0
        while a - k > pos and s[a - k - 1] == "\\":
            k += 1
        start = a + k % 2
        n = b - start
        if n <= 0:
            continue
        after = by_len.get(n, [])
        j = bisect_right(after, start)
        if j < len(after):
            spans.append((start, after[j] + n, n))
            pos = after[j] + n
    return spans
