"""Atom and RSS feeds of the daily radars and weekly reports parse with feedparser."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from infra_radar.publish import charts
from infra_radar.publish.build import build_site
from infra_radar.publish.feeds import FeedEntry, build_feeds
from infra_radar.publish.site import SITE_TEMPLATES
from infra_radar.render.context import load_strings

feedparser = pytest.importorskip("feedparser")


def entries(n: int) -> list[FeedEntry]:
    out = []
    for i in range(n):
        day = datetime(2026, 7, 1 + i, tzinfo=UTC)
        out.append(FeedEntry("daily", f"daily/2026-07-{1 + i:02d}.html",
                             f"# Radar {i} <script>x</script>\n\n- [a#1](https://github.com/a/b/pull/1) ok\n", day))
    out.append(FeedEntry("weekly", "weekly/acme+infer/2026-W27.html", "# Week 27\n\ntext\n",
                         datetime(2026, 7, 6, tzinfo=UTC)))
    return out


def test_feeds_parse_and_hold_the_newest_reports_first():
    strings = load_strings("en", SITE_TEMPLATES)["site"]
    feeds = build_feeds(entries(25), "https://radar.example.org/", strings, per_kind=20)
    atom, rss = feedparser.parse(feeds["atom.xml"]), feedparser.parse(feeds["rss.xml"])
    for parsed in (atom, rss):
        assert not parsed.bozo, parsed.get("bozo_exception")
        assert len(parsed.entries) == 21  # 20 daily + 1 weekly
        assert parsed.entries[0].link == "https://radar.example.org/daily/2026-07-25.html"
        assert parsed.entries[0].title == "Radar 24 <script>x</script>"  # text, not markup
    assert atom.version == "atom10" and rss.version.startswith("rss")
    assert "<script>x" not in feeds["atom.xml"]  # escaped inside the XML
    assert build_feeds(entries(25), "https://radar.example.org/", strings) == feeds  # no clock in the feed


def test_built_site_feeds_list_daily_and_weekly(settings, tmp_path, monkeypatch):
    from infra_radar.pipeline.demo import sample_files
    from infra_radar.pipeline.home import open_store
    from infra_radar.pipeline.imports import import_jsonl

    monkeypatch.setattr(charts, "available", lambda: False)
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    out = tmp_path / "site"
    build_site(settings, engine, out, site_url="https://radar.example.org/sub")
    parsed = feedparser.parse((out / "atom.xml").read_text(encoding="utf-8"))
    assert not parsed.bozo
    kinds = {e.tags[0].term for e in parsed.entries}
    assert kinds == {"daily", "weekly"}
    assert all(e.link.startswith("https://radar.example.org/sub/") for e in parsed.entries)
    assert all((out / e.link.removeprefix("https://radar.example.org/sub/")).is_file() for e in parsed.entries)
    rss = feedparser.parse((out / "rss.xml").read_text(encoding="utf-8"))
    assert not rss.bozo and len(rss.entries) == len(parsed.entries)
    engine.dispose()
