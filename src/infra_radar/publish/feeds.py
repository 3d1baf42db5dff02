"""Atom and RSS feeds of the daily radars and weekly reports, written with feedgen.

Feed and entry times come from the report windows, never from the clock, so a rebuild with nothing new
produces byte-identical feeds and the incremental build leaves them alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from feedgen.feed import FeedGenerator

from .markup import markdown_html, markdown_title
from .writer import xml_safe

FEED_FILES = {"atom": "atom.xml", "rss": "rss.xml"}
TAG = "tag:infra-radar.invalid,2026:"  # stable ids that do not depend on where the site is hosted


@dataclass(slots=True)
class FeedEntry:
    """One report: its kind (daily or weekly), site path, Markdown text and the end of its window."""

    kind: str
    rel: str
    markdown: str
    updated: datetime


def _title(entry: FeedEntry) -> str:
    return xml_safe(markdown_title(entry.markdown)) if entry.markdown else entry.rel


def _latest(entries: list[FeedEntry], per_kind: int) -> list[FeedEntry]:
    chosen: list[FeedEntry] = []
    for kind in ("daily", "weekly"):
        mine = sorted((e for e in entries if e.kind == kind), key=lambda e: (e.updated, e.rel), reverse=True)
        chosen.extend(mine[:per_kind])
    return sorted(chosen, key=lambda e: (e.updated, e.rel), reverse=True)


def _generator(entries: list[FeedEntry], site_url: str, s: dict[str, Any]) -> FeedGenerator:
    fg = FeedGenerator()
    fg.id(TAG + "feed")
    fg.title(s["feed_title"])
    fg.subtitle(s["feed_subtitle"])
    fg.description(s["feed_subtitle"])
    fg.link(href=site_url or "index.html", rel="alternate")
    fg.language(s["feed_language"])
    newest = entries[0].updated if entries else datetime(1970, 1, 1, tzinfo=UTC)
    fg.updated(newest)
    fg.lastBuildDate(newest)
    for entry in reversed(entries):  # feedgen prepends: add oldest first so the newest leads
        fe = fg.add_entry()
        fe.id(TAG + entry.rel)
        fe.guid(TAG + entry.rel, permalink=False)
        fe.title(_title(entry))
        fe.link(href=site_url + entry.rel)
        fe.updated(entry.updated)
        fe.published(entry.updated)
        fe.category(term=entry.kind)
        fe.content(xml_safe(markdown_html(entry.markdown)), type="html")
    return fg


def build_feeds(entries: list[FeedEntry], site_url: str, strings: dict[str, Any],
                per_kind: int = 20) -> dict[str, str]:
    """{"atom.xml": ..., "rss.xml": ...} over the newest `per_kind` daily and weekly reports."""
    fg = _generator(_latest(entries, per_kind), site_url, strings)
    return {FEED_FILES["atom"]: fg.atom_str(pretty=True).decode("utf-8"),
            FEED_FILES["rss"]: fg.rss_str(pretty=True).decode("utf-8")}
