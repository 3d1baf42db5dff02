"""Memory within bounds: a hand-watched item is rechecked only by radars of windows that end after it was watched,
and a radar reads the records its carry window holds, not every record ever published."""

from __future__ import annotations

from datetime import timedelta

from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.pipeline.memory import tracked
from infra_radar.store import published
from infra_radar.store.published import RadarRecord, ShownItem

from .conftest import TEST_DB_URL, _fresh_schema
from .test_memory import REPO, Store, at, first_day, section


def test_a_watched_item_is_not_rechecked_by_radars_of_windows_before_it_was_watched(radar_home):
    store = Store(radar_home, deep_dive_limit=2)
    first_day(store)
    runner = CliRunner()
    # watched from the evening of Aug 2: the radar of the morning of Aug 2 (ending 02:00) came before it
    assert runner.invoke(main, ["watch", "add", f"{REPO}#106", "--reason", "v2 design",
                                "--since", "2026-08-02T18:00Z"]).exit_code == 0
    assert runner.invoke(main, ["watch", "add", f"{REPO}#104"]).exit_code == 0  # watched now: after every window
    before = store.radar(2)
    tracked = section(before, "Tracked items") if "## Tracked items" in before else ""
    assert f"[{REPO}#106]" not in tracked and f"[{REPO}#104]" not in tracked, tracked
    first = published.load_records(store.engine)[0]
    assert not any(i.rechecked for i in first.items), first.items  # nothing recorded as rechecked either

    after = store.radar(3)
    assert f"[{REPO}#106]" in section(after, "Tracked items")  # the window ends after it was watched
    assert f"[{REPO}#104]" not in section(after, "Tracked items")
    listed = runner.invoke(main, ["watch", "list"])
    assert f"{REPO}#106" in listed.output and f"{REPO}#104" in listed.output


def _recorded(store: Store, days: int, end) -> None:
    """`days` published radars, one a day before `end`, each showing and carrying three items."""
    records = []
    for k in range(1, days + 1):
        until = end - timedelta(days=k)
        items = [ShownItem(REPO, 5000 + (k + j) % 40, "pr", f"Change {k} {j}", "open", "P1", "M", "track-only",
                           in_table=True, reasons=["track-only"], origin_until=until, carry=True, files=[], figures=[])
                 for j in range(3)]
        records.append(RadarRecord(until - timedelta(days=1), until, [REPO], items))
    published.save_records(store.engine, records)


def _rows_read(monkeypatch, action) -> int:
    """Rows of published radars and items the action read from the store."""
    from infra_radar.store import reader

    counted = [0]
    real = reader.Reader.rows

    def rows(self, sql, params=None):
        found = real(self, sql, params)
        if "published_" in sql:
            counted[0] += len(found)
        return found

    monkeypatch.setattr(reader.Reader, "rows", rows)
    try:
        action()
    finally:
        monkeypatch.setattr(reader.Reader, "rows", real)
    return counted[0]


def test_a_daily_and_the_watch_list_read_what_the_carry_window_holds(radar_home, tmp_path, monkeypatch):
    """30 recorded radars or 400: a daily reads the same rows (its 14-day carry window and the last showing of
    what it ranks), and so does `radar watch list`; before, every record ever published was read."""
    counts = {}
    for days in (30, 400):
        home = tmp_path / f"home{days}"
        monkeypatch.setenv("RADAR_HOME", str(home))
        if TEST_DB_URL:
            monkeypatch.setenv("RADAR_DB_URL", _fresh_schema(f"memory-bounds-{days}"))
        store = Store(home, deep_dive_limit=2)
        first_day(store)
        assert CliRunner().invoke(main, ["watch", "add", f"{REPO}#5001", "--since", "2025-01-01"]).exit_code == 0
        _recorded(store, days, at(2, 2))
        daily_rows = _rows_read(monkeypatch, lambda s=store: s.radar(2, record=False, out=False))
        listed = _rows_read(monkeypatch, lambda s=store: tracked(s.settings, s.engine))
        counts[days] = (daily_rows, listed)
        store.engine.dispose()
    # the same, but for the last showing of an item before the window (one row more when there is one)
    assert all(small <= large <= small + 5 for small, large in zip(counts[30], counts[400], strict=True)), counts
    # a record and its 3 items for each of the 14 days of the carry window and the day before it, and a few
    # last showings: not 400 days of them (1,600 rows)
    assert 0 < max(counts[400]) <= 16 * 4 + 10, counts



def test_a_site_build_does_not_recheck_a_watched_item_on_the_days_before_it_was_watched(settings, sample_store,
                                                                                        tmp_path, monkeypatch):
    from infra_radar.publish import charts
    from infra_radar.publish.build import build_site

    monkeypatch.setattr(charts, "available", lambda: False)
    assert CliRunner().invoke(main, ["watch", "add", "acme/infer-npu#851", "--reason", "CANN"]).exit_code == 0
    out = tmp_path / "site"
    built = build_site(settings, sample_store, out)
    assert built.daily_pages > 0
    # watched now: after every day of the site, so no daily page rechecks it and no record says it did
    rechecked = [r.day() for r in published.load_records(sample_store) for i in r.items
                 if i.key == ("acme/infer-npu", 851) and i.rechecked]
    assert rechecked == [], rechecked
    assert not any("infer-npu#851" in p.read_text(encoding="utf-8") for p in (out / "daily").rglob("*.html"))
