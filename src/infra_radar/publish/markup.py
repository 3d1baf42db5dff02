"""Safe markup for the site: URL filtering, JSON inside <script>, and a Markdown -> HTML converter.

Everything that came from GitHub (titles, authors, bodies, paths, link URLs) passes through one of
these before it reaches a page: Jinja's autoescape for text, `safe_url` for every href, `script_json`
for the search index, and `markdown_html` (markdown-it-py with raw HTML disabled) for the reports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

from ..render.escape import Md, plain

SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
# Browsers drop these before reading the scheme, so "java\tscript:" is still javascript:.
_INVISIBLE = re.compile(r"[\x00-\x20\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff]")
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def safe_url(url: object) -> str:
    """`url` if it is an absolute http, https or mailto URL, else "" (javascript:, data:, relative...)."""
    text = str(url or "").strip()
    found = _SCHEME.match(_INVISIBLE.sub("", text))
    if not found or found.group(1).lower() not in SAFE_SCHEMES or _INVISIBLE.search(text):
        return ""
    return text


def script_json(value: Any) -> str:
    """JSON that is safe inside an HTML <script> element and a JS string context."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_ESCAPES[m.group(0)], text)


LinkMapper = Callable[[str], str | None]


def _allowed_link(url: str) -> bool:
    """Links markdown-it may render: safe absolute URLs and the site's own relative pages."""
    if safe_url(url):
        return True
    return not _SCHEME.match(_INVISIBLE.sub("", url)) and not url.startswith(("//", "\\"))


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    md.disable("image")  # no remote images: a page opened from file:// must not call out
    md.validateLink = _allowed_link
    def link_open(renderer, tokens, idx, options, env):
        token = tokens[idx]
        href = token.attrGet("href") or ""
        local = env.get("map_link")(href) if env.get("map_link") else None
        if local is not None:
            token.attrSet("href", local)  # the site's own page of the item, not GitHub
        elif safe_url(href):
            token.attrSet("rel", "noopener noreferrer")
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    return md


def markdown_html(text: str, map_link: LinkMapper | None = None) -> str:
    """HTML of a Markdown report; raw HTML is escaped and only safe links survive."""
    return _parser().render(text, {"map_link": map_link})


def markdown_title(text: str) -> str:
    """The plain text of a Markdown report's first line (its `# heading`): what a reader sees of it, for an
    HTML <title> or a feed entry's title."""
    first = text.splitlines()[0] if text else ""
    return plain(Md(first.lstrip("#").strip()))


def shown(value: Any) -> Any:
    """A value as the HTML pages show it: Markdown the radar built (`Md`, e.g. a conclusion with code spans)
    becomes the text a reader of the report sees (a list of them: each); the page autoescapes it like any
    other value."""
    if isinstance(value, Md):
        return plain(value)
    if isinstance(value, list) and value and isinstance(value[0], Md):
        return [plain(v) for v in value]
    return value


def shown_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of a context (P0/P1 rows, adapted-in entries) with their Markdown values shown as text."""
    return [{k: shown(v) for k, v in r.items()} for r in rows]


def inline_html(text: str, map_link: LinkMapper | None = None) -> str:
    """HTML of one line of Markdown the radar built (an item's conclusion, a checklist step), as its Markdown
    card shows it: code spans and links rendered, raw HTML escaped, only safe links kept, no paragraph."""
    return _parser().renderInline(text, {"map_link": map_link})
