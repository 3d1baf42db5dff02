"""Explaining an item from its own text: the mechanism of a PR body, shortened only at sentence boundaries."""

from __future__ import annotations

import re

# --- body → mechanism ------------------------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_TEMPLATE_LINE = re.compile(
    r"^\s*(#{1,6}\s|\|"  # headings, table rows
    r"|[-*]\s*\[[ xX]\]"  # checklist boxes
    r"|(\*\*|__)[^*_]+(\*\*|__):?\s*$"  # a bold-only line: a template heading
    r"|(signed-off-by|co-authored-by)\s*:"  # trailers
    r"|(fix(es|ed)?|close[sd]?|resolve[sd]?|related( to)?)\b[^.]*#\d+\s*$"  # issue closers
    r"|[-*]\s*(vllm|torch|cann)\s+version\b)",  # version stamps of PR templates
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_BULLET = re.compile(r"^\s*([-*+]|\d+[.)])\s+")


def _is_template_line(line: str) -> bool:
    stripped = line.strip()
    # A short line that is only a question or label ("Test Plan:", "Why?") is a template heading.
    short_label = len(stripped) <= 80 and stripped.endswith(("?", ":", "？", "："))
    return bool(_TEMPLATE_LINE.match(line)) or short_label


def _meaningful(text: str) -> bool:
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 30 or (letters >= 10 and any("\u4e00" <= ch <= "\u9fff" for ch in text))


def mechanism(body: str, sentences: int = 3, limit: int = 420) -> str:
    """First meaningful paragraph of a PR body, template headings removed, trimmed to a few sentences."""
    text = _FENCE.sub("", _COMMENT.sub("", body.replace("\r\n", "\n")))
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [_BULLET.sub("", ln).strip() for ln in paragraph.splitlines()
                 if ln.strip() and not _is_template_line(ln)]
        joined = " ".join(lines)
        if _meaningful(joined):
            kept = " ".join(_SENTENCE_END.split(joined)[:sentences])
            return kept if len(kept) <= limit else kept[: limit - 1].rstrip() + "…"
    return ""
