"""A stand-in for an OpenAI-compatible server on 127.0.0.1: `POST /v1/chat/completions` with scripted replies.

By default it answers every prompt with valid JSON in the prompt's language. An item or row prompt gets, in
every field, sentences citing the prompt's numbered records: one supported (the title, quoted, citing the title
record), one with an invented name and number, a filler sentence, one citing a record that does not exist and,
when a code fact ships a setting `True`, one calling that setting opt-in; only the first may survive. Report
prompts get grounded text plus sentences with an invented number and `#N`. `GET /v1/models` lists `models`. `script` is a queue of
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
INVENTED_NAME = "fused_invented_kernel"
FILLER = ("至关重要", "crucial for")  # the stand-in's filler sentence, as a test finds it
CONTRADICTION = ("opt-in", "opt-in")  # the stand-in's contradicting sentence


def _zh(messages: list[dict[str, str]]) -> bool:
    return bool(re.search(r"[\u4e00-\u9fff]", messages[0]["content"]))


_RECORD = re.compile(r"^\[(\d+)\] ([^:\n]+): (.*)$", re.M)


def _records(user: str) -> list[tuple[int, str, str]]:
    """The numbered records of an item or row prompt: (id, label, text)."""
    return [(int(m.group(1)), m.group(2), m.group(3)) for m in _RECORD.finditer(user)]


def _title(user: str) -> tuple[int, str]:
    """The title record's id and text (the first record), or a stand-in."""
    found = _records(user)
    return (found[0][0], found[0][2][:60]) if found else (1, "the change")


def _contradiction(user: str, zh: bool) -> dict[str, Any] | None:
    """A sentence saying the opposite of a code fact that ships a setting on: it calls the setting opt-in."""
    for rid, label, text in _records(user):
        if label in ("代码事实", "Code fact") and re.search(r"`True`|= True|\bTrue\b", text):
            name = re.search(r"`([A-Za-z_][\w.]*)`", text)
            if name and name.group(1) != "True":
                return {"text": (f"`{name.group(1)}` 是一个 opt-in 开关，需要显式开启。" if zh else
                                 f"`{name.group(1)}` is an opt-in switch, off unless set."), "records": [rid]}
    return None


def _mix(user: str, zh: bool) -> list[dict[str, Any]]:
    """One field's sentences: a supported one (the title, quoted, citing the title record), an unsupported one
    (an invented name and number on the same record), a filler one, a contradicting one when a code fact
    allows it, and one citing a record the prompt does not have."""
    rid, words = _title(user)
    out = [{"text": f"改动涉及「{words}」。" if zh else f"The change covers \"{words}\".", "records": [rid]},
           {"text": (f"它让 `{INVENTED_NAME}` 快了 {INVENTED_NUMBER} 倍。" if zh else
                     f"It makes `{INVENTED_NAME}` {INVENTED_NUMBER} times faster."), "records": [rid]},
           {"text": ("这对于确保 NPU 环境下的兼容性和性能至关重要。" if zh else
                     "This is crucial for compatibility and performance on NPU."), "records": [rid]},
           {"text": (f"另见「{words}」的 {INVENTED_REF}。" if zh else f"See {INVENTED_REF} on \"{words}\"."),
            "records": [999]}]
    contra = _contradiction(user, zh)
    return out + ([contra] if contra else [])


def _item_reply(user: str, zh: bool) -> dict[str, Any]:
    if _records(user):
        return {k: _mix(user, zh) for k in ("summary", "mechanism", "why", "boundary", "risks")}
    # a prompt without records (a client test): plain strings, one grounded sentence and an invented one
    title = re.search(r"^(?:标题|Title)[:：](.*)$", user, re.M)
    words = (title.group(1).strip() if title else "the change")[:60]
    if zh:
        return {"summary": f"该变更涉及「{words}」。它把吞吐提升了 {INVENTED_NUMBER} 倍。",
                "mechanism": f"改动调整了「{words}」的实现。详见 {INVENTED_REF}。"}
    return {"summary": f"This change covers \"{words}\" and touches the serving path. "
                       f"It makes throughput {INVENTED_NUMBER} times higher.",
            "mechanism": f"The change reworks \"{words}\". See {INVENTED_REF} for details."}


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
    """The row prompt: a supported sentence naming the item, then the unsupported, filler and contradicting ones."""
    found = re.search(r"^(?:条目|Item) ([\w.-]+/[\w.-]+#\d+)", user, re.M)
    ref = found.group(1) if found else ""
    files = [(rid, text.split(": ", 1)[-1].split(", ")[0]) for rid, label, text in _records(user)
             if label in ("改动文件", "Files changed")]
    rid, words = files[0] if files else _title(user)
    first = {"text": (f"模型结论：{ref} 的改动落在 `{words}`。" if zh else
                      f"Model conclusion: {ref} changes `{words}`."), "records": [rid]}
    return {"conclusion": [first, *_mix(user, zh)[1:]]}


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[。！？])|(?<=[.!?])\s+", text, maxsplit=1)[0]


def _salted(data: Any, zh: bool) -> Any:
    """Every string (names and list items too, refs excepted): its first, grounded sentence, then an invented one."""
    if isinstance(data, dict):
        return {k: v if k in ("ref", "records") else _salted(v, zh) for k, v in data.items()}
    if isinstance(data, list):
        return [_salted(v, zh) for v in data]
    if not isinstance(data, str):
        return data
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
