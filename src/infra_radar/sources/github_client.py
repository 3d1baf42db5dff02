"""HTTP to GitHub: the one client through which every call of the project goes.

`GitHubClient` sends requests (the token only to the configured API origins, bounded retries, rate-limit
waits, a total time and a byte cap per request, redaction before any message is cut). github.py turns
its answers into Items.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import httpx

from .. import __version__
from ..errors import SourceError, clip, redact
from .http import Deadline, TooLarge, bounded_client, read_capped

log = logging.getLogger(__name__)

DEFAULT_API = "https://api.github.com"
TOTAL_TIMEOUT = 120.0  # seconds one request may take, all of it (RADAR_FETCH_TOTAL_TIMEOUT)
MAX_BYTES = 64 * 1024 * 1024  # the largest answer read (RADAR_FETCH_MAX_BYTES); a GraphQL page is a few MB
FAR = 1e9  # seconds: a rate-limit wait or reset further away than this (31 years) is read as this
Wait = Callable[[float, str], None]
IsBot = Callable[[str], bool]
Known = Callable[[str, int, datetime], bool]  # (repo, PR number, updatedAt): stored with this update time?


class StopFetch(SourceError):
    """The whole fetch must stop: no network, credentials rejected, or a rate limit past --max-wait."""


class RateLimited(StopFetch):
    """The rate limit is spent and its reset is further away than --max-wait."""

    def __init__(self, message: str, reset_at: datetime | None) -> None:
        super().__init__(message)
        self.reset_at = reset_at


class PageError(SourceError):
    """One page could not be read (malformed body, API error); the pass stops before it."""


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Where the API lives and the token to use (never printed: see `redact`)."""

    api: str = DEFAULT_API
    graphql: str = DEFAULT_API + "/graphql"
    token: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Endpoints:
        """GITHUB_API_URL / GITHUB_GRAPHQL_URL / GITHUB_TOKEN or GH_TOKEN from the environment."""
        env = os.environ if env is None else env
        api = (env.get("GITHUB_API_URL") or DEFAULT_API).rstrip("/")
        token = (env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or "").strip() or None
        return cls(api, (env.get("GITHUB_GRAPHQL_URL") or graphql_url(api)).rstrip("/"), token)


def graphql_url(api: str) -> str:
    """The GraphQL endpoint beside a REST root: GHE `https://H/api/v3` -> `https://H/api/graphql`."""
    api = api.rstrip("/")
    if api.endswith("/api/v3"):
        return api.removesuffix("/v3") + "/graphql"
    return api + "/graphql"


def graphql_queries() -> dict[str, str]:
    """Every GraphQL query the project sends, by name (the packaged defaults/graphql/*.graphql)."""
    folder = resources.files("infra_radar") / "defaults" / "graphql"
    return {p.name.removesuffix(".graphql"): p.read_text(encoding="utf-8")
            for p in folder.iterdir() if p.name.endswith(".graphql")}


@dataclass(slots=True)
class RestResponse:
    """A REST answer: status, decoded JSON (None on 304), its ETag and the Link rel=next URL."""

    status: int
    data: Any
    etag: str | None
    next_url: str | None


_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


def next_link(header: str | None) -> str | None:
    """The rel="next" URL of a Link header."""
    found = _LINK_NEXT.search(header or "")
    return found.group(1) if found else None


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the default port spelled out: what credentials are bound to."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return ("", url, None)
    return parsed.scheme, parsed.host.lower(), parsed.port or {"https": 443, "http": 80}.get(parsed.scheme)


class GitHubClient:
    """HTTP to GitHub: auth, bounded retries with backoff, rate-limit waits, a request count.

    Each request is bounded: `timeout` per socket read, `total_timeout` for the whole request (headers,
    body and redirects) and `max_bytes` for its decoded body. The token goes only to the configured API
    and GraphQL origins: never with a redirect or a Link to another host.
    """

    def __init__(self, endpoints: Endpoints, *, timeout: float = 30.0, retries: int = 4, backoff: float = 1.0,
                 max_wait: float = 900.0, wait: Wait | None = None, clock: Callable[[], float] = time.time,
                 total_timeout: float = TOTAL_TIMEOUT, max_bytes: int = MAX_BYTES) -> None:
        self.endpoints, self.retries, self.backoff, self.max_wait = endpoints, retries, backoff, max_wait
        self.wait, self.clock = wait or (lambda seconds, _reason: time.sleep(seconds)), clock
        self.total_timeout, self.max_bytes = total_timeout, max_bytes
        self.requests = 0
        self.remaining: int | None = None
        self.reset_at: datetime | None = None
        self._origins = {origin(endpoints.api), origin(endpoints.graphql)}
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                   "User-Agent": f"infra-radar/{__version__}"}
        self._deadline = Deadline()
        self._http = bounded_client(self._deadline, headers=headers, timeout=min(timeout, total_timeout),
                                    follow_redirects=True)

    @property
    def anonymous(self) -> bool:
        return not self.endpoints.token

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def redact(self, text: str) -> str:
        """`text` with the token blanked out (every message that leaves this module goes through it)."""
        return redact(text, [self.endpoints.token or ""])

    def cut(self, text: str, limit: int) -> str:
        """`text` redacted, then cut to `limit` characters (never the other way round)."""
        return clip(self.redact(text), limit)

    def rest_url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else f"{self.endpoints.api}/{path.lstrip('/')}"

    def graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """Run a query; its `data`, or PageError naming GitHub's first error."""
        _resp, body = self._request("POST", self.endpoints.graphql, json={"query": query, "variables": variables})
        if not isinstance(body, dict):
            raise PageError("GraphQL answer is not an object")
        if body.get("errors"):
            errors = body["errors"]
            first = errors[0] if isinstance(errors, list) and errors else errors
            if not isinstance(first, dict):
                first = {"message": str(first)}
            raise PageError(self.cut(f"GraphQL error {first.get('type') or ''}: {first.get('message')}", 300))
        data = {} if body.get("data") is None else body["data"]
        if not isinstance(data, dict):
            raise PageError(f"GraphQL answer's data is a {type(data).__name__}, not an object")
        self._note_graphql_limit(data)
        return data

    def rest(self, path: str, params: dict[str, Any] | None = None, etag: str | None = None) -> RestResponse:
        """GET a REST resource, conditionally when `etag` is given (a 304 has data None)."""
        headers = {"If-None-Match": etag} if etag else {}
        url = self.rest_url(path)
        if origin(url) not in self._origins:
            raise PageError(f"{_host(self.endpoints.api)}: not following a link to another host ({_host(url)})")
        resp, body = self._request("GET", url, params=params, headers=headers)
        following = next_link(resp.headers.get("link"))
        if following and origin(following) not in self._origins:
            raise PageError(f"{_host(url)}: its next page is on another host ({_host(following)}); not following it")
        return RestResponse(resp.status_code, body, resp.headers.get("etag"), following)

    # -- one request, with every retry and wait ----------------------------------------------------

    def _request(self, method: str, url: str, **kw: Any) -> tuple[httpx.Response, Any]:
        failures = limit_waits = 0
        while True:
            problem = None
            try:
                resp = self._send(method, url, **kw)
            except httpx.TimeoutException:
                problem = (f"no complete answer within {self.total_timeout:g} s "
                           f"(or silent for {self._http.timeout.read:g} s)")
            else:
                limit = self._limit_wait(resp)
                if limit is not None:
                    limit_waits += 1
                    self._wait_limit(limit, limit_waits, resp)
                    continue
                if resp.status_code >= 500:
                    problem = f"HTTP {resp.status_code}"
                else:
                    try:
                        return resp, self._decode(resp, url)
                    except PageError as exc:
                        problem = str(exc)
            failures += 1
            if failures > self.retries:
                raise PageError(self.redact(f"{_host(url)}: {problem} (gave up after {failures} tries)"))
            delay = min(self.backoff * 2 ** (failures - 1), 60.0)
            log.warning("%s: %s; retrying in %.1fs", _host(url), self.redact(problem), delay)
            self.wait(delay, f"retry after {problem}")

    def _send(self, method: str, url: str, **kw: Any) -> httpx.Response:
        log.debug("%s %s", method, self.redact(url))
        self.requests += 1
        headers = dict(kw.pop("headers", None) or {})
        if self.endpoints.token and origin(url) in self._origins:
            headers["Authorization"] = f"Bearer {self.endpoints.token}"  # httpx drops it on a cross-origin redirect
        self._deadline.start(self.total_timeout)
        try:
            with self._http.stream(method, url, headers=headers, **kw) as resp:
                resp._content = read_capped(resp, self.max_bytes)  # noqa: SLF001 - what Response.read() sets
        except httpx.TimeoutException:
            raise
        except TooLarge as exc:
            raise PageError(f"{_host(url)}: {exc} (RADAR_FETCH_MAX_BYTES)") from None
        except httpx.TooManyRedirects:
            raise PageError(f"{_host(url)}: redirected more than {self._http.max_redirects} times") from None
        except (httpx.ConnectError, httpx.UnsupportedProtocol) as exc:
            raise StopFetch(self.cut(f"cannot reach {_host(url)}: {_reason(exc)}", 300)) from None
        except (httpx.TransportError, httpx.DecodingError) as exc:  # dropped mid-answer, bad gzip: like a 5xx
            return httpx.Response(599, text=self.cut(str(exc), 300), request=exc.request)
        finally:
            self._deadline.clear()
        self._note_limits(resp)
        if resp.status_code == 401:
            raise StopFetch(f"{_host(url)} rejected the credentials (401): check GITHUB_TOKEN / GH_TOKEN")
        return resp

    def _decode(self, resp: httpx.Response, url: str) -> Any:
        if resp.status_code == 304:
            return None
        if resp.status_code >= 400:
            message = self.cut(_message(resp), 200)
            raise SourceError(self.redact(f"{_host(url)}: HTTP {resp.status_code} for {urlsplit(url).path}: {message}"))
        try:
            return resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            why = getattr(exc, "msg", None) or type(exc).__name__
            raise PageError(f"malformed JSON from {urlsplit(url).path} ({why})") from None

    # -- rate limits ---------------------------------------------------------------------------------

    def _note_limits(self, resp: httpx.Response) -> None:
        remaining, reset = resp.headers.get("x-ratelimit-remaining"), resp.headers.get("x-ratelimit-reset")
        if remaining is not None and remaining.isdigit() and len(remaining) < 12:
            self.remaining = int(remaining)
        if reset is not None and reset.isdigit():
            self.reset_at = _utc(min(_number(reset), self.clock() + FAR))

    def _note_graphql_limit(self, data: dict[str, Any]) -> None:
        limit = data.get("rateLimit") or {}
        if isinstance(limit.get("remaining"), int):
            self.remaining = limit["remaining"]

    def _limit_wait(self, resp: httpx.Response) -> float | None:
        """Seconds to wait when `resp` is a rate-limit answer (primary or secondary), else None."""
        if resp.status_code not in (403, 429) and not _graphql_rate_limited(resp):
            return None
        retry_after = resp.headers.get("retry-after", "")
        if retry_after.isdigit():
            return min(_number(retry_after), FAR)
        if resp.headers.get("x-ratelimit-remaining") == "0" or _graphql_rate_limited(resp):
            reset = resp.headers.get("x-ratelimit-reset", "")
            return min(max(0.0, _number(reset) - self.clock()) + 1, FAR) if reset.isdigit() else 60.0
        if "secondary rate limit" in resp.text.lower():
            return 60.0  # the documented default when GitHub gives no Retry-After
        return None

    def _wait_limit(self, seconds: float, attempt: int, resp: httpx.Response) -> None:
        primary = "retry-after" not in resp.headers and (
            resp.headers.get("x-ratelimit-remaining") == "0" or _graphql_rate_limited(resp))
        if seconds > self.max_wait or attempt > self.retries + 2:
            reset = _utc(self.clock() + seconds).replace(microsecond=0)
            why = (f"{math.ceil(seconds)} s, more than --max-wait {self.max_wait:g} s" if seconds > self.max_wait
                   else f"still limited after {attempt - 1} waits")
            raise RateLimited(f"GitHub rate limit reached; it resets at {reset:%Y-%m-%d %H:%M:%S} UTC ({why}): "
                              "progress is saved, rerun `radar fetch` after that time", reset)
        kind = "rate limit" if primary else "secondary rate limit"
        log.warning("%s: waiting %.0f s", kind, seconds)
        self.wait(seconds, kind)


def _number(digits: str) -> float:
    """A header's decimal digits as seconds, FAR at most (a 400-digit value is not an overflow)."""
    return FAR * 1e3 if len(digits) > 15 else float(int(digits))


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(min(max(timestamp, 0.0), 32503680000.0), UTC)  # before year 3000


def _graphql_rate_limited(resp: httpx.Response) -> bool:
    return (resp.status_code == 200 and resp.request.method == "POST" and b'"RATE_LIMITED"' in resp.content[:2000])


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.split("] ", 1)[-1] if text.startswith("[Errno") else text


def _message(resp: httpx.Response) -> str:
    """The error answer's message, whole: the caller redacts it before cutting it."""
    try:
        return str(resp.json().get("message", ""))
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return resp.text
