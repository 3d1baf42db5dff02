"""A site rebuild renders only the pages whose inputs changed, says what it skipped, and writes exactly what a
build from scratch writes; `radar site build` tells its progress."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.models import FileChange, Item
from infra_radar.publish import build as site_module
from infra_radar.publish import charts
from infra_radar.publish.build import build_site
from infra_radar.publish.inputs import INPUTS
from infra_radar.publish.site import Site
from infra_radar.publish.writer import MANIFEST
from infra_radar.store.save import save_items


@pytest.fixture(autouse=True)
def no_charts(monkeypatch):
    monkeypatch.setattr(charts, "available", lambda: False)


@pytest.fixture
def renders(monkeypatch):
    """How many item, daily and weekly pages were rendered (not skipped)."""
    counted = {"item": 0, "daily": 0, "weekly": 0}
    for name in counted:
        original = getattr(Site, name)

        def counting(self, *args, _name=name, _original=original, **kwargs):
            counted[_name] += 1
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(Site, name, counting)
    return counted


def _item(number: int, day: int, body: str, title: str) -> Item:
    when = datetime(2026, 8, day, 5, 0, tzinfo=UTC)
    return Item(repo="acme/infer", kind="pr", key=str(number), number=number, title=title, body=body,
                author="erin-ops", state="merged", created_at=when, updated_at=when, merged_at=when,
                files=[FileChange("infer/core/scheduler.py", 20, 4)], source="jsonl")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != INPUTS}


def test_a_rebuild_with_nothing_new_renders_no_page(settings, sample_store, tmp_path, renders):
    out = tmp_path / "site"
    first = build_site(settings, sample_store, out)
    assert renders["item"] == first.item_pages and renders["daily"] == first.daily_pages
    assert first.skipped == 0
    for key in renders:
        renders[key] = 0
    again = build_site(settings, sample_store, out)
    assert renders == {"item": 0, "daily": 0, "weekly": 0}
    assert again.written == 0 and again.unchanged == again.pages == first.pages
    assert again.skipped >= first.item_pages + first.daily_pages + first.weekly_pages


def test_an_incremental_rebuild_writes_what_a_fresh_build_writes(settings, sample_store, tmp_path, renders):
    out = tmp_path / "site"
    first = build_site(settings, sample_store, out)
    # a new PR that names an item the store does not hold yet (#1901), and, later, that item: the first
    # PR's page must then link to the new page, though its own data did not change
    save_items(sample_store, [_item(1900, 4, "Follows up #1843; see also #1901 for the NPU side.\n",
                             "[Scheduler] Keep the NPU batch order stable")])
    for key in renders:
        renders[key] = 0
    second = build_site(settings, sample_store, out)
    assert 0 < renders["item"] < first.item_pages / 2, renders  # the new item and those it names
    assert second.skipped > 0
    page = (out / "items" / "acme+infer" / "1900.html").read_text(encoding="utf-8")
    assert "https://github.com/acme/infer/pull/1901" in page or "#1901" in page
    save_items(sample_store, [_item(1901, 5, "The NPU side of the batch order change.\n",
                             "[NPU] Stable batch order on the NPU path")])
    build_site(settings, sample_store, out)
    fresh = tmp_path / "fresh"
    build_site(settings, sample_store, fresh)
    assert _files(out) == _files(fresh)
    assert "1901.html" in (out / "items" / "acme+infer" / "1900.html").read_text(encoding="utf-8")


def test_a_page_gone_from_disk_or_a_lost_record_is_rendered_again(settings, sample_store, tmp_path, renders):
    out = tmp_path / "site"
    build_site(settings, sample_store, out)
    gone = out / "items" / "acme+infer" / "1843.html"
    whole = gone.read_bytes()
    gone.unlink()
    for key in renders:
        renders[key] = 0
    build_site(settings, sample_store, out)
    assert renders["item"] == 1 and gone.read_bytes() == whole
    (out / INPUTS).write_text("{not json", encoding="utf-8")
    again = build_site(settings, sample_store, out)
    assert again.skipped == 0 and again.written == 0  # everything rendered, nothing changed
    assert (out / MANIFEST).is_file()


def test_another_language_renders_every_page_again(settings, sample_store, tmp_path, renders):
    out = tmp_path / "site"
    first = build_site(settings, sample_store, out)
    settings.lang = "en" if settings.lang == "zh" else "zh"
    again = build_site(settings, sample_store, out)
    assert again.skipped == 0 and again.written > first.item_pages


def test_site_build_prints_its_progress_and_what_it_skipped(sample_store, tmp_path):
    out = tmp_path / "cli-site"
    first = CliRunner().invoke(main, ["site", "build", str(out)])
    assert first.exit_code == 0, first.output
    for stage in ("reading the store", "daily pages", "weekly pages", "item pages", "feeds"):
        assert stage in first.stderr, first.stderr
    assert "; 0 not rendered again" in first.stdout
    again = CliRunner().invoke(main, ["site", "build", str(out)])
    assert "0 rendered" in again.stderr and "skipped (inputs unchanged)" in again.stderr
    assert " 0 written" in again.stdout and "; 0 not rendered again" not in again.stdout


def test_build_site_reports_progress_to_its_caller(settings, sample_store, tmp_path):
    class Seen(site_module.Progress):
        def __init__(self):
            self.stages, self.advanced, self.lines = [], 0, []

        def stage(self, label, total=None):
            self.stages.append((label, total))

        def advance(self, n=1):
            self.advanced += n

        def say(self, line):
            self.lines.append(line)

    seen = Seen()
    result = build_site(settings, sample_store, tmp_path / "site", progress=seen)
    totals = dict(seen.stages)
    assert totals["item pages"] == result.item_pages and totals["daily pages"] == result.daily_pages
    assert seen.advanced == result.item_pages + result.daily_pages + result.weekly_pages
    assert any(line.startswith("item pages:") for line in seen.lines)
