"""A radar with memory: what one published radar showed, the next radars follow.

Every run that publishes a daily radar (`radar daily --out`, `radar push daily`, the site's daily pages) records
what it showed (store/published.py). A later radar reads the records of the windows that end before its own
(a backfill of an earlier window reads only those before it), and from them:

- carries items on without anyone typing it: what a radar deep-dived, ranked P0, or left open to validate first
  or to track (P0/P1). An item is carried for `carry_days` after the radar that began carrying it; sooner, it
  stops once a recheck shows it closed, or reports its merge (an item merged before it was first shown is
  followed for its follow-ups, backports and reverts until the days run out); `radar watch remove` drops it;
- rechecks each carried item, and each item on the watch list, as it stood at the window's end, against the radar
  that last showed it: state, merge commit, changed files, figures, follow-ups, backports and reverts, comments;
- never deep-dives again what it carries or what a radar of the last `carry_days` deep-dived;
- says how many items are new, how many tracked items changed state and how many stopped being tracked.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from sqlalchemy.engine import Engine

from ..config import Settings
from ..models import CLOSED, MERGED, OPEN, AnalysedItem, Window
from ..render.inputs import DailyInput, SinceLast, WatchRecheck
from ..store import published, queries
from ..store.published import RadarRecord, ShownItem
from .asof import as_of, live, state_at

__all__ = ["Carry", "Lookup", "Memory", "Recall", "StoreLookup", "Tracked", "recall", "tracked", "untrack"]

Key = tuple[str, int]  # (lower-cased repo, number)
_RANKED = ("P0", "P1", "P2")
_ROLES = ("backport", "revert", "original", "same-title")


def _key(repo: str, number: int) -> Key:
    return repo.lower(), number


def _day(until: datetime) -> str:
    """The date of a radar: the day of its window's last instant."""
    return (until - timedelta(microseconds=1)).astimezone(UTC).date().isoformat()


@dataclass(slots=True)
class Carry:
    """An item carried into a radar: since when, why, and where it was last shown."""

    repo: str
    number: int
    origin_until: datetime
    reasons: list[str]
    last: ShownItem
    last_until: datetime


class Memory:
    """The published records, indexed by the end of their windows: what came before any window.

    Read from the store as a radar needs them (`cover`): the records of its carry window (and the last one
    before it, which says what changed since), and for the items it shows or rechecks only each one's last
    showing before that. A daily costs what its carry window holds, however many radars were recorded."""

    def __init__(self, records: list[RadarRecord], dropped: set[tuple[str, int, datetime]], carry_days: int,
                 store=None, before_id: int | None = None):
        self.carry_days = timedelta(days=carry_days)
        self.dropped = dropped
        self.untils: list[datetime] = []
        self.records: dict[datetime, RadarRecord] = {}
        self.items: dict[datetime, dict[Key, ShownItem]] = {}
        self.shown_in: dict[Key, set[datetime]] = {}
        for record in records:
            self.put(record)
        # the store read from as needed; None: every record is given above
        self.store = store
        # the records published before the radar of this row id only: a published radar rebuilt (a push, the
        # site) recalls what it recalled when it was published, not a radar published after it
        self.before_id = before_id
        self.span: tuple[datetime, datetime] | None = None  # [from, to): every record ending in it is loaded
        self.older: dict[Key, tuple[RadarRecord, ShownItem] | None] = {}  # last showing before the span
        self.covered: set[datetime] = set()  # the window ends `cover` has read for

    @classmethod
    def load(cls, settings: Settings, store, before_id: int | None = None) -> Memory:
        """The store's memory: the carries dropped by hand now, the records as each radar needs them (`cover`);
        with `before_id`, those published before the radar of that row id only."""
        return cls([], published.dropped_carries(store), settings.carry_days, store, before_id)

    @classmethod
    def everything(cls, settings: Settings, store) -> Memory:
        """Every published record of the store at once (for a build of every day)."""
        return cls(published.load_records(store), published.dropped_carries(store), settings.carry_days)

    def cover(self, until: datetime, keys: Iterable[Key] = ()) -> None:
        """Read what a radar whose window ends at `until` needs: every record ending in its carry window, the
        last record before `until`, and for each of `keys` its last showing before those."""
        if self.store is None:
            return
        if until not in self.covered:
            self.covered.add(until)
            previous = published.latest_until(self.store, until, self.before_id)
            start = until - self.carry_days if previous is None else min(until - self.carry_days, previous)
            if self.span is None or start > self.span[1] or until < self.span[0]:  # none yet, or apart
                self._read(start, until)
                self.span = (start, until)
                self.older.clear()  # read before the old span's start: not before this one's
            else:
                low, high = self.span
                if start < low:
                    self._read(start, low)
                if until > high:
                    self._read(high, until)
                self.span = (min(low, start), max(high, until))
        wanted = [k for k in set(keys) if k not in self.older]
        if wanted:
            found = published.last_shown(self.store, wanted, self.span[0], self.before_id)
            for key in wanted:
                self.older[key] = found.get(key)

    def _read(self, start: datetime, end: datetime) -> None:
        for record in published.load_records(self.store, before=end, since=start, before_id=self.before_id):
            self.put(record)

    def latest(self) -> datetime | None:
        """The end of the last published radar."""
        if self.store is None:
            return self.untils[-1] if self.untils else None
        return published.latest_until(self.store, before_id=self.before_id)

    def put(self, record: RadarRecord) -> None:
        """Add a record, replacing the one that ends at the same time."""
        old = self.records.get(record.until)
        if old is None:
            bisect.insort(self.untils, record.until)
        else:
            for key in self.items[record.until]:
                self.shown_in[key].discard(record.until)
        self.records[record.until] = record
        self.items[record.until] = {i.key: i for i in record.items}
        for key in self.items[record.until]:
            self.shown_in.setdefault(key, set()).add(record.until)

    def previous(self, until: datetime) -> RadarRecord | None:
        """The last radar whose window ends before `until`."""
        at = bisect.bisect_left(self.untils, until)
        return self.records[self.untils[at - 1]] if at else None

    def last_shown(self, key: Key, until: datetime) -> tuple[RadarRecord, ShownItem] | None:
        """The last radar before `until` that showed the item, and how it showed it."""
        ends = [u for u in self.shown_in.get(key, ()) if u < until]
        older = self.older.get(key)
        if older is not None and older[0].until < until and (not ends or older[0].until > max(ends)):
            return older
        if not ends:
            return None
        end = max(ends)
        return self.records[end], self.items[end][key]

    def rechecks(self, key: Key, origin: datetime, until: datetime) -> int:
        """How many radars between the carry's origin and `until` rechecked the item."""
        return sum(1 for u in self.shown_in.get(key, ()) if origin < u < until and self.items[u][key].rechecked)

    def shown_before(self, key: Key, until: datetime) -> bool:
        return self.last_shown(key, until) is not None

    def _recent(self, until: datetime) -> list[RadarRecord]:
        """The radars ending in the `carry_days` before `until`, oldest first."""
        lo = bisect.bisect_left(self.untils, until - self.carry_days)
        hi = bisect.bisect_left(self.untils, until)
        return [self.records[u] for u in self.untils[lo:hi]]

    def carried(self, until: datetime) -> dict[Key, Carry]:
        """The items carried into a radar whose window ends at `until`."""
        self.cover(until)
        latest: dict[Key, tuple[RadarRecord, ShownItem]] = {}
        for record in self._recent(until):
            for key, shown in self.items[record.until].items():
                latest[key] = (record, shown)
        out = {}
        for key, (record, shown) in latest.items():
            origin = shown.origin_until
            if not shown.carry or origin is None or until - origin > self.carry_days \
                    or (*key, origin) in self.dropped:
                continue
            began = self.items.get(origin, {}).get(key)
            out[key] = Carry(shown.repo, shown.number, origin, list(began.reasons if began else shown.reasons),
                             shown, record.until)
        return out

    def deep_dived(self, until: datetime) -> set[Key]:
        """The items a radar of the `carry_days` before `until` deep-dived."""
        self.cover(until)
        return {key for record in self._recent(until) for key, shown in self.items[record.until].items()
                if shown.deep}


class Lookup(Protocol):
    """Where rechecks read the items: the store (StoreLookup), or a site build's items already in memory."""

    def item(self, repo: str, number: int) -> AnalysedItem | None: ...

    def referencing(self, repo: str, number: int) -> list[AnalysedItem]: ...

    def watch(self) -> list[queries.WatchEntry]: ...


class StoreLookup:
    """A Lookup over the store's queries."""

    def __init__(self, store) -> None:
        self.store = store
        self._items: dict[Key, AnalysedItem | None] = {}

    def item(self, repo: str, number: int) -> AnalysedItem | None:
        key = _key(repo, number)
        if key not in self._items:
            self._items[key] = queries.analysed_item(self.store, repo, number)
        return self._items[key]

    def referencing(self, repo: str, number: int) -> list[AnalysedItem]:
        return queries.analysed_referencing(self.store, repo, number)

    def watch(self) -> list[queries.WatchEntry]:
        return queries.watch_list(self.store)


# --- what one radar recalls ------------------------------------------------------------------------

def _comments(ai: AnalysedItem, until: datetime) -> int:
    """Human comments made by `until` (undated ones counted: they were there when the page was saved)."""
    return sum(1 for c in ai.item.comments if not c.is_bot and (c.created_at is None or c.created_at < until))


def _figures(ai: AnalysedItem) -> list[list]:
    return [published.figure(c.metric, c.before, c.after, c.unit) for c in ai.analysis.perf_claims]


def shown_item(ai: AnalysedItem, until: datetime) -> ShownItem:
    """How a radar ending at `until` shows the item (`ai` as it stood then)."""
    item, a = ai.item, ai.analysis
    state, commit, _ = state_at(item, until, live(until))
    return ShownItem(item.repo, item.number, item.kind, item.title, state, a.priority, a.grade, a.decision,
                     merge_commit=commit, files=sorted(f.path for f in item.files),
                     files_digest=published.files_digest(item.files), figures=_figures(ai),
                     comments=_comments(ai, until))


def _reasons(ai: AnalysedItem, deep: bool, top: bool) -> list[str]:
    """Why a radar starts carrying an item it wrote up (a deep dive or a row of the P0/P1 table): deep-dived;
    P0; open and left to validate first or to track. The short table, the downstream section and the items
    only counted are not followed: what the reader never read needs no recheck."""
    a, state = ai.analysis, ai.item.state
    if state == CLOSED or not (deep or top):  # what the report wrote up: its P0/P1 table and deep dives
        return []
    out = ["deep"] if deep else []
    if a.priority == "P0":
        out.append("p0")
    if state == OPEN and a.priority in ("P0", "P1") and a.decision in ("validate-first", "track-only"):
        out.append(a.decision)
    return out


@dataclass
class Recall:
    """What the memory gave one radar, kept to record the radar once it is published."""

    settings: Settings
    memory: Memory
    window: Window
    repos: list[str]
    carried: dict[Key, Carry] = field(default_factory=dict)
    shown: dict[Key, ShownItem] = field(default_factory=dict)  # the rechecked items as this radar shows them
    rechecked: set[Key] = field(default_factory=set)  # every item rechecked (those not in the store too)

    def record(self, inp: DailyInput, shown: dict) -> RadarRecord:
        """The record of the radar `inp`, whose report showed `shown` (render.daily.daily_context: the P0/P1
        table's rows and the deep dives are read from it)."""
        deep = {d["ref"].lower() for d in shown["deep"]}
        top = {r["ref"].lower() for r in shown["top"]}
        until = self.window.until
        items: dict[Key, ShownItem] = {}
        for ai in inp.items:
            if ai.item.number is None or ai.analysis.priority not in _RANKED or ai.item.ref.lower() in inp.unchanged:
                continue
            row = shown_item(ai, until)
            row.in_table, row.deep = True, ai.item.ref.lower() in deep
            row.reasons = _reasons(ai, row.deep, ai.item.ref.lower() in top)
            items[row.key] = row
        for key, again in self.shown.items():
            items.setdefault(key, again).rechecked = True
        for key, row in items.items():
            carry = self.carried.get(key)
            if carry is not None:
                row.origin_until, row.carry = carry.origin_until, not _ends(row.state, carry.last.state)
            elif row.reasons:
                row.origin_until, row.carry = until, True
        return RadarRecord(self.window.since, until, sorted(self.repos),
                           sorted(items.values(), key=lambda i: (i.repo.lower(), i.number)))

    def save(self, engine: Engine, inp: DailyInput, shown: dict | None = None, text: str | None = None,
             lang: str | None = None) -> RadarRecord:
        """Record the published radar `inp` (under the store's writer lock) and remember it; `shown`: its daily
        context, when the caller has it."""
        from ..render.context import daily_context, load_strings
        from ..store.lock import writer_lock

        if shown is None:
            shown = daily_context(inp, load_strings(self.settings.lang), self.settings.focus_weights)
        record = self.record(inp, shown)
        record.text, record.lang = text, lang
        with writer_lock(engine).hold(self.settings.lock_timeout):
            published.save_records(engine, [record])
        self.memory.put(record)
        return record


def _ends(state: str, before: str | None) -> bool:
    """Whether a carry ends with the recheck that shows `state`: closed, or its merge reported now."""
    return state == CLOSED or (state == MERGED and before not in (None, MERGED))


def _related(ai: AnalysedItem, ctx: _Context, since: datetime) -> list[tuple[str, str, str]]:
    """(ref, role, url) of the items since `since` that follow the item up: reference it, back-port it, revert
    it."""
    until = ctx.window.until

    def fresh(other: AnalysedItem) -> bool:
        when = other.item.when
        return when is not None and since <= when < until and other.item.ref != ai.item.ref

    referencing = {o.item.ref for o in ctx.referencing.get(ai.item.ref, []) if o.item.number is not None and fresh(o)}
    story = ctx.stories.get(ai.item.ref)
    members = [r for r in story.refs if r in ctx.pool and fresh(ctx.pool[r])] if story else []
    out = [(ref, story.roles[ref], ctx.pool[ref].item.url) for ref in members if story.roles.get(ref) in _ROLES]
    said = {ref for ref, _, _ in out}
    out += [(ref, "follow-up", ctx.pool[ref].item.url)
            for ref in sorted(referencing, key=lambda r: (ctx.pool[r].item.when, r)) if ref not in said]
    return out


def _recheck(key: Key, carry: Carry | None, hand: queries.WatchEntry | None, found: AnalysedItem | None,
             ctx: _Context) -> tuple[WatchRecheck, ShownItem | None]:
    """One tracked item (`found`: as it stands in the store, else None) as it stood at the window's end, against
    the radar that last showed it."""
    repo, number = (carry.repo, carry.number) if carry else (hand.repo, hand.number) if hand else key
    if found is not None and not carry and not hand:
        repo = found.item.repo
    until = ctx.window.until
    origin = dict(origin_day=_day(carry.origin_until), reasons=carry.reasons) if carry else {}
    hand_reason = None if hand is None else hand.reason
    last = ctx.memory.last_shown(key, until)
    before = last[1] if last else None
    ref = f"{repo}#{number}"
    if found is None:
        return WatchRecheck(ref, f"https://github.com/{repo}/issues/{number}", before.title if before else "",
                            before.state if before else None, "unknown", None, None, [], hand=hand_reason,
                            last_day=_day(last[0].until) if last else None, **origin), None
    ai = ctx.then[key]
    shown = shown_item(ai, until)
    state, commit, _ = state_at(found.item, until, live(until))
    added = removed = []
    if before is not None and before.files is not None:
        added = sorted(set(shown.files) - set(before.files))
        removed = sorted(set(before.files) - set(shown.files))
    new_claims = [] if before is None or before.figures is None else [
        c for c, f in zip(ai.analysis.perf_claims, shown.figures, strict=True) if f not in before.figures]
    related = _related(ai, ctx, last[0].until if last else ctx.window.since)
    check = WatchRecheck(
        ref, found.item.url, found.item.title, before.state if before else None, state, commit,
        None if before is None or before.files is None else bool(added or removed), [r for r, _, _ in related],
        list(ai.analysis.risk_labels), kind=found.item.kind, hand=hand_reason,
        last_day=_day(last[0].until) if last else None, commit_before=before.merge_commit if before else None,
        files=list(found.item.files), files_added=added, files_removed=removed, new_claims=new_claims,
        lines_moved=bool(before and before.files_digest and not (added or removed)
                         and before.files_digest != shown.files_digest),
        related=related, new_comments=max(0, shown.comments - before.comments) if before else 0,
        last_recheck=carry is not None and _ends(state, carry.last.state),
        rechecks_before=ctx.memory.rechecks(key, carry.origin_until, until) if carry else 0,
        later_state=ai.later_state, **origin)
    return check, shown


@dataclass
class _Context:
    """What the rechecks of one radar share: its window and items, each tracked item as it stood then, the items
    referencing them, and the stories (backports, reverts) among all of these."""

    settings: Settings
    memory: Memory
    window: Window
    then: dict[Key, AnalysedItem]
    referencing: dict[str, list[AnalysedItem]]
    pool: dict[str, AnalysedItem]
    stories: dict


def _exists_at(ai: AnalysedItem | None, until: datetime) -> bool:
    """Whether the item existed at `until` (as far as its source tells when it was opened)."""
    opened = queries.opened_at(ai.item) if ai is not None else None
    return opened is None or opened < until


def _watched_by(entry: queries.WatchEntry, until: datetime) -> bool:
    """Whether the item was on the watch list before `until` (`radar watch add`, or its --since)."""
    return entry.added_at is None or entry.added_at < until


def recall(settings: Settings, memory: Memory, lookup: Lookup, inp: DailyInput,
           compiled: dict | None = None, unchanged: Callable[[Memory, DailyInput], dict] | None = None) -> Recall:
    """Fill the radar `inp` from memory: its rechecks (carried items, then the watch list), the items it must
    not deep-dive again, and what changed since the last radar. Returns what it recalled, to record the radar
    with once it is published. `unchanged` (retable.unchanged) names what the previous radar tabled and has not
    changed since: rechecked, not tabled again."""
    from ..analyse.links import load_relation_rules
    from ..analyse.stories import stories

    window = inp.window
    names = {r.lower() for r in inp.repos}
    hand = {_key(e.repo, e.number): e for e in lookup.watch()}
    # read from the store: the carry window's records, and the last showing of what this radar ranks or rechecks
    memory.cover(window.until, [*hand, *(_key(ai.item.repo, ai.item.number) for ai in inp.items
                                         if ai.item.number is not None and ai.analysis.priority in _RANKED)])
    carried = {k: c for k, c in memory.carried(window.until).items() if k[0] in names}
    found = {key: lookup.item(*key) for key in [*carried, *(k for k in hand if k not in carried)]}
    # a radar of a window that ended before an item was watched (a backfill, a site build's past days), or
    # before the item was opened, does not recheck it
    keys = sorted(carried, key=lambda k: (carried[k].origin_until, k)) + \
        [k for k in hand if k not in carried and _watched_by(hand[k], window.until)
         and _exists_at(found[k], window.until)]
    # what the previous radar tabled and has not changed since: rechecked, not tabled again
    same = unchanged(memory, inp) if unchanged is not None else {}
    inp.unchanged = {f"{repo}#{number}" for repo, number in same}
    for key, ai in same.items():
        if key not in found:
            found[key] = ai
            keys.append(key)
    present = [k for k in keys if found[k] is not None]
    then = dict(zip(present, as_of(settings, [found[k] for k in present], window.until, compiled), strict=True))
    referencing = {then[k].item.ref: lookup.referencing(*k) for k in present}
    pool = {ai.item.ref: ai for ai in [*inp.items, *then.values(), *(o for v in referencing.values() for o in v)]
            if ai.item.number is not None}
    ctx = _Context(settings, memory, window, then, referencing, pool,
                   stories(list(pool.values()), load_relation_rules(settings)))
    out = Recall(settings, memory, window, list(inp.repos), carried)
    rechecks = []
    for key in keys:
        check, shown = _recheck(key, carried.get(key), hand.get(key), found[key], ctx)
        rechecks.append(check)
        out.rechecked.add(key)
        if shown is not None:
            out.shown[key] = shown
    inp.watch = rechecks
    followed = {f"{repo}#{number}" for repo, number in [*carried, *memory.deep_dived(window.until)]}
    # the same change elsewhere (a backport, a pick, a revert of a followed item) is news for its recheck,
    # which names it, not a second deep dive of one change
    inp.no_deep = followed | {member.lower() for ref, story in ctx.stories.items() if ref.lower() in followed
                              for member in story.refs}
    inp.since_last = _since_last(memory, inp, rechecks, out)
    return out


def _since_last(memory: Memory, inp: DailyInput, rechecks: list[WatchRecheck], out: Recall) -> SinceLast:
    """New items, tracked items whose state changed, and items the last radar tracked that this one does not."""
    until = inp.window.until
    # the items the scope line counts as ranked: upstream only (downstream items are counted in their section)
    down = {r.lower() for r in inp.downstream}
    ranked = [ai.item for ai in inp.items if ai.analysis.priority in _RANKED and ai.item.repo.lower() not in down]
    new = sum(1 for i in ranked if i.number is None or not memory.shown_before(_key(i.repo, i.number), until))
    previous = memory.previous(until)
    if previous is None:
        return SinceLast(None, new)
    changed = sum(1 for w in rechecks if w.state_before and w.state_now not in ("unknown", w.state_before))
    tracked_then = {i.key for i in previous.items if i.rechecked or i.carry}
    return SinceLast(previous.day(), new, changed, len(tracked_then - out.rechecked))


# --- the watch list: carried items beside the ones added by hand --------------------------------------------

@dataclass(slots=True)
class Tracked:
    """One item the next radar rechecks: carried (origin day and reasons) or added by hand (reason)."""

    ref: str
    state: str | None  # as last shown (or last rechecked)
    hand: str | None = None  # the reason it was added by hand; None: not added by hand
    origin_day: str | None = None
    reasons: list[str] = field(default_factory=list)
    last_day: str | None = None


def tracked(settings: Settings, engine: Engine) -> list[Tracked]:
    """What the radar after the last published one rechecks: carried items (oldest carry first), then the
    watch list's other entries."""
    memory = Memory.load(settings, engine)
    latest = memory.latest()
    hand = {_key(e.repo, e.number): e for e in queries.watch_list(engine)}
    if latest:
        memory.cover(latest + timedelta(microseconds=1), hand)
    carried = memory.carried(latest + timedelta(microseconds=1)) if latest else {}
    out = []
    for key, c in sorted(carried.items(), key=lambda kv: (kv[1].origin_until, kv[0])):
        entry = hand.get(key)
        out.append(Tracked(f"{c.repo}#{c.number}", c.last.state, entry.reason if entry else None,
                           _day(c.origin_until), c.reasons, _day(c.last_until)))
    for key, e in hand.items():
        if key in carried:
            continue
        last = memory.last_shown(key, latest + timedelta(microseconds=1)) if latest else None
        out.append(Tracked(f"{e.repo}#{e.number}", last[1].state if last else e.last_state, e.reason,
                           last_day=_day(last[0].until) if last else None))
    return out


def untrack(settings: Settings, engine: Engine, repo: str, number: int) -> bool:
    """Stop tracking repo#number: off the watch list, and its carry dropped. False if it was tracked neither way."""
    from ..store.save import watch_remove

    removed = watch_remove(engine, repo, number)
    memory = Memory.load(settings, engine)
    latest = memory.latest()
    carry = memory.carried(latest + timedelta(microseconds=1)).get(_key(repo, number)) if latest else None
    if carry is not None:
        published.drop_carry(engine, carry.repo, carry.number, carry.origin_until)
    return removed or carry is not None
