"""The model client's HTTP/1.1 transport and its errors: keep-alive connections to one OpenAI-compatible server
(through an http:// proxy from the environment when one applies; loopback always direct), each exchange
bounded in total time (a watchdog ends the socket at the deadline, however slowly the server trickles
bytes) and in reply size. Redirects are never followed: an answer is what the configured origin said.
"""

from __future__ import annotations

import base64
import heapq
import http.client
import os
import select
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from email.message import Message
from urllib.parse import SplitResult, unquote, urlsplit

from ..errors import RadarError

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


class _Watchdog:
    """One thread for every request's deadline: `arm(deadline, fn)` runs `fn` at `deadline` (time.monotonic())
    unless `disarm`ed first. Arming is a heap push (a thread per request would cost a thread start each)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._due: dict[int, Callable[[], None]] = {}
        self._next = 0
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, fn: Callable[[], None]) -> int:
        with self._cond:
            self._next += 1
            heapq.heappush(self._heap, (deadline, self._next))
            self._due[self._next] = fn
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="llm-watchdog", daemon=True)
                self._thread.start()
            if self._heap[0][1] == self._next:
                self._cond.notify()
            return self._next

    def disarm(self, token: int) -> None:
        with self._cond:
            self._due.pop(token, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._due:
                    heapq.heappop(self._heap)  # disarmed
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, token = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                fn = self._due.pop(token)
            try:
                fn()
            except Exception:  # noqa: BLE001  (the watchdog must outlive any one request)
                pass


_WATCHDOG = _Watchdog()


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

        alarm = _WATCHDOG.arm(deadline, cut)
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
            _WATCHDOG.disarm(alarm)

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
