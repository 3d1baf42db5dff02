"""`radar import-git`: separators inside messages and file names, branch globs matching nothing, the replica."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.analyse.rules import load_noise_patterns
from infra_radar.cli import main
from infra_radar.sources.git import read_clone
from infra_radar.sources.history import BodyCleaner

from .conftest import commit, git

CLEAN = BodyCleaner(load_noise_patterns())


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_separator_bytes_in_messages_tags_and_file_names(make_repo):
    repo = make_repo()
    commit(repo, "Plain first (#1)", {"a.py": "x\n"}, "2026-07-01T00:00:00+00:00")
    commit(repo, "Sub\x1eject with \x1f separators (#2)", {"odd\x1ename.py": "1\n2\n", "tab\tname.py": "t\n"},
           "2026-07-02T00:00:00+00:00", body="Body \x1e with \x1f both\n\nand a line\n")
    commit(repo, "Last one (#3)", {"b.py": "y\n"}, "2026-07-03T00:00:00+00:00", body="\x1eradar-commit\x1e")
    git(repo, "tag", "-a", "v1", "-m", "tag \x1e message \x1f here",
        env={"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@x.org", "GIT_COMMITTER_DATE": "2026-07-04T00:00:00Z"})
    items = {(i.kind, i.key): i for i in read_clone(repo, "acme/x", ["main"], CLEAN)}
    assert set(items) == {("pr", "1"), ("pr", "2"), ("pr", "3"), ("release", "v1")}
    two = items[("pr", "2")]
    assert two.title == "Sub\x1eject with \x1f separators"
    assert "both" in two.body and "and a line" in two.body
    assert {(f.path, f.additions) for f in two.files} == {("odd\x1ename.py", 2), ("tab\tname.py", 1)}
    assert items[("pr", "3")].files[0].path == "b.py" and items[("pr", "1")].files[0].path == "a.py"
    assert "message" in items[("release", "v1")].body


def test_import_git_with_separators_succeeds(make_repo):
    repo = make_repo()
    commit(repo, "Sub\x1eject (#5)", {"odd\x1ename.py": "1\n"}, "2026-07-02T00:00:00+00:00", body="a\x1fb")
    code, out, err = invoke("import-git", str(repo), "--repo", "acme/x", "--branches", "main,releases/*")
    assert code == 0, err
    assert "acme/x: 1 new" in out and "note: no branch matches releases/*: skipped" in err


def test_branch_glob_matching_nothing_is_a_note_only_all_missing_is_an_error(make_repo):
    repo = make_repo()
    commit(repo, "Init (#1)", {"a.py": "x\n"}, "2026-07-01T00:00:00+00:00")
    notes: list[str] = []
    items = list(read_clone(repo, "acme/x", ["main", "release/*", "releases/*"], CLEAN, notes=notes))
    assert [i.key for i in items] == ["1"] and notes == ["no branch matches release/*: skipped",
                                                         "no branch matches releases/*: skipped"]


@pytest.fixture(scope="module")
def ascend_replica(tmp_path_factory) -> Path:
    shared = Path(__file__).resolve().parents[2] / "shared"
    export = shared / "data" / "git" / "vllm-project+vllm-ascend.jsonl.gz"
    tool = shared / "tools" / "replica_repo.py"
    if not export.exists() or not tool.exists():
        pytest.skip("the vllm-ascend export or the replica tool is not available")
    out = tmp_path_factory.mktemp("replica") / "ascend"
    subprocess.run([sys.executable, str(tool), str(export), str(out), "--since", "2026-07-01"], check=True,
                   capture_output=True)
    return out


def test_replica_imports_with_the_packaged_config(ascend_replica):
    code, out, err = invoke("import-git", str(ascend_replica), "--repo", "vllm-project/vllm-ascend")
    assert code == 0, err
    assert "vllm-project/vllm-ascend:" in out and " new" in out
    new = int(out.split("vllm-project/vllm-ascend: ")[1].split(" new")[0])
    assert new > 100


# --- git log started before the store opens (sources.git.StartedClone) ------------------------------------


def _long_history(repo: Path, commits: int = 40, body: int = 8000) -> None:
    """`commits` commits whose messages make `git log` print about commits * body bytes (git fast-import)."""
    stream = []
    for i in range(1, commits + 1):
        message = f"Change {i} (#{i})\n\n" + f"line {i} " * (body // 8) + "\n"
        data = message.encode()
        stream.append(f"commit refs/heads/main\ncommitter A <a@x.org> {1780000000 + i} +0000\n"
                      f"data {len(data)}\n".encode() + data + f"M 644 inline f{i}.py\ndata 2\nx\n\n".encode())
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(stream), check=True)


def test_git_log_waits_on_a_full_queue_while_nobody_reads_then_gives_every_commit(make_repo, monkeypatch):
    import time

    from infra_radar.sources import git as git_source

    repo = make_repo()
    _long_history(repo, body=16000)  # ~640 KB of log: ten 64 KB blocks or more
    monkeypatch.setattr(git_source, "_QUEUED_BLOCKS", 2)
    started = git_source.StartedClone(repo, ["main"], None, None)
    log = started.first
    for _ in range(4000):  # poll (at most ~20 s) until the reader has filled the queue
        if log.blocks.full():
            break
        time.sleep(0.005)
    # bounded: two blocks queued, one in the reader's hand, the pipe full, and git waiting to write the rest
    assert log.blocks.qsize() == 2 and log.proc.poll() is None
    items = list(read_clone(repo, "acme/x", ["main"], CLEAN, started=started))
    assert sorted(int(i.key) for i in items if i.kind == "pr") == list(range(1, 41))
    assert log.proc.returncode == 0


def test_a_clone_started_but_never_read_stops_its_git(make_repo):
    from infra_radar.sources import git as git_source

    repo = make_repo()
    _long_history(repo)
    started = git_source.StartedClone(repo, ["main"], None, None)
    proc = started.first.proc
    started.close()  # the import failed before reading (the store's lock was busy, say)
    assert proc.returncode is not None and started.first is None


def test_import_git_refused_by_a_busy_store_leaves_no_git_running(make_repo, tmp_path):
    from .test_show_fast import HOLD_WRITING

    repo = make_repo()
    _long_history(repo, commits=60)
    url = f"sqlite:///{tmp_path / 'store' / 'radar.db'}"
    assert invoke("--db", url, "import-git", str(repo), "--repo", "acme/x")[0] == 0
    writer = subprocess.Popen([sys.executable, "-c", HOLD_WRITING, url], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "writing"
        run = subprocess.run([sys.executable, "-m", "infra_radar", "--db", url, "--wait", "0", "import-git", str(repo),
                              "--repo", "acme/x"], capture_output=True, text=True, timeout=120)
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
    assert run.returncode == 1 and "radar test-writer" in run.stderr and len(run.stderr.splitlines()) == 1
    assert not _git_logs_of(repo)  # the git log started before the lock was asked for was stopped


def _git_logs_of(repo: Path) -> list[str]:
    """Command lines of the running `git -C repo log` processes (read from /proc)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:  # ended meanwhile
            continue
        if b"git" in args[:1] and str(repo).encode() in args and b"log" in args:
            found.append(" ".join(a.decode(errors="replace") for a in args))
    return found
