"""A radar with memory, on invented items whose judgment the test fixes: what one published radar showed, the
next radars carry, recheck against it, and never deep-dive again; rehearsals, backfills and the watch list."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.analyse.ruleset import RuleSet
from infra_radar.cli import main
from infra_radar.config import load_settings
from infra_radar.models import Analysis, Comment, FileChange, Item, Link, PerfClaim
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.reports import daily
from infra_radar.store import published, save
from infra_radar.store.rows import item_hash

from .conftest import published_rows

REPO = "acme/infer"


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 8, day, hour, tzinfo=UTC)


def day_window(n: int) -> tuple[datetime, datetime]:
    """The radar of the morning of August n: [n-1 02:00, n 02:00)."""
    return at(n - 1, 2), at(n, 2)


# a description with a mechanism to explain: a deep dive is for such an item only
BODY = ("## What this PR does\n\nItem {n} moves the cache write of each step into the fused path, so the "
        "scheduler no longer copies the blocks twice per step.")


def pr(number: int, title: str, **over) -> Item:
    base = dict(repo=REPO, kind="pr", key=str(number), number=number, title=title, body=BODY.format(n=number),
                author="dev", state="open", created_at=at(1, 5), updated_at=at(1, 6), source="github",
                files=[FileChange(f"infer/mod{number}.py", 10, 2)])
    base.update(over)
    return Item(**base)


def judged(priority: str, decision: str, importance: int, **over) -> Analysis:
    words = {"en": f"{priority} {decision}", "zh": f"{priority} {decision}"}
    base = dict(item_kind="perf", topics=["performance"], priority=priority, importance=importance, insight=3,
                grade="M", grade_reason=words, decision=decision, decision_reason=words, summary=words)
    base.update(over)
    return Analysis(**base)


class Store:
    """A store whose items carry the analyses the test gives them (the rules never re-judge them)."""

    def __init__(self, home: Path, **config) -> None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "radar.toml").write_text("".join(f"{k} = {v}\n" for k, v in config.items()))
        self.settings = load_settings()
        self.settings.lang = "en"
        self.engine = open_store(self.settings)
        self.version = RuleSet.version_of(self.settings)
        self.out = home / "out"

    def put(self, *pairs: tuple[Item, Analysis]) -> None:
        save.save_items(self.engine, [item for item, _ in pairs])
        save.save_analyses(self.engine, [(item.id, item_hash(item), replace(a, version=self.version))
                                         for item, a in pairs])

    def radar(self, n: int, record: bool = True, out: bool = True) -> str:
        since, until = day_window(n)
        return daily(self.settings, self.engine, since, until, out_dir=self.out if out else None,
                     record=record).text

    def records(self) -> list[tuple]:
        return published_rows(self.engine.url.render_as_string(hide_password=False))


def section(text: str, name: str) -> str:
    return text.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]


def deep_refs(text: str) -> list[str]:
    return re.findall(r"^### \[([^\]]+)\]", section(text, "Deep dives"), re.M)


def line_of(text: str, ref: str) -> str:
    """The recheck line of `ref` and the notes under it."""
    lines = section(text, "Tracked items").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"- [{ref}]"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return "\n".join(lines[start:end])


def since_last(text: str) -> str:
    return next(ln for ln in section(text, "Scope").splitlines() if "radar" in ln and ln.startswith("- "))


# The story: on the morning of Aug 2, #101 (open P0) and #102 (merged) are deep-dived, #103 (open P1, track
# only) sits in the P0/P1 table, #104 is a P2; #106 is watched by hand. On Aug 3 #101 merges with another
# file and new figures, #106 is reopened; on Aug 4 #103 is closed and #105 follows #102 up.

def first_day(store: Store) -> None:
    store.put((pr(101, "[Perf] Fuse KV cache write"), judged("P0", "validate-first", 5)),
              (pr(102, "[Perf] Overlap weight sync", state="merged", merged_at=at(1, 9), closed_at=at(1, 9),
                  merge_commit="b" * 40, files=[FileChange("infer/sync/overlap.py", 200, 10),
                                                FileChange("infer/sync/bucket.py", 50, 5),
                                                FileChange("tests/test_overlap.py", 30, 0)]),
               judged("P1", "adapt-now", 5)),
              (pr(103, "[Kernel] CUTLASS MoE tile tuning"), judged("P1", "track-only", 2, grade="L")),
              (pr(104, "[Misc] Log a warning once"), judged("P2", "track-only", 1)),
              (pr(106, "[RFC] Paged KV offload", kind="issue", state="closed", closed_at=at(1, 8)),
               judged("P1", "track-only", 3)))


def second_day(store: Store) -> None:
    figures = [PerfClaim("TTFT", 10.0, 8.0, "ms", -20.0)]
    store.put((pr(101, "[Perf] Fuse KV cache write", state="merged", merged_at=at(2, 10), closed_at=at(2, 10),
                  updated_at=at(2, 10), merge_commit="a" * 40,
                  files=[FileChange("infer/mod101.py", 10, 2), FileChange("infer/kv/write.py", 80, 0)],
                  comments=[Comment("rev", "LGTM", at(2, 9))]),
               judged("P0", "validate-first", 5, perf_claims=figures)),
              (pr(106, "[RFC] Paged KV offload", kind="issue", state="open", closed_at=None, updated_at=at(2, 8)),
               judged("P1", "track-only", 3)),
              (pr(103, "[Kernel] CUTLASS MoE tile tuning", files=[FileChange("infer/mod103.py", 30, 4)],
                  updated_at=at(2, 7)), judged("P1", "track-only", 2, grade="L")))


def third_day(store: Store) -> None:
    store.put((pr(103, "[Kernel] CUTLASS MoE tile tuning", state="closed", closed_at=at(3, 5), updated_at=at(3, 5)),
               judged("P1", "track-only", 2, grade="L")),
              (pr(105, "[Perf] Overlap weight sync for MoE experts", created_at=at(3, 4), updated_at=at(3, 6)),
               judged("P2", "track-only", 1, links=[Link("references", REPO, 102)])))


@pytest.fixture
def store(radar_home) -> Store:
    found = Store(radar_home, deep_dive_limit=2)
    assert CliRunner().invoke(main, ["watch", "add", f"{REPO}#106", "--reason", "waiting for the `v2` design",
                                     "--since", "2026-07-01"]).exit_code == 0
    return found


def test_the_next_mornings_follow_what_one_morning_showed(store):
    first_day(store)
    one = store.radar(2)
    assert deep_refs(one) == [f"{REPO}#101", f"{REPO}#102"]
    assert "No earlier radar was published: all 5 ranked items are new" in one
    assert "closed; first recheck; added by hand: waiting for the `v2` design" in line_of(one, f"{REPO}#106")

    second_day(store)
    two = store.radar(3)
    assert f"{REPO}#101" not in deep_refs(two)  # in the window again (merged), rechecked instead
    merged = line_of(two, f"{REPO}#101")
    assert merged.startswith(f"- [{REPO}#101](https://github.com/{REPO}/pull/101) Fuse KV cache write: "
                             "merged (`aaaaaaa`), 2 files: `infer/kv/write.py`, `infer/mod101.py`; changed since "
                             "2026-08-02; carried from 2026-08-02 (deep dive, P0, validate first)"), merged
    for note in ("state: open → merged", "update: merged with other files than shown (1 added: `infer/kv/write.py`)",
                 "update: new figures TTFT 10 ms → 8 ms (−20.0%)", "1 new comment",
                 "last recheck: merged, no longer tracked"):
        assert f"  - {note}" in merged, merged
    # nothing changed and nothing it still needs: named with its state on the one line of the unchanged
    assert f"- Unchanged (1): [{REPO}#102](https://github.com/{REPO}/pull/102) merged (`bbbbbbb`)" \
        in section(two, "Tracked items")
    assert line_of(two, f"{REPO}#103").endswith("open; changed since 2026-08-02; carried from 2026-08-02 (track only)\n"
                                                "  - the same files, other line counts (new commits)")
    assert "  - update: reopened" in line_of(two, f"{REPO}#106")
    assert f"[{REPO}#104]" not in section(two, "Tracked items")  # a P2 is not followed
    assert ("Since the last radar (2026-08-02): 0 of the ranked items are new; 4 tracked items: 2 changed state, "
            "1 changed otherwise, 1 unchanged; 0 no longer tracked") in since_last(two)  # #103, updated in the window, was shown before: not new
    assert "4 tracked items rechecked" in two

    third_day(store)
    three = store.radar(4)
    assert f"[{REPO}#101]" not in section(three, "Tracked items")  # its merge was reported: done
    closed = line_of(three, f"{REPO}#103")
    assert "closed; changed since 2026-08-03" in closed and "  - last recheck: closed, no longer tracked" in closed
    follow = line_of(three, f"{REPO}#102")
    # a PR follow-up links to /pull/N
    assert f"  - newly related: [{REPO}#105](https://github.com/{REPO}/pull/105) follow-up" in follow
    assert "1 no longer tracked" in since_last(three)

    four = store.radar(5)
    assert ("Since the last radar (2026-08-04): 0 of the ranked items are new; 2 tracked items: 0 changed state, "
            "0 changed otherwise, 2 unchanged (1 of them on a line of their own); 1 no longer tracked") \
        in since_last(four)  # #103, closed; the unchanged item not on the one line below is said
    # #102, nothing new since: on the one line of the unchanged
    folded = f"- Unchanged (1): [{REPO}#102](https://github.com/{REPO}/pull/102) merged (`bbbbbbb`)"
    assert folded in section(four, "Tracked items")
    assert f"[{REPO}#102]" not in section(four, "References")


def test_a_rerun_changes_no_record_and_a_rehearsal_records_nothing(store):
    first_day(store)
    store.radar(2)
    second_day(store)
    two = store.radar(3)
    before = store.records()
    again = store.radar(3)
    assert store.records() == before  # not even the publication time moved
    stamp = re.compile(r"^- Generated: .*$", re.M)
    assert stamp.sub("", again) == stamp.sub("", two)
    third_day(store)
    store.radar(4, record=False)
    store.radar(5, out=False)  # printed: records nothing either
    assert store.records() == before
    assert published.load_records(store.engine)[-1].day() == "2026-08-03"


def test_a_backfill_reads_only_the_radars_before_it(store):
    first_day(store)
    second_day(store)
    third_day(store)
    store.radar(4)  # published first, with no radar before it
    early = store.radar(2)  # a backfill: the radar of Aug 4 is after it, never read
    assert "No earlier radar was published" in early
    assert set(deep_refs(early)) == {f"{REPO}#101", f"{REPO}#102"}
    # Aug 3 now sees Aug 2 (not Aug 4): #102 carried from it, not deep-dived again
    middle = store.radar(3)
    assert "Since the last radar (2026-08-02)" in middle and f"{REPO}#102" not in deep_refs(middle)
    assert f"- Unchanged (1): [{REPO}#102]" in section(middle, "Tracked items")
    # a radar of a time before the watched issue was opened does not recheck it
    assert f"[{REPO}#106]" not in daily(store.settings, store.engine, at(1), at(1, 4)).text


def test_watch_list_and_remove_cover_carried_items(store):
    first_day(store)
    store.radar(2)
    runner = CliRunner()
    listed = runner.invoke(main, ["watch", "list"]).output.splitlines()
    assert f"{REPO}#101\topen\tcarried from 2026-08-02 (deep dive, P0, validate first)" in listed
    assert f"{REPO}#103\topen\tcarried from 2026-08-02 (track only)" in listed
    assert f"{REPO}#106\tclosed\twaiting for the `v2` design" in listed
    assert not any(line.startswith(f"{REPO}#104") for line in listed)
    assert runner.invoke(main, ["watch", "remove", f"{REPO}#103"]).exit_code == 0
    assert runner.invoke(main, ["watch", "remove", f"{REPO}#106"]).exit_code == 0
    listed = runner.invoke(main, ["watch", "list"]).output
    assert f"{REPO}#103" not in listed and f"{REPO}#106" not in listed and f"{REPO}#101" in listed
    assert "not on the watch list" in runner.invoke(main, ["watch", "remove", f"{REPO}#103"]).output
    two = store.radar(3)
    tracked = section(two, "Tracked items")
    assert f"[{REPO}#103]" not in tracked and f"[{REPO}#106]" not in tracked and f"[{REPO}#101]" in tracked
    assert "2 no longer tracked" in since_last(two)


def test_carry_days_end_a_carry(radar_home):
    store = Store(radar_home, deep_dive_limit=2, carry_days=2)
    first_day(store)
    for n in (2, 3, 4):
        assert f"[{REPO}#103]" in store.radar(n) or n == 2
    assert f"[{REPO}#103]" not in section(store.radar(5), "Tracked items")  # Aug 5 is 3 days after Aug 2
    assert "carry_days must be" in CliRunner().invoke(main, ["--config", str(_config(radar_home, "carry_days = -1")),
                                                              "watch", "list"]).output


def _config(home: Path, text: str) -> Path:
    path = home / "bad.toml"
    path.write_text(text + "\n")
    return path


def test_push_and_site_record_their_days(store, monkeypatch, tmp_path):
    from infra_radar.publish import push
    from infra_radar.publish.build import build_site

    first_day(store)
    monkeypatch.setenv("RADAR_SLACK_WEBHOOK", "https://hooks.example.com/services/T0/B0/X")
    monkeypatch.setattr(push, "post", lambda message, platform: None)
    push.push_reports(store.settings, store.engine, "daily", "slack", day="2026-08-01", dry_run=True)
    assert published.load_records(store.engine) == []
    push.push_reports(store.settings, store.engine, "daily", "slack", day="2026-08-01", record=False)
    assert published.load_records(store.engine) == []
    push.push_reports(store.settings, store.engine, "daily", "slack", day="2026-08-01")
    (pushed,) = published.load_records(store.engine)
    assert (pushed.since, pushed.until) == (at(1), at(2))
    assert {i.number for i in pushed.items if i.deep} == {101, 102}

    second_day(store)
    build_site(store.settings, store.engine, tmp_path / "site")
    assert published.load_records(store.engine) == [pushed]  # a build publishes nothing
    page = (tmp_path / "site" / "daily" / "2026-08-02.html").read_text()
    # the pushed radar of Aug 1 judged #101 as it stood then (open); the page of Aug 2 follows it up
    assert "state: open → merged" in page and "carried from 2026-08-01 (deep dive" in page
    build_site(store.settings, store.engine, tmp_path / "site", backfill=True)  # asked for: its days recorded
    days = published.load_records(store.engine)
    assert [r.day() for r in days] == ["2026-08-01", "2026-08-02"]  # the pushed day kept as pushed (immutable)


def test_killed_while_recording_leaves_the_earlier_records(store, monkeypatch):
    from infra_radar import killpoint

    first_day(store)
    store.radar(2)
    before = store.records()
    second_day(store)

    def killed(name: str) -> None:
        if name == "record.written":
            raise KeyboardInterrupt  # in process; the SIGKILL itself: test_sigkill_while_recording_*

    monkeypatch.setattr(killpoint, "reached", killed)
    with pytest.raises(KeyboardInterrupt):
        store.radar(3)
    assert store.records() == before
    monkeypatch.undo()
    store.radar(3)
    assert [r.day() for r in published.load_records(store.engine)] == ["2026-08-02", "2026-08-03"]


def test_a_radar_in_another_language_is_the_same_record(store):
    first_day(store)
    store.settings.lang = "zh"
    store.radar(2)
    store.settings.lang = "en"
    before = store.records()
    store.radar(2)  # the same window in another language shows the same items: nothing to write
    assert store.records() == before
    later = day_window(2)[1] + timedelta(hours=1)
    daily(store.settings, store.engine, at(1, 5), later, out_dir=store.out)
    assert len(published.load_records(store.engine)) == 2


# -- SIGKILL while recording (RADAR_KILL_AT, as tests/test_kill.py): the earlier records stay as they were --------

def _radar(args: list[str], env: dict, kill_at: str | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in {**os.environ, **env, "RADAR_KILL_AT": kill_at}.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "infra_radar", *args], env=full, capture_output=True, text=True,
                          timeout=300)


def test_sigkill_while_recording_leaves_the_earlier_records(radar_home, tmp_path):
    from infra_radar.pipeline.demo import sample_files

    env = {"RADAR_HOME": str(radar_home), "RADAR_DB_URL": os.environ.get("RADAR_DB_URL")}
    url = env["RADAR_DB_URL"] or f"sqlite:///{radar_home / 'radar.db'}"
    assert CliRunner().invoke(main, ["import-jsonl", *map(str, sample_files())]).exit_code == 0
    out = str(tmp_path / "out")
    first = ["daily", "--since", "2026-08-01", "--until", "2026-08-03", "--lang", "en", "--out", out]
    second = ["daily", "--since", "2026-08-03", "--until", "2026-08-04", "--lang", "en", "--out", out]
    assert _radar(first, env).returncode == 0
    earlier = published_rows(url)
    assert len(earlier) > 5

    killed = _radar(second, env, kill_at="record.written:1")  # the new record written, not committed
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert published_rows(url) == earlier
    done = _radar(second, env)
    assert done.returncode == 0, done.stderr
    recorded = published_rows(url)
    assert len(recorded) > len(earlier) and recorded[:1] == earlier[:1]

    # a published radar is immutable (issue 44): a rerun of its window, after a watch entry, records nothing and
    # shows what was published
    assert CliRunner().invoke(main, ["watch", "add", "acme/infer#1811", "--since", "2026-06-01"]).exit_code == 0
    again = _radar(second, env, kill_at="record.written:1")
    assert again.returncode == 0, again.stderr
    assert published_rows(url) == recorded
    assert ("acme/infer", 1811) not in [row[2:4] for row in published_rows(url) if len(row) > 5]
