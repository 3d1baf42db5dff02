"""Text copied from a pull-request page (GitHub, GitLab, Gitee or any fragment of a thread) as one Item.

A pasted page is a flat run of lines: metadata, the description, comments, bot boilerplate, timeline
events and interface text, often without the authors. Reading it is four steps, every pattern coming
from rules/page.toml:

1. metadata (repository, number, title, state) from the title line, badges, events and URLs (page_meta.py);
2. noise removed: force-push and trailer text over the whole page, then chrome and conflict lines;
3. the rest split into blocks (comment headers, separators, GitHub's trailing " |", review chrome,
   cherry-picked commit messages), and bot blocks dropped by author or by their boilerplate text;
4. repeated copies grouped by character-shingle containment (lost spaces and Markdown do not
   matter): the description is the best-formatted copy of the largest group (or the first block
   of a page that has a title), the other blocks are comments, each kept once.

Missing parts are never an error: a fragment without a title, a page without a description, another
site's layout import with what they have. Only a page with no repository anywhere (and no --repo)
and an empty file fail.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, SourceError
from ..models import CLOSED, ISSUE, MERGED, OPEN, PR, Comment, Item, check_repo
from .page_copies import _description_group, _format_score, _groups, _tidy, _unflatten
from .page_meta import _Block, _date, _Meta, _meta
from .page_rules import PageRules, _any, compile_page_rules, load_page_rules
from .page_shapes import Shaped, finish, named_paths, read_shape

__all__ = ["PageReport", "PageRules", "compile_page_rules", "decode_page", "load_page_rules",
           "parse_page", "read_page"]

_SEP = "\x1e"  # a line that stands for a removed timeline event: it ends the block before it
_CJK = re.compile(r"[\u3400-\u9fff]")
_INVISIBLE = re.compile(r"[\u200b\u200c\u200d\u2060\ufeff]")
_NORM = re.compile(r"[\W_]+")


@dataclass(slots=True)
class PageReport:
    """What reading a page kept and dropped (counts by kind), for the CLI to print."""

    path: str = ""
    dropped: Counter = field(default_factory=Counter)
    description_copies: int = 0  # copies of the description found (the kept one included)
    state_found: bool = False
    number_found: bool = True
    stats: Any = None  # store.save.SaveStats of the import
    shape: str = "browser copy"  # or gh-plain | gh-json | thread
    review_paths: list[str] = field(default_factory=list)  # files review comments are on (named paths)
    later: str = ""  # the note when the page's dates lie later than now (windows.LaterDates)


# -- reading --------------------------------------------------------------------------------------


def decode_page(raw: bytes) -> str:
    """Bytes -> text: UTF-16 with a BOM, UTF-8, GB18030 when it yields Chinese, else UTF-8 with replacement."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        text = raw.decode("gb18030")
        if _CJK.search(text):
            return text
    except UnicodeDecodeError:
        pass
    return raw.decode("utf-8", errors="replace")


MAX_PAGE_BYTES = 16 << 20  # the largest page read (RADAR_MAX_PAGE_BYTES): a copied thread of a thousand comments
MAX_PAGE_ENV = "RADAR_MAX_PAGE_BYTES"  # is a few MB, and reading one costs several times its size


def max_page_bytes() -> int:
    """The page cap: RADAR_MAX_PAGE_BYTES (checked by config.check_env before any command runs), else 16 MiB."""
    raw = os.environ.get(MAX_PAGE_ENV, "").strip()
    return int(float(raw)) if raw else MAX_PAGE_BYTES


def read_page(path: Path) -> str:
    """The text of a saved page, line endings and invisible characters normalised; a page larger than the
    cap is refused with one line naming the file and the cap (a pipe is read only up to the cap)."""
    from ..guard.files import read_bytes

    cap = max_page_bytes()
    raw = read_bytes(path, cap, SourceError, pipes=True,  # a FIFO nobody writes to is refused after RADAR_PIPE_WAIT
                     too_big=f"{path}: larger than {cap:,} bytes, the page size cap ({MAX_PAGE_ENV}): not a page "
                             "copied from a browser; split it or raise the cap")
    nul = raw.find(b"\x00", 0, 65536)
    if nul >= 0 and not raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 text holds NULs; binary does too
        raise SourceError(f"{path}: binary file (NUL byte at offset {nul}), not a saved page")
    text = decode_page(raw).replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
    text = _INVISIBLE.sub("", text)
    return "\n".join(line.rstrip() for line in text.split("\n"))


# -- noise and blocks -----------------------------------------------------------------------------


def _strip_text_noise(text: str, rules: PageRules, dropped: Counter) -> str:
    """Force-push events (which span lines when copied) and trailers, removed from the whole page."""
    for pattern in rules.lists["force_push"]:
        text, n = pattern.subn(f"\n{_SEP}\n", text)
        dropped["force-push lines"] += n
    for pattern in rules.lists["trailers"]:
        text, n = pattern.subn("", text)
        dropped["Signed-off-by trailers"] += n
    return text


def _hunk_lines(lines: list[str], rules: PageRules) -> set[int]:
    """Runs of `|`-prefixed lines holding a diff row ("| code | ||"): a review's code context."""
    hunk: set[int] = set()
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            j += 1
        if j > i and any(rules.re["hunk_row"].search(lines[k]) for k in range(i, j)):
            hunk.update(range(i, j))
        i = max(j, i + 1)
    return hunk


def _header(rules: PageRules, line: str) -> _Block | None:
    for pattern in rules.lists["headers"]:
        m = pattern.match(line)
        if m:
            found = m.groupdict()
            author = found["author"]
            bot = bool(found.get("bot")) or _is_bot(rules, author)
            return _Block(author=author, when=_date(rules, found.get("date") or ""), bot=bot, headed=True)
    return None


def _is_bot(rules: PageRules, author: str) -> bool:
    return author.lower() in rules.bot_names or _any(rules.lists["bot_patterns"], author)


class _Splitter:
    """Walks the lines once, dropping noise lines and cutting the rest into blocks."""

    def __init__(self, rules: PageRules, dropped: Counter):
        self.rules, self.dropped = rules, dropped
        self.blocks: list[_Block] = []
        self.cur = _Block()

    def close(self, force: bool = False) -> None:
        if any(line.strip() for line in self.cur.lines):
            self.blocks.append(self.cur)
        elif not force and self.cur.headed:
            return  # a header with no text yet: role badges and "edited" lines come before the body
        self.cur = _Block()

    def start(self, block: _Block) -> None:
        self.close(force=True)
        self.cur = block

    def feed(self, line: str) -> None:
        r, s = self.rules, line.strip()
        if s == _SEP or _any(r.lists["separators"], s):
            return self.close()
        if _any(r.lists["review_marks"], s):
            if not self.cur.headed:  # without headers, review chrome is the only sign a new comment starts
                self.close(force=True)
            self.cur.review = True
            self.dropped["page chrome"] += 1
            return None
        if _any(r.lists["conflict"], s):
            self.dropped["conflict notices"] += 1
            return self.close()
        if r.re["avatar"].match(s) or _any(r.lists["chrome"], s):
            self.dropped["page chrome"] += 1
            return self.close()
        header = _header(r, s)
        if header is not None:
            return self.start(header)
        return self.add(line, s)

    def add(self, line: str, s: str) -> None:
        r = self.rules
        if _any(r.lists["starts"], s):
            self.close(force=True)
        if len(s) >= r.data["blocks"]["flat_min_chars"] and _any(r.lists["flat_marks"], s):
            self.close(force=True)
            self.cur.flat = True
            self.cur.lines.append(s)
            return self.close(force=True)
        end = r.re["end_mark"].match(s)
        if end:
            self.cur.lines.append(end["text"])
            return self.close(force=True)
        self.cur.lines.append(line)
        return None


def _split(text: str, rules: PageRules, meta: _Meta, dropped: Counter) -> list[_Block]:
    lines = text.split("\n")
    hunk = _hunk_lines(lines, rules)
    splitter = _Splitter(rules, dropped)
    for i, line in enumerate(lines):
        if meta.title_line is not None and i <= meta.title_line:
            continue  # the title, and the site's navigation above it
        if i in hunk:
            dropped["code context lines"] += 1
            splitter.close()
            continue
        splitter.feed(line)
    splitter.close(force=True)
    return splitter.blocks


def _cut_boilerplate(block: _Block, rules: PageRules, dropped: Counter) -> str:
    """The block's text without bot boilerplate (each cut counted by its name)."""
    text = block.text
    for name, start, end in rules.boilerplate:
        parts, pos = [], 0  # one pass: each cut searches on from the last, the text is joined once
        while (m := start.search(text, pos)) is not None:
            parts.append(text[pos:m.start()])
            stop = end.search(text, m.end()) if end else None
            pos = stop.end() if stop else len(text)
            dropped[name] += 1
            if m.end() == m.start() and pos == m.start():
                break
        text = "".join(parts) + text[pos:] if parts else text
    return text.strip()


# -- the item -------------------------------------------------------------------------------------


def _clean_blocks(blocks: list[_Block], rules: PageRules, dropped: Counter,
                  paths: list[str] | None = None) -> list[_Block]:
    kept = []
    for block in blocks:
        if block.bot:
            dropped["bot comments"] += 1
            continue
        lines = rules.re["commit_prefix"].sub("", _cut_boilerplate(block, rules, dropped)).split("\n")
        while block.review and lines and rules.re["review_context"].match(lines[0].strip()):
            dropped["code context lines"] += 1  # the path of the file a review comment is on: a named path
            if paths is not None:
                paths.append(lines[0].strip())
            lines.pop(0)
        if not _NORM.sub("", "".join(lines)):
            continue
        block.lines = lines
        kept.append(block)
    return kept


def _fallback_title(meta: _Meta, body: str) -> str:
    """No title line: the description's first line, else the reference (a comment's words would mislead)."""
    if meta.title:
        return meta.title
    for line in body.split("\n"):
        line = line.strip(" #*`>-")
        if len(_NORM.sub("", line)) >= 3:
            return line[:120]
    return f"{meta.repo}#{meta.number} (pasted page)" if meta.number is not None else f"{meta.repo} (pasted page)"


def parse_page(text: str, rules: PageRules, repo: str | None = None, number: int | None = None,
               file_stem: str = "", report: PageReport | None = None) -> Item:
    """One PR item from pasted page text; `repo`/`number` (the flags) win over what the text says. A merged
    page's merge commit, when its timeline names one, is kept: a clone or an export dates it.

    Raises ConfigError when no repository is known, SourceError when the text is empty.
    """
    item = _parse_page(text, rules, repo, number, file_stem, report)
    if item.state == MERGED and not item.merge_commit:
        named = rules.re["merge_commit"].search(text)
        item.merge_commit = named["sha"] if named else None
    return item


def _parse_page(text: str, rules: PageRules, repo: str | None, number: int | None, file_stem: str,
                report: PageReport | None) -> Item:
    report = report if report is not None else PageReport()
    if not text.strip():
        raise SourceError(f"{report.path or 'page'}: nothing to import (the file is empty)")
    shaped = read_shape(text, rules.shapes, lambda author: _is_bot(rules, author), lambda s: _date(rules, s))
    if shaped is not None and (shaped.title or shaped.number is not None):
        return _shaped_item(shaped, rules, repo, number, file_stem, report)
    lines = text.split("\n")
    meta = _meta(text, lines, rules, file_stem)
    meta.repo, meta.number = repo or meta.repo, number if number is not None else meta.number
    if not meta.repo:
        raise ConfigError(f"{report.path or 'page'}: no repository found in the page; pass --repo OWNER/NAME")
    meta.repo = check_repo(meta.repo)
    no_description = any(rules.re["no_description"].match(line.strip()) for line in lines)
    blocks = _clean_blocks(_split(_strip_text_noise(text, rules, report.dropped), rules, meta, report.dropped),
                           rules, report.dropped, report.review_paths)
    groups = _groups(blocks, rules)
    desc = _description_group(groups, blocks, rules, meta, no_description)
    desc_block = blocks[max(desc, key=lambda i: (_format_score(blocks[i]), -i))] if desc else None
    body = ""
    if desc_block is not None:
        body = _tidy(_unflatten(desc_block.text) if desc_block.flat else desc_block.text)
        report.description_copies = len(desc or [])
        report.dropped["repeated description copies"] += len(desc or []) - 1
    comments = _comments([g for g in groups if g is not desc], blocks, report)
    item = _item(meta, body, desc_block, comments, report)
    if _is_issue(text, meta, rules):
        item.kind = ISSUE
    item.named_paths = named_paths(rules.shapes, body, report.review_paths)
    return item


def _shaped_item(shaped: Shaped, rules: PageRules, repo: str | None, number: int | None, file_stem: str,
                 report: PageReport) -> Item:
    """The item of a structured page (gh output, a thread rendering): what it says, exactly."""
    finish(shaped)
    named = rules.re["file_name"].match(file_stem)
    shaped.repo = repo or shaped.repo or (f"{named['owner']}/{named['name']}" if named else None)
    shaped.number = number if number is not None else (shaped.number if shaped.number is not None else
                                                       (int(named["number"]) if named else None))
    if not shaped.repo:
        raise ConfigError(f"{report.path or 'page'}: no repository found in the page; pass --repo OWNER/NAME")
    shaped.repo = check_repo(shaped.repo)
    report.shape = shaped.shape
    report.state_found, report.number_found = shaped.state is not None, shaped.number is not None
    body = shaped.body
    for pattern in rules.lists["trailers"]:
        body, n = pattern.subn("", body)
        report.dropped["Signed-off-by trailers"] += n
    body = _tidy(body)
    title = shaped.title or _fallback_title(_Meta(repo=shaped.repo, number=shaped.number), body)
    draft = rules.re["draft_title"].match(title)
    if draft:
        title, shaped.draft = title[draft.end():].strip(), shaped.state not in (MERGED, CLOSED)
    key = str(shaped.number) if shaped.number is not None else \
        "page-" + hashlib.sha1(f"{title}\n{body}".encode()).hexdigest()[:12]
    dates = [d for d in (shaped.created_at, shaped.updated_at, shaped.merged_at, shaped.closed_at,
                         *(c.created_at for c in shaped.comments)) if d]
    state = shaped.state or OPEN
    return Item(
        repo=shaped.repo, kind=shaped.kind, key=key, number=shaped.number, title=title, body=body,
        # only the page's own opening time is a creation time: a review or comment is a later event (the
        # import bounds an unknown opening, pipeline/imports.bound_creation)
        author=shaped.author[:200], state=state, draft=shaped.draft, created_at=shaped.created_at,
        updated_at=max(dates, default=None), merged_at=shaped.merged_at if state == MERGED else None,
        closed_at=shaped.closed_at if state in (MERGED, CLOSED) else None, branches=[shaped.base] if shaped.base else [],
        labels=[label[:200] for label in shaped.labels][:50], files=shaped.files, comments=shaped.comments, source="page",
        named_paths=named_paths(rules.shapes, body, shaped.named_paths), code=page_code(shaped.hunks),
    )


def page_code(hunks: list[tuple[str, list[str]]]) -> dict | None:
    """The code facts of the diff hunks a page shows (review threads): never the whole change (incomplete);
    None when it shows none."""
    if not hunks:
        return None
    from ..analyse.code_facts import ChangeFacts, load_code_rules

    facts = ChangeFacts(load_code_rules())
    for path, lines in hunks:
        reading = facts.file(path)
        for line in lines:
            if reading and line[:1] in ("+", "-") and line[:3] not in ("+++", "---"):
                reading = facts.line(line[0], line[1:])
    facts.incomplete()
    return facts.facts("page")


def _comments(groups: list[list[int]], blocks: list[_Block], report: PageReport) -> list[Comment]:
    """One comment per group (its first copy), in page order."""
    kept = []
    for g in sorted(groups, key=lambda g: g[0]):
        report.dropped["repeated comments"] += len(g) - 1
        b = blocks[g[0]]
        kept.append(Comment(b.author, _tidy(b.text), b.when, False, "review" if b.review else "comment"))
    return kept


def _is_issue(text: str, meta: _Meta, rules: PageRules) -> bool:
    """A browser copy of an issue: its own address says /issues/N, or the timeline says "opened this issue"."""
    if meta.number is not None and re.search(rf"/(?:issues)/{meta.number}(?!\d)", text) and \
            not re.search(rf"/(?:pull|pulls|merge_requests)/{meta.number}(?!\d)", text):
        return True
    return any(p.search(text) for p in rules.lists["issue_marks"])


def _item(meta: _Meta, body: str, desc: _Block | None, comments: list[Comment], report: PageReport) -> Item:
    report.state_found, report.number_found = meta.state is not None, meta.number is not None
    dates = [d for d in [desc.when if desc else None, *(c.created_at for c in comments), meta.merged_at,
                         meta.closed_at] if d]
    title = _fallback_title(meta, body)
    key = str(meta.number) if meta.number is not None else \
        "page-" + hashlib.sha1(f"{title}\n{body}".encode()).hexdigest()[:12]
    state = meta.state or OPEN
    return Item(
        repo=meta.repo or "", kind=PR, key=key, number=meta.number, title=title, body=body,
        author=meta.author or (desc.author if desc else ""), state=state, draft=meta.draft,
        created_at=desc.when if desc and desc.when else None,  # a later event is never the opening
        updated_at=max(dates, default=None), merged_at=meta.merged_at if state == MERGED else None,
        closed_at=meta.closed_at if state in (MERGED, CLOSED) else None,
        branches=[meta.base] if meta.base else [], comments=comments, source="page",
    )


# -- import ---------------------------------------------------------------------------------------


