"""A stand-in for an OpenAI-compatible server on 127.0.0.1: `POST /v1/chat/completions` with scripted replies.

By default it answers every prompt with valid JSON in the prompt's language, built only from what the
prompt says (so it is grounded), plus one sentence with an invented number and one with an invented
`#N` (so grounding has something to drop), and an unspecific filler sentence in `why`; `GET /v1/models`
lists `models`. `script` is a queue of
one-off behaviours consumed in order: ("invalid",) a reply that is not JSON; ("status", 429, seconds) an
error with Retry-After; ("slow", s) an answer after s seconds; ("wrong_lang",) prose in the other
language; ("content", text) a fixed reply; ("close",) a reply with `Connection: close`; ("drop",) a
reply after which the connection is closed without notice (an idle keep-alive timeout). It speaks
HTTP/1.1 with keep-alive and accepts absolute request targets, as a proxy receives them.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

INVENTED_NUMBER = "987654"
INVENTED_REF = "#9999999"


def _zh(messages: list[dict[str, str]]) -> bool:
    return bool(re.search(r"[\u4e00-\u9fff]", messages[0]["content"]))


def _item_reply(user: str, zh: bool) -> dict[str, str]:
    title = re.search(r"^(?:标题|Title)[:：](.*)$", user, re.M)
    words = (title.group(1).strip() if title else "the change")[:60]
    if zh:
        return {"summary": f"该变更涉及「{words}」，对推理路径有直接影响。它把吞吐提升了 {INVENTED_NUMBER} 倍。",
                "mechanism": f"改动调整了「{words}」的实现。详见 {INVENTED_REF}。",
                "why": "昇腾平台需要评估是否跟进该改动。", "risks": f"需要回归测试覆盖「{words}」。"}
    return {"summary": f"This change covers \"{words}\" and touches the serving path. "
                       f"It makes throughput {INVENTED_NUMBER} times higher.",
            "mechanism": f"The change reworks \"{words}\". See {INVENTED_REF} for details.",
            "why": "The NPU team should check whether to follow it.", "risks": f"Regression tests should cover \"{words}\"."}


def _report_reply(user: str, zh: bool) -> dict[str, Any]:
    merged = re.search(r"合入 PR (\d+) 个|(\d+) PRs merged", user)
    count = next((g for g in merged.groups() if g), "0") if merged else "0"
    first = re.search(r"^- (#\d+)", user, re.M)
    ref = first.group(1) if first else ""
    if zh:
        return {"executive_summary": f"本期合入 {count} 个 PR。重点关注 {ref}。另有 {INVENTED_NUMBER} 项无关改动。",
                "themes": [{"name": "性能", "text": f"{ref} 是本期核心改动。参见 {INVENTED_REF}。"}],
                "recommendations": [f"优先验证 {ref}。", f"跟进 {INVENTED_REF}。"]}
    return {"executive_summary": f"The period merged {count} PRs. Focus on {ref}. "
                                 f"Another {INVENTED_NUMBER} changes were minor.",
            "themes": [{"name": "Performance", "text": f"{ref} is the core change. See {INVENTED_REF}."}],
            "recommendations": [f"Validate {ref} first.", f"Follow {INVENTED_REF}."]}


def _daily_reply(user: str, zh: bool) -> dict[str, Any]:
    """The headline prompt: the item count, the first item, one sentence with an invented #N."""
    listed = re.findall(r"^- ([\w.-]+/[\w.-]+#\d+)[ （]", user, re.M)
    first = listed[0] if listed else ""
    if zh:
        return {"headline": f"今日 P0 / P1 条目共 {len(listed)} 项。首先关注 {first}。另见 {INVENTED_REF}。"}
    return {"headline": f"Today brings {len(listed)} P0 / P1 items. Start with {first}. See also {INVENTED_REF}."}


def _row_reply(user: str, zh: bool) -> dict[str, Any]:
    """The row prompt: one grounded sentence naming the item, one with an invented number."""
    found = re.search(r"^(?:条目|Item) ([\w.-]+/[\w.-]+#\d+)", user, re.M)
    ref = found.group(1) if found else ""
    if zh:
        return {"conclusion": f"模型结论：{ref} 值得跟进。它快了 {INVENTED_NUMBER} 倍。"}
    return {"conclusion": f"Model conclusion: {ref} is worth following. It is {INVENTED_NUMBER} times faster."}


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[。！？])|(?<=[.!?])\s+", text, maxsplit=1)[0]


def _salted(data: Any, zh: bool) -> Any:
    """Every string (names and list items too, refs excepted): its first, grounded sentence, then an invented one."""
    if isinstance(data, dict):
        return {k: v if k == "ref" else _salted(v, zh) for k, v in data.items()}
    if isinstance(data, list):
        return [_salted(v, zh) for v in data]
    invented = (f"它比 {INVENTED_REF} 快 {INVENTED_NUMBER} 倍。" if zh
                else f"It is {INVENTED_NUMBER} times faster than {INVENTED_REF}.")
    return f"{_first_sentence(data)}{'' if zh else ' '}{invented}"


def default_reply(messages: list[dict[str, str]], flip_lang: bool = False, every_field: bool = False) -> dict[str, Any]:
    """A valid reply to a radar prompt, in its language (or the other one when `flip_lang`); with `every_field`,
    every string of it is one grounded sentence and one with an invented number and reference."""
    zh = _zh(messages) != flip_lang
    user = messages[1]["content"]
    if "headline" in messages[0]["content"]:
        reply = _daily_reply(user, zh)
    elif '"conclusion"' in messages[0]["content"]:
        reply = _row_reply(user, zh)
    elif "executive_summary" in messages[0]["content"]:
        reply = _report_reply(user, zh)
    else:
        reply = _item_reply(user, zh)
    return _salted(reply, zh) if every_field else reply


class LlmStub:
    """The server; use as a context manager. `requests` records every request body."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency, self.script, self.requests = latency, deque(), []
        self.auth: list[str] = []
        self.targets: list[str] = []  # the request target of every POST (absolute when sent to a proxy)
        self.proxy_auth: list[str] = []  # the Proxy-Authorization header of every POST
        self.connections = 0  # TCP connections accepted
        self.gets: list[tuple[str, str]] = []  # (path, Authorization) of every GET
        self.models = ["stub-model"]
        self.every_field = False  # every string of every reply: a grounded sentence and an invented one
        self.reject_schema = False  # answer HTTP 500 to json_schema requests (llama-cpp-python's server)
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall, whatever the writes

            def log_message(self, *args: Any) -> None:
                return None

            def setup(self) -> None:
                super().setup()
                with stub._lock:
                    stub.connections += 1

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub._lock:
                    stub.requests.append(body)
                    stub.auth.append(self.headers.get("Authorization", ""))
                    stub.targets.append(self.path)
                    stub.proxy_auth.append(self.headers.get("Proxy-Authorization", ""))
                    step = stub.script.popleft() if stub.script else ("ok",)
                stub._answer(self, body, step)

            def do_GET(self) -> None:  # `GET /v1/models`, what `radar doctor` probes
                with stub._lock:
                    stub.gets.append((self.path, self.headers.get("Authorization", "")))
                if self.path != "/v1/models":
                    return stub._send(self, 404, {"error": "not found"})
                stub._send(self, 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in stub.models]})

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # the default listen backlog of 5 drops SYNs when 16 clients connect at once

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _answer(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: tuple) -> None:
        if urlsplit(h.path).path != "/v1/chat/completions":
            return self._send(h, 404, {"error": "not found"})
        if self.reject_schema and body.get("response_format", {}).get("type") == "json_schema":
            return self._send(h, 500, {"error": {"message": "response_format json_schema is not supported"}})
        if step[0] == "status":
            return self._send(h, step[1], {"error": {"message": "slow down"}}, {"Retry-After": str(step[2])})
        time.sleep(step[1] if step[0] == "slow" else self.latency)
        if step[0] == "invalid":
            content = "Sure! Here is the summary you asked for."
        elif step[0] == "content":
            content = step[1]
        else:
            content = json.dumps(default_reply(body["messages"], step[0] == "wrong_lang", self.every_field),
                                 ensure_ascii=False)
        self._send(h, 200, {"id": "stub", "object": "chat.completion", "model": body["model"],
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                         "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}},
                   {"Connection": "close"} if step[0] == "close" else None)
        if step[0] in ("close", "drop"):
            h.close_connection = True

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data, ensure_ascii=False).encode()
        fields = {"Content-Type": "application/json", "Content-Length": str(len(raw)), **(headers or {})}
        reason = h.responses.get(status, ("Unknown",))[0]
        head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
        h.close_connection = h.close_connection or fields.get("Connection") == "close"
        try:  # status line, headers and body in one write: one segment, as a real server sends a small answer
            h.wfile.write(f"{head}\r\n".encode("latin-1") + raw)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass

    def __enter__(self) -> LlmStub:
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":  # serve in its own process (the benchmark): prints the base URL, then serves
    import sys

    with LlmStub(latency=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as served:
        print(served.base_url, flush=True)
        threading.Event().wait()
