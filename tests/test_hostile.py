"""The GitHub client against a hostile server: every request ends within its bounds, the token stays home.

Bounds are tiny here (a fraction of a second, a few hundred KB) so each case finishes in about a second.
Elapsed time is never asserted: what the server managed to send before the client hung up is counted.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.config import load_settings
from infra_radar.errors import clip, redact
from infra_radar.pipeline.home import open_store
from infra_radar.sources.github import Endpoints, GitHubClient, PageError, RateLimited
from infra_radar.store.schema import runs as runs_table

from .hostile_stub import Hostile

TOKEN = "ghp_HOSTILEtoken0123456789abcdefSECRETxyz"


class NoWait:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float, _reason: str) -> None:
        self.calls.append(seconds)


def client(url: str, **kw) -> GitHubClient:
    # a roomy total time: only the tests of the total time itself set a short one (a loaded machine may take
    # longer than half a second to answer even a good request)
    bounds = {"timeout": 5.0, "total_timeout": 20.0, "max_bytes": 200_000, "retries": 0, "wait": NoWait()}
    return GitHubClient(Endpoints(url, url + "/graphql", TOKEN), **{**bounds, **kw})


def one_line_without_token(message: str) -> None:
    assert "\n" not in message
    assert TOKEN not in message and TOKEN[:12] not in message


def test_an_endless_body_stops_at_the_byte_cap():
    with Hostile(mode="endless", limit=50_000_000) as server, client(server.url, total_timeout=30) as c:
        with pytest.raises(PageError, match="cap") as caught:
            c.rest("repos/a/b/releases")
    one_line_without_token(str(caught.value))
    # the client hung up soon after the cap (socket buffers hold a few MB at most), not at the stub's limit
    assert server.seen[0].sent < 20_000_000


@pytest.mark.no_store
def test_a_body_trickled_a_byte_at_a_time_ends_at_the_total_time():
    # each byte arrives well within the 5 s read timeout: only a total time per request can end this
    with Hostile(mode="trickle", interval=0.05, limit=400) as server, client(server.url, total_timeout=0.5) as c:
        with pytest.raises(PageError, match="no complete answer within 0.5 s") as caught:
            c.rest("repos/a/b/releases")
    one_line_without_token(str(caught.value))
    head = len(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n")
    assert server.seen[0].sent - head < 200  # about 10 body bytes in 0.5 s; without the bound, all 340


@pytest.mark.no_store
def test_headers_trickled_a_byte_at_a_time_end_at_the_total_time():
    with Hostile(mode="trickle_head", interval=0.05, limit=300) as server, client(server.url, total_timeout=0.5) as c:
        with pytest.raises(PageError, match="no complete answer"):
            c.graphql("query { viewer { login } }", {})
    assert server.seen[0].sent < 150


def test_endless_headers_end_in_one_line():
    with Hostile(mode="huge_head", limit=50_000_000) as server, client(server.url, total_timeout=30) as c:
        with pytest.raises(PageError) as caught:
            c.rest("repos/a/b/releases")
    one_line_without_token(str(caught.value))
    assert server.seen[0].sent < 5_000_000


def test_a_link_to_another_host_gets_no_token_and_is_not_followed():
    with Hostile() as other, Hostile() as home:
        home.reply = lambda _s: (200, {"link": f'<{other.url}/repos/a/b/releases?page=2>; rel="next"'}, b"[]")
        with client(home.url) as c, pytest.raises(PageError, match="another host") as caught:
            c.rest("repos/a/b/releases")
            c.rest(f"{other.url}/repos/a/b/releases?page=2")
        with client(home.url) as c, pytest.raises(PageError, match="another host"):
            c.rest(f"{other.url}/repos/a/b/releases?page=2")
    one_line_without_token(str(caught.value))
    assert home.seen and home.seen[0].headers.get("authorization") == f"Bearer {TOKEN}"
    assert other.seen == []


def test_a_redirect_to_another_host_carries_no_token():
    with Hostile() as other, Hostile() as home:
        home.reply = lambda _s: (302, {"location": f"{other.url}/elsewhere"}, b"")
        with client(home.url) as c:
            assert c.rest("repos/a/b/releases").data == []
    assert home.seen[0].headers.get("authorization") == f"Bearer {TOKEN}"
    assert other.seen and "authorization" not in other.seen[0].headers


def test_a_redirect_loop_is_a_page_error():
    with Hostile() as home:
        home.reply = lambda seen: (302, {"location": f"{home.url}{seen.path}x"}, b"")
        with client(home.url) as c, pytest.raises(PageError, match="redirected more than"):
            c.rest("repos/a/b/releases")
    assert 2 <= len(home.seen) <= 30


@pytest.mark.parametrize("headers", [
    {"retry-after": "9" * 400},
    {"retry-after": "99999999999999999999"},
    {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "9" * 30},
    {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "99999999999"},
])
def test_huge_rate_limit_waits_stop_with_one_line(headers):
    with Hostile() as server:
        server.reply = lambda _s: (403, headers, b'{"message": "limited"}')
        with client(server.url, max_wait=60) as c, pytest.raises(RateLimited) as caught:
            c.rest("repos/a/b/releases")
    one_line_without_token(str(caught.value))
    assert "more than --max-wait 60 s" in str(caught.value)


@pytest.mark.parametrize("body", [{"data": []}, {"data": [{"rateLimit": {}}]}, {"data": "x"}, {"errors": "boom"}, {"errors": [5]}])
def test_malformed_graphql_answers_are_page_errors(body):
    with Hostile() as server:
        server.reply = lambda _s: (200, {}, json.dumps(body).encode())
        with client(server.url) as c, pytest.raises(PageError):
            c.graphql("query { viewer { login } }", {})


def test_an_error_body_echoing_the_token_is_redacted_before_it_is_cut():
    # the token starts at character 190 of the message: cutting at 200 first would leave 10 of its characters
    message = "x" * 190 + TOKEN
    with Hostile() as server:
        server.reply = lambda _s: (422, {}, json.dumps({"message": message}).encode())
        with client(server.url) as c, pytest.raises(Exception) as caught:
            c.rest("repos/a/b/releases")
    assert TOKEN[:8] not in str(caught.value) and "***" in str(caught.value)


def test_redact_blanks_secrets_and_url_userinfo_then_clip_cuts():
    text = f"post https://bot:pa55word@hooks.example.com/x failed; token {TOKEN}"
    out = redact(text, [TOKEN])
    assert "pa55word" not in out and TOKEN not in out and "https://***@hooks.example.com/x" in out
    assert clip(redact("k" * 10 + TOKEN, [TOKEN]), 12) == "k" * 10 + "*…"


def test_redact_is_linear_on_hostile_text():
    """Counted, not timed: the userinfo pattern is tried at each '://' only and stops at '/', '@' or space."""
    for body in ("a" * 65536, "://" + "a" * 65536, "://a" * 16384, "@" * 65536):
        assert "a" * 16 not in redact(body + "://u:p@h")[-12:]


def test_fetch_against_a_hostile_server_ends_in_one_line_per_error_and_leaks_nothing(monkeypatch, radar_home):
    with Hostile(mode="trickle", interval=0.05, limit=400) as server:
        monkeypatch.setenv("GITHUB_API_URL", server.url)
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("RADAR_FETCH_TOTAL_TIMEOUT", "0.5")
        monkeypatch.setenv("RADAR_FETCH_RETRIES", "0")
        result = CliRunner().invoke(main, ["fetch", "--repo", "a/b", "--max-wait", "0"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines and all(not ln.startswith(("Traceback", " ")) for ln in lines), result.output
    assert any("no complete answer within 0.5 s" in ln for ln in lines), result.output
    assert TOKEN not in result.output and TOKEN[:12] not in result.output
    engine = open_store(load_settings())  # SQLite or PostgreSQL: the runs table keeps the error, redacted
    with engine.connect() as conn:
        runs = [str(row) for row in conn.execute(sa.select(runs_table))]
    engine.dispose()
    assert any("no complete answer" in row for row in runs), runs
    assert not any(TOKEN[:12] in row for row in runs)


@pytest.mark.parametrize("value", ["abc", "nan", "-1", "inf", "0"])
def test_bad_fetch_bounds_are_one_line_errors(monkeypatch, value):
    monkeypatch.setenv("RADAR_FETCH_TOTAL_TIMEOUT", value)
    result = CliRunner().invoke(main, ["fetch", "--repo", "a/b"])
    assert result.exit_code == 1
    assert "RADAR_FETCH_TOTAL_TIMEOUT must be" in result.output and "Traceback" not in result.output
