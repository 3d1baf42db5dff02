"""A small client for any OpenAI-compatible `POST {base}/chat/completions` server (vLLM, Ollama, DeepSeek...).

Requests run on a bounded thread pool over HTTP/1.1 keep-alive connections (the standard library's
`http.client`: a third of httpx's CPU per request, which counts when 16 threads share the GIL). HTTP(S)
proxies come from the environment as for curl (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY); loopback
servers are always reached directly. 429 (honouring Retry-After), 5xx, timeouts and connection errors
are retried with backoff. Replies must be one JSON object matching the prompt's schema; a reply that is
not gets exactly one repair request. A token budget caps a run. The API key is sent in a header and
scrubbed from every message this module produces; proxy credentials never appear in one.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import select
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from email.message import Message
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from ..errors import RadarError

JSON_MODES = ("json_object", "json_schema")
_RETRY_STATUS = {429, 500, 502, 503, 504}
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


class LlmError(RadarError):
    """A model request failed for good (after retries), or its reply stayed invalid after the repair."""


class BudgetExhausted(LlmError):
    """The run's token budget is spent; remaining requests are not sent."""


@dataclass(frozen=True, slots=True)
class LlmConfig:
    """Where and how to ask the model; `api_key` is never printed (repr excludes it)."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    json_mode: str = "json_object"
    max_concurrency: int = 4
    timeout: float = 60.0
    token_budget: int = 200_000
    language: str = ""  # "" = the report language
    retries: int = 3
    max_wait: float = 30.0  # longest Retry-After honoured, in seconds


@dataclass(slots=True)
class Request:
    """One prompt: messages, the schema its JSON reply must match, and a validator for its prose."""

    key: str
    messages: list[dict[str, str]]
    schema: dict[str, Any]
    schema_name: str = "reply"
    check: Callable[[dict[str, Any]], str | None] | None = None  # returns a problem, or None


@dataclass(slots=True)
class Reply:
    """A validated JSON reply and the tokens it cost (summed over a repair)."""

    data: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    repaired: bool = False


class Budget:
    """Tokens spent by a run, shared by the worker threads."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used, self._lock = limit, 0, threading.Lock()

    def check(self) -> None:
        with self._lock:
            if self.limit and self.used >= self.limit:
                raise BudgetExhausted(f"token budget of {self.limit} spent")

    def spend(self, tokens: int) -> None:
        with self._lock:
            self.used += tokens


def validate(data: Any, schema: dict[str, Any], where: str = "reply") -> str | None:
    """The first way `data` breaks the (small JSON Schema subset) `schema`, or None when it fits."""
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float), "boolean": bool}
    if kind and not isinstance(data, types[kind]):
        return f"{where} must be a {kind}"
    if kind == "object":
        missing = [k for k in schema.get("required", []) if k not in data]
        if missing:
            return f"{where} lacks {', '.join(missing)}"
        for key, sub in schema.get("properties", {}).items():
            if key in data and (problem := validate(data[key], sub, f"{where}.{key}")):
                return problem
    if kind == "array":
        for i, value in enumerate(data):
            if problem := validate(value, schema.get("items", {}), f"{where}[{i}]"):
                return problem
    return None


def parse_reply(content: str, schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """A reply's JSON object (code fences tolerated) and the problem with it, if any."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at char {exc.pos})"
    problem = validate(data, schema)
    return (data, problem) if problem else (data, None)


class _Answer:
    """Status, headers and body of one HTTP exchange."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Message, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def _proxy_url(scheme: str, host: str) -> SplitResult | None:
    """The environment's proxy for `scheme://host` (None: connect directly)."""
    if host.lower() in _LOOPBACK or not any(k.lower().endswith("_proxy") for k in os.environ):
        return None
    import urllib.request  # only now (~5 ms): the environment rules, NO_PROXY matching included, are urllib's

    proxies = urllib.request.getproxies_environment()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass_environment(host, proxies):
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise LlmError(f"only http:// proxies are supported for the model server (the {scheme} proxy "
                       f"in the environment is {parts.scheme}://)")
    return parts


class _Connections:
    """Keep-alive connections to the model server (through a proxy when the environment names one).

    A worker takes an idle connection or opens one, sends one request on it and gives it back, so a run
    holds at most `max_concurrency` connections and reuses them across requests and runs of the client.
    """

    def __init__(self, base_url: str, timeout: float) -> None:
        self.timeout, self.problem = timeout, ""  # why no request can be sent (a bad URL or proxy)
        self.headers: dict[str, str] = {}  # added to each request (plain-HTTP proxy only)
        self.proxy, self._proxy_auth = None, {}
        self._ssl: ssl.SSLContext | None = None
        self._idle: deque[http.client.HTTPConnection] = deque()
        self._all: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        url = urlsplit(base_url.rstrip("/"))
        self.https = url.scheme == "https"
        self.host, self.target = url.hostname or "", f"{url.path}/chat/completions" + (f"?{url.query}" if url.query else "")
        try:
            self.port = url.port or (443 if self.https else 80)
            if url.scheme not in ("http", "https") or not self.host:
                raise ValueError
        except ValueError:
            self.problem = "the model base URL must look like http(s)://HOST[:PORT]/PATH"
            return
        try:
            self.proxy = _proxy_url(url.scheme, self.host)
        except LlmError as exc:
            self.problem = str(exc)
            return
        if self.proxy is not None and self.proxy.username is not None:
            user_pass = f"{unquote(self.proxy.username)}:{unquote(self.proxy.password or '')}"
            self._proxy_auth = {"Proxy-Authorization": f"Basic {base64.b64encode(user_pass.encode()).decode()}"}
        if self.proxy is not None and not self.https:  # a plain-HTTP proxy gets the absolute URL
            netloc = url.netloc.rpartition("@")[2]
            self.target = f"http://{netloc}{self.target}"
            self.headers = {"Host": netloc, **self._proxy_auth}

    def _open(self) -> http.client.HTTPConnection:
        host, port = (self.proxy.hostname, self.proxy.port or 80) if self.proxy else (self.host, self.port)
        if self.https:
            with self._lock:
                self._ssl = self._ssl or _ssl_context()
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(host, port, timeout=self.timeout,
                                                                          context=self._ssl)
            if self.proxy is not None:  # CONNECT through the proxy (its credentials go only there), then TLS
                conn.set_tunnel(self.host, self.port, headers=self._proxy_auth)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
        with self._lock:
            self._all.append(conn)
        return conn

    def exchange(self, payload: bytes, headers: dict[str, str]) -> _Answer:
        """POST `payload` to the completions endpoint on a pooled connection."""
        if self.problem:
            raise LlmError(self.problem)
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = self._open()
        try:
            reused = conn.sock is not None
            if reused and _unusable(conn.sock):
                conn.close()  # the server closed it while it was idle
                reused = False
            try:
                return self._send(conn, payload, headers)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not reused:
                    raise
                return self._send(conn, payload, headers)  # closed as we reused it: once more, on a new one
        finally:
            self._idle.append(conn)

    def _send(self, conn: http.client.HTTPConnection, payload: bytes, headers: dict[str, str]) -> _Answer:
        try:  # a closed connection (sock None) reconnects itself here
            conn.request("POST", self.target, body=payload, headers={**headers, **self.headers})
            response = conn.getresponse()
            return _Answer(response.status, response.headers, response.read())
        except BaseException:
            conn.close()  # half-sent or half-read: reconnect before the next request
            raise

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        self._idle.clear()
        for conn in conns:
            conn.close()


def _ssl_context() -> ssl.SSLContext:
    """Certificates as httpx finds them: SSL_CERT_FILE or SSL_CERT_DIR, else certifi's bundle, else the system's."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def _unusable(sock: socket.socket) -> bool:
    """An idle keep-alive socket that is readable was closed by the server (or holds junk)."""
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


class LlmClient:
    """Chat completions against one server and model, with retries, repair and a token budget."""

    def __init__(self, config: LlmConfig, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config, self.budget, self._sleep = config, Budget(config.token_budget), sleep
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": "infra-radar"}
        if config.api_key:
            self._headers["Authorization"] = f"Bearer {config.api_key}"
        self._conns = _Connections(config.base_url, config.timeout)

    def close(self) -> None:
        self._conns.close()

    def _scrub(self, text: str) -> str:
        key = self.config.api_key
        return text.replace(key, "***") if key else text

    def _body(self, req: Request, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "temperature": 0}
        if self.config.json_mode == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": req.schema_name, "schema": req.schema, "strict": True}}
        else:
            body["response_format"] = {"type": "json_object"}
        return body

    def _wait(self, attempt: int, answer: _Answer | None) -> float:
        after = answer.headers.get("retry-after") if answer is not None else None
        if after and after.strip().replace(".", "", 1).isdigit():
            return min(float(after), self.config.max_wait)
        return min(0.5 * 2 ** attempt, self.config.max_wait)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """One completion, retried on 429/5xx/timeouts/connection errors; the decoded response JSON."""
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        problem = ""
        for attempt in range(self.config.retries + 1):
            self.budget.check()
            answer = None
            try:
                answer = self._conns.exchange(payload, self._headers)
            except TimeoutError:
                problem = f"timed out after {self.config.timeout:g}s"
            except (OSError, http.client.HTTPException) as exc:
                problem = f"connection failed ({type(exc).__name__})"
            except ValueError:  # http.client refuses a header or URL character (its message would quote it)
                raise LlmError("the request cannot be sent: the base URL or API key holds a character "
                               "HTTP does not allow") from None
            if answer is not None:
                if 200 <= answer.status < 300:
                    try:
                        return json.loads(answer.body)
                    except ValueError:
                        raise LlmError("model server answered with a body that is not JSON") from None
                if answer.status not in _RETRY_STATUS:
                    text = answer.body[:200].decode("utf-8", "replace")
                    raise LlmError(self._scrub(f"model server answered HTTP {answer.status}: {text}"))
                problem = f"HTTP {answer.status}"
            if attempt < self.config.retries:
                self._sleep(self._wait(attempt, answer))
        raise LlmError(self._scrub(f"model request failed after {self.config.retries + 1} attempts: {problem}"))

    def _ask(self, req: Request, messages: list[dict[str, str]], reply: Reply) -> str:
        answer = self._post(self._body(req, messages))
        usage = answer.get("usage") or {}
        reply.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        reply.completion_tokens += int(usage.get("completion_tokens") or 0)
        self.budget.spend(int(usage.get("total_tokens") or 0) or
                          int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0))
        try:
            return str(answer["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError):
            raise LlmError("model server answered without choices[0].message.content") from None

    def _judge(self, req: Request, content: str) -> tuple[dict[str, Any] | None, str | None]:
        data, problem = parse_reply(content, req.schema)
        if data is not None and problem is None and req.check is not None:
            problem = req.check(data)
        return data, problem

    def complete(self, req: Request) -> Reply:
        """Send `req`; on an invalid reply ask once more, saying what was wrong."""
        reply = Reply({})
        content = self._ask(req, req.messages, reply)
        data, problem = self._judge(req, content)
        if problem is not None:
            repair = [*req.messages, {"role": "assistant", "content": content[:4000]},
                      {"role": "user", "content": f"That reply is invalid: {problem}. Answer again with only "
                                                  "one JSON object that matches the schema."}]
            content = self._ask(req, repair, reply)
            data, problem = self._judge(req, content)
            reply.repaired = True
        if problem is not None or data is None:
            raise LlmError(f"{req.key}: invalid reply after one repair: {problem}")
        reply.data = data
        return reply

    def complete_all(self, reqs: Iterable[Request], tick: Callable[[int], None] | None = None,
                     done: Callable[[str, Reply | LlmError], None] | None = None) -> dict[str, Reply | LlmError]:
        """Every request on at most `max_concurrency` threads (sent while `reqs` is still being produced);
        a failure is returned, not raised. `done(key, result)` runs in the calling thread as each request
        finishes (once all are submitted), so the caller can store results while others are in flight."""
        def one(req: Request) -> tuple[str, Reply | LlmError]:
            try:
                return req.key, self.complete(req)
            except LlmError as exc:
                return req.key, exc
            finally:
                if tick:
                    tick(1)

        futures = []
        with ThreadPoolExecutor(max_workers=max(self.config.max_concurrency, 1)) as pool:
            try:
                for req in reqs:
                    futures.append(pool.submit(one, req))
            finally:  # also when producing `reqs` failed: the requests already sent still reach `done`
                if done is not None:
                    for future in as_completed(futures):
                        done(*future.result())
        return dict(future.result() for future in futures)
