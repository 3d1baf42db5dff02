"""A small client for any OpenAI-compatible `POST {base}/chat/completions` server (vLLM, Ollama, DeepSeek...).

Requests run on a bounded thread pool over HTTP/1.1 keep-alive connections (the standard library's
`http.client`: a third of httpx's CPU per request, which counts when 16 threads share the GIL). HTTP(S)
proxies come from the environment as for curl (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY); loopback
servers are always reached directly. 429 (honouring Retry-After), 5xx and connection errors are retried
with backoff; a request that timed out is never resent (the server may still be working on it). Every
request has a total deadline (`timeout`, however slowly the server trickles bytes) and a reply size cap;
a run has a deadline (`run_deadline`) after which nothing more is sent. Replies must be one JSON object
matching the prompt's schema; a reply that is not gets exactly one repair request that says what was
wrong. `json_schema` rejected by the server falls back to `json_object` for the rest of the run. A token
budget caps a run. The API key is sent in a header only to the configured origin (redirects are never
followed) and scrubbed from every message this module produces before any truncation; proxy credentials
never appear in one.
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


class RunFailure(LlmError):
    """A failure of the run, not of one prompt (server unreachable, budget or run deadline spent, bad URL):
    it is not cached, so the next run sends the prompt again."""


class BudgetExhausted(RunFailure):
    """The run's token budget is spent; remaining requests are not sent."""


class RequestTimeout(LlmError):
    """The server did not answer one request within its deadline; it is not resent in this run."""


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
    run_deadline: float = 900.0  # seconds from the first request after which nothing more is sent (0: none)
    max_reply_bytes: int = 1_000_000  # a larger response body fails the request
    retry_failed: bool = False  # resend prompts whose failure is cached


@dataclass(slots=True)
class Request:
    """One prompt: messages, the schema its JSON reply must match, and a validator for its prose."""

    key: str
    messages: list[dict[str, str]]
    schema: dict[str, Any]
    schema_name: str = "reply"
    check: Callable[[dict[str, Any]], str | None] | None = None  # returns a problem, or None
    max_tokens: int = 0  # completion tokens the server may generate (0: the server's default)
    soft_check: bool = True  # a reply that still fails `check` after the repair is kept (the stage drops
    #                          the offending text); a schema problem always fails the request


@dataclass(slots=True)
class Reply:
    """A validated JSON reply and the tokens it cost (summed over a repair)."""

    data: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    repaired: bool = False
    truncated: bool = False  # the server stopped at max_tokens
    problem: str = ""  # what `check` still found after the repair (the reply was kept)


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


class _TooLarge(Exception):
    """A response body beyond the size cap."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the reply is larger than {limit} bytes")


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

    def exchange(self, payload: bytes, headers: dict[str, str], timeout: float, max_bytes: int) -> _Answer:
        """POST `payload` to the completions endpoint on a pooled connection; the whole exchange (connect,
        send, headers, body) ends within `timeout` seconds and reads at most `max_bytes` of body."""
        if self.problem:
            raise RunFailure(self.problem)
        deadline = time.monotonic() + timeout
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
                return self._send(conn, payload, headers, deadline, max_bytes)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not reused or time.monotonic() >= deadline:
                    raise
                return self._send(conn, payload, headers, deadline, max_bytes)  # closed as we reused it: once more
        finally:
            self._idle.append(conn)

    def _send(self, conn: http.client.HTTPConnection, payload: bytes, headers: dict[str, str],
              deadline: float, max_bytes: int) -> _Answer:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        conn.timeout = min(self.timeout, left)
        if conn.sock is not None:
            conn.sock.settimeout(conn.timeout)
        fired = threading.Event()

        def cut() -> None:  # the deadline passed mid-exchange (a server trickling bytes): end the socket
            fired.set()
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        watchdog = threading.Timer(left, cut)
        watchdog.daemon = True
        watchdog.start()
        try:  # a closed connection (sock None) reconnects itself here
            conn.request("POST", self.target, body=payload, headers={**headers, **self.headers})
            response = conn.getresponse()
            length = response.getheader("content-length", "")
            if length.isdigit() and int(length) > max_bytes:
                raise _TooLarge(max_bytes)
            body = bytearray()
            while chunk := response.read(min(65536, max_bytes + 1 - len(body))):
                body += chunk
                if len(body) > max_bytes:
                    raise _TooLarge(max_bytes)
                if fired.is_set():
                    raise TimeoutError
            if fired.is_set():
                raise TimeoutError  # the socket was cut before the body ended
            return _Answer(response.status, response.headers, bytes(body))
        except BaseException as exc:
            conn.close()  # half-sent or half-read: reconnect before the next request
            if fired.is_set() and not isinstance(exc, _TooLarge):
                raise TimeoutError from None
            raise
        finally:
            watchdog.cancel()

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
    """Chat completions against one server and model, with retries, repair, a token budget and a run deadline."""

    def __init__(self, config: LlmConfig, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config, self.budget, self._sleep, self._clock = config, Budget(config.token_budget), sleep, clock
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": "infra-radar"}
        if config.api_key:
            self._headers["Authorization"] = f"Bearer {config.api_key}"
        self._conns = _Connections(config.base_url, config.timeout)
        self.json_mode = config.json_mode  # json_schema rejected once -> json_object for the rest of the run
        self.notes: list[str] = []  # run-level events worth one line (the json_schema fallback)
        self._ends: float | None = None  # the run deadline, set by the first request
        self._mode_lock = threading.Lock()

    def close(self) -> None:
        self._conns.close()

    def _scrub(self, text: str) -> str:
        key = self.config.api_key
        return text.replace(key, "***") if key else text

    def _body(self, req: Request, messages: list[dict[str, str]], mode: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "temperature": 0}
        if req.max_tokens > 0:
            body["max_tokens"] = req.max_tokens
        if mode == "json_schema":
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

    def _left(self) -> float:
        """Seconds left for the next request: the per-request timeout, or less when the run deadline is near."""
        if not self.config.run_deadline:
            return self.config.timeout
        with self._mode_lock:
            if self._ends is None:
                self._ends = self._clock() + self.config.run_deadline
            left = self._ends - self._clock()
        if left <= 0:
            raise RunFailure(f"run deadline of {self.config.run_deadline:g}s passed; not sent")
        return min(self.config.timeout, left)

    def _error_text(self, answer: _Answer) -> str:
        """The first 200 characters of an error answer, the key scrubbed from the whole body first."""
        text = self._scrub(answer.body[:65536].decode("utf-8", "replace"))
        return " ".join(text.split())[:200]

    def _schema_rejected(self, mode: str, answer: _Answer) -> bool:
        """A json_schema request refused by the server (4xx/5xx other than 429): switch the run to json_object."""
        if mode != "json_schema" or answer.status < 400 or answer.status in (429, 503):
            return False
        with self._mode_lock:
            if self.json_mode == "json_schema":
                self.json_mode = "json_object"
                self.notes.append(f"the server refused json_schema (HTTP {answer.status}); "
                                  "json_object for the rest of the run")
        return True

    def _post(self, req: Request, messages: list[dict[str, str]]) -> dict[str, Any]:
        """One completion, retried on 429/5xx/connection errors (never after a timeout: the server may still
        be working on it); the decoded response JSON."""
        mode = self.json_mode
        payload = json.dumps(self._body(req, messages, mode), ensure_ascii=False, separators=(",", ":")).encode()
        problem, attempt = "", 0
        while attempt <= self.config.retries:
            self.budget.check()
            answer, timeout = None, self._left()
            try:
                answer = self._conns.exchange(payload, self._headers, timeout, self.config.max_reply_bytes)
            except TimeoutError:
                raise RequestTimeout(f"no complete answer within {timeout:g}s (not resent: the server may "
                                     "still be working on it)") from None
            except _TooLarge as exc:
                raise LlmError(str(exc)) from None
            except (OSError, http.client.HTTPException) as exc:
                problem = f"connection failed ({type(exc).__name__})"
            except ValueError:  # http.client refuses a header or URL character (its message would quote it)
                raise RunFailure("the request cannot be sent: the base URL or API key holds a character "
                                 "HTTP does not allow") from None
            if answer is not None:
                if 200 <= answer.status < 300:
                    try:
                        return json.loads(answer.body)
                    except ValueError:
                        raise LlmError("model server answered with a body that is not JSON") from None
                if self._schema_rejected(mode, answer):
                    mode = "json_object"  # resent at once, not counted as an attempt
                    payload = json.dumps(self._body(req, messages, mode), ensure_ascii=False,
                                         separators=(",", ":")).encode()
                    continue
                if answer.status not in _RETRY_STATUS:
                    raise LlmError(f"model server answered HTTP {answer.status}: {self._error_text(answer)}")
                problem = f"HTTP {answer.status}"
            if attempt < self.config.retries:
                self._sleep(self._wait(attempt, answer))
            attempt += 1
        failure = RunFailure if problem.startswith("connection") else LlmError
        raise failure(self._scrub(f"model request failed after {self.config.retries + 1} attempts: {problem}"))

    def _ask(self, req: Request, messages: list[dict[str, str]], reply: Reply) -> str:
        answer = self._post(req, messages)
        usage = answer.get("usage") or {}
        reply.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        reply.completion_tokens += int(usage.get("completion_tokens") or 0)
        self.budget.spend(int(usage.get("total_tokens") or 0) or
                          int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0))
        try:
            choice = answer["choices"][0]
            content = str(choice["message"]["content"] or "")
        except (KeyError, IndexError, TypeError):
            raise LlmError("model server answered without choices[0].message.content") from None
        if choice.get("finish_reason") == "length":
            reply.truncated = True
        return content

    def _judge(self, req: Request, content: str, reply: Reply) -> tuple[dict[str, Any] | None, str | None, bool]:
        """The reply's data, its problem and whether the problem is the schema's (else `check`'s)."""
        data, problem = parse_reply(content, req.schema)
        if problem is not None and reply.truncated:
            problem += f" (cut at max_tokens={req.max_tokens})"
        if data is not None and problem is None and req.check is not None:
            checked = req.check(data)
            return data, checked, False
        return data, problem, True

    def complete(self, req: Request) -> Reply:
        """Send `req`; on an invalid reply ask once more, saying what was wrong."""
        reply = Reply({})
        content = self._ask(req, req.messages, reply)
        data, problem, hard = self._judge(req, content, reply)
        if problem is not None:
            reply.truncated = False
            repair = [*req.messages, {"role": "assistant", "content": content[:4000]},
                      {"role": "user", "content": f"That reply is invalid: {problem}. Fix exactly that and answer "
                                                  "again with only one JSON object that matches the schema."}]
            content = self._ask(req, repair, reply)
            data, problem, hard = self._judge(req, content, reply)
            reply.repaired = True
        if problem is not None and (hard or not req.soft_check or data is None):
            raise LlmError(f"invalid reply after one repair: {problem}")
        reply.data, reply.problem = data or {}, problem or ""
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
