"""What the pipeline hands the renderers: the inputs of a daily radar, a weekly report and a card."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..models import AnalysedItem, Link, Window


@dataclass
class WatchRecheck:
    """One watched item as rechecked this run."""

    ref: str
    url: str
    title: str
    state_before: str | None
    state_now: str
    merge_commit: str | None
    files_moved: bool | None  # None = unknown (first recheck)
    new_refs: list[str]  # refs of items that newly reference it ("owner/name#N")
    risks: list[str] = field(default_factory=list)  # risk labels of the item, still open while it is not merged


@dataclass
class DailyInput:
    """Everything the daily radar shows."""

    window: Window
    repos: list[str]
    items: list[AnalysedItem]  # everything in the window, releases too
    watch: list[WatchRecheck]
    deep_dive_limit: int
    first_run: bool
    generated_at: datetime
    explicit: bool = False  # the window was given on the command line
    calendar_day: bool = False  # the window is one UTC calendar day chosen automatically (site, push)
    related: dict[str, list[Link]] = field(default_factory=dict)  # by item ref: duplicates, parts, elsewhere
    stories: dict[str, Any] = field(default_factory=dict)  # by item ref: analyse.stories.Story (one change)
    target: str = "ascend"  # the target platform profile (settings.target)
    short_p2_limit: int = 10  # P2 rows the short table shows in full; the rest are listed by reference
    top_table_limit: int = 8  # P0/P1 rows of the P0/P1 table; further P0/P1 items go to the short table (0: all)


@dataclass
class WeeklyInput:
    """Everything a weekly report of one repository shows."""

    repo: str
    window: Window
    week_label: str | None  # "2026-W31" or None for a date range
    items: list[AnalysedItem]
    previous: list[AnalysedItem]  # previous window of equal length
    key_prs: int  # quick-view size (settings.weekly_key_prs)
    adapted: list = field(default_factory=list)  # store.ledger.LedgerEntry: upstream PRs adapted in the window
    target: str = "ascend"  # the target platform profile (settings.target)


@dataclass
class CardInput:
    """One item and the relations the pipeline computed for it."""

    item: AnalysedItem
    referenced_by: list[Link]
    duplicates: list[Link]  # computed by the pipeline
    related: list[Link] = field(default_factory=list)  # same mechanism elsewhere
    chain: list[Link] = field(default_factory=list)  # follow-ups: other parts of a split change
    adapted: list = field(default_factory=list)  # store.ledger.LedgerEntry: where this upstream PR was adapted
    known: bool = True  # False: an upstream ref known only through the ledger (no item, no analysis)
    target: str = "ascend"  # the target platform profile (settings.target)
    more: dict[str, int] = field(default_factory=dict)  # link kind -> related items beyond the listed ones
