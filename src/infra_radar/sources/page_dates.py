"""A saved page's opening time when the page does not give it: bounded, never taken from a later event.

A page copied weeks after a PR was opened can start with a later review or comment; that event is an upper
bound of the opening, not the opening. Numbers of PRs and issues rise with their opening time in one
repository, so the neighbours the store knows bound it too: the nearest lower number was opened no later (its
opening is a lower bound), a higher number was opened, or merged, no earlier (an upper bound). When both bounds
fall on one UTC day the opening is known to that day (a date); otherwise the upper bound is kept, marked as a
bound (`Item.time_source` = BOUND), and it never places the item in a window as opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..models import Item
from ..windows import date_only, day_start

BOUND = "created-bound"  # Item.time_source: created_at is only an upper bound of the opening


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A stored PR or issue of the same repository: its number and what is known of its times."""

    number: int
    opened: datetime | None  # its own opening time (GitHub, a page), None when not known
    merged: datetime | None


def _end(when: datetime) -> datetime:
    """The latest instant a time stands for: a date-only time its day's end."""
    return when + timedelta(days=1) if date_only(when) else when


def bound_creation(item: Item, lower: list[Neighbour], higher: list[Neighbour]) -> tuple[datetime | None, bool]:
    """(created_at, is_bound) for a page item whose opening the page does not give. `lower`: neighbours with
    smaller numbers, nearest first; `higher`: larger numbers, nearest first."""
    events = [t for t in (item.updated_at, item.merged_at, item.closed_at, *(c.created_at for c in item.comments))
              if t is not None]
    uppers = [*events, *(n.opened or n.merged for n in higher if n.opened or n.merged)]
    if not uppers:
        return None, False
    hi = min(uppers, key=_end)
    lo = next((n.opened for n in lower if n.opened is not None), None)
    if lo is not None and day_start(lo) == day_start(_end(hi) - timedelta(microseconds=1)):
        return day_start(lo), False  # both bounds on one day: opened that day, a date
    return hi, True
