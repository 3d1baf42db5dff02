"""Never downgrade: what a new record of an item the store already has may change.

Sources differ in how much they know. The live API knows everything; a history export or clone knows the
squash commit (title, message, files, merge time); a pasted page knows what was on the screen. A record
from a weaker source, or one that lacks a field, only adds: comments not yet stored, labels, branches,
named paths, a newer state. It never replaces a title, body, files or dates with a weaker value. A record
from an equal or stronger source replaces what it has and keeps what it lacks.
"""

from __future__ import annotations

from datetime import datetime

from ..models import CLOSED, MERGED, OPEN, PR, Comment, Item

# How much each source knows about an item (higher wins); unknown sources rank with history.
SOURCE_RANK = {"page": 0, "git": 1, "jsonl": 1, "github": 2}
_STATE_RANK = {OPEN: 0, CLOSED: 1, MERGED: 2}
_HISTORY = ("git", "jsonl")  # the sources that read a repository's history: commits, not PRs


def _rank(source: str) -> int:
    return SOURCE_RANK.get(source, 1)


def _earliest(*values: datetime | None) -> datetime | None:
    found = [v for v in values if v is not None]
    return min(found) if found else None


def _latest(*values: datetime | None) -> datetime | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def _comment_key(c: Comment) -> tuple[str, str]:
    return c.author.lower(), " ".join(c.body.split())[:500]


def _union_comments(old: list[Comment], new: list[Comment]) -> list[Comment]:
    seen = {_comment_key(c) for c in old}
    return [*old, *(c for c in new if _comment_key(c) not in seen)]


_CODE_RANK = {"page": 0, "git": 1, "api": 2}


def _code(old: dict | None, new: dict | None) -> dict | None:
    """The code facts to keep: a diff read whole over a cut one, then the stronger source (the API's patches
    over a clone's diff over a page's hunks); a record without facts never removes them."""
    if old is None or new is None:
        return new if new is not None else old
    def rank(code: dict) -> tuple[bool, int]:
        return bool(code.get("complete")), _CODE_RANK.get(code.get("source", ""), 0)
    return new if rank(new) >= rank(old) else old


_BOUND = "created-bound"  # sources.page_dates.BOUND: created_at only bounds the opening


def merge_items(old: Item, new: Item) -> Item:
    """`new` made never weaker than `old` (the stored item); returns `new`, changed in place."""
    weaker = _rank(new.source) < _rank(old.source)
    # an older record of the same standing (two records of one PR in one file, read in any order) does not
    # replace a newer one: the newest version wins whatever the order, so a reimport changes nothing
    older = (not weaker and _rank(new.source) == _rank(old.source) and old.time_source != "import"
             and new.updated_at is not None and old.updated_at is not None and new.updated_at < old.updated_at)
    keep_old = weaker or older  # for title, body, author, files: the stored value stands unless it is empty

    if (keep_old and old.title) or not new.title or (new.title.endswith("(pasted page)") and old.title):
        new.title = old.title  # a page's stand-in title never replaces a real one
    if (keep_old and old.body) or not new.body.strip():
        new.body = old.body
    if (keep_old and old.author) or not new.author:
        new.author = old.author
    if (keep_old and old.files) or not new.files:
        new.files = old.files
    new.merge_commit = new.merge_commit if new.merge_commit and not keep_old else (old.merge_commit or new.merge_commit)
    new.labels = list(dict.fromkeys([*old.labels, *new.labels])) if weaker or not new.labels else new.labels
    new.branches = list(dict.fromkeys([*old.branches, *new.branches]))
    new.named_paths = list(dict.fromkeys([*old.named_paths, *new.named_paths]))
    new.code = _code(old.code, new.code)
    if new.source == "page" or not new.comments:
        new.comments = _union_comments(old.comments, new.comments)

    # state: merged is final; a weaker record may only move it forward (open -> closed/merged)
    if old.state == MERGED or (weaker and _STATE_RANK.get(new.state, 0) < _STATE_RANK.get(old.state, 0)):
        new.state, new.draft = old.state, old.draft if old.state == OPEN else False
    elif weaker and new.state == old.state:
        new.draft = old.draft and new.draft
    if new.state != OPEN:
        new.draft = False

    # dates: the import time stands in only while no real time is known; a bound of the opening
    # (sources/page_dates) only while no opening is known
    own_old = old.time_source != "import"
    # history (a clone, a commit export) gives no PR's creation time: what an older import took from the
    # commit's own time is dropped when the history is read again, never kept as the PR's
    # (an older import took it as the merge commit's time: created = merged; an opening a page gave since, say
    # its description's date, is the PR's own and stays)
    history = (old.kind == PR and old.source in _HISTORY and new.source in _HISTORY
               and old.created_at is not None and old.created_at == old.merged_at)
    bounds = [x for x in (new, old) if x.time_source == _BOUND and x.created_at is not None]
    owns = [x.created_at for x in (new, old) if x.created_at is not None and x.time_source != _BOUND
            and (x is new or (own_old and not history))]
    bound = not owns and bool(bounds)
    new.created_at = new.created_at if history else _earliest(new.created_at, old.created_at if own_old else None)
    new.updated_at = _latest(new.updated_at, old.updated_at if own_old else None)
    new.merged_at = _earliest(new.merged_at, old.merged_at) if new.state == MERGED else None
    new.closed_at = (old.closed_at or new.closed_at if keep_old else new.closed_at or old.closed_at) \
        if new.state in (MERGED, CLOSED) else None
    if new.when is None and not own_old:
        new.updated_at, new.time_source = old.updated_at, "import"
    elif new.when is not None:
        new.time_source = _BOUND if bound else ""
    if owns:  # an opening known from any record stands; a bound never moves it
        new.created_at = min(owns)
    if weaker:
        new.source = old.source
    new.kind, new.key = old.kind, old.key
    if new.number is None:
        new.number = old.number
    return new
