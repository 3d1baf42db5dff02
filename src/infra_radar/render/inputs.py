"""What the pipeline hands the renderers: the inputs of a daily radar, a weekly report and a card."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..models import AnalysedItem, FileChange, Link, PerfClaim, Window


@dataclass
class WatchRecheck:
    """One tracked item as rechecked this run: carried on from an earlier published radar, or added by hand."""

    ref: str
    url: str
    title: str
    state_before: str | None  # as the radar that last showed it showed it; None: never shown
    state_now: str  # at the window's end
    merge_commit: str | None
    files_moved: bool | None  # None = unknown (never shown, or its files were not known then)
    new_refs: list[str]  # refs of items that reference it since it was last shown ("owner/name#N")
    risks: list[str] = field(default_factory=list)  # risk labels of the item, still open while it is not merged
    kind: str = "pr"
    origin_day: str | None = None  # the day of the radar whose carry it is on; None: not carried
    reasons: list[str] = field(default_factory=list)  # why it is carried: deep, p0, validate-first, track-only
    hand: str | None = None  # on the watch list by hand, with this reason ("" for none); None: not by hand
    last_day: str | None = None  # the day of the radar that last showed it
    commit_before: str | None = None  # the merge commit that radar showed
    files: list[FileChange] = field(default_factory=list)  # its changed files at the window's end
    files_added: list[str] = field(default_factory=list)  # paths since last shown
    files_removed: list[str] = field(default_factory=list)
    lines_moved: bool = False  # the same files, other line counts: new commits since last shown
    new_claims: list[PerfClaim] = field(default_factory=list)  # figures not shown before
    related: list[tuple[str, str]] = field(default_factory=list)  # (ref, role) of follow-ups since last shown
    new_comments: int = 0
    last_recheck: bool = False  # its carry ends with this radar (closed, or its merge reported)
    rechecks_before: int = 0  # radars that rechecked it since its carry began
    later_state: str = ""  # a newer state known only from a source saved after the window (an undated page)


@dataclass
class SinceLast:
    """What changed since the last published radar: new items, tracked items that changed state, items no
    longer tracked. `day` is None when no earlier radar was published."""

    day: str | None
    new: int
    changed: int = 0
    stopped: int = 0


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
    short_p2_limit: int = 2  # P2 rows the short table shows; the rest are counted by repository
    top_table_limit: int = 8  # P0/P1 rows of the P0/P1 table; further P0/P1 items go to the short table (0: all)
    short_table_limit: int = 30  # P2 rows are added while the short table is shorter (every P0/P1 is listed)
    downstream: list[str] = field(default_factory=list)  # repositories of role "downstream" (reported apart)
    downstream_limit: int = 4  # downstream items named in their section
    adapted: list = field(default_factory=list)  # store.ledger.LedgerEntry of downstream PRs in the window
    no_deep: set[str] = field(default_factory=set)  # lower-cased refs an earlier radar follows: never deep-dived
    since_last: SinceLast | None = None  # None: the radar has no memory (a test, a prompt preview)
    kinds: dict[str, str] = field(default_factory=dict)  # lower-cased ref -> PR/issue, of linked items the store holds
    # lower-cased refs of items opened before the window and open at its start, whose activity in it the store
    # cannot date (store.queries.open_before): a first radar lists them in its short table, never in depth
    open_before: set[str] = field(default_factory=set)
    # lower-cased refs the previous published radar tabled that have not changed since (pipeline.memory.unchanged):
    # rechecked, not tabled again
    unchanged: set[str] = field(default_factory=set)


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
    data_end: datetime | None = None  # the repository's newest stored item: a week ending later is partial
    is_bot: Callable[[str], bool] | None = None  # the rules' bot test (bots.toml); None: GitHub's `[bot]` suffix
    rules_dir: Path | None = None  # the user's rules directory (weekly.toml overrides)


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
    kinds: dict[str, str] = field(default_factory=dict)  # lower-cased ref -> PR/issue, of linked items the store holds
