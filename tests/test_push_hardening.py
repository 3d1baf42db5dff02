"""Pushes under hostile answers and at the same time: a secret echoed in any form never printed, a reply that is
not an acceptance never taken for one, a timeout saying which limit ran out, two pushes posting each message
once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from infra_radar import errors
from infra_radar.publish.chat import Message
from infra_radar.publish.push import PushError, post

from .hostile_stub import Hostile

TOKEN = "xoxbT0k3nS3cr3tValue9"
SLACK_PATH = f"/services/T0ABC/B0DEF/{TOKEN}"


def _php_json(value: object) -> bytes:
    """What PHP's json_encode writes: `/` escaped as `\\/`, every non-ASCII character as `\\uXXXX`."""
    return json.dumps(value, ensure_ascii=True).replace("/", "\\/").encode()


@pytest.mark.no_store
@pytest.mark.parametrize("echo", [
    lambda path: _php_json({"error": "invalid_token", "path": path}),  # `\/` for `/`
    lambda path: _php_json({"error": "no such hook " + path.rsplit("/", 1)[1]}),  # the token without its path
    lambda path: json.dumps({"e": "".join(f"\\u{ord(c):04X}" for c in path)}).encode().replace(b"\\\\", b"\\"),
    lambda path: ("bad hook " + path.replace("/", "%2F")).encode(),  # percent-escaped
    lambda path: ("bad hook " + path.replace("/", "%252F")).encode(),  # twice
    lambda path: ("x" * 280 + " " + path.replace("/", "\\/")).encode(),  # cut after redaction, not before
])
def test_a_refusal_echoing_the_token_in_any_form_is_redacted(echo):
    with Hostile(reply=lambda seen: (200, {}, echo(seen.path))) as server:
        with pytest.raises(PushError) as err:
            post(Message(server.url + SLACK_PATH, {"text": "hi"}), "feishu")
    message = str(err.value)
    assert "refused" in message and "S3cr3t" not in message and "s3cr3t" not in message.lower(), message
    assert "53 33 63".replace(" ", "") not in message  # not even as \u0053\u0033...


@pytest.mark.no_store
def test_every_form_of_a_secret_is_redacted_in_linear_time():
    secrets = errors.url_secrets("https://hooks.example.com" + SLACK_PATH)
    forms = [TOKEN, TOKEN.lower(), "\\/".join(SLACK_PATH.split("/")), "".join(f"\\u{ord(c):04x}" for c in TOKEN),
             "".join(f"%{ord(c):02X}" for c in TOKEN), "".join(f"&#{ord(c)};" for c in TOKEN)]
    for form in forms:
        assert "S3cr3t".lower() not in errors.redact(f"echo: {form}.", secrets).lower(), form
    # a hostile run of backslashes or escapes costs a pass, not a pass per character: ten times the text, at
    # most ~30 times the work (linear: 10; quadratic: 100)
    for unit in ("\\", "\\u0078", "%25", "\\\\/"):
        small, large = _cost(errors.redact, unit * 20_000, secrets), _cost(errors.redact, unit * 200_000, secrets)
        assert large < 30 * max(small, 1e-3), (unit, small, large)


def _cost(func, *args) -> float:
    """The least CPU time of three runs (the noise of a loaded machine only adds)."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        func(*args)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.no_store
def test_a_configured_secret_is_redacted_from_any_error_line(monkeypatch):
    from infra_radar.failures import one_line

    monkeypatch.setenv("RADAR_SLACK_WEBHOOK", "https://hooks.example.com" + SLACK_PATH)
    monkeypatch.setenv("RADAR_FEISHU_SECRET", "feishu-signing-secret")
    line = one_line(ValueError("boom near " + SLACK_PATH.replace("/", "\\/") + " and feishu-signing-secret"))
    assert "S3cr3t" not in line and "signing" not in line and "***" in line, line


@pytest.mark.no_store
@pytest.mark.parametrize("body", [b"[]", b"null", b"3", b'"ok"', b'{"code": false}', b'{"errcode": "0"}',
                                  b'{"code": null}', b"{}", b'{"code": 0, "errcode": 310000}', b"[" * 60_000])
def test_a_reply_that_is_not_an_acceptance_is_a_refusal_in_one_line(body):
    with Hostile(reply=lambda _seen: (200, {}, body)) as server:
        with pytest.raises(PushError) as err:
            post(Message(f"{server.url}/hook/TOKEN-A", {"text": "hi"}), "wecom")
    message = str(err.value)
    assert message.startswith("wecom webhook refused the message") and "\n" not in message, message
    assert "unexpected" not in message and "TOKEN" not in message


@pytest.mark.no_store
@pytest.mark.parametrize("body", [b'{"code": 0}', b'{"errcode": 0, "errmsg": "ok"}',
                                  b'{"StatusCode": 0, "code": 0, "msg": "success"}'])
def test_each_platform_acceptance_is_taken(body):
    with Hostile(reply=lambda _seen: (200, {}, body)) as server:
        post(Message(f"{server.url}/hook/TOKEN-A", {"text": "hi"}), "dingtalk")


@pytest.mark.no_store
def test_a_stall_says_the_limit_that_ran_out():
    """A receiver silent for longer than the per-read timeout, well inside the total: the message names the
    per-read limit and the time it waited, not the total it never reached."""
    def slow(_seen):
        time.sleep(1.5)
        return 200, {}, b'{"code": 0}'

    with Hostile(reply=slow) as server:
        with pytest.raises(PushError) as err:
            post(Message(f"{server.url}/hook/TOKEN-T", {"text": "hi"}), "feishu", timeout=0.3, total=20)
    message = str(err.value)
    assert "within 20 s" not in message and "0.3 s" in message, message


def test_two_pushes_at_once_post_each_message_once(settings, sample_store, tmp_path):
    """A cron push and a manual one at the same moment against a slow webhook: the delivery check and its
    record are under the store's writer lock, so every message reaches the webhook once."""
    from infra_radar.pipeline.analysis import analyze

    analyze(settings, sample_store)  # both pushes find the same analysed items: the same messages

    def slow(_seen):
        time.sleep(0.4)
        return 200, {}, b'{"errcode": 0}'

    with Hostile(reply=slow) as server:
        env = {**os.environ, "RADAR_WECOM_WEBHOOK": f"{server.url}/wecom/send?key=TOKEN-CONCURRENT"}
        cmd = [sys.executable, "-m", "infra_radar", "push", "daily", "--to", "wecom", "--date", "2026-08-02"]
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        outs = [p.communicate(timeout=240) for p in procs]
        posts = [s.path for s in server.seen if s.method == "POST"]
    assert all(p.returncode == 0 for p in procs), outs
    lines = "".join(o for o, _ in outs).splitlines()
    posted = [ln for ln in lines if ln.startswith("posted")]
    again = [ln for ln in lines if ln.startswith("already delivered")]
    assert posts and len(posted) == len(posts) == len(again), (posts, lines)
    assert all("TOKEN" not in o + e for o, e in outs)
