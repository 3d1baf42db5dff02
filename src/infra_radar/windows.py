"""Time windows from command-line words: dates, times with offsets, ISO weeks."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import UTC, date, datetime, timedelta

from .errors import WindowError, few
from .models import Item, Window, utc

_WEEK = re.compile(r"^(\d{4})-?W(\d{1,2})$", re.IGNORECASE)


YEARS = (1970, 9000)  # the years a time or week may name: windows around them stay representable


def parse_when(text: str) -> datetime:
    """A bare date is 00:00 UTC; a time may carry an offset or Z (no offset means UTC)."""
    value = text.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            when = datetime.fromisoformat(value).replace(tzinfo=UTC)
        else:
            when = utc(datetime.fromisoformat(value.replace("z", "Z")))
    except (ValueError, OverflowError):
        raise WindowError(f"invalid time {text[:40]!r}: use YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM]") from None
    if not YEARS[0] <= when.year <= YEARS[1]:
        raise WindowError(f"invalid time {text[:40]!r}: the year must be from {YEARS[0]} to {YEARS[1]}")
    return when


def now() -> datetime:
    """This machine's clock in UTC, to the second (tests move it by patching this function)."""
    return datetime.now(UTC).replace(microsecond=0)


def now_end() -> datetime:
    """"Now" as the end of a half-open window: the clock rounded up to the next whole second, so a record
    stored earlier in the current second is inside a window that ends now."""
    clock, precise = now(), datetime.now(UTC)
    # (a clock moved by a test, or set back by a second, is taken as it is)
    return clock + timedelta(seconds=1) if clock == precise.replace(microsecond=0) < precise else clock


def horizon(skew: float) -> datetime:
    """The latest time a record may carry and still count as now: the clock plus `skew` seconds."""
    return now() + timedelta(seconds=skew)


def dated_later(when: datetime | None, limit: datetime) -> bool:
    """Whether `when` lies past `limit` (a horizon): such a record is kept but is never the latest."""
    return when is not None and when > limit


class LaterDates:
    """Records dated later than now (plus the configured skew), found as an import reads them: each is kept,
    and `note()` names where the first few came from (file:line, clone and commit, GitHub and item) and counts
    the rest, in one line."""

    def __init__(self, skew: float) -> None:
        self.limit = horizon(skew)
        self.found: list[str] = []

    def check(self, item: Item, where: str) -> None:
        times = [t for t in (item.when, item.created_at, item.merged_at, item.closed_at, item.updated_at)
                 if dated_later(t, self.limit)]
        if times:
            self.found.append(f"{where} ({max(times):%Y-%m-%dT%H:%MZ})")

    def watch(self, stream: Iterable[Item], where: Callable[[Item], str]) -> Iterator[Item]:
        """`stream`, each item checked as it passes."""
        for item in stream:
            self.check(item, where(item))
            yield item

    def note(self) -> str:
        """"" when every record was dated by now, else one line for the user."""
        if not self.found:
            return ""
        return (f"{len(self.found)} record(s) dated later than now: kept, but never the latest day, week, feed "
                f"entry or push (a wrong clock upstream?): {few(self.found)}")


def make_window(since: datetime, until: datetime) -> Window:
    """A half-open window, refusing an empty or inverted one."""
    if since >= until:
        raise WindowError(f"since ({since.isoformat()}) must be before until ({until.isoformat()})")
    return Window(since, until)


def date_only(when: datetime | None) -> bool:
    """A time that is only a date: exactly 00:00 UTC, as pasted pages give them."""
    return when is not None and when.utcoffset() == timedelta(0) and when.time() == datetime.min.time()


def touches(when: datetime | None, window: Window, days: Collection[date] | None = None) -> bool:
    """Whether `when` falls in `window`. A date-only time stands for its whole day and counts in the one window
    of a series that holds that day (`days`, from `owned_days`); `days` None: the days the window covers the
    largest part of, as if it stood alone."""
    if when is None or when >= window.until:
        return False
    if date_only(when):
        return when.date() in (owned_days(window) if days is None else days)
    return when >= window.since


DAY = timedelta(days=1)


def owns_day(window: Window, day: date, others: Iterable[tuple[datetime, datetime]] = ()) -> bool:
    """Whether `window` holds the date-only times of `day` (UTC): the window of the series that covers the largest
    part of that day. The series is `window` with `others` (the published windows around it); where two windows
    overlap (a few minutes, as windows taken from "the last run's time" do), the one that began first has the
    overlap; a part of the day no window covers (a gap, the hours after the window's end that the next window
    will take) counts as a window of its own. Ties go to the earlier part. Linear in `others`."""
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    end = start + DAY
    spans = sorted({(max(s, start), min(u, end), s, u == window.until and s == window.since)
                    for s, u in [(window.since, window.until), *others] if s < end and u > start},
                   key=lambda p: (p[2], not p[3]))
    pieces: list[tuple[timedelta, bool]] = []  # (length, is this window's), in time order
    reached = start
    for lo, hi, _, mine in spans:
        lo = max(lo, reached)
        if lo > reached:
            pieces.append((lo - reached, False))
        if hi > lo:
            pieces.append((hi - lo, mine))
            reached = hi
    if reached < end:
        pieces.append((end - reached, False))
    best = max(pieces, key=lambda p: p[0]) if pieces else None
    return best is not None and best[1]


def owned_days(window: Window, others: Iterable[tuple[datetime, datetime]] = ()) -> set[date]:
    """The UTC days whose date-only times `window` holds (`owns_day`) beside the published windows `others`."""
    others = [(s, u) for s, u in others if not (s == window.since and u == window.until)]
    first = day_start(window.since).date()
    last = (window.until - timedelta(microseconds=1)).astimezone(UTC).date()
    out, day = set(), first
    while day <= last:
        if owns_day(window, day, others):
            out.add(day)
        day += DAY
    return out


def report_day(window: Window) -> date:
    """The date a daily report of `window` carries in its title and its file name: the UTC date of the window's
    last instant. A calendar day [D 00:00Z, D+1) is D; a morning run ending 02:12Z on D is D, as the team dates
    its radar by the morning it is read."""
    return (window.until - timedelta(microseconds=1)).astimezone(UTC).date()


def day_start(when: datetime) -> datetime:
    """00:00 UTC of `when`'s day."""
    return when.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def iso_week(label: str) -> Window:
    """The window [Monday 00:00 UTC, next Monday) of an ISO week such as 2026-W31."""
    found = _WEEK.match(label.strip())
    if not found:
        raise WindowError(f"invalid week {label!r}: use YYYY-Www, e.g. 2026-W31")
    year, week = int(found.group(1)), int(found.group(2))
    if not YEARS[0] <= year <= YEARS[1]:
        raise WindowError(f"invalid week {label!r}: the year must be from {YEARS[0]} to {YEARS[1]}")
    try:
        monday = date.fromisocalendar(year, week, 1)
    except ValueError:
        raise WindowError(f"invalid week {label!r}: {year} has no week {week}") from None
    start = datetime(monday.year, monday.month, monday.day, tzinfo=UTC)
    return Window(start, start + timedelta(days=7))


def week_label(window: Window) -> str | None:
    """'2026-W31' when the window is exactly one ISO week, else None."""
    year, week, weekday = window.since.isocalendar()
    exact = (window.since.time() == datetime.min.time() and weekday == 1
             and window.until - window.since == timedelta(days=7))
    return f"{year}-W{week:02d}" if exact else None


def previous(window: Window) -> Window:
    """The window of the same length just before this one."""
    span = window.until - window.since
    return Window(window.since - span, window.since)
