"""`radar fetch` against the stand-in: fetch -> analyse -> daily, the request budget, every fault."""

from __future__ import annotations

import logging
import socket
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.models import Window
from infra_radar.pipeline.analysis import analyze
from infra_radar.pipeline.fetch import bot_test, fetch
from infra_radar.pipeline.home import open_store
from infra_radar.pipeline.reports import daily
from infra_radar.sources.github import Endpoints, GitHubClient, RateLimited
from infra_radar.store import cursors, queries, schema

from .github_stub import GitHubStub, load_repos

TOKEN = "ghp_MARKERtoken0123456789abcdefSECRET"
REPOS = ["acme/infer", "acme/infer-npu"]
SINCE = datetime(2026, 7, 29, tzinfo=UTC)
EVERYTHING = Window(datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
EXPECTED = {"acme/infer#1201", "acme/infer#1202", "acme/infer#1203", "acme/infer#1204", "acme/infer#1205",
            "acme/infer#1188", "acme/infer@v0.9.1", "acme/infer-npu#310", "acme/infer-npu#311", "acme/infer-npu#312"}


@pytest.fixture
def stub():
    with GitHubStub(load_repos(*REPOS), token=TOKEN) as server:
        yield server


@pytest.fixture
def store(settings):
    engine = open_store(settings)
    yield engine
    engine.dispose()


def client_for(stub: GitHubStub, waits: list | None = None, token: str | None = TOKEN, **kw) -> GitHubClient:
    record = waits if waits is not None else []
    return GitHubClient(Endpoints(stub.url, stub.url + "/graphql", token),
                        wait=lambda s, reason: record.append((s, reason)), **kw)


_BOTS: dict[str, object] = {}


def run(stub, settings, engine, since=SINCE, **kw):
    client_kw = {k: kw.pop(k) for k in ("waits", "timeout", "max_wait", "token") if k in kw}
    if "bots" not in _BOTS:  # the rules' bot test, compiled once for the module
        _BOTS["bots"] = bot_test(settings)
    kw.setdefault("is_bot", _BOTS["bots"])
    with client_for(stub, **client_kw) as client:
        return fetch(settings, engine, client, REPOS, since, **kw)


def exported(_settings, engine) -> list[tuple]:
    """Every stored item with its files and comments, row ids left out: what two stores must share."""
    with engine.connect() as conn:
        names = dict(conn.execute(sa.select(schema.repos.c.id, schema.repos.c.name)).all())
        kids: dict[int, list] = {}
        for table in (schema.files, schema.comments):
            for row in conn.execute(sa.select(table)):
                kids.setdefault(row.item_id, []).append(tuple(v for k, v in row._mapping.items()
                                                              if k not in ("id", "item_id")))
        rows = conn.execute(sa.select(schema.items)).all()
    return sorted((names[r.repo_id], *(v for k, v in r._mapping.items() if k not in ("id", "repo_id")),
                   sorted(kids.get(r.id, []), key=str)) for r in rows)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> list[dict]:
    """The export after a fault-free fetch, for fault runs to match."""
    from infra_radar.config import load_settings

    mp = pytest.MonkeyPatch()
    mp.setenv("RADAR_HOME", str(tmp_path_factory.mktemp("baseline")))
    settings = load_settings()
    engine = open_store(settings)
    with GitHubStub(load_repos(*REPOS), token=TOKEN) as server:
        result = run(server, settings, engine)
    assert not result.errors
    data = exported(settings, engine)
    engine.dispose()
    mp.undo()
    return data


def refs(engine) -> set[str]:
    return {a.item.ref for a in queries.analysed_in_window(engine, EVERYTHING)}


# -- the acceptance path -----------------------------------------------------------------------------


def test_fetch_analyse_daily_lists_the_live_items(stub, settings, store):
    result = run(stub, settings, store, is_bot=None)  # the default: the rules' bot test
    assert not result.errors and result.stats.inserted == len(EXPECTED)
    analyze(settings, store)
    assert refs(store) == EXPECTED  # PR 1150, issue 1100 and release v0.9.0 predate --since; the draft release is left out
    found = {a.item.ref: a.item for a in queries.analysed_in_window(store, EVERYTHING)}
    assert len(found["acme/infer#1204"].files) == 250
    assert {(c.author, c.is_bot) for c in found["acme/infer-npu#310"].comments} >= {("infer-npu-ci", True),
                                                                                    ("npu-lead", False)}
    assert (found["acme/infer#1202"].state, found["acme/infer#1202"].draft) == ("open", True)
    assert found["acme/infer#1203"].state == "closed" and found["acme/infer#1201"].state == "merged"
    settings.lang = "en"
    settings.short_p2_limit = 10  # every live item listed, none only counted (the daily's caps are tested apart)
    text = daily(settings, store, SINCE, datetime(2026, 8, 3, tzinfo=UTC)).text
    assert f"Items: {len(EXPECTED)} scanned" in text and "Releases: acme/infer v0.9.1" in text
    top, rest = text.split("## Deep dives")[0].split("## P0 / P1")[1], text.split("## Short table")[1]
    for ref in ("acme/infer#1201", "acme/infer-npu#310", "acme/infer#1202", "acme/infer-npu#311"):
        assert f"[{ref}]" in top, ref  # merged and open PRs of both repositories
    for ref in ("acme/infer#1203", "acme/infer-npu#312"):
        assert f"[{ref}]" in top + rest, ref  # the closed PR, an issue
    assert "[acme/infer@v0.9.1]" in rest  # the release


def test_request_budget_first_run_and_no_change_rerun(stub, settings, store):
    first = run(stub, settings, store)
    # per repository one GraphQL page (PRs and issues together) and one releases request,
    # plus the three REST pages of the 250-file PR
    assert first.requests == stub.count() == 2 + 2 + 3
    assert stub.count("/graphql") == 2 and stub.count("/repos/acme/infer/pulls/1204/files") == 3
    before = len(stub.requests)
    again = run(stub, settings, store, since=None)
    rerun = stub.requests[before:]
    assert again.requests == len(rerun) == 2 * len(REPOS)
    assert [r.status for r in rerun if "releases" in r.path] == [304, 304]
    assert again.stats.inserted == again.stats.updated == 0


def test_first_run_looks_back_first_lookback_hours(stub, settings, store):
    settings.first_lookback_hours = int((datetime.now(UTC) - datetime(2026, 7, 15, tzinfo=UTC)).total_seconds() // 3600)
    result = run(stub, settings, store, since=None)
    assert not result.errors
    analyze(settings, store)
    assert refs(store) == EXPECTED
    state = cursors.read_state(store, "acme/infer", "pulls")
    assert state.cursor == datetime(2026, 8, 1, 19, 45, 30, tzinfo=UTC) and state.resume is None


def test_later_updates_are_picked_up_and_merge_an_open_pr(stub, settings, store):
    run(stub, settings, store)
    node = next(n for n in stub.repos["acme/infer"].pulls if n["number"] == 1202)
    node.update(state="MERGED", isDraft=False, mergedAt="2026-08-03T08:00:00Z", updatedAt="2026-08-03T08:00:01Z",
                mergeCommit={"oid": "ab" * 20})
    result = run(stub, settings, store, since=None)
    assert result.stats.updated == 1
    analyze(settings, store)
    item = queries.analysed_item(store, "acme/infer", 1202).item
    assert (item.state, item.merge_commit, item.draft) == ("merged", "ab" * 20, False)


def test_anonymous_mode_uses_rest_and_counts_no_pr_as_an_issue(stub, settings, store):
    result = run(stub, settings, store, token=None, page_size=2)  # small pages: Link pagination, PR-only pages
    assert result.anonymous and not result.errors and stub.count("/graphql") == 0
    assert any(r.query.get("page") == "2" for r in stub.requests if r.path == "/repos/acme/infer/issues")
    analyze(settings, store)
    kinds = {(a.item.ref, a.item.kind) for a in queries.analysed_in_window(store, EVERYTHING)}
    assert {r for r, _ in kinds} == EXPECTED
    assert {r for r, k in kinds if k == "issue"} == {"acme/infer#1205", "acme/infer#1188", "acme/infer-npu#312"}


# -- faults: each ends with the store of the fault-free run, and never shows the token --------------


FAULTS = {
    "rate limit with reset": dict(kind="primary", path="/graphql", seconds=30, status=403),
    "secondary limit": dict(kind="secondary", path="/repos/acme/infer/pulls", seconds=5, status=403),
    "502 twice": dict(kind="status", path="/graphql", times=2, status=502),
    "timeout": dict(kind="slow", path="/repos/acme/infer/releases", seconds=2.5),
    "truncated JSON": dict(kind="truncate", path="/graphql"),
}


@pytest.mark.parametrize("name", FAULTS)
def test_fault_ends_with_the_fault_free_store(name, stub, settings, store, baseline, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    spec = dict(FAULTS[name])
    stub.fault(spec.pop("kind"), spec.pop("path"), **spec)
    waits: list = []
    result = run(stub, settings, store, waits=waits, timeout=1.0)  # wide: only the slow fault may miss it
    assert not result.errors and not stub.faults
    assert waits, "the client waited before retrying"
    if name == "rate limit with reset":
        assert 28 <= waits[0][0] <= 32
    assert exported(settings, store) == baseline
    assert TOKEN not in caplog.text + "".join(capsys.readouterr())


def test_persistent_malformed_page_is_skipped_then_a_rerun_completes(stub, settings, store, baseline, caplog):
    stub.fault("truncate", "/graphql", times=5)  # every try of acme/infer's page
    result = run(stub, settings, store)
    assert len(result.errors) == 1 and "malformed JSON" in result.errors[0] and result.errors[0].startswith("acme/infer:")
    assert "malformed JSON" in caplog.text
    assert cursors.read_state(store, "acme/infer", "pulls").cursor is None  # nothing moved past the bad page
    assert cursors.stored_update(store, "acme/infer-npu", "pr", 310) is not None  # the next repository went on
    assert not run(stub, settings, store).errors
    assert exported(settings, store) == baseline


def test_fetch_killed_between_pages_resumes_where_it_stopped(stub, settings, store, baseline):
    def kill_after_first(progress):
        if progress.repo == "acme/infer" and progress.pages == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(stub, settings, store, page_size=2, on_page=kill_after_first)
    state = cursors.read_state(store, "acme/infer", "pulls")
    assert state.resume and state.cursor is None
    before = len(stub.requests)
    assert not run(stub, settings, store, page_size=2).errors  # the same command line again
    resumed = next(r for r in stub.requests[before:] if r.path == "/graphql")
    assert resumed.variables["pullsAfter"] == state.resume  # went on after the saved page, not from the top
    assert exported(settings, store) == baseline
    assert len(exported(settings, store)) == len(EXPECTED)  # no duplicates


def test_rate_limit_past_max_wait_saves_progress_and_says_when(stub, settings, store, baseline):
    stub.fault("primary", "/repos/acme/infer-npu", seconds=7200, status=403)
    with pytest.raises(RateLimited, match=r"resets at .* UTC"):
        run(stub, settings, store, max_wait=60)
    assert cursors.read_state(store, "acme/infer", "releases").cursor is not None  # the first repo is saved
    assert not run(stub, settings, store, since=None).errors
    assert exported(settings, store) == baseline


# -- the command -------------------------------------------------------------------------------------


def _configure(radar_home):
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.toml").write_text('[[repos]]\nname = "acme/infer"\n\n[[repos]]\nname = "acme/infer-npu"\n')


def test_radar_fetch_stats_and_no_token_in_output(stub, radar_home, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    _configure(radar_home)
    monkeypatch.setenv("GITHUB_API_URL", stub.url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    result = CliRunner().invoke(main, ["fetch", "--since", "2026-07-29", "--stats"])
    assert result.exit_code == 0, result.output
    assert "acme/infer: 7 new" in result.stdout and "acme/infer-npu: 3 new" in result.stdout
    assert "requests: 7" in result.stdout and "items stored: 10" in result.stdout
    assert "rate limit remaining: 5000" in result.stdout
    assert TOKEN not in result.output + caplog.text


def test_radar_fetch_without_token_says_so(stub, radar_home, monkeypatch):
    _configure(radar_home)
    monkeypatch.setenv("GITHUB_API_URL", stub.url)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    result = CliRunner().invoke(main, ["fetch", "--since", "2026-07-29"])
    assert result.exit_code == 0 and "anonymous REST API" in result.stderr


def test_radar_fetch_with_no_network_fails_in_one_line(radar_home, monkeypatch):
    _configure(radar_home)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    result = CliRunner().invoke(main, ["fetch"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"error: cannot reach 127.0.0.1:{port}: Connection refused"]
    assert "Traceback" not in result.output and TOKEN not in result.output


def test_radar_fetch_malformed_page_exits_nonzero(stub, radar_home, monkeypatch):
    _configure(radar_home)
    monkeypatch.setenv("GITHUB_API_URL", stub.url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setattr("infra_radar.pipeline.fetch.open_client",
                        lambda max_wait, wait: GitHubClient(Endpoints.from_env(), max_wait=max_wait, backoff=0.0))
    stub.fault("truncate", "/graphql", times=5)
    result = CliRunner().invoke(main, ["fetch", "--since", "2026-07-29"])
    assert result.exit_code == 1 and "malformed JSON" in result.stderr and "rerun to complete" in result.stderr
    assert "acme/infer-npu: 3 new" in result.stdout


def test_since_flag_later_than_the_cursor_keeps_the_cursor(stub, settings, store):
    run(stub, settings, store)
    cursor = cursors.read_state(store, "acme/infer", "pulls").cursor
    run(stub, settings, store, since=cursor + timedelta(days=1))
    assert cursors.read_state(store, "acme/infer", "pulls").cursor == cursor


def test_watch_recheck_follows_a_watched_pr_across_fetches(stub, settings, store, tmp_path):
    """State then and now, merge commit, files moved, new items that reference it: against the published radar
    that last showed it."""
    settings.lang = "en"
    run(stub, settings, store)
    runner = CliRunner()
    assert runner.invoke(main, ["watch", "add", "acme/infer#1202", "--reason", "MLA chunked prefill",
                                      "--since", "2026-07-01"]).exit_code == 0
    first = daily(settings, store, datetime(2026, 7, 29, tzinfo=UTC), datetime(2026, 8, 2, tzinfo=UTC),
                  out_dir=tmp_path / "out")
    section = first.text[first.text.index("## Tracked items"):first.text.index("## Short table")]
    assert "acme/infer#1202" in section and "open; first recheck" in section, section

    pr = next(p for p in stub.repos["acme/infer"].pulls if p["number"] == 1202)
    pr.update(state="MERGED", isDraft=False, mergedAt="2026-08-02T08:00:00Z", closedAt="2026-08-02T08:00:00Z",
              updatedAt="2026-08-02T08:00:00Z", mergeCommit={"oid": "c0ffee" + "0" * 34})
    pr["files"]["nodes"].append({"path": "infer/attention/ops/mla_chunk.py", "additions": 40, "deletions": 0,
                                 "changeType": "ADDED"})
    pr["files"]["totalCount"] += 1
    follow = {**pr, "number": 1206, "title": "[Perf] FP8 KV cache for chunked MLA prefill",
              "body": "Follow-up of #1202: FP8 KV cache on the chunked path.", "state": "OPEN", "mergedAt": None,
              "closedAt": None, "mergeCommit": None, "updatedAt": "2026-08-02T09:00:00Z",
              "createdAt": "2026-08-02T09:00:00Z"}
    stub.repos["acme/infer"].pulls.insert(0, follow)
    run(stub, settings, store, since=datetime(2026, 8, 2, tzinfo=UTC))
    second = daily(settings, store, datetime(2026, 8, 2, tzinfo=UTC), datetime(2026, 8, 3, tzinfo=UTC))
    section = second.text[second.text.index("## Tracked items"):second.text.index("## Short table")]
    assert "merged (`c0ffee0`)" in section and "state: open → merged" in section, section
    assert "[acme/infer#1206](https://github.com/acme/infer/pull/1206) follow-up" in section, section  # a PR: /pull/N
    assert ("update: merged with other files than shown (1 added: `infer/attention/ops/mla_chunk.py`)"
            in section), section
