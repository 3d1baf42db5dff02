"""Memory within bounds: a hand-watched item is rechecked only by radars of windows that end after it was watched,
and a radar reads the records its carry window holds, not every record ever published."""

from __future__ import annotations

from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.store import published

from .test_memory import REPO, Store, first_day, section


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
