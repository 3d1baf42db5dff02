"""Pasted pages in structured shapes: `gh pr view` plain text and `--json`, and thread renderings.

These shapes say what they are (a `key: value` header, a JSON object, `OWNER/NAME · pull request #N ·
STATE` with `AUTHOR · KIND · DATE` turns), so they are read exactly rather than guessed at like a browser
copy (page.py). Every pattern and word list is in rules/page.toml [shapes] and [paths]. `read_shape`
returns None for any other text, and page.py falls back to its heuristics.

The paths a page names (review-thread headers, "Files changed" lists, the description) are collected by
`named_paths` for both kinds of page and kept apart from a real diffstat.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..models import CLOSED, ISSUE, MERGED, PR, Comment, FileChange, utc

__all__ = ["Shaped", "ShapeRules", "compile_shape_rules", "named_paths", "read_shape"]


@dataclass(slots=True)
class ShapeRules:
    """rules/page.toml [shapes] and [paths] compiled."""

    header_keys: frozenset[str]
    header_min: int
    pr_only: frozenset[str]
    separator: re.Pattern[str]
    marker: re.Pattern[str]
    turn: re.Pattern[str]
    turn_undated: re.Pattern[str]
    title: re.Pattern[str]
    continued: re.Pattern[str]
    review_kinds: frozenset[str]
    description_kinds: frozenset[str]
    states: dict[str, str]
    issue_url: re.Pattern[str]
    path_in_text: re.Pattern[str]
    path_line: re.Pattern[str]
    files_heading: re.Pattern[str]
    urls: re.Pattern[str]
    max_paths: int


def compile_shape_rules(data: dict[str, Any]) -> ShapeRules:
    s, p = data["shapes"], data["paths"]
    return ShapeRules(
        frozenset(k.lower() for k in s["header_keys"]), int(s["header_min"]),
        frozenset(k.lower() for k in s["pr_only_keys"]), re.compile(s["gh_separator"]),
        re.compile(s["thread_marker"]), re.compile(s["turn"]), re.compile(s["turn_undated"]),
        re.compile(s["title_line"]),
        re.compile(s["continued"]), frozenset(s["review_kinds"]), frozenset(s["description_kinds"]),
        {k.lower(): v for k, v in s["states"].items()}, re.compile(s["issue_url"]),
        re.compile(p["in_text"]), re.compile(p["line"]), re.compile(p["files_heading"]), re.compile(p["urls"]),
        int(p["max_paths"]),
    )


@dataclass(slots=True)
class Shaped:
    """What a structured page says; None/empty where it says nothing."""

    shape: str
    repo: str | None = None
    number: int | None = None
    kind: str = PR
    title: str = ""
    state: str | None = None
    draft: bool = False
    author: str = ""
    labels: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    merged_at: datetime | None = None
    closed_at: datetime | None = None
    base: str = ""
    body: str = ""
    comments: list[Comment] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    named_paths: list[str] = field(default_factory=list)
    hunks: list[tuple[str, list[str]]] = field(default_factory=list)  # (path, lines) of the diff hunks shown


_KEY = re.compile(r"^(?P<key>[A-Za-z][\w-]{0,20}):(?:[ \t]+(?P<value>.*?))?[ \t]*$")
_REPO_URL = re.compile(r"^https?://[^/\s]+/(?P<repo>[\w.-]+/[\w.-]+?)/(?:-/)?(?:pull|pulls|issues|merge_requests)/"
                       r"(?P<number>\d{1,10})\b")


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 < value < 2**31 else None
    if isinstance(value, str) and value.strip().lstrip("#!").isdigit() and len(value.strip()) <= 11:
        return _number(int(value.strip().lstrip("#!")))
    return None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        return utc(datetime.fromisoformat(text))
    except ValueError:
        return None


def _state(rules: ShapeRules, word: str | None, shaped: Shaped) -> None:
    if not word:
        return
    word = word.strip().lower()
    if word in rules.states:
        shaped.state = rules.states[word]
        shaped.draft = shaped.draft or word == "draft"


def _labels(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        out = [v.get("name") if isinstance(v, dict) else v for v in value]
        return [v.strip() for v in out if isinstance(v, str) and v.strip()]
    return []


def _login(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("login") or value.get("name") or ""
    return value.strip() if isinstance(value, str) else ""


def _url(shaped: Shaped, rules: ShapeRules, url: Any) -> None:
    if not isinstance(url, str):
        return
    m = _REPO_URL.match(url.strip())
    if m:
        shaped.repo = shaped.repo or m["repo"]
        shaped.number = shaped.number or _number(m["number"])
        if rules.issue_url.search(url):
            shaped.kind = ISSUE


# -- gh pr view --json ------------------------------------------------------------------------------


def _from_json(text: str, rules: ShapeRules) -> Shaped | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not ({"title", "number", "url"} & data.keys()):
        return None
    shaped = Shaped("gh-json")
    _url(shaped, rules, data.get("url"))
    shaped.number = _number(data.get("number")) or shaped.number
    if not {"isDraft", "mergedAt", "baseRefName", "headRefName", "files", "reviews", "additions"} & data.keys() \
            and shaped.kind != ISSUE and "/pull/" not in str(data.get("url", "")):
        shaped.kind = ISSUE if "stateReason" in data or "issue" in str(data.get("__typename", "")).lower() else PR
    shaped.title = data["title"].strip() if isinstance(data.get("title"), str) else ""
    shaped.draft = data.get("isDraft") is True
    _state(rules, data.get("state") if isinstance(data.get("state"), str) else None, shaped)
    shaped.author = _login(data.get("author"))
    shaped.labels = _labels(data.get("labels"))
    shaped.created_at, shaped.updated_at = _time(data.get("createdAt")), _time(data.get("updatedAt"))
    shaped.merged_at, shaped.closed_at = _time(data.get("mergedAt")), _time(data.get("closedAt"))
    shaped.base = data["baseRefName"] if isinstance(data.get("baseRefName"), str) else ""
    shaped.body = data["body"] if isinstance(data.get("body"), str) else ""
    for key, kind, when in (("comments", "comment", "createdAt"), ("reviews", "review", "submittedAt")):
        for c in data.get(key) or []:
            if isinstance(c, dict) and isinstance(c.get("body"), str) and c["body"].strip():
                shaped.comments.append(Comment(_login(c.get("author")), c["body"].strip(), _time(c.get(when)),
                                               False, kind))
    for f in data.get("files") or []:
        if isinstance(f, dict) and isinstance(f.get("path"), str) and f["path"]:
            adds, dels = f.get("additions"), f.get("deletions")
            shaped.files.append(FileChange(f["path"], adds if _count(adds) else None,
                                           dels if _count(dels) else None))
    shaped.comments.sort(key=lambda c: (c.created_at is None, c.created_at.isoformat() if c.created_at else ""))
    return shaped


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


# -- key: value headers (gh plain text, the thread header) -------------------------------------------


def _header(lines: list[str], start: int, rules: ShapeRules) -> tuple[dict[str, str], int]:
    """The `key: value` lines from `start` (blank lines before them skipped); (fields, index after them)."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    found: dict[str, str] = {}
    while i < len(lines):
        m = _KEY.match(lines[i])
        if not m or m["key"].lower() not in rules.header_keys:
            break
        found.setdefault(m["key"].lower(), (m["value"] or "").strip())
        i += 1
    return found, i


def _apply_header(shaped: Shaped, head: dict[str, str], rules: ShapeRules) -> None:
    _url(shaped, rules, head.get("url"))
    shaped.number = _number(head.get("number", "")) or shaped.number
    shaped.title = head.get("title") or shaped.title
    _state(rules, head.get("state"), shaped)
    if head.get("draft", "").lower() in ("true", "yes"):
        shaped.draft = True
    shaped.author = head.get("author") or shaped.author
    shaped.labels = shaped.labels or _labels(head.get("labels", ""))
    shaped.base = head.get("base") or shaped.base
    for key, attr in (("created", "created_at"), ("updated", "updated_at"), ("merged", "merged_at"),
                      ("closed", "closed_at")):
        when = _time(head.get(key) or head.get(key + "_at"))
        if when is not None:
            setattr(shaped, attr, when)
    repo = head.get("repo") or head.get("repository")
    if repo and repo.count("/") == 1:
        shaped.repo = shaped.repo or repo


def _split_trailing_header(chunk: list[str], rules: ShapeRules) -> tuple[list[str], dict[str, str] | None]:
    """A chunk's text and the comment header (`author:` ... lines) that ends it, if any."""
    end = len(chunk)
    while end and not chunk[end - 1].strip():
        end -= 1
    start = end
    while start and (m := _KEY.match(chunk[start - 1])) and m["key"].lower() in rules.header_keys:
        start -= 1
    fields, stop = _header(chunk[start:end], 0, rules)
    if start < end and "author" in fields and stop >= end - start:
        return chunk[:start], fields
    return chunk, None


def _from_gh_plain(lines: list[str], head: dict[str, str], after: int, rules: ShapeRules) -> Shaped:
    """`gh pr view` / `gh issue view` without --json: header, `--`, body, then comment blocks."""
    shaped = Shaped("gh-plain")
    _apply_header(shaped, head, rules)
    if shaped.kind != ISSUE and not (rules.pr_only & head.keys()) and "comments" in head:
        shaped.kind = ISSUE  # gh issue view prints a comment count and none of a PR's fields
    chunks: list[list[str]] = [[]]
    for line in lines[after + 1:]:
        if rules.separator.match(line.strip()):
            chunks.append([])
        else:
            chunks[-1].append(line)
    # `gh pr view` then `gh pr view --comments`: each comment is "author:/association:/edited:/status:", `--`,
    # its body, `--`; the first header follows the PR body directly, so a chunk may end in a header.
    body: list[str] = []
    pending: dict[str, str] | None = None
    for n, chunk in enumerate(chunks):
        text_lines, header = _split_trailing_header(chunk, rules)
        if n == 0:
            body = text_lines
        elif pending is not None:
            text = "\n".join(text_lines).strip()
            if text:
                status = pending.get("status", "").lower()
                shaped.comments.append(Comment(pending["author"], text, None, False,
                                               "review" if status in ("approved", "changes_requested", "reviewed",
                                                                      "changes requested") else "comment"))
        elif not shaped.comments and "\n".join(text_lines).strip():
            body += ["--", *text_lines]  # a `--` inside the description
        pending = header
    shaped.body = "\n".join(body).strip()
    return shaped


# -- thread rendering -------------------------------------------------------------------------------


def _from_thread(lines: list[str], head: dict[str, str], start: int, rules: ShapeRules, is_bot,
                 parse_date) -> Shaped | None:
    shaped = Shaped("thread")
    _apply_header(shaped, head, rules)
    marker_at = next((i for i in range(start, min(len(lines), start + 12)) if rules.marker.match(lines[i].strip())),
                     None)
    pos = start
    if marker_at is not None:
        m = rules.marker.match(lines[marker_at].strip())
        shaped.repo = m["repo"]
        shaped.number = _number(m["number"]) or shaped.number
        shaped.kind = ISSUE if m["kind"].lower() == "issue" else PR
        _state(rules, m["state"], shaped)
        pos = marker_at + 1
    elif not head:
        return None
    turns: list[tuple[str, str, datetime | None, list[str]]] = []
    cur: tuple[str, str, datetime | None, list[str]] | None = None
    lead: list[str] = []
    for line in lines[pos:]:
        s = line.strip()
        t = rules.turn.match(s) or rules.turn_undated.match(s)
        if t:
            date = t.groupdict().get("date")
            cur = (t["author"], t["kind"].strip(), (_time(date) or parse_date(date)) if date else None, [])
            turns.append(cur)
            continue
        if cur is None:
            title = rules.title.match(s)
            key = _KEY.match(s)
            if title and not shaped.title:
                shaped.title = title["title"].strip()
            elif title and title["title"].strip() == shaped.title and not lead:
                continue
            elif key and key["key"].lower() == "labels" and not lead:
                shaped.labels = shaped.labels or _labels(key["value"] or "")
            else:
                lead.append(line)
            continue
        cur[3].append(line)
    lead_text = "\n".join(lead).strip()
    if lead_text:  # text before the first turn: the description, maybe "[turn 0 by AUTHOR, continued]"
        first, _, rest = lead_text.partition("\n")
        cont = rules.continued.match(first.strip())
        turns.insert(0, (cont["author"] if cont else "", "description", None, (rest if cont else lead_text)
                         .split("\n")))
    dates = []
    for author, kind, when, body_lines in turns:
        text = "\n".join(body_lines).strip()
        dates += [when] if when else []
        if kind in rules.description_kinds and not shaped.body and not shaped.comments:
            shaped.author = shaped.author or author
            shaped.created_at = shaped.created_at or when
            shaped.body = _drop_title_tail(text, shaped.title)
            continue
        review = kind in rules.review_kinds or "review" in kind
        if review:  # the file a review thread is on is named, whoever wrote it
            first, _, rest = text.partition("\n")
            p = rules.path_line.match(first.strip())
            if p:
                shaped.named_paths.append(p["path"])
                text = rest.strip()
                shaped.hunks += [(p["path"], hunk) for hunk in diff_blocks(text)]
        if is_bot(author):
            continue
        if text:
            shaped.comments.append(Comment(author, text, when, False, "review" if review else "comment"))
    if dates:  # the description's time is the opening; a later turn's is not (left unknown, bounded on import)
        shaped.updated_at = max([*dates, *([shaped.updated_at] if shaped.updated_at else [])])
    return shaped


_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})\s*(?:diff|patch|suggestion)\s*$")


def diff_blocks(text: str) -> list[list[str]]:
    """The lines of each fenced ```diff block of a comment (a review thread's hunk), in order."""
    blocks, cur, fence = [], None, ""
    for line in text.split("\n"):
        if cur is None:
            m = _FENCE_OPEN.match(line)
            if m:
                cur, fence = [], m.group(1)
        elif line.strip().startswith(fence[:3]) and line.strip().strip(fence[0]) == "":
            blocks.append(cur)
            cur = None
        else:
            cur.append(line)
    if cur:  # a page cut before the fence closes: the hunk as far as it shows
        blocks.append(cur)
    return blocks


def _drop_title_tail(text: str, title: str) -> str:
    """GitHub cuts a long title and carries its end ("…rest of the title") into the description."""
    first, _, rest = text.partition("\n")
    if first.startswith("…") and title.endswith(first[1:].strip()) and len(first) > 2:
        return rest.strip()
    return text


def read_shape(text: str, rules: ShapeRules, is_bot, parse_date=lambda _text: None) -> Shaped | None:
    """The page read as a structured shape, or None when it is none of them."""
    shaped = _from_json(text, rules)
    if shaped is not None:
        return shaped
    lines = text.split("\n")
    head, after = _header(lines, 0, rules)
    has_head = len(head) >= rules.header_min and bool({"title", "url", "number"} & head.keys())
    if has_head and after < len(lines) and rules.separator.match(lines[after].strip()):
        return _from_gh_plain(lines, head, after, rules)
    return _from_thread(lines, head if has_head else {}, after if has_head else 0, rules, is_bot, parse_date)


def finish(shaped: Shaped) -> None:
    """Dates and state made consistent: merged means a merge time if any is known, no draft."""
    if shaped.state is None and shaped.merged_at is not None:
        shaped.state = MERGED
    if shaped.state in (MERGED, CLOSED):
        shaped.draft = False
    if shaped.state is None and shaped.closed_at is not None:
        shaped.state = CLOSED


# -- named paths ------------------------------------------------------------------------------------


def named_paths(rules: ShapeRules, body: str, extra: list[str] | tuple = ()) -> list[str]:
    """Paths named in a description (running text and "Files changed" lists) plus `extra`, in order, once."""
    found: dict[str, None] = dict.fromkeys(p for p in extra if p)
    in_files = False
    for line in body.split("\n"):
        s = line.strip()
        if rules.files_heading.match(s):
            in_files = True
            continue
        if in_files:
            m = rules.path_line.match(s)
            if m:
                found.setdefault(m["path"])
                continue
            in_files = bool(not s)
        if "/" in s:
            for m in rules.path_in_text.finditer(rules.urls.sub(" ", s)):
                found.setdefault(m["path"])
        if len(found) >= rules.max_paths:
            break
    return list(found)[: rules.max_paths]
