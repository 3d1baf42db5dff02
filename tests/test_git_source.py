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
