"""Chat pushes: each platform's format, signature and size limits, checked by posting to a local receiver."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.publish.chat import build_messages
from infra_radar.publish.digest import Digest, Line, load_limits
from infra_radar.publish.push import PushError, post, push_reports

LIMITS = load_limits()


class Receiver(BaseHTTPRequestHandler):
    """Records every POST; answers like the platform (or with an error for /fail)."""

    received: list[tuple[str, bytes]] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        if self.path.startswith("/fail"):
            reply = b'{"code": 19001, "msg": "param invalid"}'
        else:
            reply = b"ok" if self.path.startswith("/slack") else b'{"code": 0, "errcode": 0}'
        self.send_response(200)
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver(monkeypatch):
    Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("RADAR_FEISHU_WEBHOOK", f"{base}/feishu/hook/TOKEN-F")
    monkeypatch.setenv("RADAR_FEISHU_SECRET", "feishu-secret")
    monkeypatch.setenv("RADAR_SLACK_WEBHOOK", f"{base}/slack/T000/B000/TOKEN-S")
    monkeypatch.setenv("RADAR_WECOM_WEBHOOK", f"{base}/wecom/send?key=TOKEN-W")
    monkeypatch.setenv("RADAR_DINGTALK_WEBHOOK", f"{base}/dingtalk/send?access_token=TOKEN-D")
    monkeypatch.setenv("RADAR_DINGTALK_SECRET", "SECdingtalk")
    yield base
    server.shutdown()
    server.server_close()


def big_digest(n: int = 400) -> Digest:
    lines = [Line(f"标题 {i} <at id=all></at> [x](javascript:alert(1)) " + "长" * 60, "P1", f"acme/infer#{i}",
                  f"https://github.com/acme/infer/pull/{i}") for i in range(n)]
    return Digest("AI Infra 日报雷达 · 2026-08-02", lines, "https://radar.example.org/daily/2026-08-02.html")


def check_limits(platform: str, payload: dict, body: bytes) -> str:
    """Assert the platform's documented limits; return the message text."""
    conf = LIMITS[platform]
    if platform == "feishu":
        assert len(body) <= conf["max_body_bytes"]
        text = payload["card"]["elements"][0]["content"]
        assert payload["msg_type"] == "interactive" and payload["card"]["elements"][0]["tag"] == "markdown"
    elif platform == "slack":
        blocks = payload["blocks"]
        assert len(blocks) <= conf["max_blocks"] and blocks[0]["type"] == "header"
        assert len(blocks[0]["text"]["text"]) <= conf["header_chars"]
        sections = [b["text"]["text"] for b in blocks[1:]]
        assert all(len(s) <= conf["section_chars"] for s in sections)
        text = "\n".join(sections)
        assert len(text) <= conf["max_text_chars"]
    elif platform == "wecom":
        text = payload["markdown"]["content"]
        assert len(text.encode()) <= conf["max_text_bytes"]
    else:
        text = payload["markdown"]["text"]
        assert len(text.encode()) <= conf["max_text_bytes"] and payload["markdown"]["title"]
    return text


@pytest.mark.parametrize("platform", ["feishu", "slack", "wecom", "dingtalk"])
def test_large_digest_is_split_and_trimmed_within_limits(platform):
    messages = build_messages(big_digest(), platform, "zh", "http://127.0.0.1:9/x", "s", now=1_700_000_000)
    assert 1 < len(messages) <= LIMITS[platform]["max_messages"]
    texts = [check_limits(platform, m.payload, m.body) for m in messages]
    assert "另有" in texts[-1] and "radar.example.org/daily/2026-08-02.html" in texts[-1]
    joined = "\n".join(texts)
    assert "<at id=all>" not in joined and "](javascript:" not in joined  # no mention-all, no js link
    if platform != "slack":
        assert "[acme/infer#0](https://github.com/acme/infer/pull/0)" in texts[0]
    else:
        assert "<https://github.com/acme/infer/pull/0|acme/infer#0>" in texts[0]


def test_signatures_follow_the_platform_docs():
    feishu = build_messages(big_digest(3), "feishu", "en", "http://h/x", "sekrit", now=1_700_000_000)[0]
    key = b"1700000000\nsekrit"
    assert feishu.payload["timestamp"] == "1700000000"
    assert feishu.payload["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
    ding = build_messages(big_digest(3), "dingtalk", "en", "http://h/send?access_token=t", "SEC1", now=1_700_000_000)[0]
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(ding.url).query)
    expected = base64.b64encode(hmac.new(b"SEC1", b"1700000000000\nSEC1", hashlib.sha256).digest()).decode()
    assert query["timestamp"] == ["1700000000000"] and query["sign"] == [expected]
    unsigned = build_messages(big_digest(3), "feishu", "en", "http://h/x", "", now=1)[0]
    assert "sign" not in unsigned.payload


@pytest.mark.parametrize("platform", ["feishu", "slack", "wecom", "dingtalk"])
def test_push_posts_each_format_to_the_receiver(settings, sample_store, receiver, platform):
    lines = push_reports(settings, sample_store, "daily", platform, day="2026-08-02")
    assert lines and all(line.startswith(f"posted {platform}") for line in lines)
    assert "TOKEN" not in "".join(lines)  # the webhook path is the credential
    assert len(Receiver.received) == len(lines)
    for path, body in Receiver.received:
        assert path.startswith(f"/{platform}")
        text = check_limits(platform, json.loads(body), body)
        assert "acme/" in text
    if platform == "dingtalk":
        assert "timestamp=" in Receiver.received[0][0] and "sign=" in Receiver.received[0][0]


def test_weekly_push_is_one_message_per_repository(settings, sample_store, receiver):
    lines = push_reports(settings, sample_store, "weekly", "wecom", week="2026-W31")
    assert len(lines) == 3  # acme/infer, acme/infer-npu, acme/trainer
    texts = [json.loads(body)["markdown"]["content"] for _, body in Receiver.received]
    assert any("acme/trainer" in t for t in texts)


def test_a_refusal_is_an_error_without_the_url(settings, sample_store, receiver, monkeypatch):
    monkeypatch.setenv("RADAR_FEISHU_WEBHOOK", f"{receiver}/fail/hook/TOKEN-F")
    with pytest.raises(PushError) as err:
        push_reports(settings, sample_store, "daily", "feishu", day="2026-08-02")
    assert "refused" in str(err.value) and "TOKEN" not in str(err.value)
    from infra_radar.publish.chat import Message

    with pytest.raises(PushError) as down:
        post(Message("http://127.0.0.1:9/x/TOKEN", {}), "slack", timeout=2)
    assert "TOKEN" not in str(down.value)


def test_dry_run_prints_payloads_and_no_secret(sample_store, receiver):
    result = CliRunner().invoke(main, ["push", "daily", "--to", "feishu", "--dry-run", "--date", "2026-08-02"])
    assert result.exit_code == 0, result.output
    assert '"msg_type": "interactive"' in result.output and '"sign": "***"' in result.output
    assert "TOKEN" not in result.output and "feishu-secret" not in result.output
    assert Receiver.received == []


def test_missing_webhook_is_a_clear_error(sample_store, monkeypatch):
    monkeypatch.delenv("RADAR_SLACK_WEBHOOK", raising=False)
    result = CliRunner().invoke(main, ["push", "weekly", "--to", "slack"])
    assert result.exit_code == 1 and "RADAR_SLACK_WEBHOOK" in result.output


@pytest.mark.parametrize("url", [
    "hooks.example.com/services/T0/B0/SECRETPATH",  # no scheme
    "https://hooks.example.com/services/T0 B0/SECRETPATH",  # a space inside
    "https://hooks.example.com:99999/SECRETPATH",  # a bad port
    "ftp://hooks.example.com/SECRETPATH",
])
def test_a_malformed_webhook_url_is_one_line_naming_the_variable_not_the_value(sample_store, monkeypatch, url):
    monkeypatch.setenv("RADAR_SLACK_WEBHOOK", url)
    for dry in ([], ["--dry-run"]):
        result = CliRunner().invoke(main, ["push", "daily", "--to", "slack", "--date", "2026-08-02", *dry])
        assert result.exit_code == 1, result.output
        assert "RADAR_SLACK_WEBHOOK is not a webhook URL" in result.output
        assert "SECRETPATH" not in result.output and "Traceback" not in result.output
        assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_dry_run_shows_no_webhook_userinfo(sample_store, receiver, monkeypatch):
    port = receiver.rsplit(":", 1)[1]
    monkeypatch.setenv("RADAR_FEISHU_WEBHOOK", f"http://bot:pa55word@127.0.0.1:{port}/feishu/hook/TOKEN-F")
    result = CliRunner().invoke(main, ["push", "daily", "--to", "feishu", "--dry-run", "--date", "2026-08-02"])
    assert result.exit_code == 0, result.output
    assert f"-> http://127.0.0.1:{port}/***" in result.output
    assert "pa55word" not in result.output and "bot:" not in result.output


def test_a_refusal_echoing_the_webhook_is_redacted_before_it_is_cut():
    from infra_radar.publish.chat import Message

    from .hostile_stub import Hostile

    secret = "S" * 40
    with Hostile(reply=lambda seen: (200, {}, ("x" * 100 + " bad hook " + seen.path).encode())) as server:
        url = f"{server.url}/services/T0/B0/{secret}"
        with pytest.raises(PushError) as err:
            post(Message(url, {}), "feishu")
    assert "SSSS" not in str(err.value) and "***" in str(err.value)


@pytest.mark.parametrize("mode", ["trickle", "trickle_head", "endless", "huge_head"])
def test_a_hostile_webhook_ends_the_push_in_its_total_time_with_one_line(mode):
    """A receiver that trickles a byte at a time (body or headers), never ends its body, or sends endless
    headers: the push fails within its total time or byte cap, with one line and no URL. The trickle sends
    400 bytes at most, 20 s at 0.05 s a byte: a per-read timeout alone would wait all of it."""
    from infra_radar.publish.chat import Message

    from .hostile_stub import Hostile

    limit = 400 if mode.startswith("trickle") else 50_000_000
    with Hostile(mode=mode, interval=0.05, limit=limit) as server:
        url = f"{server.url}/hook/TOKEN-H"
        with pytest.raises(PushError) as err:
            post(Message(url, {}), "slack", timeout=5, total=0.5)
        sent = server.seen[0].sent
    message = str(err.value)
    assert "\n" not in message and "TOKEN" not in message, message
    if mode.startswith("trickle"):
        assert "did not answer within 0.5 s" in message and sent < limit  # cut before the server ran out
    else:
        assert sent < 50_000_000, message  # the client hung up long before the stub's own cap


def test_a_webhook_redirect_is_not_followed():
    from infra_radar.publish.chat import Message

    from .hostile_stub import Hostile

    with Hostile() as other, Hostile(reply=lambda _s: (307, {"location": "OTHER/steal"}, b"")) as home:
        home.reply = lambda _s: (307, {"location": f"{other.url}/steal"}, b"")
        with pytest.raises(PushError, match="answered HTTP 307"):
            post(Message(f"{home.url}/hook/TOKEN-R", {"text": "hi"}), "slack")
        assert other.seen == [] and len(home.seen) == 1
