"""The GitHub client and record conversion against the local stand-in; our GraphQL against GitHub's schema."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra_radar.models import CLOSED, MERGED, OPEN
from infra_radar.sources.github import (
    Endpoints,
    GitHubClient,
    PageError,
    RateLimited,
    StopFetch,
    graphql_queries,
    graphql_url,
    issue_item,
    next_link,
    pr_item,
)

from .github_stub import FIXTURES, GitHubStub, load_repos

pytestmark = pytest.mark.no_store  # pure text/rules/HTTP-stub tests: the PostgreSQL pass skips them

TOKEN = "ghp_MARKERtoken0123456789abcdefSECRET"
ROOT = Path(__file__).resolve().parents[1]


class Waits:
    """Records the waits the client asks for instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str]] = []

    def __call__(self, seconds: float, reason: str) -> None:
        self.calls.append((seconds, reason))


@pytest.fixture
def stub():
    with GitHubStub(load_repos("acme/infer"), token=TOKEN) as server:
        yield server


def client_for(stub: GitHubStub, waits: Waits | None = None, **kw) -> GitHubClient:
    return GitHubClient(Endpoints(stub.url, stub.url + "/graphql", TOKEN), wait=waits or Waits(), **kw)


def fixture_nodes(name: str = "acme+infer") -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


# -- endpoints and parsing ----------------------------------------------------------------------------


@pytest.mark.parametrize(("api", "expected"), [
    ("https://api.github.com", "https://api.github.com/graphql"),
    ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"),
    ("https://ghe.example.com/api/v3/", "https://ghe.example.com/api/graphql"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080/graphql"),
])
def test_graphql_url_follows_the_rest_root(api, expected):
    assert graphql_url(api) == expected


def test_endpoints_from_env():
    env = {"GITHUB_API_URL": "https://ghe.example.com/api/v3", "GH_TOKEN": TOKEN}
    ep = Endpoints.from_env(env)
    assert (ep.api, ep.graphql, ep.token) == ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql",
                                              TOKEN)
    assert TOKEN not in repr(ep)
    ep = Endpoints.from_env({"GITHUB_TOKEN": "a", "GH_TOKEN": "b", "GITHUB_GRAPHQL_URL": "http://h/gql"})
    assert (ep.api, ep.graphql, ep.token) == ("https://api.github.com", "http://h/gql", "a")
    assert Endpoints.from_env({}).token is None


def test_next_link():
    header = ('<https://api.github.com/repositories/1/pulls/9/files?per_page=100&page=2>; rel="next", '
              '<https://api.github.com/repositories/1/pulls/9/files?per_page=100&page=3>; rel="last"')
    assert next_link(header).endswith("page=2")
    assert next_link('<https://x/?page=1>; rel="prev"') is None and next_link(None) is None


def test_pull_request_node_becomes_an_item():
    nodes = {n["number"]: n for n in fixture_nodes()["pullRequests"]}
    merged = pr_item("acme/infer", nodes[1201], lambda login: login == "stale")
    assert merged.state == MERGED and merged.merge_commit.startswith("3f6c1a9e")
    assert merged.branches == ["main"] and merged.labels == ["performance", "ready"]
    assert [(f.path, f.status) for f in merged.files][:2] == [("csrc/layernorm_quant_kernels.cu", "added"),
                                                             ("csrc/ops.h", "modified")]
    # comments and reviews merged in time order; GitHub's Bot type marks bots without a [bot] suffix
    assert [(c.author, c.kind, c.is_bot) for c in merged.comments] == [
        ("github-actions", "comment", True), ("sched-lead", "comment", False),
        ("sched-lead", "review", False), ("core-maint", "review", False)]
    assert merged.comments[-1].body == "approved"  # a bare approval keeps its verdict
    draft, closed = pr_item("acme/infer", nodes[1202]), pr_item("acme/infer", nodes[1203])
    assert (draft.state, draft.draft, draft.merge_commit) == (OPEN, True, None)
    assert (closed.state, closed.merged_at, closed.closed_at.isoformat()) == (CLOSED, None, "2026-07-30T12:00:00+00:00")


def test_issue_node_becomes_an_item_and_rules_flag_bots():
    node = fixture_nodes()["issues"][0]
    node = {**node, "comments": {"nodes": [{**c, "author": {"__typename": "User", "login": c["author"]["login"]}}
                                           for c in node["comments"]["nodes"]]}}
    item = issue_item("acme/infer", node, lambda login: login == "stale")
    assert (item.kind, item.key, item.state, item.number) == ("issue", "1205", OPEN, 1205)
    assert [c.is_bot for c in item.comments] == [True, False]


# -- the client: retries, limits, redaction ------------------------------------------------------------


def test_502_twice_then_success_backs_off_exponentially(stub):
    stub.fault("status", "/repos/acme/infer/releases", times=2, status=502)
    waits = Waits()
    with client_for(stub, waits, backoff=0.5) as client:
        resp = client.rest("repos/acme/infer/releases?per_page=100")
    assert resp.status == 200 and len(resp.data) == 3
    assert [s for s, _ in waits.calls] == [0.5, 1.0] and client.requests == 3


def test_persistent_5xx_gives_up_with_page_error(stub):
    stub.fault("status", "/repos", times=10, status=503)
    with client_for(stub, retries=2) as client, pytest.raises(PageError, match="gave up after 3 tries"):
        client.rest("repos/acme/infer/releases")
    assert stub.count("/repos") == 3


def test_timeout_is_retried(stub):
    # the timeout is wide enough that the retry's prompt answer never misses it on a loaded machine
    stub.fault("slow", "/repos", seconds=2.5)
    with client_for(stub, timeout=1.0) as client:
        assert client.rest("repos/acme/infer/releases").status == 200
    assert client.requests == 2


def test_truncated_json_is_retried_then_reported(stub):
    stub.fault("truncate", "/repos")
    with client_for(stub) as client:
        assert len(client.rest("repos/acme/infer/releases").data) == 3
        stub.fault("truncate", "/repos", times=9)
        with pytest.raises(PageError, match="malformed JSON"):
            client.rest("repos/acme/infer/releases")


def test_primary_limit_waits_for_the_reset(stub):
    stub.fault("primary", "/graphql", seconds=40, status=403)
    waits = Waits()
    with client_for(stub, waits) as client:
        data = client.graphql(graphql_queries()["repo_page"], {
            "owner": "acme", "name": "infer", "pageSize": 1, "withPulls": True, "withIssues": False})
    assert data["repository"]["pullRequests"]["nodes"][0]["number"] == 1202
    ((seconds, reason),) = waits.calls
    assert 38 <= seconds <= 42 and reason == "rate limit"


def test_graphql_rate_limited_answer_waits_too(stub):
    stub.fault("graphql_limited", "/graphql", seconds=20)
    waits = Waits()
    with client_for(stub, waits) as client:
        data = client.graphql(graphql_queries()["repo_page"], {
            "owner": "acme", "name": "infer", "pageSize": 1, "withPulls": False, "withIssues": True})
    assert data["repository"]["issues"]["nodes"][0]["number"] == 1205
    assert len(waits.calls) == 1 and 18 <= waits.calls[0][0] <= 22 and waits.calls[0][1] == "rate limit"


def test_secondary_limit_honours_retry_after(stub):
    stub.fault("secondary", "/repos", seconds=7, status=429)
    waits = Waits()
    with client_for(stub, waits) as client:
        assert client.rest("repos/acme/infer/releases").status == 200
    assert waits.calls == [(7.0, "secondary rate limit")]


def test_limit_past_max_wait_stops_with_the_reset_time(stub):
    stub.fault("primary", "/repos", seconds=3600, status=429)
    waits = Waits()
    with client_for(stub, waits, max_wait=60) as client, pytest.raises(RateLimited) as caught:
        client.rest("repos/acme/infer/releases")
    message = str(caught.value)
    assert "UTC" in message and "rerun" in message and "--max-wait 60" in message and not waits.calls
    assert caught.value.reset_at > datetime.now(UTC)


def test_bad_token_and_no_network_stop_without_the_token(stub):
    bad = GitHubClient(Endpoints(stub.url, stub.url + "/graphql", TOKEN + "x"))
    with bad, pytest.raises(StopFetch, match="401") as caught:
        bad.rest("repos/acme/infer/releases")
    assert TOKEN not in str(caught.value)
    port = stub._server.server_address[1]
    stub.stop()
    down = GitHubClient(Endpoints(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/graphql", TOKEN))
    with down, pytest.raises(StopFetch, match=f"cannot reach 127.0.0.1:{port}"):
        down.rest("repos/acme/infer/releases")
    stub.start()  # the fixture stops it again


def test_redact_blanks_the_token():
    client = GitHubClient(Endpoints(token=TOKEN))
    assert client.redact(f"https://x/?access_token={TOKEN}") == "https://x/?access_token=***"
    client.close()


def test_etag_makes_a_rerun_free(stub):
    with client_for(stub) as client:
        first = client.rest("repos/acme/infer/releases?per_page=100")
        again = client.rest("repos/acme/infer/releases?per_page=100", etag=first.etag)
    assert first.etag and again.status == 304 and again.data is None


def test_stub_refuses_fields_its_fixture_lacks(stub):
    query = "query { repository(owner: \"acme\", name: \"infer\") { pullRequests(first: 1) { nodes { nope } } } }"
    with client_for(stub) as client, pytest.raises(PageError, match="nope"):
        client.graphql(query, {})


# -- GitHub's public schema --------------------------------------------------------------------------


def _github_schema():
    graphql = pytest.importorskip("graphql", reason="graphql-core is in the dev extra")
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: cannot fetch @octokit/graphql-schema")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "graphql_schema.sh")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    schema = graphql.build_schema(Path(done.stdout.strip()).read_text(encoding="utf-8"), assume_valid_sdl=True)
    # GitHub's published SDL breaks two type-system rules (duplicate fields, deprecated interface
    # implementations) that do not bear on validating queries: mark the schema as checked.
    schema._validation_errors = []
    return graphql, schema


def test_every_query_is_valid_against_githubs_schema():
    graphql, schema = _github_schema()
    queries = graphql_queries()
    assert "repo_page" in queries
    for name, text in queries.items():
        errors = graphql.validate(schema, graphql.parse(text))
        assert not errors, f"{name}: {[e.message for e in errors]}"
    broken = graphql.parse("query { repository(owner: \"a\", name: \"b\") { pullRequests(first: 1) "
                           "{ nodes { mergedBy } } } }")
    assert graphql.validate(schema, broken)  # the check can fail: a selection-less object field
