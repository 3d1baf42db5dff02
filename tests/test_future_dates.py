"""A date later than now is never "today": a record dated in the future (plus the configured clock skew) is
kept and flagged where it came from, but makes no day, week, feed entry or default push; a window ending later
than now ends now; and the next daily window starts where the last run could really have seen."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar import windows
from infra_radar.cli import main
from infra_radar.config import load_settings
from infra_radar.pipeline.home import open_store
from infra_radar.store.rows import to_db_time
from infra_radar.store.schema import runs

from .conftest import commit

NOW = datetime(2026, 7, 2, 12, 0, tzinfo=UTC)  # the clock every test here runs at (windows.now patched)
DATES = ["2026-07-01T10:00:00Z", "2026-07-02T10:00:00Z",  # the past
         "2026-07-02T12:05:00Z",  # within the clock skew (600 s): counts as now
         "2026-07-03T09:00:00Z",  # tomorrow, in this very ISO week
         "2099-06-01T00:00:00Z", "2199-01-01T00:00:00Z"]  # a wrong clock upstream


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr(windows, "now", lambda: NOW)


def run(args: list[str], env: dict[str, str] | None = None):
    result = CliRunner().invoke(main, args, env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def history(path: Path, dates: list[str] = DATES) -> Path:
    rows = [{"kind": "repo", "full_name": "acme/infer"}]
    rows += [{"kind": "commit", "sha": f"{i:040x}", "committed_at": when, "body": "Cuts decode latency by 12%.",
              "subject": f"[Perf] Fuse the rope kernel into attention, step {i} (#{i})",
              "files": [{"path": f"infer/ops/rope_{i}.py", "additions": 30, "deletions": 2}]}
             for i, when in enumerate(dates, 1)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def imported(tmp_path):
    result = run(["import-jsonl", str(history(tmp_path / "h.jsonl"))])
    assert result.exit_code == 0, result.output
    return result


def test_a_record_dated_later_than_now_is_kept_and_flagged_with_file_and_line(imported, tmp_path):
    notes = [ln for ln in imported.output.splitlines() if "later than now" in ln]
    assert len(notes) == 1, imported.output  # one line, whatever the number of such records
    assert "3 record(s)" in notes[0]
    for line, year in ((5, "2026-07-03"), (6, "2099-06-01"), (7, "2199-01-01")):
        assert f"h.jsonl:{line} ({year}" in notes[0]
    assert "h.jsonl:4" not in notes[0]  # within the skew: now
    exported = json.loads(run(["export"]).stdout)
    assert len(exported) == 6  # kept


def test_many_records_dated_later_are_named_a_few_and_counted(tmp_path):
    result = run(["import-jsonl", str(history(tmp_path / "h.jsonl", ["2099-01-01T00:00:00Z"] * 300))])
    note = next(ln for ln in result.output.splitlines() if "later than now" in ln)
    assert "300 record(s)" in note and "and 295 more" in note and len(note) < 1000


def test_a_clone_and_a_page_dated_later_than_now_are_flagged_where_they_came_from(tmp_path, make_repo):
    clone = make_repo()
    commit(clone, "Fuse the rope kernel (#7)", {"a.py": "x = 1\n"}, "2099-01-02T03:04:05+00:00")
    result = run(["import-git", str(clone), "--repo", "acme/infer"])
    assert result.exit_code == 0, result.output
    assert re.search(r"note: 1 record\(s\) dated later than now.*clone: acme/infer#7 \(2099-01-02", result.output)
    page = tmp_path / "p.txt"
    page.write_text("Fix the rope kernel #12\nMerged\nalice merged 1 commit into main on Jan 5, 2099\n"
                    "The description.\n", encoding="utf-8")
    result = run(["import-page", str(page), "--repo", "acme/infer", "--number", "12"])
    assert result.exit_code == 0, result.output
    assert "time: 2099-01-05" in result.output
    assert re.search(r"note: 1 record\(s\) dated later than now.*p\.txt \(2099-01-05", result.output)


def test_a_record_dated_later_than_now_makes_no_day_no_week_and_no_feed_entry(imported, tmp_path):
    out = tmp_path / "site"
    assert run(["site", "build", str(out)]).exit_code == 0
    days = sorted(p.stem for p in (out / "daily").glob("20*.html"))
    assert days == ["2026-07-01", "2026-07-02"]
    weeks = sorted(p.stem for p in (out / "weekly").rglob("*-W*.html"))
    assert weeks == ["2026-W27"]
    home = (out / "index.html").read_text(encoding="utf-8")
    assert "2026-07-02" in home and "2099" not in home and "2199" not in home and "2026-07-03" not in home
    for feed in ("atom.xml", "rss.xml"):
        text = (out / feed).read_text(encoding="utf-8")
        assert "2099" not in text and "2199" not in text, re.findall(".{80}2[01]99.{80}", text)
        assert "pull/4" not in text and "pull/5" not in text
    times = re.findall(r"<updated>([^<]+)</updated>", (out / "atom.xml").read_text(encoding="utf-8"))
    assert times and max(datetime.fromisoformat(t) for t in times) <= NOW  # no entry is dated later than now
    pages = sorted(p.name for p in (out / "items").rglob("*.html"))
    assert len(pages) == 6  # every record keeps its page


def test_a_push_never_sends_a_later_day_or_week_as_the_latest(imported, tmp_path):
    none = run(["push", "daily", "--to", "slack", "--dry-run"])  # nothing published yet: no day is guessed
    assert none.exit_code == 1 and "no daily radar has been published" in none.output
    assert run(["daily", "--out", str(tmp_path / "out")]).exit_code == 0
    daily = run(["push", "daily", "--to", "slack", "--dry-run"])  # the radar just published
    assert daily.exit_code == 0, daily.output
    assert "2026-07-02" in daily.output and "2099" not in daily.output and "#4" not in daily.output
    weekly = run(["push", "weekly", "--to", "slack", "--dry-run"])
    assert weekly.exit_code == 0, weekly.output
    assert "2099" not in weekly.output and "2199" not in weekly.output and "#4" not in weekly.output
    assert "acme/infer#2" in weekly.output  # the week of 2026-07-02, without tomorrow's record
    later = run(["push", "weekly", "--to", "slack", "--dry-run", "--week", "2099-W22"])
    assert later.exit_code == 1 and "later than now" in later.output


def test_a_week_not_begun_is_refused_and_this_week_ends_now(imported):
    refused = run(["weekly", "--repo", "acme/infer", "--week", "2099-W22"])
    assert refused.exit_code == 1 and "later than now" in refused.output and "Traceback" not in refused.output
    this = run(["weekly", "--repo", "acme/infer", "--week", "2026-W27", "--lang", "en"])
    assert this.exit_code == 0, this.output
    assert "pull/2)" in this.output and "pull/4)" not in this.output


def test_a_window_ending_later_than_now_ends_now(imported):
    result = run(["daily", "--until", "8999-01-01"])
    assert result.exit_code == 0, result.output
    assert "note: --until 8999-01-01T00:00:00Z is later than now: the window ends now, 2026-07-02T12:00:00Z" \
        in result.output
    assert "8999" not in result.output.split("note:")[0]
    engine = open_store(load_settings())
    with engine.connect() as conn:
        until = conn.execute(sa.select(runs.c.until).where(runs.c.kind == "daily")).scalar_one()
    assert until == to_db_time(NOW)


def test_the_next_window_starts_where_the_last_published_radar_ended(imported, monkeypatch, tmp_path):
    # a run stored by an older radar with `--until 8999-01-01` moves nothing: only a published radar does
    engine = open_store(load_settings())
    started = datetime(2026, 7, 2, 6, 0, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(runs.insert().values(kind="daily", scope="all", status="ok", detail={},
                                          since=to_db_time(datetime(2026, 7, 1, tzinfo=UTC)),
                                          until=to_db_time(datetime(8999, 1, 1, tzinfo=UTC)),
                                          started_at=to_db_time(started), finished_at=to_db_time(started)))
    printed = run(["daily", "--lang", "en"])
    assert printed.exit_code == 0, printed.output
    assert "2026-06-29T12:00:00Z" in printed.output  # no radar published yet: the first run's look-back
    assert run(["daily", "--lang", "en", "--out", str(tmp_path / "out")]).exit_code == 0  # published, ends 12:00
    monkeypatch.setattr(windows, "now", lambda: datetime(2026, 7, 2, 18, 0, tzinfo=UTC))
    for _ in range(2):  # a preview (printed, or written with --no-record) leaves the next window where it was
        nxt = run(["daily", "--lang", "en"])
        scope = next(ln for ln in nxt.output.splitlines() if "2026-07-02T12:00:00Z" in ln)
        assert "since the last published radar, about 6 h" in scope
        assert run(["daily", "--out", str(tmp_path / "rehearsal"), "--no-record"]).exit_code == 0


def test_a_fetched_item_dated_later_than_now_is_flagged_and_never_moves_the_cursor_past_now(settings, monkeypatch):
    from infra_radar.pipeline.fetch import bot_test, fetch
    from infra_radar.sources.github_client import Endpoints, GitHubClient
    from infra_radar.store import cursors

    from .github_stub import GitHubStub, load_repos

    now = datetime(2026, 8, 10, tzinfo=UTC)
    monkeypatch.setattr(windows, "now", lambda: now)
    with GitHubStub(load_repos("acme/infer"), token="t0ken-for-the-stub") as stub:
        node = next(n for n in stub.repos["acme/infer"].pulls if n["number"] == 1202)
        node.update(state="MERGED", mergedAt="2099-03-04T05:06:07Z", updatedAt="2099-03-04T05:06:08Z",
                    mergeCommit={"oid": "ab" * 20})
        engine = open_store(settings)
        with GitHubClient(Endpoints(stub.url, stub.url + "/graphql", "t0ken-for-the-stub")) as client:
            result = fetch(settings, engine, client, ["acme/infer"], datetime(2026, 7, 29, tzinfo=UTC),
                           is_bot=bot_test(settings))
    assert not result.errors
    note = result.repos[0].later.note()
    assert "1 record(s) dated later than now" in note and "GitHub acme/infer#1202 (2099-03-04T05:06Z)" in note
    assert cursors.read_state(engine, "acme/infer", "pulls").cursor is not None
    for stream in ("pulls", "issues"):
        state = cursors.read_state(engine, "acme/infer", stream)
        assert state.cursor is None or state.cursor <= now + timedelta(seconds=settings.clock_skew), state
    engine.dispose()


def test_a_weekly_range_ending_later_than_now_ends_now(imported):
    result = run(["weekly", "--repo", "acme/infer", "--since", "2026-06-29", "--until", "8999-01-01", "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert "8999" not in result.output and "pull/2)" in result.output and "pull/4)" not in result.output
