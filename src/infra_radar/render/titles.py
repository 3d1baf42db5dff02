"""Titles as a table or a recheck line shows them: tags and conventional prefixes dropped (mechanism.clean_title)
and a long title ended at a whole clause, never inside a word."""

from __future__ import annotations

import re

from .mechanism import clean_title

_CLAUSE_END = re.compile(r"\s+[—–-]\s+|;\s+|:\s+|\s+\(|,\s+|\s+(?=(?:to|for|with|during|in|on|when|via|"
                        r"so that|because|and)\s)")


def title_head(title: str, most: int = 72) -> str:
    """A title for a table: its tags and conventional prefix ("feat:") dropped and, when long, its first
    whole clause or phrase (up to a dash, semicolon, colon, parenthesis, comma or preposition, outside quotes
    and brackets), never a cut word."""
    head = clean_title(title)[0] or title.strip()
    if len(head) <= most:
        return head
    cuts = [m.start() for m in _CLAUSE_END.finditer(head) if 16 <= m.start() <= most and _balanced(head[: m.start()])]
    strong = [c for c in cuts if head[c:c + 3].strip()[:1] in ("—", "–", "-", ";", ":")]
    return head[: (strong or cuts)[-1]].rstrip(" ,;:") if cuts else head


def _balanced(s: str) -> bool:
    return (s.count('"') % 2 == 0 and s.count("(") <= s.count(")") and s.count("[") <= s.count("]")
            and s.count("`") % 2 == 0 and s.count("“") <= s.count("”"))
