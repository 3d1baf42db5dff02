"""What the previous radar of a series tabled is not tabled again unless it changed (issue 42).

An item the radar before (one ending within SERIES_SLACK of the window's start) put in a table or rechecked,
that is in the new window again (an update, a comment, a date-only day), is rechecked, not tabled again, when
nothing it showed has changed: state, merge commit, changed files or their line counts, figures, and no
substantive human comment since.
"""

from __future__ import annotations

from datetime import timedelta

from ..models import AnalysedItem
from ..render.inputs import DailyInput
from .memory import _RANKED, Key, Memory, _key, shown_item

__all__ = ["SERIES_SLACK", "SUBSTANTIVE_COMMENT", "unchanged"]


# a comment shorter than this (a "LGTM", a bot command, a ping) is not news that puts an item back in the table
SUBSTANTIVE_COMMENT = 40
# the previous radar of a series ends around the window's start (a gap or overlap of a few minutes)
SERIES_SLACK = timedelta(hours=1)


def unchanged(memory: Memory, inp: DailyInput) -> dict[Key, AnalysedItem]:
    """The ranked items of `inp` that the radar before it (the previous one of the series) put in a table, as
    they stand at the window's end, when nothing it showed has changed: state, merge commit, changed files or
    their line counts, figures, and no substantive human comment since. Those are rechecked, not tabled again."""
    window = inp.window
    out: dict[Key, AnalysedItem] = {}
    for ai in inp.items:
        if ai.item.number is None or ai.analysis.priority not in _RANKED:
            continue
        key = _key(ai.item.repo, ai.item.number)
        last = memory.last_shown(key, window.until)
        if last is None or not (last[1].in_table or last[1].rechecked) or last[0].until < window.since - SERIES_SLACK:
            continue
        record, before = last
        now = shown_item(ai, window.until)
        said = any(not c.is_bot and c.created_at is not None and record.until <= c.created_at < window.until
                   and len((c.body or "").strip()) >= SUBSTANTIVE_COMMENT for c in ai.item.comments)
        if (now.state == before.state and now.merge_commit == before.merge_commit and not said
                and (before.files_digest is None or now.files_digest == before.files_digest)
                and (before.figures is None or sorted(map(str, now.figures)) == sorted(map(str, before.figures)))):
            out[key] = ai
    return out


