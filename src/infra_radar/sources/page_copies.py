"""Copies of one text on a pasted page: grouping repeated blocks and choosing the description's copy.

A browser copy holds the description several times (cherry-picked commit messages repeat it, one copy may
have lost its line breaks). Blocks are grouped by character-shingle containment (lost spaces and Markdown do
not matter); the best-formatted copy of the largest group is the description, flattened Markdown is
restored. Every step is linear in the page's size: a block is compared only with earlier blocks sharing one
of its smallest shingles, and flattened tables are cut by index. Thresholds in rules/page.toml [similarity].
"""

from __future__ import annotations

import heapq
import re
import zlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .page_meta import _Block, _Meta
    from .page_rules import PageRules

_NORM = re.compile(r"[\W_]+")
_INLINE_SEP = re.compile(r"\|(?:\s*:?-{3,}:?\s*\|)+")
_HEADING = re.compile(r"(?<![ \t])[ \t]+(#{2,6}[ \t]+)(?=\S)")  # runs start once: linear in long blanks
_QUESTION = re.compile(r"^(#{2,6}[ \t][^?\n]{3,100}\?)[ \t]+(?=\S)")
_BULLET = re.compile(r"(?<![ \t])[ \t]+([-*])[ \t]+(?=\S)")


def _any(patterns: list[re.Pattern[str]], text: str) -> bool:
    return any(p.search(text) for p in patterns)


def _shingles(text: str, size: int) -> frozenset[str]:
    flat = _NORM.sub("", text.lower())
    if len(flat) <= size:
        return frozenset([flat]) if flat else frozenset()
    return frozenset(flat[i:i + size] for i in range(len(flat) - size + 1))


def _stable_hash(text: str) -> int:
    return zlib.crc32(text.encode())


def _copies(a: frozenset[str], b: frozenset[str], sim: dict[str, Any]) -> bool:
    """Two texts are copies when most of the smaller one's shingles are in the larger one."""
    small, large = sorted((a, b), key=len)
    if not small or len(small) < sim["min_size_ratio"] * len(large):
        return False
    if len(large) <= sim["short_chars"]:
        return small == large
    return len(small & large) >= sim["containment"] * len(small)


def _groups(blocks: list[_Block], rules: PageRules) -> list[list[int]]:
    """Indices of blocks grouped by copy relation (same or unknown author), in text order."""
    sim = rules.data["similarity"]
    sigs = [_shingles(b.text, sim["shingle"]) for b in blocks]
    parent = list(range(len(blocks)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # Candidates, not every pair: a block is compared with the earlier blocks sharing one of its `sketch`
    # smallest shingles (a copy shares them with high probability), at most `max_candidates` of them, so a
    # page of thousands of blocks costs time linear in its size.
    index: dict[str, list[int]] = {}
    sketch, cap = int(sim.get("sketch", 12)), int(sim.get("max_candidates", 40))
    for j in range(len(blocks)):
        keys = heapq.nsmallest(sketch, sigs[j], key=_stable_hash)
        seen: dict[int, None] = {}
        for key in keys:
            for i in reversed(index.get(key, ())):
                if len(seen) >= cap:
                    break
                seen.setdefault(i)
        for i in sorted(seen):
            same_author = not blocks[i].author or not blocks[j].author or blocks[i].author == blocks[j].author
            if same_author and root(i) != root(j) and _copies(sigs[i], sigs[j], sim):
                parent[root(j)] = root(i)
        for key in keys:
            bucket = index.setdefault(key, [])
            bucket.append(j)
            if len(bucket) > 4 * cap:
                del bucket[: len(bucket) - cap]
    groups: dict[int, list[int]] = {}
    for i in range(len(blocks)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _format_score(block: _Block) -> tuple[int, int]:
    """Markdown structure a copy kept: tables first, then headings, lists and code spans."""
    text = block.text
    tables = len(_INLINE_SEP.findall(text))
    marks = len(re.findall(r"(?:^|\s)#{1,6}\s", text)) + len(re.findall(r"(?:^|\s)[-*]\s", text)) + text.count("`")
    return tables, marks


def _description_group(groups: list[list[int]], blocks: list[_Block], rules: PageRules, meta: _Meta,
                       no_description: bool) -> list[int] | None:
    """The group holding the description, by the rules in the module docstring."""
    repeated = [g for g in groups if len(g) > 1 and len(blocks[g[0]].text) >= 200]
    if repeated:
        return max(repeated, key=lambda g: (len(g), -g[0]))
    if no_description or not groups:
        return None
    if meta.title_line is not None:  # the top of the page: the first human block is the description
        first = min(groups, key=lambda g: g[0])
        head = blocks[first[0]]
        if head.review or (head.headed and meta.author and head.author != meta.author):
            return None
        return first
    # a fragment: only a block that looks like a PR template
    return next((g for g in groups if _any(rules.lists["description_marks"], blocks[g[0]].text)), None)


def _split_table(line: str) -> list[str]:
    """A Markdown table flattened onto one line, back to one row per line."""
    m = _INLINE_SEP.search(line)
    if not m:
        return [line]
    cols = m.group(0).count("|") - 1
    before = line[:m.start()]
    pipes = [i for i, c in enumerate(before) if c == "|"]
    if len(pipes) < cols + 1:
        return [line]
    # blank lines around the table: Markdown does not end a table at a line of prose
    out = [before[:pipes[-cols - 1]].rstrip(), "", before[pipes[-cols - 1]:].strip(), m.group(0).strip()]
    rest = line[m.end():]
    pipes = [i for i, c in enumerate(rest) if c == "|"]  # once: rows are cut by index, not by re-scanning
    pos, k = len(rest) - len(rest.lstrip()), 0
    while pos < len(rest) and rest[pos] == "|":
        while k < len(pipes) and pipes[k] < pos:
            k += 1
        if len(pipes) - k < cols + 1:
            break
        out.append(rest[pos:pipes[k + cols] + 1])
        pos = pipes[k + cols] + 1
        while pos < len(rest) and rest[pos] in " \t":
            pos += 1
    rest = rest[pos:]
    return [*out, "", *(_split_table(rest) if rest else [])]


def _unflatten(text: str) -> str:
    """A message whose line breaks were lost: headings, table rows and list items on their own lines again."""
    out: list[str] = []
    for line in _HEADING.sub(r"\n\n\1", text).split("\n"):
        # a template heading is a question: the paragraph after it starts after its "?"
        line = _QUESTION.sub("\\1\n", line) if line.startswith("#") else line
        for part in _split_table(line):
            out.extend([part] if part.startswith("|") else _BULLET.sub(r"\n\1 ", part).split("\n"))
    return "\n".join(out).strip()


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in text.split("\n"))).strip()
