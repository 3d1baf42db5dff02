"""The model client against hostile stand-ins (trickling, endless, redirecting, key-echoing servers), failures
cached with their reasons, the json_schema fallback, per-field language, filler, and a stand-in that puts an
invented sentence in every field of every schema."""

from __future__ import annotations

import os
import re
import socket
import threading
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.config import Settings
from infra_radar.llm.client import LlmClient, LlmConfig, LlmError, Request
from infra_radar.llm.grounding import Grounds, ground_counted
from infra_radar.llm.render import merge_recommendations
from infra_radar.llm.stage import apply_llm
from infra_radar.models import AnalysedItem, Analysis, FileChange, Item, PerfClaim
from infra_radar.pipeline.demo import sample_files
from infra_radar.pipeline.home import open_store

from .llm_stub import INVENTED_NUMBER, INVENTED_REF, LlmStub

KEY = "sk-hostile-0123456789abcdefXYZ"
SCHEMA = {"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}}
MESSAGES = [{"role": "system", "content": "You write English."}, {"role": "user", "content": "Title: Faster rope"}]


class Hostile:
    """A raw TCP server on 127.0.0.1 that reads a request and answers with `behaviour(conn)`; counts bytes sent."""

    def __init__(self, behaviour) -> None:
        self.behaviour, self.sent, self.requests = behaviour, 0, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self._stop = threading.Event()

    def send(self, conn: socket.socket, data: bytes) -> bool:
        try:
            conn.sendall(data)
        except OSError:
            return False
        self.sent += len(data)
        return not self._stop.is_set()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    head = conn.recv(65536)
                except OSError:
                    continue
                if head:
                    self.requests += 1
                    self.behaviour(self, conn)

    def __enter__(self) -> Hostile:
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.sock.close()


def _trickle(server: Hostile, conn: socket.socket) -> None:
    """Valid headers, then one body byte every 50 ms, for ever (a socket timeout never fires)."""
    if not server.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"):
        return
    while server.send(conn, b" "):
        threading.Event().wait(0.05)


def _endless(server: Hostile, conn: socket.socket) -> None:
    """A chunked body that never ends, as fast as the client reads it."""
    if not server.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"):
        return
    chunk = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
    while server.send(conn, chunk):
        pass


def _client(base_url: str, **kw) -> LlmClient:
    return LlmClient(LlmConfig(base_url, "m", api_key=KEY, **kw), sleep=lambda _s: None)


def _finishes(fn, limit: float = 60.0):
    """Run `fn` in a thread; its result or exception, and whether it ended before `limit` (a hang guard with a
    margin of 60x the configured deadline, not a speed assertion)."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except Exception as exc:  # noqa: BLE001  (handed back to the test)
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    return out, not thread.is_alive()


@pytest.mark.no_store
def test_a_server_trickling_a_byte_at_a_time_ends_at_the_request_deadline():
    with Hostile(_trickle) as server:
        out, ended = _finishes(lambda: _client(server.base_url, timeout=1.0).complete(Request("k", MESSAGES, SCHEMA)))
    assert ended and isinstance(out.get("error"), LlmError)
    message = str(out["error"])
    assert "no complete answer within 1s" in message and "\n" not in message
    assert server.requests == 1  # not resent
    assert server.sent < 100_000  # the body never completed: the deadline, not the server, ended the exchange


def test_an_endless_reply_is_cut_at_the_size_cap():
    with Hostile(_endless) as server:
        out, ended = _finishes(lambda: _client(server.base_url, timeout=30, max_reply_bytes=200_000)
                               .complete(Request("k", MESSAGES, SCHEMA)))
    assert ended and isinstance(out.get("error"), LlmError)
    assert "larger than 200000 bytes" in str(out["error"]) and server.requests == 1


def test_a_redirect_is_not_followed_so_the_key_never_reaches_another_host():
    with LlmStub() as elsewhere:
        target = elsewhere.base_url + "/chat/completions"

        def redirect(server: Hostile, conn: socket.socket) -> None:
            server.send(conn, f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\n"
                              "Content-Length: 0\r\n\r\n".encode())

        with Hostile(redirect) as server:
            with pytest.raises(LlmError, match="HTTP 307") as err:
                _client(server.base_url).complete(Request("k", MESSAGES, SCHEMA))
    assert not elsewhere.requests and not elsewhere.auth and KEY not in str(err.value)


def test_error_text_is_redacted_before_it_is_truncated():
    body = ("e" * 190 + KEY).encode()  # a 200-character cut would leave the key's first 10 characters

    def echo(server: Hostile, conn: socket.socket) -> None:
        server.send(conn, b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    with Hostile(echo) as server, pytest.raises(LlmError) as err:
        _client(server.base_url).complete(Request("k", MESSAGES, SCHEMA))
    message = str(err.value)
    assert "HTTP 400" in message and not any(KEY[:i] in message for i in range(6, len(KEY) + 1))


def test_json_schema_refused_once_falls_back_to_json_object_for_the_run():
    with LlmStub() as stub:
        stub.reject_schema = True
        client = _client(stub.base_url, json_mode="json_schema", max_concurrency=1)
        results = client.complete_all(Request(f"k{i}", MESSAGES, SCHEMA) for i in range(5))
    kinds = [r["response_format"]["type"] for r in stub.requests]
    assert all(not isinstance(r, LlmError) for r in results.values())
    assert kinds == ["json_schema"] + ["json_object"] * 5  # one refusal, then never json_schema again
    assert client.json_mode == "json_object" and len(client.notes) == 1 and "HTTP 500" in client.notes[0]


def test_max_tokens_comes_from_the_prompt_and_the_repair_says_which_field_is_wrong(tmp_path):
    with LlmStub() as stub:
        settings = Settings(home=tmp_path, db_url=f"sqlite:///{tmp_path / 'r.db'}", lang="zh")
        english = ('{"summary": "This reworks rope.", "mechanism": "融合 rope 算子。", "why": "昇腾需要。", '
                       '"boundary": "无。", "risks": "无。"}')
        stub.script.append(("content", english))
        apply_llm(settings, open_store(settings), [_item()], "zh", config=LlmConfig(stub.base_url, "stub-model"))
    from importlib import resources

    packaged = (resources.files("infra_radar") / "defaults" / "prompts" / "item.toml").read_text(encoding="utf-8")
    assert stub.requests[0]["max_tokens"] == int(re.search(r"^max_tokens = (\d+)$", packaged, re.M).group(1))
    repair = stub.requests[1]["messages"][-1]["content"]
    assert "summary" in repair and "mechanism" not in repair and "Chinese" in repair


def _item() -> AnalysedItem:
    item = Item(repo="acme/infer-npu", kind="pr", key="77", number=77, title="Fuse rope into attention kernel",
                body="Fusing rope cuts TTFT from 1,048.64 ms to 512.0 ms on Qwen3-8B. Follows #70.",
                files=[FileChange("infer_npu/ops/rope.py", 120, 30)], merged_at=datetime(2026, 7, 30, tzinfo=UTC))
    analysis = Analysis(item_kind="perf", priority="P1", summary={"en": "Faster rope", "zh": "rope 更快"},
                        perf_claims=[PerfClaim("TTFT", 1048.64, 512.0, "ms", -51.2)])
    return AnalysedItem(item, analysis)


def test_a_failed_reply_is_cached_with_its_reason_and_resent_only_when_asked(tmp_path):
    settings = Settings(home=tmp_path, db_url=f"sqlite:///{tmp_path / 'r.db'}", lang="en")
    engine = open_store(settings)
    with LlmStub() as stub:
        config = LlmConfig(stub.base_url, "stub-model")
        stub.script.extend([("invalid",), ("invalid",)])
        first = apply_llm(settings, engine, [_item()], "en", config=config)
        assert first.failed == 1 and len(stub.requests) == 2
        assert first.lines()[1].startswith("llm: acme/infer-npu#77: rule text kept: invalid reply after one repair")
        again = apply_llm(settings, engine, [_item()], "en", config=config)
        assert len(stub.requests) == 2 and again.failed == 1 and again.cached == 1  # nothing sent
        assert "not JSON" in again.failures[0][1] and "--retry-failed" in again.failures[0][1]
        retried = apply_llm(settings, engine, [_item()], "en",
                            config=LlmConfig(stub.base_url, "stub-model", retry_failed=True))
        assert len(stub.requests) == 3 and retried.failed == 0 and retried.prose
        last = apply_llm(settings, engine, [_item()], "en", config=config)
    assert len(stub.requests) == 3 and last.prose == retried.prose  # the success replaced the failure


def test_a_server_that_is_down_is_not_cached_as_a_failure(tmp_path):
    settings = Settings(home=tmp_path, db_url=f"sqlite:///{tmp_path / 'r.db'}", lang="en")
    engine = open_store(settings)
    dead = socket.create_server(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()  # nothing listens there now
    config = LlmConfig(f"http://127.0.0.1:{port}/v1", "stub-model", retries=1)
    down = apply_llm(settings, engine, [_item()], "en", config=config)
    assert down.failed == 1 and "connection failed" in down.failures[0][1]
    with LlmStub() as stub:
        up = apply_llm(settings, engine, [_item()], "en", config=LlmConfig(stub.base_url, "stub-model"))
    assert len(stub.requests) == 1 and up.failed == 0 and up.prose


def test_filler_and_wrong_language_sentences_are_dropped_and_counted():
    grounds = Grounds.of("MLA prefill uses vllm_ascend/attention/mla_v1.py on Qwen3-8B.", ["a/b#1"], "a/b",
                         names=["[Perf] Faster MLA prefill", "vllm_ascend/attention/mla_v1.py"], lang="zh")
    text = ("注意力是Ascend平台的核心概念，它负责处理用户的注意力和信息。该改动加速了 MLA 预填充。"
            "修改集中在 mla_v1.py。This sentence is written in English instead. 需要回归测试覆盖。")
    kept, dropped = ground_counted(text, grounds)
    assert kept == "该改动加速了 MLA 预填充。修改集中在 mla_v1.py。"
    assert dropped == {"ungrounded": 0, "filler": 2, "language": 1}


def test_model_recommendations_are_added_to_the_rule_ones_never_replacing_them():
    rules = ["Validate #1 on the NPU.", "Port #2 first.", "Watch #3."]
    merged = merge_recommendations(rules, ["Port #2 first.", "Benchmark #1 on Qwen3-8B.", "A", "B", "C"])
    assert merged[:3] == rules and merged[3:] == ["Benchmark #1 on Qwen3-8B.", "A", "B"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_invented_sentence_in_every_field_of_every_schema_reaches_no_output(radar_home, monkeypatch, lang):
    def cli(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(main, list(args))
        return result.exit_code, result.stdout, result.stderr

    assert cli("import-jsonl", *map(str, sample_files()))[0] == 0
    with LlmStub() as stub:
        stub.every_field = True
        monkeypatch.setenv("RADAR_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")
        outputs = [cli("daily", "--since", "2026-07-28", "--until", "2026-08-04", "--lang", lang),
                   cli("weekly", "--repo", "acme/infer-npu", "--week", "2026-W31", "--lang", lang),
                   cli("llm", "--repo", "acme/infer-npu", "--week", "2026-W31", "--lang", lang)]
        daily_text = outputs[0][1]
        ref = re.search(r"\[(acme/[\w-]+#\d+)\]", daily_text).group(1)
        outputs.append(cli("show", ref, "--lang", lang))
        kinds = {("headline" in r["messages"][0]["content"], "executive_summary" in r["messages"][0]["content"])
                 for r in stub.requests}
    assert kinds == {(True, False), (False, True), (False, False)}  # the daily, weekly and item schemas were used
    model_text = "模型结论" if lang == "zh" else "Model conclusion"
    assert model_text in daily_text  # grounded sentences did get through
    for code, out, err in outputs:
        assert code == 0, err
        assert INVENTED_NUMBER not in out + err and INVENTED_REF not in out + err
    dropped = re.search(r"\((\d+) ungrounded", outputs[0][2])
    assert dropped and int(dropped.group(1)) > 0


@pytest.mark.no_store
def test_doctor_calls_a_busy_server_reachable_and_names_the_local_model_server(tmp_path):
    from infra_radar.doctor import OK, check_llm

    def busy(server: Hostile, conn: socket.socket) -> None:  # accepts, reads, answers nothing (generating)
        threading.Event().wait(5)

    run = tmp_path / "run"
    run.mkdir()
    (run / "server-0.5b.pid").write_text(str(os.getpid()))  # a live pid: as scripts/model_server.sh leaves it
    with Hostile(busy) as server:
        env = {"RADAR_LLM_BASE_URL": server.base_url, "RADAR_LLM_MODEL": "m", "RADAR_MODEL_CACHE": str(tmp_path)}
        check = check_llm(None, env, network=True)
    assert check.status == OK and "busy" in check.detail
    skipped = check_llm(None, {"RADAR_MODEL_CACHE": str(tmp_path)}, network=True)
    assert "0.5b on :8765" in skipped.fix and "model_server.sh start" in skipped.fix


def _gguf(path, meta: dict[str, object], magic: bytes = b"GGUF") -> None:
    """A GGUF header with string metadata and one string array (skipped), no tensors."""
    import struct

    def s(text: str) -> bytes:
        raw = text.encode()
        return struct.pack("<Q", len(raw)) + raw

    kv = b"".join(s(k) + struct.pack("<I", 8) + s(str(v)) for k, v in meta.items())
    kv += s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2) + s("a") + s("b")
    path.write_bytes(magic + struct.pack("<IQQ", 3, 0, len(meta) + 1) + kv)


def test_the_weights_header_check_refuses_a_base_model_or_another_file(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "gguf_header.py"

    def check(path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), str(path), "--arch", "qwen2", "--name-contains", "Qwen2.5",
                               "--chat-template"], capture_output=True, text=True)

    good = {"general.architecture": "qwen2", "general.name": "Qwen2.5 Coder 0.5B Instruct",
            "tokenizer.chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}
    _gguf(tmp_path / "ok.gguf", good)
    assert check(tmp_path / "ok.gguf").returncode == 0
    _gguf(tmp_path / "base.gguf", {k: v for k, v in good.items() if k != "tokenizer.chat_template"})
    assert "chat_template" in check(tmp_path / "base.gguf").stderr
    _gguf(tmp_path / "gemma.gguf", {**good, "general.architecture": "gemma3"})
    assert "architecture is 'gemma3'" in check(tmp_path / "gemma.gguf").stderr
    _gguf(tmp_path / "zip.gguf", good, magic=b"PK\x03\x04")
    assert "bad magic" in check(tmp_path / "zip.gguf").stderr
    (tmp_path / "short.gguf").write_bytes((tmp_path / "ok.gguf").read_bytes()[:40])
    assert "truncated" in check(tmp_path / "short.gguf").stderr


def test_cli_prints_why_each_item_fell_back_and_retry_failed_resends(radar_home, monkeypatch):
    monkeypatch.setenv("RADAR_LLM_RETRY_FAILED", "0")  # restored after the test (--retry-failed sets it to 1)
    day = ("daily", "--since", "2026-07-28", "--until", "2026-08-04", "--lang", "en", "--repo", "acme/infer-npu")

    def cli(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(main, list(args))
        return result.exit_code, result.stdout, result.stderr

    assert cli("import-jsonl", *map(str, sample_files()))[0] == 0
    with LlmStub() as stub:
        monkeypatch.setenv("RADAR_LLM_BASE_URL", stub.base_url)
        monkeypatch.setenv("RADAR_LLM_MODEL", "stub-model")
        monkeypatch.setenv("RADAR_LLM_CONCURRENCY", "1")  # one at a time: the script's replies go to the daily prompt
        stub.script.extend([("invalid",), ("invalid",)])  # the daily prompt goes first: it fails for good
        code, _, err = cli(*day)
        sent = len(stub.requests)
        assert code == 0 and "llm: daily: rule text kept: invalid reply after one repair: not JSON" in err, err
        code, _, err = cli(*day)
        assert code == 0 and len(stub.requests) == sent and "(cached; --retry-failed resends it)" in err
        code, _, err = cli(*day, "--retry-failed")
        assert code == 0 and len(stub.requests) == sent + 1 and "rule text kept" not in err, err


@pytest.mark.no_store
def test_the_watchdog_fires_due_alarms_in_order_and_never_a_disarmed_one():
    import time

    from infra_radar.llm.transport import _Watchdog

    dog, fired, done = _Watchdog(), [], threading.Event()
    now = time.monotonic()
    dog.arm(now + 0.3, lambda: (fired.append("late"), done.set()))
    dog.arm(now + 0.1, lambda: fired.append("early"))
    skipped = dog.arm(now + 0.2, lambda: fired.append("disarmed"))
    dog.arm(now + 0.15, lambda: 1 / 0)  # a failing alarm does not stop the others
    dog.disarm(skipped)
    assert done.wait(30)
    assert fired == ["early", "late"]


@pytest.mark.no_store
def test_a_request_cut_by_the_run_deadline_is_a_run_failure_not_cached(tmp_path):
    from infra_radar.llm.client import RunFailure

    with Hostile(_trickle) as server:
        client = _client(server.base_url, timeout=60, run_deadline=0.5)
        out, ended = _finishes(lambda: client.complete(Request("k", MESSAGES, SCHEMA)))
    assert ended and isinstance(out.get("error"), RunFailure) and "run deadline of 0.5s" in str(out["error"])
    with pytest.raises(RunFailure, match="not sent"):
        client.complete(Request("k2", MESSAGES, SCHEMA))  # the deadline has passed: nothing more is sent
    assert server.requests == 1
