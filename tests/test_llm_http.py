"""The model client's HTTP layer against the local stand-in: keep-alive, dropped connections, proxies, bad URLs."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from infra_radar.errors import ConfigError
from infra_radar.llm.client import LlmClient, LlmConfig, LlmError, Request
from infra_radar.llm.stage import apply_llm
from infra_radar.models import AnalysedItem, Analysis, FileChange, Item
from infra_radar.pipeline.home import open_store

from .llm_stub import LlmStub
from .test_llm import KEY, MESSAGES, SCHEMA, _item, _stage_settings

PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
             "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch):
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub():
    with LlmStub() as server:
        yield server


def make(base_url: str, sleeps: list[float], **kw) -> LlmClient:
    return LlmClient(LlmConfig(base_url, "stub-model", api_key=KEY, **kw), sleep=sleeps.append)


def requests(n: int) -> list[Request]:
    return [Request(f"a/b#{i}", MESSAGES, SCHEMA) for i in range(n)]


def test_requests_share_keep_alive_connections(stub):
    sleeps: list[float] = []
    client = make(stub.base_url, sleeps, max_concurrency=4)
    for req in requests(3):
        client.complete(req)
    assert stub.connections == 1
    answers = client.complete_all(requests(24))
    client.close()
    assert all(not isinstance(a, LlmError) for a in answers.values()) and len(answers) == 24
    assert len(stub.requests) == 27 and stub.connections <= 4 and sleeps == []


def test_complete_all_reports_each_result_in_the_calling_thread(stub):
    import threading

    seen: list[tuple[str, bool, bool]] = []
    caller = threading.get_ident()
    client = make(stub.base_url, [], max_concurrency=3)
    stub.script.append(("status", 400, 0))  # not retried: exactly one request fails
    answers = client.complete_all(requests(6), done=lambda key, result: seen.append(
        (key, threading.get_ident() == caller, isinstance(result, LlmError))))
    assert sorted(k for k, _, _ in seen) == sorted(answers) and all(same for _, same, _ in seen)
    assert sum(failed for _, _, failed in seen) == 1 == sum(isinstance(a, LlmError) for a in answers.values())
    assert list(answers) == [f"a/b#{i}" for i in range(6)]  # in input order, whatever order they finished in


@pytest.mark.parametrize("step", ["close", "drop"])
def test_a_connection_the_server_closed_is_replaced_without_a_retry(stub, step):
    sleeps: list[float] = []
    client = make(stub.base_url, sleeps)
    stub.script.append((step,))
    first = client.complete(Request("a/b#1", MESSAGES, SCHEMA))
    second = client.complete(Request("a/b#2", MESSAGES, SCHEMA))
    assert first.data and second.data and sleeps == []
    assert len(stub.requests) == 2 and stub.connections == 2


def test_plain_http_goes_through_the_environment_proxy_with_its_credentials(stub, monkeypatch):
    port = stub.base_url.split(":")[2].split("/")[0]
    monkeypatch.setenv("HTTP_PROXY", f"http://alice:s3cr%40t@127.0.0.1:{port}")
    reply = make("http://llm.example.test:8000/v1", []).complete(Request("a/b#1", MESSAGES, SCHEMA))
    assert reply.data["summary"]
    assert stub.targets == ["http://llm.example.test:8000/v1/chat/completions"]
    assert stub.proxy_auth == ["Basic " + base64.b64encode(b"alice:s3cr@t").decode()]
    assert stub.auth == [f"Bearer {KEY}"]


def test_no_proxy_and_loopback_skip_the_proxy(stub, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # discard port: nothing listens
    assert make(stub.base_url, []).complete(Request("a/b#1", MESSAGES, SCHEMA)).data  # loopback: direct
    assert stub.targets == ["/v1/chat/completions"]
    monkeypatch.setenv("NO_PROXY", "example.test")
    client = make("http://llm.example.test:1/v1", [], retries=0)
    assert client._conns.proxy is None


def test_proxy_failures_never_show_the_proxy_password(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://alice:hunter2pass@127.0.0.1:9")
    sleeps: list[float] = []
    with pytest.raises(LlmError) as err:
        make("http://llm.example.test/v1", sleeps, retries=1).complete(Request("a/b#1", MESSAGES, SCHEMA))
    assert "connection failed" in str(err.value) and "hunter2pass" not in str(err.value) and sleeps == [0.5]
    monkeypatch.setenv("HTTPS_PROXY", "socks5://alice:hunter2pass@127.0.0.1:9")
    with pytest.raises(LlmError, match="only http:// proxies") as err:
        make("https://llm.example.test/v1", []).complete(Request("a/b#1", MESSAGES, SCHEMA))
    assert "hunter2pass" not in str(err.value)


def test_a_bad_base_url_or_key_fails_the_requests_not_the_run(tmp_path, stub):
    settings, _ = _stage_settings(tmp_path, stub)
    bad = LlmConfig("ftp://example.test/v1", "stub-model", api_key=KEY)
    run = apply_llm(settings, open_store(settings), [_item()], "en", config=bad)
    assert run.failed == 1 and "base URL" in run.errors[0] and not stub.requests
    broken_key = "sk-line\nbreak-0123456789"
    with pytest.raises(LlmError) as err:
        LlmClient(LlmConfig(stub.base_url, "m", api_key=broken_key)).complete(Request("a/b#1", MESSAGES, SCHEMA))
    assert "break-0123456789" not in str(err.value) and not stub.requests


def _numbered(n: int) -> AnalysedItem:
    item = Item(repo="acme/infer-npu", kind="pr", key=str(n), number=n, title=f"Tune the scheduler path {n}",
                body=f"Batch size {n} no longer stalls.", files=[FileChange("infer_npu/core/sched.py", n, 1)],
                merged_at=datetime(2026, 7, 30, tzinfo=UTC))
    return AnalysedItem(item, Analysis(item_kind="perf", priority="P1"))


def test_replies_already_paid_for_are_cached_when_a_later_prompt_fails(tmp_path, stub):
    settings, config = _stage_settings(tmp_path, stub)
    engine = open_store(settings)

    def items_then_a_broken_one():
        yield from (_numbered(n) for n in range(1, 11))
        raise ConfigError("prompts/item.toml: [en]: 'extra' is undefined")

    with pytest.raises(ConfigError):
        apply_llm(settings, engine, items_then_a_broken_one(), "en", config=config)
    sent = len(stub.requests)
    assert sent >= 1
    again = apply_llm(settings, engine, [_numbered(n) for n in range(1, 11)], "en", config=config)
    assert again.cached == sent and again.requests == 10 - sent and len(stub.requests) == 10
