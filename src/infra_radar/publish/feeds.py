"""Atom and RSS feeds of the daily radars and weekly reports, written with feedgen.

Feed and entry times come from the report windows, never from the clock, so a rebuild with nothing new
produces byte-identical feeds and the incremental build leaves them alone.
"""

from __future__ import annotations

from collections.abc import Callable
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
    """One report: its kind (daily or weekly), site path, Markdown text and the end of its window. A report
    whose page a rebuild skipped has no text yet: `load` renders it, only when the feed shows it."""

    kind: str
    rel: str
    markdown: str
    updated: datetime
    load: Callable[[], str] | None = None
    inputs: str = ""  # the digest of what the report is made from (publish/inputs.py), "" when unknown


def _title(entry: FeedEntry) -> str:
    return xml_safe(markdown_title(entry.markdown)) if entry.markdown else entry.rel


def latest(entries: list[FeedEntry], per_kind: int = 20) -> list[FeedEntry]:
    """The newest `per_kind` daily and weekly reports, newest first: what the feeds show."""
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
    chosen = latest(entries, per_kind)
    for entry in chosen:
        if entry.load is not None:
            entry.markdown, entry.load = entry.load(), None
    fg = _generator(chosen, site_url, strings)
    return {FEED_FILES["atom"]: fg.atom_str(pretty=True).decode("utf-8"),
            FEED_FILES["rss"]: fg.rss_str(pretty=True).decode("utf-8")}
