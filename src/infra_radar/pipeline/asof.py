"""Items as they stood at a time: the state a window's radar shows, and the judgment of that state.

A daily radar shows every item as it stood at its window's end: a PR merged or closed later was open then.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..config import Settings


def state_at(item, when: datetime, undated_known: bool = False) -> tuple[str, str | None, bool]:
    """An item's state as of `when`: (state, merge commit or None, whether it changed after `when`).

    A PR merged or closed after `when` was still open then (a watched PR existed; history imports only
    know its merge time, so its creation time says nothing). A merged or closed state known without its time
    (a saved page says "closed" and gives no date) is taken to hold at `when` only when `undated_known`
    (everything in the store was recorded before `when`: a live run); otherwise the item was open then as
    far as the window can know, and the state counts as later.
    """
    from ..models import CLOSED, MERGED, OPEN

    later = any(t is not None and t > when for t in (item.merged_at, item.closed_at, item.updated_at))
    if item.state == MERGED and item.merged_at is not None and item.merged_at > when:
        return OPEN, None, True
    if item.state == CLOSED and item.closed_at is not None and item.closed_at > when:
        return OPEN, None, True
    if undated(item) and not undated_known:
        return OPEN, None, True
    return item.state, item.merge_commit, later


def undated(item) -> bool:
    """Whether a PR's or issue's merged or closed state is known without its time (a saved page)."""
    from ..models import CLOSED, ISSUE, MERGED, PR

    if item.kind not in (PR, ISSUE):
        return False
    return (item.state == MERGED and item.merged_at is None) or (item.state == CLOSED and item.closed_at is None)


def live(until: datetime) -> bool:
    """Whether a window ends now (or later): all the store knows was recorded before its end, so a state
    known without its time held then. A window of the past cannot know when such a state was reached."""
    return until >= datetime.now(UTC) - timedelta(minutes=10)


def as_of(settings: Settings, found: list, when: datetime, compiled: dict | None = None,
          undated_known: bool | None = None) -> list:
    """The items as they stood at `when`: one merged or closed later (a window looked at afterwards, as a
    backfill or the team's day is) was open then, and is judged again as open (priority and decision read
    the state); its later dates are left out. A state known only without its time (a page saved later) is a
    later state unless `undated_known` (default: the window ends now); such an item carries it in
    `later_state`, to be marked, never to decide. The rules are compiled only when some item needs it, and
    kept in `compiled` (when given) for the next call: a site build asks for every day."""
    from dataclasses import replace

    from ..analyse.item import analyse
    from ..analyse.ruleset import RuleSet
    from ..models import AnalysedItem

    compiled = {} if compiled is None else compiled
    known = live(when) if undated_known is None else undated_known
    out = []
    for ai in found:
        item = ai.item
        state, _, _ = state_at(item, when, known)
        if state == item.state:
            out.append(ai)
            continue
        if "rules" not in compiled:
            compiled["rules"] = RuleSet.load(settings)
        rules = compiled["rules"]
        then = replace(item, state=state, merged_at=None, closed_at=None, merge_commit=None,
                       updated_at=item.updated_at if item.updated_at and item.updated_at <= when else None)
        later = item.state if undated(item) and not known else ""
        out.append(AnalysedItem(then, analyse(then, rules, settings), later))
    return out
