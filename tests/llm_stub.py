"""A stand-in for an OpenAI-compatible server on 127.0.0.1: `POST /v1/chat/completions` with scripted replies.

By default it answers every prompt with valid JSON in the prompt's language, built only from what the
prompt says (so it is grounded), plus one sentence with an invented number and one with an invented
`#N` (so grounding has something to drop). `script` is a queue of one-off behaviours consumed in order:
("invalid",) a reply that is not JSON; ("status", 429, seconds) an error with Retry-After; ("slow", s)
an answer after s seconds; ("wrong_lang",) prose in the other language; ("content", text) a fixed reply.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INVENTED_NUMBER = "987654"
INVENTED_REF = "#9999999"


def _zh(messages: list[dict[str, str]]) -> bool:
    return bool(re.search(r"[\u4e00-\u9fff]", messages[0]["content"]))


def _item_reply(user: str, zh: bool) -> dict[str, str]:
    title = re.search(r"^(?:标题|Title)[:：](.*)$", user, re.M)
    words = (title.group(1).strip() if title else "the change")[:60]
    if zh:
        return {"summary": f"该变更涉及「{words}」，对推理路径有直接影响。它把吞吐提升了 {INVENTED_NUMBER} 倍。",
                "mechanism": f"改动调整了相关模块的实现。详见 {INVENTED_REF}。",
                "why": "昇腾平台需要评估是否跟进该改动。", "risks": "需要回归测试覆盖相关路径。"}
    return {"summary": f"This change covers \"{words}\" and touches the serving path. "
                       f"It makes throughput {INVENTED_NUMBER} times higher.",
            "mechanism": f"The change reworks the affected module. See {INVENTED_REF} for details.",
            "why": "The NPU team should check whether to follow it.", "risks": "Regression tests should cover it."}


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


def default_reply(messages: list[dict[str, str]], flip_lang: bool = False) -> dict[str, Any]:
    """A valid reply to a radar prompt, in its language (or the other one when `flip_lang`)."""
    zh = _zh(messages) != flip_lang
    user = messages[1]["content"]
    if "executive_summary" in messages[0]["content"]:
        return _report_reply(user, zh)
    return _item_reply(user, zh)


class LlmStub:
    """The server; use as a context manager. `requests` records every request body."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency, self.script, self.requests = latency, deque(), []
        self.auth: list[str] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as two writes; no 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub._lock:
                    stub.requests.append(body)
                    stub.auth.append(self.headers.get("Authorization", ""))
                    step = stub.script.popleft() if stub.script else ("ok",)
                stub._answer(self, body, step)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _answer(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: tuple) -> None:
        if h.path != "/v1/chat/completions":
            return self._send(h, 404, {"error": "not found"})
        if step[0] == "status":
            return self._send(h, step[1], {"error": {"message": "slow down"}}, {"Retry-After": str(step[2])})
        time.sleep(step[1] if step[0] == "slow" else self.latency)
        if step[0] == "invalid":
            content = "Sure! Here is the summary you asked for."
        elif step[0] == "content":
            content = step[1]
        else:
            content = json.dumps(default_reply(body["messages"], step[0] == "wrong_lang"), ensure_ascii=False)
        self._send(h, 200, {"id": "stub", "object": "chat.completion", "model": body["model"],
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                         "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data, ensure_ascii=False).encode()
        try:
            h.send_response(status)
            for k, v in {"Content-Type": "application/json", "Content-Length": str(len(raw)), **(headers or {})}.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(raw)
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
