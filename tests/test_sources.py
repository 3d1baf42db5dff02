"""Git clone and JSON Lines sources: PR numbers, files, times, branches, tags, broken lines."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import pytest

from infra_radar.analyse.rules import load_noise_patterns
from infra_radar.errors import InputError, SourceError
from infra_radar.sources.git import read_clone, resolve_branches
from infra_radar.sources.history import BodyCleaner, login
from infra_radar.sources.jsonl import JsonlReport, read_jsonl

from .conftest import commit, git

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

CLEAN = BodyCleaner(load_noise_patterns())


@pytest.fixture
def clone(make_repo):
    repo = make_repo()
    commit(repo, "[Perf] Faster paged KV (#10)", {"infer/kv.py": "a\nb\nc\n", "tests/test_kv.py": "t\n"},
           "2026-07-27T10:00:00+08:00", body="Speeds up KV.\n\nSigned-off-by: A <a@x.org>")
    commit(repo, "direct tweak without a PR", {"README.md": "hello\n"}, "2026-07-28T01:00:00+00:00")
    commit(repo, "Merge pull request #13 from alice/fix-sched", {"infer/sched.py": "x\n"},
           "2026-07-29T12:00:00+00:00", body="Fix scheduler starvation\n\nLong text.")
    git(repo, "tag", "v1.0")
    git(repo, "branch", "release/v1.0")
    commit(repo, "[Bugfix] Guard empty batch (#14)", {"infer/kv.py": "a\nB\nc\nd\n"}, "2026-07-30T09:30:00+02:00")
    git(repo, "checkout", "-q", "release/v1.0")
    commit(repo, "[Bugfix] Guard empty batch (#14) (#15)", {"infer/kv.py": "a\nB\nc\nd\n"},
           "2026-07-31T00:00:00+00:00")
    commit(repo, "[Bugfix] Guard empty batch (#14)", {"infer/other.py": "z\n"}, "2026-07-31T01:00:00+00:00")
    git(repo, "checkout", "-q", "main")
    return repo


def _by_key(items):
    return {(i.kind, i.key): i for i in items}


def test_git_squash_merge_direct_and_tags(clone):
    found = _by_key(read_clone(clone, "acme/infer", ["main"], CLEAN))
    pr = found[("pr", "10")]
    assert pr.number == 10 and pr.title == "[Perf] Faster paged KV"
    assert pr.merged_at == datetime(2026, 7, 27, 2, 0, tzinfo=UTC)  # committer time, in UTC
    assert {(f.path, f.additions, f.deletions) for f in pr.files} == {("infer/kv.py", 3, 0), ("tests/test_kv.py", 1, 0)}
    assert pr.body == "Speeds up KV." and pr.author == "alice-dev" and pr.branches == ["main"]
    merge = found[("pr", "13")]
    assert merge.title == "Fix scheduler starvation" and merge.body == "Long text."
    f = found[("pr", "14")].files[0]
    assert (f.additions, f.deletions) == (2, 1)
    direct = [i for i in found.values() if i.kind == "commit"]
    assert [d.title for d in direct] == ["direct tweak without a PR"]
    assert found[("release", "v1.0")].merge_commit == merge.merge_commit


def test_git_release_branch_reads_only_its_own_commits(clone):
    items = list(read_clone(clone, "acme/infer", ["main", "release/*"], CLEAN))
    release_side = [i for i in items if i.branches == ["release/v1.0"]]
    assert sorted(i.key for i in release_side) == ["14", "15"]  # not the shared history again
    pick = next(i for i in release_side if i.key == "15")
    assert pick.title == "[Bugfix] Guard empty batch (#14)"  # the origin stays in the title


def test_git_window_is_half_open(clone):
    since = datetime(2026, 7, 28, 1, 0, tzinfo=UTC)
    until = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
    keys = [i.key for i in read_clone(clone, "acme/infer", ["main"], CLEAN, since, until) if i.kind != "release"]
    assert len(keys) == 1 and keys[0] != "13"  # the direct commit at `since` in, the merge at `until` out


def test_git_errors_are_clear(tmp_path, clone):
    with pytest.raises(SourceError, match="no branch matches nope"):
        resolve_branches(clone, ["nope"])
    with pytest.raises(SourceError, match="not a git repository|git rev-parse failed"):
        list(read_clone(tmp_path, "a/b", ["main"], CLEAN))


def test_login_from_noreply_email():
    assert login("Bob", "85173575+bob-npu@users.noreply.github.com") == "bob-npu"
    assert login("Bob Li", "bob@example.com") == "Bob Li"


def _export(tmp_path, lines, gz=True):
    path = tmp_path / ("x.jsonl.gz" if gz else "x.jsonl")
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


COMMIT = {"kind": "commit", "sha": "a" * 40, "parents": ["b" * 40], "author_name": "Carol",
          "author_email": "carol@example.com", "authored_at": "2026-07-27T09:00:00+08:00", "committer_name": "GitHub",
          "committer_email": "noreply@github.com", "committed_at": "2026-07-27T10:00:00+08:00",
          "subject": "[Feature] Ship it (#803) (#845)", "body": "Body\n\nSigned-off-by: Carol <c@x>",
          "files": [{"path": "a.py", "additions": 3, "deletions": 1}, {"path": "img.png", "additions": None, "deletions": None}]}


def test_jsonl_records_and_broken_lines(tmp_path):
    path = _export(tmp_path, [
        {"kind": "repo", "full_name": "acme/infer-npu", "ref": "releases/v1.2", "head": "a" * 40},
        COMMIT, "{not json", {"kind": "commit", "sha": "c" * 40},
        {"kind": "tag", "name": "v1.2.0", "target": "a" * 40, "annotated": True,
         "created_at": "2026-07-28T00:00:00Z", "tagger": "Rel Bot", "message": "v1.2.0 notes"},
    ])
    report = JsonlReport(str(path))
    items = list(read_jsonl(path, CLEAN, report))
    assert report.repo == "acme/infer-npu" and report.branch == "releases/v1.2"
    assert [i.kind for i in items] == ["pr", "release"]
    pr = items[0]
    assert pr.number == 845 and pr.title == "[Feature] Ship it (#803)" and pr.body == "Body"
    assert pr.branches == ["releases/v1.2"] and pr.files[1].additions is None
    assert [s.split(": ")[0] for s in report.skipped] == [f"{path}:3", f"{path}:4"]


def test_jsonl_bad_header(tmp_path):
    path = _export(tmp_path, [{"kind": "commit"}], gz=False)
    with pytest.raises(InputError, match=r":1: first line"):
        list(read_jsonl(path, CLEAN, JsonlReport(str(path))))
