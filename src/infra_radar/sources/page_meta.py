"""A pasted page's metadata: repository, number, title, state, author and dates, from the title line, badges,
events and URLs (step 1 of page.py's reading; every pattern from rules/page.toml)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from ..models import utc
from .page_rules import PageRules, _any

_MONTH_FORMATS = ("%b %d %Y %I:%M %p", "%b %d %Y %H:%M", "%b %d %Y", "%B %d %Y %I:%M %p", "%B %d %Y %H:%M",
                  "%B %d %Y", "%d %b %Y", "%d %B %Y")


@dataclass(slots=True)
class _Meta:
    repo: str | None = None
    number: int | None = None
    title: str = ""
    title_line: int | None = None
    state: str | None = None
    draft: bool = False
    author: str = ""
    base: str = ""
    merged_at: datetime | None = None
    closed_at: datetime | None = None


@dataclass(slots=True)
class _Block:
    lines: list[str] = field(default_factory=list)
    author: str = ""
    when: datetime | None = None
    bot: bool = False
    review: bool = False
    headed: bool = False
    flat: bool = False

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


# -- metadata -------------------------------------------------------------------------------------


def _title(lines: list[str], rules: PageRules, meta: _Meta) -> None:
    """The title line ("Title #N"), else the line above a state badge (GitLab puts no number there)."""
    first = next((i for i, line in enumerate(lines) if line.strip()), -1)
    min_words = int(rules.data["meta"].get("not_title_min_words", 2))
    for i, line in enumerate(lines[: rules.data["meta"]["title_lines"]]):
        for pattern in rules.lists["titles"]:
            m = pattern.match(line.strip())
            if not m or len(m["title"]) < 4:
                continue
            ref = rules.re["not_title"].match(m["title"])
            # "Fixes #12" in a comment is a reference; "Fix crash in the scheduler #12" opening the page is a title
            if ref and not (i == first and len(m["title"][ref.end():].split()) >= min_words):
                continue
            meta.title, meta.number, meta.title_line = m["title"].strip(), int(m["number"]), i
            return
    badges = [rules.re[f"badge:{s}"] for s in ("merged", "closed", "open", "draft")]
    top = [line.strip() for line in lines[: rules.data["meta"]["badge_lines"]]]
    for b, line in enumerate(top):
        if any(p.match(line) for p in badges):
            above = [i for i in range(b) if top[i] and not _any(rules.lists["chrome"], top[i])]
            if above and len(top[above[-1]]) >= 4:
                meta.title, meta.title_line = top[above[-1]], above[-1]
            return


def _own_urls(lines: list[str], rules: PageRules) -> list[tuple[str, str | None]]:
    """URLs standing alone on a line: the page's own address, pasted with it."""
    found = []
    for line in lines:
        s = line.strip()
        for pattern in rules.lists["repo_urls"]:
            m = pattern.match(s)
            if m and not re.search(r"\s", s[m.end():]):
                found.append((m["repo"], m["number"]))
    return found


def _repo(text: str, lines: list[str], rules: PageRules, meta: _Meta, file_stem: str) -> None:
    """Repository and number, strongest evidence first (see the ranking below)."""
    own_urls = _own_urls(lines, rules)
    named = rules.re["file_name"].match(file_stem)
    if meta.number is None:
        found = [int(n) for _, n in own_urls if n] or [int(m["number"]) for p in rules.lists["numbers"]
                                                       for line in lines if (m := p.match(line.strip()))]
        found += [int(named["number"])] if named else []
        meta.number = found[0] if found else None
    urls = [(m["repo"], m["number"]) for p in rules.lists["repo_urls"] for m in p.finditer(text)]
    refs = [(m["repo"], m["number"]) for m in rules.re["repo_refs"].finditer(text)]
    header = rules.re["repo_header"].search(text)
    # 1. an address or `owner/name#N` naming this very number; 2. the site header of a full-page copy;
    # 3. the saved file's name (OWNER+NAME+N); 4. a URL standing alone; 5. a URL to a file or tree.
    # URLs to other pull requests are not evidence: descriptions link upstream PRs all the time.
    ranked = [
        [r for r, n in urls + refs if n and meta.number is not None and int(n) == meta.number],
        [f"{header['owner']}/{header['name']}"] if header else [],
        [f"{named['owner']}/{named['name']}"] if named else [],
        [r for r, _ in own_urls],
        [r for r, n in urls if not n],
    ]
    best = next((c for c in ranked if c), [])
    meta.repo = Counter(best).most_common(1)[0][0] if best else None


def _state(lines: list[str], rules: PageRules, meta: _Meta) -> None:
    """State from a badge near the top, else from the last state event of the timeline."""
    top = [line.strip() for line in lines[: rules.data["meta"]["badge_lines"]]]
    for state in ("merged", "closed", "open"):
        if any(rules.re[f"badge:{state}"].match(line) for line in top):
            meta.state = state
            break
    meta.draft = meta.draft or any(rules.re["badge:draft"].match(line) for line in top)
    last: tuple[int, str] | None = None
    for i, line in enumerate(lines):
        for state in ("merged", "closed", "open", "draft", "ready"):
            if _any(rules.lists[f"event:{state}"], line.strip()):
                last = (i, state)
                if state in ("merged", "closed"):
                    when = _date(rules, line)
                    meta.merged_at = when if state == "merged" else meta.merged_at
                    meta.closed_at = when or meta.closed_at
    if last and last[1] in ("draft", "ready"):
        meta.draft = last[1] == "draft"
    elif last and meta.state is None:
        meta.state = last[1]


def _author(lines: list[str], rules: PageRules, meta: _Meta) -> None:
    for line in lines:
        for pattern in rules.lists["authors"]:
            m = pattern.match(line.strip())
            if m:
                found = m.groupdict()
                meta.author = found.get("author") or found.get("author_name") or ""
                meta.base = found.get("base") or ""
                return


def _meta(text: str, lines: list[str], rules: PageRules, file_stem: str) -> _Meta:
    meta = _Meta()
    _title(lines, rules, meta)
    _repo(text, lines, rules, meta, file_stem)
    _state(lines, rules, meta)
    _author(lines, rules, meta)
    draft = rules.re["draft_title"].match(meta.title)
    if draft:
        meta.title, meta.draft = meta.title[draft.end():].strip(), True
    return meta


def _date(rules: PageRules, text: str) -> datetime | None:
    """The first absolute date in `text` (UTC); relative times ("2 days ago") give None."""
    for pattern in rules.lists["dates"]:
        m = pattern.search(text)
        if not m:
            continue
        kind, value = m.lastgroup, m.group(0)
        try:
            if kind == "iso":
                return utc(datetime.fromisoformat(value.replace(" ", "T")))
            if kind == "cjk":
                value = re.sub(r"\s+", " ", value)
                return utc(datetime.strptime(value, "%Y年%m月%d日 %H:%M" if ":" in value else "%Y年%m月%d日"))
        except ValueError:
            continue
        value = re.sub(r"(\d)\s*([AaPp][Mm])\b", r"\1 \2", re.sub(r"[.,]|\bat\b", " ", value))
        value = re.sub(r"\s+", " ", value).strip()
        for fmt in _MONTH_FORMATS:
            try:
                return utc(datetime.strptime(value, fmt))  # strptime ignores case in names and AM/PM
            except ValueError:
                continue
    return None
