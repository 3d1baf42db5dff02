"""As of the window, on the shared history: a radar about a past window links nothing that came after it.

The store of all history is the session's (conftest.full_store), built once.
"""

from __future__ import annotations

import re

import pytest

from infra_radar.models import Window
from infra_radar.pipeline.radar import daily_radar
from infra_radar.pipeline.reports import report_repos
from infra_radar.store import queries
from infra_radar.windows import parse_when

from .conftest import opened_full_store

pytestmark = pytest.mark.one_store  # real history's text: the same read from either store

# the team's mornings after its first radar (../shared/seeds): windows of the past, looked at long after
WINDOWS = [("2026-07-02T02:12:00Z", "2026-07-03T02:11:27Z"), ("2026-07-03T02:11:27Z", "2026-07-04T02:14:00Z")]
REF = re.compile(r"\[([\w.-]+/[\w.-]+)#(\d+)\]")


@pytest.fixture(scope="module")
def store(full_store):
    with opened_full_store(full_store) as opened:
        yield opened


@pytest.mark.parametrize("since, until", WINDOWS)
def test_a_past_window_links_nothing_known_after_its_end(store, since, until) -> None:
    settings, engine = store
    window = Window(parse_when(since), parse_when(until))
    radar = daily_radar(settings, engine, window, report_repos(settings, engine, None), remember=False)
    text = radar.markdown()
    given = {(lk.repo, lk.number) for links in radar.input.related.values() for lk in links
             if lk.repo and lk.number is not None}
    shown = {(repo, int(number)) for repo, number in REF.findall(text)}
    assert shown
    known = queries.known_since_many(engine, shown | given)
    later = sorted(f"{repo}#{number} {at:%Y-%m-%d}" for (repo, number), at in known.items()
                   if at is not None and at >= window.until)
    assert not later
