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


def test_a_file_list_whose_next_page_never_ends_stops_at_the_api_bound():
    """A server whose every page of `pulls/{n}/files` links a next one (empty pages, then full ones): the
    reading stops at the pages 3,000 files fill, the change marked incomplete."""
    from .hostile_stub import Hostile

    def endless(seen):
        if len(server.seen) > 200:  # code that never stops would run for ever: this ends it, failing
            return 200, {"content-type": "application/json"}, b"{}"
        page = int(seen.path.rpartition("page=")[2]) if "page=" in seen.path else 1
        rows = [] if page % 2 else [{"filename": f"acme/p{page}_{i}.py", "status": "modified", "additions": 1,
                                     "deletions": 0, "patch": f"@@ -0,0 +1 @@\n+x{i} = {i}"} for i in range(100)]
        link = f'<{server.url}/repos/acme/diffs/pulls/11/files?per_page=100&page={page + 1}>; rel="next"'
        return 200, {"link": link, "content-type": "application/json"}, json.dumps(rows).encode()

    with Hostile() as server:
        server.reply = endless
        facts = ChangeFacts(load_code_rules())
        client = GitHubClient(Endpoints(server.url, server.url + "/graphql", TOKEN), wait=lambda *_: None,
                              total_timeout=60.0)
        with client:
            found = rest_files(client, "acme/diffs", 11, facts)
        asked = len(server.seen)
    assert asked == API_MAX_FILES // 100  # 30 pages, then it stops
    assert len(found) == 15 * 100 and facts.facts("api")["complete"] is False


def test_a_malformed_file_entry_drops_that_entry_not_the_pull_request():
    rows = [{"filename": "acme/ok.py", "status": "modified", "additions": 1, "deletions": 0,
             "patch": "@@ -0,0 +1 @@\n+if is_310p():"},
            {"status": "modified", "additions": 1},  # no file name
            "acme/not-an-object.py", None, {"filename": 7}, {"filename": ""},
            {"filename": "acme/two.py", "status": 3, "additions": "many", "deletions": None, "patch": None}]
    from .hostile_stub import Hostile

    with Hostile() as server:
        server.reply = lambda _seen: (200, {"content-type": "application/json"}, json.dumps(rows).encode())
        facts = ChangeFacts(load_code_rules())
        with GitHubClient(Endpoints(server.url, server.url + "/graphql", TOKEN), wait=lambda *_: None) as client:
            found = rest_files(client, "acme/diffs", 12, facts)
    assert [f.path for f in found] == ["acme/ok.py", "acme/two.py"]
    out = facts.facts("api")
    assert out["complete"] is False
    assert {"check": "is_310p", "change": "added", "file": "acme/ok.py"} in out["device_checks"]


def test_a_renamed_file_is_no_removed_file_and_says_only_its_changed_lines():
    rows = [{"filename": "acme/settings.py", "previous_filename": "acme/config.py", "status": "renamed",
             "additions": 0, "deletions": 0, "changes": 0},
            {"filename": "acme/cfg2.py", "previous_filename": "acme/cfg.py", "status": "renamed", "additions": 1,
             "deletions": 1, "patch": "@@ -3 +3 @@\n-    fast: bool = True\n+    fast: bool = False"}]
    from .hostile_stub import Hostile

    with Hostile() as server:
        server.reply = lambda _seen: (200, {"content-type": "application/json"}, json.dumps(rows).encode())
        facts = ChangeFacts(load_code_rules())
        with GitHubClient(Endpoints(server.url, server.url + "/graphql", TOKEN), wait=lambda *_: None) as client:
            rest_files(client, "acme/diffs", 13, facts)
    out = facts.facts("api")
    assert out["removed"] == [] and out["switches"] == [] and out["complete"] is True
    assert out["defaults"] == [{"name": "fast", "value": "False", "previous": "True", "file": "acme/cfg2.py"}]


def test_a_malformed_graphql_file_node_drops_that_file_not_the_pull_request():
    from infra_radar.sources.github import pr_item

    node = _node(14, [_file("acme/ok.py", None, 1), {"additions": 3}, None, {"path": 5, "additions": 1}])
    assert [f.path for f in pr_item("acme/diffs", node).files] == ["acme/ok.py"]
