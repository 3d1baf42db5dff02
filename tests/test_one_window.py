"""Issue 42 and two items of issue 44: one date, one window; what the previous radar tabled is rechecked unless it
changed; windows per the repositories a radar covered; a published radar is immutable and is what every door
shows (a rerun, a push, the site); a window much longer than the schedule is said before it is written."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta

import pytest

from infra_radar.models import Comment, Window
from infra_radar.pipeline.reports import daily
from infra_radar.store import published
from infra_radar.windows import owned_days

from .test_memory import REPO, Store, at, first_day, judged, pr, section

OTHER = "acme/train"


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.no_store
def test_a_day_belongs_to_the_window_of_the_series_covering_most_of_it():
    first = Window(_utc(2026, 6, 29, 2), _utc(2026, 7, 2, 2, 12))
    # a first run's look back: its first day (22 h of it), not the day it ends on (2 h 12 min)
    assert owned_days(first) == {date(2026, 6, 29), date(2026, 6, 30), date(2026, 7, 1)}
    # the next morning 20 s later, then one that overlaps it by 93 s: each day is one window's
    second = Window(_utc(2026, 7, 2, 2, 12, 20), _utc(2026, 7, 3, 2, 10))
    third = Window(_utc(2026, 7, 3, 2, 8, 30), _utc(2026, 7, 4, 2, 10))
    series = [(w.since, w.until) for w in (first, second, third)]
    assert owned_days(second, series) == {date(2026, 7, 2)}
    assert owned_days(third, series) == {date(2026, 7, 3)}
    assert owned_days(first, series) & owned_days(second, series) == set()
    # a calendar day holds its day; a short window in the middle of a day holds none
    assert owned_days(Window(_utc(2026, 7, 5), _utc(2026, 7, 6))) == {date(2026, 7, 5)}
    assert owned_days(Window(_utc(2026, 7, 5, 10), _utc(2026, 7, 5, 14))) == set()


def _rows(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if ln.startswith("| "))


def test_what_the_previous_radar_tabled_is_rechecked_unless_it_changed(radar_home):
    store = Store(radar_home, deep_dive_limit=2)
    first_day(store)
    store.put((pr(107, "[Perf] Merged cache tweak", state="merged", merged_at=at(1, 9), closed_at=at(1, 9),
                  merge_commit="c" * 40), judged("P1", "adapt-now", 4)),
              (pr(108, "[Perf] Merged sync tweak", state="merged", merged_at=at(1, 9), closed_at=at(1, 9),
                  merge_commit="d" * 40), judged("P1", "adapt-now", 4)))
    one = store.radar(2)
    assert f"[{REPO}#107]" in _rows(one) and f"[{REPO}#108]" in _rows(one)
    # the next morning both are touched by a comment: a bare "LGTM" on #107, a review that says something on #108
    store.put((pr(107, "[Perf] Merged cache tweak", state="merged", merged_at=at(1, 9), closed_at=at(1, 9),
                  merge_commit="c" * 40, comments=[Comment("rev", "LGTM", at(2, 9))]),
               judged("P1", "adapt-now", 4)),
              (pr(108, "[Perf] Merged sync tweak", state="merged", merged_at=at(1, 9), closed_at=at(1, 9),
                  merge_commit="d" * 40, comments=[Comment("rev", "This breaks the MoE path on two nodes: the "
                                                           "bucket size is read before the group is set up.",
                                                           at(2, 9))]),
               judged("P1", "adapt-now", 4)))
    two = store.radar(3)
    assert f"[{REPO}#107]" not in _rows(two), two  # nothing changed: rechecked, not tabled again
    assert f"[{REPO}#107]" in section(two, "Tracked items")
    assert f"[{REPO}#108]" in _rows(two)  # a substantive comment: tabled again


def test_a_radar_for_one_repository_moves_only_its_window(radar_home):
    store = Store(radar_home)
    store.put((pr(201, "[Perf] Infer change", created_at=at(1, 5), updated_at=at(1, 6)), judged("P1", "track-only", 3)),
              (pr(202, "[Perf] Train change", repo=OTHER, created_at=at(1, 5), updated_at=at(1, 6)),
               judged("P1", "track-only", 3)))
    daily(store.settings, store.engine, at(1, 2), at(2, 2), out_dir=store.out)  # both repositories
    # on Aug 2 each repository has an item; a radar published for acme/infer alone covers it
    store.put((pr(203, "[Perf] Infer later", created_at=at(2, 5), updated_at=at(2, 6)), judged("P1", "track-only", 3)),
              (pr(204, "[Perf] Train later", repo=OTHER, created_at=at(2, 5), updated_at=at(2, 6)),
               judged("P1", "track-only", 3)))
    daily(store.settings, store.engine, None, at(3, 2), repos=[REPO], out_dir=store.out)
    # the next radar of both starts where acme/train's last radar ended: its item of Aug 2 is shown
    report = daily(store.settings, store.engine, None, at(4, 2), out_dir=store.out)
    assert report.window.since == at(2, 2), report.window
    assert f"[{OTHER}#204]" in report.text


def _open_before_item(store: Store) -> None:
    """An item known from a saved page, opened days before the first window, with no dated event in it: a first
    radar's look back lists it."""
    store.put((pr(301, "[Perf] Fused norm kernel", source="page", created_at=datetime(2026, 7, 28, tzinfo=UTC),
                  updated_at=datetime(2026, 7, 28, tzinfo=UTC)), judged("P1", "track-only", 3)))


def test_a_published_radar_is_immutable_and_every_door_shows_it(radar_home, tmp_path):
    from infra_radar.publish.build import build_site
    from infra_radar.publish.push import push_reports

    store = Store(radar_home)
    first_day(store)
    _open_before_item(store)
    first = daily(store.settings, store.engine, None, at(2, 2), out_dir=store.out)  # a first run: looks back 72 h
    assert f"[{REPO}#301]" in first.text and f"[{REPO}#101]" in first.text
    (record,) = published.load_records(store.engine)
    # an earlier day published after it
    daily(store.settings, store.engine, first.window.since - timedelta(days=2), first.window.since - timedelta(days=1),
          out_dir=store.out)
    again = daily(store.settings, store.engine, first.window.since, first.window.until, out_dir=store.out)
    assert again.text == first.text  # its rerun says what it said
    assert (store.out / "daily" / "2026-08-02.md").read_text(encoding="utf-8") == first.text
    assert record in published.load_records(store.engine)  # its record untouched
    lines = push_reports(store.settings, store.engine, "daily", "slack", dry_run=True, day="2026-08-02")
    pushed = json.dumps([json.loads(ln.split("\n", 1)[1]) for ln in lines], ensure_ascii=False)
    assert f"{REPO}#301" in pushed and f"{REPO}#101" in pushed  # the look-back row as published

    build_site(store.settings, store.engine, tmp_path / "site")
    page = (tmp_path / "site" / "daily" / "2026-08-02.html").read_text(encoding="utf-8")
    assert "2026-07-30T02:00:00Z" in page and "2026-08-02T02:00:00Z" in page  # the published window, not Aug 2
    assert f"{REPO}#301" in page and "computed-day" not in page


def test_a_calendar_day_page_beside_a_published_series_says_it_is_computed_on_the_site(radar_home, tmp_path):
    from infra_radar.publish.build import build_site

    store = Store(radar_home)
    first_day(store)
    daily(store.settings, store.engine, at(1, 2), at(2, 2), out_dir=store.out)
    store.put((pr(401, "[Perf] Later change", created_at=at(5, 5), updated_at=at(5, 6)), judged("P1", "track-only", 3)))
    build_site(store.settings, store.engine, tmp_path / "site")
    pages = sorted(p.name for p in (tmp_path / "site" / "daily").glob("2026-*.html"))
    assert pages == ["2026-08-02.html", "2026-08-05.html"], pages  # Aug 1 is the published radar's
    later = (tmp_path / "site" / "daily" / "2026-08-05.html").read_text(encoding="utf-8")
    assert 'class="computed-day"' in later and f"{REPO}#401" in later
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "2026-08-02" in home


def test_a_window_much_longer_than_the_schedule_is_said_before_it_is_written(radar_home):
    store = Store(radar_home)
    first_day(store)
    daily(store.settings, store.engine, at(1, 2), at(2, 2), out_dir=store.out)
    said: list[tuple[str, bool]] = []
    path = store.out / "daily" / "2026-08-30.md"
    report = daily(store.settings, store.engine, None, at(30, 2), out_dir=store.out,
                   warn=lambda line: said.append((line, path.exists())))
    assert report.window.since == at(2, 2)
    ((line, written),) = said
    assert not written and "672 hours" in line and "--since" in line, line
    # a window of the schedule says nothing
    said.clear()
    daily(store.settings, store.engine, None, at(31, 2), out_dir=store.out, warn=lambda line: said.append((line, 0)))
    assert said == []
    # a long window given on the command line is the one asked for: nothing to say
    daily(store.settings, store.engine, at(1, 2), at(20, 2), warn=lambda line: said.append((line, 0)))
    assert said == []


def test_a_change_its_author_withdrew_or_superseded_says_so_and_gives_no_reuse_advice(radar_home):
    store = Store(radar_home, deep_dive_limit=3)
    opened = dict(state="open", created_at=at(1, 5), updated_at=at(1, 6))
    store.put((pr(501, "[Perf] Empty the cache before wake up", **opened,
                  comments=[Comment("dev", "Closing this PR. The mechanism I claimed doesn't actually hold.", at(1, 8))]),
               judged("P1", "adapt-now", 5)),
              (pr(502, "[Perf] Bucketed weight sync", **opened,
                  comments=[Comment("dev", "Superseded by #510, which keeps the old path.", at(1, 8))]),
               judged("P1", "adapt-now", 5)),
              (pr(503, "[Perf] Fused rope", **opened,
                  comments=[Comment("rev", "Closing this PR? It looks stale.", at(1, 8)),
                            Comment("dev", "I am not closing this: the numbers hold.", at(1, 9))]),
               judged("P1", "adapt-now", 5)),
              # said after the window's end: not yet withdrawn then
              (pr(504, "[Perf] Later withdrawn", **opened, comments=[Comment("dev", "Closing this PR.", at(3, 8))]),
               judged("P1", "adapt-now", 5)))
    text = store.radar(2)
    rows = {n: next(ln for ln in text.splitlines() if ln.startswith("| ") and f"[{REPO}#{n}]" in ln)
            for n in (501, 502, 503, 504)}
    assert "the author withdrew this change in a comment; no reuse advice" in rows[501], rows[501]
    assert "the author says in a comment that #510 supersedes it; no reuse advice" in rows[502], rows[502]
    for n in (503, 504):
        assert "no reuse advice" not in rows[n] and "withdrew" not in rows[n], rows[n]
    dives = section(text, "Deep dives")
    assert "#501]" not in dives and "#502]" not in dives
    # the statement rests on the author's comment, which `radar show --evidence` shows
    from click.testing import CliRunner

    from infra_radar.cli import main

    shown = CliRunner().invoke(main, ["show", f"{REPO}#501", "--evidence"]).output
    assert "withdrawal.toml:withdrawn" in shown and "Closing this PR." in shown, shown


def test_a_tag_without_a_release_record_gives_no_release_date(radar_home):
    from infra_radar.models import Item

    store = Store(radar_home)
    first_day(store)
    store.put((Item(repo=REPO, kind="release", key="v1.0", title="v1.0", body="", author="", state="published",
                    created_at=at(1, 10), updated_at=at(1, 10), merge_commit="e" * 40, source="git"),
               judged("P2", "track-only", 2)))
    scope = section(store.radar(2), "Scope")
    assert f"{REPO} tag v1.0 points at a commit of 2026-08-01" in scope, scope
    assert "v1.0 (2026-08-01)" not in scope


def test_a_push_sends_the_published_text_whatever_the_store_holds_since(radar_home):
    from infra_radar.publish.push import push_reports

    store = Store(radar_home)
    first_day(store)
    first = daily(store.settings, store.engine, at(1, 2), at(2, 2), out_dir=store.out)
    shown = set(re.findall(r"\[(acme/[\w-]+#\d+)\]", first.text))
    assert shown
    # after publication an item of that window arrives, ranked P0: the published radar did not show it
    store.put((pr(501, "[Perf] Arrived after publication", created_at=at(1, 5), updated_at=at(1, 6)),
               judged("P0", "adapt-now", 5)))
    lines = push_reports(store.settings, store.engine, "daily", "slack", dry_run=True, day="2026-08-02")
    pushed = json.dumps([json.loads(ln.split("\n", 1)[1]) for ln in lines], ensure_ascii=False)
    assert f"{REPO}#501" not in pushed
    assert set(re.findall(r"(acme/[\w-]+#\d+)", pushed)) == shown
    # the last published radar, pushed without a date, is the same text
    again = push_reports(store.settings, store.engine, "daily", "slack", dry_run=True)
    assert f"{REPO}#501" not in "".join(again)
