"""SIGKILL at 28 points of `import-jsonl` and `daily --out`, 11 of `import-git` and 15 of `fetch`: reruns
reach the undisturbed store, and no half-written report is ever in place."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.pipeline.demo import sample_files
from infra_radar.store import schema

from .conftest import TEST_DB_URL, _fresh_schema, commit, git
from .github_stub import GitHubStub, Repo, load_repos

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # the report's "generated at" time
DAILY = ["daily", "--since", "2026-08-01", "--until", "2026-08-04", "--lang", "en"]


def text_of(report: Path) -> str:
    return STAMP.sub("<time>", report.read_text())


def test_a_migration_interrupted_halfway_leaves_no_half_schema(tmp_path, monkeypatch):
    # what a SIGKILL between two CREATE TABLEs did before SQLite DDL ran inside the migration's transaction
    from infra_radar.store import db, schema

    def interrupted(op) -> None:
        raise RuntimeError("killed")

    monkeypatch.setattr(schema, "MIGRATIONS", [schema.MIGRATIONS[0], ("002_interrupted", interrupted)])
    path = tmp_path / "radar.db"
    with pytest.raises(RuntimeError):
        db.open_engine(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == []
    monkeypatch.undo()
    monkeypatch.setenv("RADAR_HOME", str(tmp_path))
    assert db.open_engine(f"sqlite:///{path}").dialect.name == "sqlite"  # the rerun migrates cleanly


# -- import-git and fetch: SIGKILL at named points ------------------------------------------------------
# RADAR_KILL_AT=NAME:N makes the command SIGKILL itself the Nth time it reaches point NAME (see
# infra_radar/killpoint.py): mid-stream of git log, with a batch written but not committed, after a page is
# stored but before the cursor covering it is saved. `request:K` kills `radar fetch` from the stand-in
# server while its Kth request is being answered. Each point: killed run, the same command again, then the
# store's rows and `radar export` must equal those of an undisturbed run. Every point has a store of its own,
# so the killed runs and reruns of two points go on side by side (two process starts per point dominate).

WORKERS = 2
PORT = re.compile(r"127\.0\.0\.1:\d+")

GIT_REPO = "acme/kv"
GIT_BATCH = "8"  # RADAR_SAVE_BATCH: 45 items read (38 + 4 commits, 3 tags) make 6 transactions
MAIN, FORK = 38, 30  # commits on main; releases/v0.3 branches off after commit 30
PICK_NEAR, PICK_FAR = 4, 32  # main PRs picked onto the release branch: same batch there, another batch
GIT_KILLS = {  # point -> items stored when the kill lands
    "run.started:1": 0,
    "git.commit:1": 0,  # the first record of git log parsed
    "save.uncommitted:1": 0,  # batch 1 written, not committed: nothing may remain
    "save.batch:1": 8,
    "git.commit:20": 16,  # 19 read: two batches committed, the third half gathered
    "save.batch:4": 32,
    "git.branch:2": 32,  # main read whole, 6 of its commits not saved, the release branch not started
    "git.commit:41": 39,  # batch 5 held main's last 6 and 2 release commits, one of them PICK_NEAR again
    "git.tag:2": 39,
    "save.uncommitted:6": 39,  # the last batch: 2 release commits (one is PICK_FAR again) and 3 tags
    "run.finish:1": 43,  # everything saved, the run not yet marked done
}


def _run(args: list[str], env: dict[str, str | None], kill_at: str | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, **env, "RADAR_KILL_AT": kill_at}
    full = {k: v for k, v in full.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "infra_radar", *args], env=full, capture_output=True, text=True,
                          timeout=120)


def _own_db(name: str) -> str | None:
    """RADAR_DB_URL of a store of its own: a fresh PostgreSQL schema with RADAR_TEST_DB_URL, else none (SQLite)."""
    return _fresh_schema(name) if TEST_DB_URL else None


def _url(env: dict[str, str | None]) -> str:
    return env.get("RADAR_DB_URL") or f"sqlite:///{env['RADAR_HOME']}/radar.db"


def snapshot(env: dict[str, str | None]) -> tuple[dict[str, list], list]:
    """Every stored row that a rerun must reproduce (row ids and wall-clock times left out), and the export."""
    engine = sa.create_engine(_url(env), poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        names = dict(conn.execute(sa.select(schema.repos.c.id, schema.repos.c.name)).all())
        keys = {r.id: (names[r.repo_id], r.kind, r.key) for r in conn.execute(sa.select(schema.items))}

        def rows(table, *drop: str) -> list:
            found = [((keys[r.item_id],) if "item_id" in drop else ()) +
                     tuple(v for k, v in r._mapping.items() if k not in drop) for r in conn.execute(sa.select(table))]
            return sorted(found, key=repr)

        data = {"items": sorted(((keys[r.id], *(v for k, v in r._mapping.items() if k not in ("id", "repo_id")))
                                 for r in conn.execute(sa.select(schema.items))), key=repr),
                "files": rows(schema.files, "item_id"),
                "comments": rows(schema.comments, "id", "item_id"),
                "fetch_cursors": rows(schema.fetch_cursors, "updated_at"),
                "fetch_etags": [(PORT.sub("127.0.0.1:<port>", url), *rest)  # which stand-in answered
                                for url, *rest in rows(schema.fetch_etags, "updated_at")]}
    engine.dispose()
    done = CliRunner().invoke(main, ["export", "--format", "json"], env=env)
    assert done.exit_code == 0, done.output
    return data, json.loads(done.stdout)


def item_count(env: dict[str, str | None]) -> int:
    """Items stored; -1 when the kill left no items table (a migration never committed)."""
    engine = sa.create_engine(_url(env), poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("items"):
            engine.dispose()
            return -1
        count = conn.execute(sa.select(sa.func.count()).select_from(schema.items)).scalar_one()
    engine.dispose()
    return count


@dataclass
class Outcome:
    """A kill point's killed run, what it left in the store, and the rerun of the same command."""

    env: dict[str, str | None]
    status: int
    stderr: str
    stored: int
    rerun: subprocess.CompletedProcess
    between: object = None  # what `between` saw after the kill, before the rerun


def kill_then_rerun(args: list[str], env: dict[str, str | None], point: str, stub: KillingStub | None = None,
                    between: Callable[[], object] | None = None) -> Outcome:
    """Run `radar args` killed at `point` (`request:K`: by `stub` while it answers request K), then again;
    `between` looks at what the kill left before the rerun."""
    if point.startswith("request:"):
        assert stub is not None
        stub.arm(int(point.split(":")[1]))
        full = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
        proc = subprocess.Popen([sys.executable, "-m", "infra_radar", *args], env=full, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        stub.victim = proc.pid
        _, err = proc.communicate(timeout=120)
        stub.arm(0)
        status = proc.returncode
    else:
        killed = _run(args, env, kill_at=point)
        status, err = killed.returncode, killed.stderr
    seen = between() if between else None
    return Outcome(env, status, err, item_count(env), _run(args, env), seen)


def side_by_side(jobs: dict[str, Callable[[], Outcome]]) -> dict[str, Outcome | BaseException]:
    """Every job's outcome (or what it raised), WORKERS at a time."""
    with ThreadPoolExecutor(WORKERS) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
    return {name: f.exception() or f.result() for name, f in futures.items()}


def check(outcome: Outcome | BaseException, point: str, stored: int, baseline: tuple[dict, list]) -> None:
    if isinstance(outcome, BaseException):
        raise outcome
    assert outcome.status == -signal.SIGKILL, f"{point} was never reached: {outcome.stderr}"
    assert outcome.stored == stored
    assert outcome.rerun.returncode == 0, outcome.rerun.stderr
    assert snapshot(outcome.env) == baseline


def _main_subject(i: int) -> str:
    if i % 9 == 0:
        return f"tidy module {i}"  # a direct commit, no PR
    if i == 20:
        return "Merge pull request #120 from dev/sched-fix"
    return f"[Perf] faster kv step {i} (#{100 + i})"


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    """A clone with 38 commits on main, a release branch with 4 (two picks of main PRs) and 3 tags."""
    repo = tmp_path_factory.mktemp("kv") / "clone"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")

    def when(hours: int) -> str:
        return (datetime(2026, 7, 1, tzinfo=UTC) + timedelta(hours=hours)).isoformat()

    def tagger(at: str) -> dict:
        return {"GIT_COMMITTER_NAME": "Release Bot", "GIT_COMMITTER_EMAIL": "rel@x.org", "GIT_COMMITTER_DATE": at}

    for i in range(1, MAIN + 1):
        commit(repo, _main_subject(i), {f"kv/mod{i % 5}.py": f"step = {i}\n", "docs/log.md": f"{i}\n" * i},
               when(6 * i), body=f"Step {i} of the KV work.\n\nSigned-off-by: A <a@x.org>")
        if i == 10:
            git(repo, "tag", "v0.1")
        if i == FORK:
            git(repo, "tag", "-a", "v0.2", "-m", "v0.2 release", env=tagger(when(6 * i + 1)))
            git(repo, "branch", "releases/v0.3")
    git(repo, "checkout", "-q", "releases/v0.3")
    for k, subject in enumerate([_main_subject(PICK_FAR), "release notes for v0.3", _main_subject(PICK_NEAR),
                                 "[Misc] bump version (#150) (#151)"]):
        commit(repo, subject, {f"release/{k}.txt": f"{k}\n"}, when(6 * MAIN + 3 * k + 2))
    git(repo, "tag", "-a", "v0.3", "-m", "v0.3 release", env=tagger(when(6 * MAIN + 20)))
    git(repo, "checkout", "-q", "main")
    return repo


@pytest.fixture(scope="module")
def git_baseline(history, tmp_path_factory) -> tuple[dict, list]:
    env = {"RADAR_HOME": str(tmp_path_factory.mktemp("calm-git")), "RADAR_DB_URL": _own_db("kill-calm-git"),
           "RADAR_SAVE_BATCH": GIT_BATCH}
    args = ["import-git", str(history), "--repo", GIT_REPO, "--branches", "main,releases/*"]
    done = _run(args, env)
    assert done.returncode == 0 and "43 new" in done.stdout, done.stdout + done.stderr
    data, export = snapshot(env)
    items = {(i[0][1], i[0][2]): i for i in data["items"]}
    assert len(items) == 43 and len(export) == 43
    cols = [c.name for c in schema.items.columns if c.name not in ("id", "repo_id")]
    for n in (100 + PICK_NEAR, 100 + PICK_FAR):  # a PR on both branches is one item with both, within a batch too
        assert items[("pr", str(n))][1 + cols.index("branches")] == ["main", "releases/v0.3"], n
    return data, export


@pytest.fixture(scope="module")
def git_kills(history, tmp_path_factory) -> dict[str, Outcome | BaseException]:
    args = ["import-git", str(history), "--repo", GIT_REPO, "--branches", "main,releases/*"]

    def job(point: str) -> Callable[[], Outcome]:
        env = {"RADAR_HOME": str(tmp_path_factory.mktemp("killed-git")), "RADAR_DB_URL": _own_db(f"kill-git-{point}"),
               "RADAR_SAVE_BATCH": GIT_BATCH}
        return lambda: kill_then_rerun(args, env, point)

    return side_by_side({point: job(point) for point in GIT_KILLS})


@pytest.mark.parametrize("point", GIT_KILLS)
def test_sigkill_import_git_then_rerun_reaches_the_undisturbed_store(point, git_kills, git_baseline):
    check(git_kills[point], point, GIT_KILLS[point], git_baseline)


FETCH_TOKEN = "ghp_KILLtest0123456789abcdef"
FETCH_REPOS = ["acme/infer", "acme/infer-npu"]
FETCH_PAGE = "5"  # RADAR_FETCH_PAGE_SIZE: acme/infer has 3 pages of PRs, 2 of issues and 2 of releases
FETCH_KILLS = {  # point -> items stored when the kill lands; 10 requests in all
    "request:1": 0,  # killed by the stand-in while it answers the first list page
    "github.list:1": 0,  # the first page of PRs and issues in, the 250-file PR's file pages not yet asked
    "github.files:2": 0,  # between that PR's file pages
    "fetch.page_saved:1": 10,  # 5 PRs + 5 issues saved, neither stream's cursor moved
    "fetch.cursor:1": 10,  # the PR stream's resume point saved, the issue stream's not
    "request:5": 10,  # the second list page being answered
    "fetch.page_saved:2": 17,
    "fetch.cursor:4": 17,  # the issue stream complete, the PR stream one page short
    "fetch.page_saved:3": 18,
    "fetch.release_page:1": 22,  # one page of releases saved (a draft left out), no releases cursor
    "request:8": 22,  # the second page of releases being answered
    "fetch.release_cursor:1": 25,  # the releases cursor saved, not the ETag of their first page
    "fetch.etag:1": 25,  # the first repository complete, the second not begun
    "fetch.release_cursor:2": 30,
    "run.finish:1": 30,  # everything saved, the run not yet marked done
}
TOPICS = ["paged attention for long prompts", "speculative decoding with a draft head", "MoE expert routing",
          "FP8 KV cache scales", "chunked prefill scheduling", "LoRA adapter hot swap", "pipeline parallel warmup",
          "tokenizer cache eviction", "sampling temperature clamp"]


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _grown_repos() -> dict[str, Repo]:
    """The stand-in's fixtures plus 6 PRs, 4 issues and 5 releases on acme/infer, 2 releases on acme/infer-npu."""
    repos = load_repos(*FETCH_REPOS)
    infer, npu, start = repos["acme/infer"], repos["acme/infer-npu"], datetime(2026, 7, 20, tzinfo=UTC)
    models = [n for n in infer.pulls if n["number"] in (1201, 1203)]
    for k in range(6):
        node, when = copy.deepcopy(models[k % 2]), start + timedelta(minutes=97 * k)
        node.update(number=2000 + k, title=f"[Perf] {TOPICS[k]}", updatedAt=_iso(when),
                    createdAt=_iso(when - timedelta(hours=5)))
        if node.get("mergedAt"):
            node.update(mergedAt=_iso(when), closedAt=_iso(when))
        infer.pulls.append(node)
    for k in range(4):
        node, when = copy.deepcopy(infer.issues[0]), start + timedelta(minutes=131 * k)
        node.update(number=3000 + k, title=f"[Bug]: {TOPICS[-1 - k]} fails", updatedAt=_iso(when),
                    createdAt=_iso(when - timedelta(hours=1)))
        infer.issues.append(node)
    model = next(r for r in infer.releases if not r.get("draft"))
    for repo, count, major in ((infer, 5, 0), (npu, 2, 1)):
        for k in range(count):
            rel, when, tag = copy.deepcopy(model), start + timedelta(hours=3 * k), f"v{major}.8.{k}"
            rel.update(id=9000 + 100 * major + k, tag_name=tag, name=tag, created_at=_iso(when),
                       published_at=_iso(when + timedelta(minutes=5)))
            repo.releases.append(rel)
        repo.releases.sort(key=lambda r: r.get("published_at") or r["created_at"], reverse=True)
    return repos


class KillingStub(GitHubStub):
    """The stand-in, able to SIGKILL its client while it answers the client's Kth request."""

    victim: int | None = None  # the client's pid
    kill_at = 0
    mark = 0

    def arm(self, kill_at: int) -> None:
        self.victim, self.kill_at, self.mark = None, kill_at, len(self.requests)

    def _maybe_kill(self) -> None:
        if self.kill_at and len(self.requests) - self.mark == self.kill_at:
            for _ in range(500):  # the pid is set just after the client starts
                if self.victim is not None:
                    os.kill(self.victim, signal.SIGKILL)
                    break
                time.sleep(0.01)

    def graphql(self, body: dict):
        self._maybe_kill()
        return super().graphql(body)

    def rest(self, path: str, query: dict[str, str]):
        self._maybe_kill()
        return super().rest(path, query)


@pytest.fixture(scope="module")
def stand_ins():
    """One stand-in per worker, so a stand-in counts the requests of one client at a time."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(KillingStub(_grown_repos(), token=FETCH_TOKEN)) for _ in range(WORKERS)]


def _fetch_env(home: Path, db_url: str | None, stub: GitHubStub) -> dict[str, str | None]:
    home.mkdir(parents=True, exist_ok=True)
    lookback = int((datetime.now(UTC) - datetime(2026, 1, 1, tzinfo=UTC)).total_seconds() // 3600)
    repos = "".join(f'[[repos]]\nname = "{name}"\n\n' for name in FETCH_REPOS)
    (home / "radar.toml").write_text(f"first_lookback_hours = {lookback}\n\n{repos}")
    return {"RADAR_HOME": str(home), "RADAR_DB_URL": db_url, "GITHUB_API_URL": stub.url,
            "GITHUB_GRAPHQL_URL": None, "GITHUB_TOKEN": FETCH_TOKEN, "GH_TOKEN": None,
            "RADAR_FETCH_PAGE_SIZE": FETCH_PAGE}


@pytest.fixture(scope="module")
def fetch_baseline(stand_ins, tmp_path_factory) -> tuple[dict, list]:
    github = stand_ins[0]
    env = _fetch_env(tmp_path_factory.mktemp("calm-fetch"), _own_db("kill-calm-fetch"), github)
    before = len(github.requests)
    done = _run(["fetch"], env)
    assert done.returncode == 0, done.stderr
    assert len(github.requests) - before == 10  # 3 list pages + 3 file pages + 2 release pages; 1 + 1
    data, export = snapshot(env)
    assert len(data["items"]) == len(export) == FETCH_KILLS["run.finish:1"]
    assert {(c[0], c[1], c[3]) for c in data["fetch_cursors"]} == {(r, s, None) for r in FETCH_REPOS
                                                                   for s in ("pulls", "issues", "releases")}
    assert len(data["fetch_etags"]) == 2 and FETCH_TOKEN not in done.stdout + done.stderr
    return data, export


@pytest.fixture(scope="module")
def fetch_kills(stand_ins, tmp_path_factory) -> dict[str, Outcome | BaseException]:
    free: queue.SimpleQueue[KillingStub] = queue.SimpleQueue()
    for stub in stand_ins:
        free.put(stub)

    def job(point: str) -> Callable[[], Outcome]:
        home, db = tmp_path_factory.mktemp("killed-fetch"), _own_db(f"kill-fetch-{point}")

        def run() -> Outcome:
            stub = free.get()
            try:
                return kill_then_rerun(["fetch"], _fetch_env(home, db, stub), point, stub)
            finally:
                free.put(stub)
        return run

    return side_by_side({point: job(point) for point in FETCH_KILLS})


@pytest.mark.parametrize("point", FETCH_KILLS)
def test_sigkill_fetch_then_rerun_reaches_the_undisturbed_store(point, fetch_kills, fetch_baseline):
    check(fetch_kills[point], point, FETCH_KILLS[point], fetch_baseline)


# -- import-jsonl and daily --out: SIGKILL at named points -------------------------------------------------

JSONL_BATCH = "10"  # RADAR_SAVE_BATCH: the bundled sample's 3 files (30, 29, 28 items) make 9 transactions
JSONL_KILLS = {  # point -> items stored when the kill lands
    "migrate.step:1": -1,  # the first migration applied in the open transaction: no half schema may remain
    "migrate.step:3": -1,
    "run.started:1": 0,
    "save.uncommitted:1": 0,
    "save.batch:1": 10,
    "save.uncommitted:3": 20,  # the first file's last batch written, not committed
    "run.finish:1": 30,  # the first file saved, its run not yet marked done
    "run.started:2": 30,
    "save.batch:5": 50,
    "save.uncommitted:9": 79,  # the last file's last batch written, not committed
    "run.finish:3": 87,
}


def _sample_env(home: Path, name: str) -> dict[str, str | None]:
    return {"RADAR_HOME": str(home), "RADAR_DB_URL": _own_db(name), "RADAR_SAVE_BATCH": JSONL_BATCH}


@pytest.fixture(scope="module")
def jsonl_baseline(tmp_path_factory) -> tuple[dict, list]:
    env = _sample_env(tmp_path_factory.mktemp("calm-jsonl"), "kill-calm-jsonl")
    done = _run(["import-jsonl", *map(str, sample_files())], env)
    assert done.returncode == 0, done.stderr
    data, export = snapshot(env)
    assert len(data["items"]) == len(export) == JSONL_KILLS["run.finish:3"]
    return data, export


@pytest.fixture(scope="module")
def jsonl_kills(tmp_path_factory) -> dict[str, Outcome | BaseException]:
    args = ["import-jsonl", *map(str, sample_files())]

    def job(point: str) -> Callable[[], Outcome]:
        env = _sample_env(tmp_path_factory.mktemp("killed-jsonl"), f"kill-jsonl-{point}")
        return lambda: kill_then_rerun(args, env, point)

    return side_by_side({point: job(point) for point in JSONL_KILLS})


@pytest.mark.parametrize("point", JSONL_KILLS)
def test_sigkill_import_jsonl_then_rerun_reaches_the_undisturbed_store(point, jsonl_kills, jsonl_baseline):
    check(jsonl_kills[point], point, JSONL_KILLS[point], jsonl_baseline)


# daily --out over the imported, not yet analysed sample: killed while analysing, with the run recorded, with
# the new report complete in its temporary file but not renamed over the previous one, before the run is
# marked done. The previous report must stay whole until the new one replaces it in one step.
DAILY_KILLS = ["analyze.saved:1", "run.started:1", "write.tmp:1", "run.finish:1"]
PREVIOUS = "# the previous radar of this day, complete\n"


def _daily_store(home: Path, name: str) -> dict[str, str | None]:
    env = _sample_env(home, name)
    env.pop("RADAR_SAVE_BATCH")
    done = CliRunner().invoke(main, ["import-jsonl", *map(str, sample_files())], env=env)
    assert done.exit_code == 0, done.output
    return env


@pytest.fixture(scope="module")
def daily_baseline(tmp_path_factory) -> tuple[str, tuple[dict, list]]:
    home = tmp_path_factory.mktemp("calm-daily")
    env = _daily_store(home, "kill-calm-daily")
    done = _run([*DAILY, "--out", str(home / "out")], env)
    assert done.returncode == 0, done.stderr
    return text_of(Path(done.stdout.strip())), snapshot(env)


def _reports(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def daily_kills(tmp_path_factory) -> dict[str, Outcome | BaseException]:
    def job(point: str) -> Callable[[], Outcome]:
        home = tmp_path_factory.mktemp("killed-daily")
        out = home / "out"
        env = _daily_store(home, f"kill-daily-{point}")
        (out / "daily").mkdir(parents=True)
        (out / "daily" / "2026-08-03.md").write_text(PREVIOUS)
        return lambda: kill_then_rerun([*DAILY, "--out", str(out)], env, point, between=lambda: _reports(out))

    return side_by_side({point: job(point) for point in DAILY_KILLS})


@pytest.mark.parametrize("point", DAILY_KILLS)
def test_sigkill_daily_never_leaves_a_half_written_report(point, daily_kills, daily_baseline):
    calm_report, calm_store = daily_baseline
    outcome = daily_kills[point]
    check(outcome, point, JSONL_KILLS["run.finish:3"], calm_store)
    report = outcome.between.pop("daily/2026-08-03.md")
    assert report == PREVIOUS or STAMP.sub("<time>", report) == calm_report  # old or new, never half
    assert (report == PREVIOUS) == (point != "run.finish:1")
    assert all(Path(name).name.startswith(".") for name in outcome.between)  # at most a temporary file
    out = Path(outcome.rerun.stdout.strip()).parents[1]
    assert text_of(out / "daily" / "2026-08-03.md") == calm_report
    assert list(_reports(out)) == ["daily/2026-08-03.md"]  # the rerun removed what the kill left
