"""One radar, whatever the door: `radar daily`, the site's daily page and `radar push daily` of one window show
the same items, sections and target wording (pipeline/radar.py); only a published radar records anything and
moves the next window (docs/memory.md)."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime

import pytest

from infra_radar.config import load_settings
from infra_radar.models import Window
from infra_radar.pipeline.analysis import analyze
from infra_radar.pipeline.demo import sample_files
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.imports import import_jsonl
from infra_radar.pipeline.memory import tracked
from infra_radar.pipeline.reports import daily, daily_window
from infra_radar.publish import push
from infra_radar.publish.build import build_site
from infra_radar.store import published

DAY = date(2026, 8, 2)
SINCE, UNTIL = datetime(2026, 8, 2, tzinfo=UTC), datetime(2026, 8, 3, tzinfo=UTC)
REF = re.compile(r"\b(acme/[\w.-]+#\d+)")


@pytest.fixture
def rocm(radar_home):
    """The bundled sample with the ROCm target and acme/infer-npu as the team's downstream repository."""
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.toml").write_text(
        'target = "rocm"\nlang = "en"\n\n[[repos]]\nname = "acme/infer"\n\n[[repos]]\nname = "acme/trainer"\n\n'
        '[[repos]]\nname = "acme/infer-npu"\nrole = "downstream"\n', encoding="utf-8")
    settings = load_settings()
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files())
    analyze(settings, engine)
    yield settings, engine
    engine.dispose()


def _sections(markdown: str) -> list[str]:
    return re.findall(r"^## (.+)$", markdown, re.M)


def _body(markdown: str) -> str:
    """The report without the lines that say how it was asked for: its window's wording and when it was made."""
    return "\n".join(ln for ln in markdown.splitlines() if not ln.startswith(("- Window:", "- Generated:")))


def _pushed(settings, engine, **which) -> str:
    lines = push.push_reports(settings, engine, "daily", "slack", dry_run=True, **which)
    payloads = [json.loads(line.split("\n", 1)[1]) for line in lines]
    return "\n".join(block["text"]["text"] for p in payloads for block in p["blocks"])


def test_daily_site_page_and_push_of_one_window_are_one_radar(rocm, tmp_path):
    settings, engine = rocm
    printed = daily(settings, engine, SINCE, UNTIL, record=False).text
    build_site(settings, engine, tmp_path / "site")
    page = (tmp_path / "site" / "daily" / f"{DAY}.html").read_text(encoding="utf-8")
    from infra_radar.pipeline.memory import Memory
    from infra_radar.publish.data import load_site_data
    from infra_radar.publish.site import Site

    site = Site(settings, load_site_data(engine, settings), memory=Memory.load(settings, engine), engine=engine)
    site_md = site.daily(DAY)[2]  # the Markdown the page was converted from
    pushed = _pushed(settings, engine, day=DAY.isoformat())

    # the site's page is the same report: same sections, same rows and words (only the window's wording differs)
    assert _sections(printed) == _sections(site_md)
    assert "Downstream" in _sections(printed)
    assert _body(printed) == _body(site_md)
    for ref in set(REF.findall(printed)):
        assert ref in page, ref
    # the downstream repository is reported apart, never in the upstream table, at every door
    top = printed.split("## P0 / P1", 1)[1].split("\n## ", 1)[0]
    assert "acme/infer-npu#" not in top
    assert "acme/infer-npu#" in pushed.split("*Downstream*", 1)[1]
    assert "acme/infer-npu#" not in pushed.split("*Downstream*", 1)[0]
    # the push names the rows of the report's tables and downstream section, in their order
    rows = [r for r in REF.findall(printed.split("## Deep dives", 1)[0])]
    rows += [r for r in REF.findall(printed.split("## Short table", 1)[1].split("## Verification checklist", 1)[0])]
    listed = list(dict.fromkeys(r for r in REF.findall(pushed)))
    assert listed == list(dict.fromkeys(rows))
    # the target's wording, the same at every door
    for text in (printed, site_md, pushed):
        assert "ROCm" in text and "MindSpeed" not in text and "torch_npu" not in text


def test_push_daily_sends_the_radar_last_published(rocm, tmp_path):
    settings, engine = rocm
    with pytest.raises(push.NotFoundError, match="no daily radar has been published"):
        _pushed(settings, engine)  # no day is guessed from the newest item
    since, until = datetime(2026, 8, 1, 2, tzinfo=UTC), datetime(2026, 8, 2, 2, tzinfo=UTC)
    written = daily(settings, engine, since, until, out_dir=tmp_path / "out")
    assert [(r.since, r.until) for r in published.load_records(engine)] == [(since, until)]
    pushed = _pushed(settings, engine)
    assert pushed.split("\n", 1)[0] == written.text.split("\n", 1)[0].removeprefix("# ")  # its title and date
    rows = list(dict.fromkeys(REF.findall(written.text.split("## Deep dives", 1)[0])))
    assert rows and all(ref in pushed for ref in rows)
    # the newest item is of 2026-08-03: a push without --date never goes there
    newest = daily(settings, engine, datetime(2026, 8, 3, tzinfo=UTC), datetime(2026, 8, 4, tzinfo=UTC),
                   record=False).text
    later = set(REF.findall(newest)) - set(REF.findall(written.text))
    assert later and not any(ref in pushed for ref in later)


def test_a_first_site_build_publishes_nothing(rocm, tmp_path):
    settings, engine = rocm
    daily(settings, engine, datetime(2026, 8, 1, 2, tzinfo=UTC), datetime(2026, 8, 2, 2, tzinfo=UTC),
          out_dir=tmp_path / "out")
    before = (published.load_records(engine), tracked(settings, engine),
              daily_window(settings, engine, None, datetime(2026, 8, 4, tzinfo=UTC)))
    build_site(settings, engine, tmp_path / "site")
    after = (published.load_records(engine), tracked(settings, engine),
             daily_window(settings, engine, None, datetime(2026, 8, 4, tzinfo=UTC)))
    assert after == before
    assert before[2][0] == Window(datetime(2026, 8, 2, 2, tzinfo=UTC), datetime(2026, 8, 4, tzinfo=UTC))


def test_history_gives_a_pr_no_creation_time():
    """A squash commit's authored time is its merge time, not when the PR was opened: a PR read from history
    has no creation time (and a re-import drops one an older import took from the commit); a direct commit
    keeps its authored time; a creation time from GitHub is kept over history."""
    from dataclasses import replace

    from infra_radar.sources.history import BodyCleaner, commit_item
    from infra_radar.store.merge import merge_items

    rec = {"sha": "a" * 40, "subject": "Faster decode (#12)", "body": "", "author_name": "a", "author_email": "a@x",
           "authored_at": "2026-07-01T10:00:00+00:00", "committed_at": "2026-07-01T10:00:00+00:00", "files": []}
    pr = commit_item("acme/infer", rec, "main", "jsonl", BodyCleaner([]))
    assert pr.number == 12 and pr.created_at is None and pr.merged_at is not None
    direct = commit_item("acme/infer", {**rec, "subject": "Faster decode"}, "main", "git", BodyCleaner([]))
    assert direct.created_at == datetime(2026, 7, 1, 10, tzinfo=UTC)
    older = replace(pr, created_at=pr.merged_at)  # what an older import stored
    assert merge_items(older, replace(pr)).created_at is None
    opened = datetime(2026, 6, 28, tzinfo=UTC)
    assert merge_items(replace(pr, source="github", created_at=opened), replace(pr)).created_at == opened
    # an opening a page gave (its description's date) on a record kept as history's is the PR's own: reading the
    # history again (import-git after import-jsonl and the pages) keeps it
    assert merge_items(replace(pr, created_at=opened), replace(pr)).created_at == opened
