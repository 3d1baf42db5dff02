"""Code facts from the live source: a pull request's file patches read through REST `pulls/{n}/files` against
the GitHub stand-in (pagination, a cut patch, a patch left out, a binary file, a 3,000-file PR kept bounded)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest

from infra_radar.analyse.code_facts import ChangeFacts, load_code_rules
from infra_radar.sources.github import (
    API_MAX_FILES,
    Endpoints,
    GitHubClient,
    GraphQLSource,
    PageRequest,
    rest_files,
)

from .github_stub import FIXTURES, GitHubStub, Repo

pytestmark = pytest.mark.no_store
TOKEN = "ghp_MARKERtoken0123456789abcdefSECRET"


def _node(number: int, files: list[dict]) -> dict:
    """An invented pull request node shaped like the stand-in's fixture, with these file nodes."""
    base = copy.deepcopy(json.loads((FIXTURES / "acme+infer.json").read_text())["pullRequests"][0])
    base.update(number=number, updatedAt="2026-07-30T10:00:00Z")
    base["files"] = {"totalCount": len(files), "nodes": files}
    return base


def _file(path: str, patch: str | None, additions: int, deletions: int = 0, change: str = "MODIFIED") -> dict:
    f = {"path": path, "additions": additions, "deletions": deletions, "changeType": change}
    if patch is not None:
        f["patch"] = patch
    return f


def _client(stub: GitHubStub) -> GitHubClient:
    return GitHubClient(Endpoints(stub.url, stub.url + "/graphql", TOKEN), wait=lambda *_: None)


def _small(i: int) -> dict:
    return _file(f"acme/mod{i}.py", f"@@ -1 +1 @@\n-x{i} = 1\n+x{i} = 2", 1, 1)


def test_patches_paginated_with_a_cut_patch_a_missing_one_and_a_binary():
    files = [
        _file("acme/envs.py", '@@ -1,1 +1,2 @@\n     "A": lambda: 1,\n+    "ACME_FAST_PATH": lambda: bool(int(os.getenv("ACME_FAST_PATH", "1"))),', 1),
        _file("docs/logo.png", None, 0),  # binary: the API gives no patch and no line counts
        _file("acme/huge_table.py", None, 9000),  # too big: no patch
        _file("acme/cut.py", "@@ -1,3 +1,3 @@\n+if is_310p():\n+    pass", 40),  # the API cut it
        *(_small(i) for i in range(246)),
    ]
    with GitHubStub({"acme/diffs": Repo("acme/diffs", [_node(7, files)], [], [])}, token=TOKEN) as stub:
        facts = ChangeFacts(load_code_rules())
        found = rest_files(_client(stub), "acme/diffs", 7, facts)
        assert stub.count("/repos/acme/diffs/pulls/7/files") == 3  # 100 a page
    assert len(found) == 250
    out = facts.facts("api")
    assert out["complete"] is False
    assert out["skipped"] == {"binary": 1}
    assert {"name": "ACME_FAST_PATH", "kind": "env", "change": "added", "file": "acme/envs.py"} in out["switches"]
    assert {"check": "is_310p", "change": "added", "file": "acme/cut.py"} in out["device_checks"]


def test_a_whole_patch_set_is_complete():
    files = [_file("acme/cfg.py", "@@ -1 +1 @@\n-    use_fused: bool = False\n+    use_fused: bool = True", 1, 1)]
    with GitHubStub({"acme/diffs": Repo("acme/diffs", [_node(8, files)], [], [])}, token=TOKEN) as stub:
        facts = ChangeFacts(load_code_rules())
        rest_files(_client(stub), "acme/diffs", 8, facts)
    out = facts.facts("api")
    assert out["complete"] is True
    assert out["defaults"] == [{"name": "use_fused", "value": "True", "previous": "False", "file": "acme/cfg.py"}]


def test_a_3000_file_pr_is_read_bounded():
    files = [_file(f"acme/gen/m{i}.py", f"@@ -0,0 +1,3 @@\n+def f{i}():\n+    v{i}: int = {i}\n+    return v{i}", 3)
             for i in range(API_MAX_FILES + 500)]
    rules = load_code_rules()
    with GitHubStub({"acme/diffs": Repo("acme/diffs", [_node(9, files)], [], [])}, token=TOKEN) as stub:
        facts = ChangeFacts(rules)
        found = rest_files(_client(stub), "acme/diffs", 9, facts)
        assert stub.count("/repos/acme/diffs/pulls/9/files") == API_MAX_FILES // 100
    out = facts.facts("api")
    assert len(found) == API_MAX_FILES and out["complete"] is False  # the API lists no more
    assert out["read"]["files"] <= rules.caps["files"] and out["read"]["lines"] <= rules.caps["change_lines"]
    assert len(json.dumps(out)) < 40_000  # what is stored of it stays small whatever the PR's size


def test_graphql_source_reads_patches_when_asked():
    files = [_file("acme/ops.py", "@@ -1 +1,2 @@\n+@triton.jit\n+def k(x):", 2)]
    since = datetime(2026, 7, 1, tzinfo=UTC)
    with GitHubStub({"acme/diffs": Repo("acme/diffs", [_node(10, files)], [], [])}, token=TOKEN) as stub:
        plain = GraphQLSource(_client(stub)).page("acme/diffs", {"pulls": PageRequest(since)})["pulls"].items
        assert plain[0].code is None and stub.count("/repos/acme/diffs/pulls/10/files") == 0
        read = GraphQLSource(_client(stub), rules=load_code_rules()).page("acme/diffs", {"pulls": PageRequest(since)})
    code = read["pulls"].items[0].code
    assert code["source"] == "api" and {"file": "acme/ops.py", "kind": "triton"} in code["kernels"]
