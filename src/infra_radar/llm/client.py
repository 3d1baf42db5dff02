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

import http.client
import json
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from .transport import BudgetExhausted, LlmError, RequestTimeout, RunFailure, _Answer, _Connections, _TooLarge

__all__ = ["JSON_MODES", "BudgetExhausted", "LlmClient", "LlmConfig", "LlmError", "Reply", "Request",
           "RequestTimeout", "RunFailure", "parse_reply", "validate"]

JSON_MODES = ("json_object", "json_schema")
_RETRY_STATUS = {429, 500, 502, 503, 504}


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
    """The first way `data` breaks the (small JSON Schema subset) `schema`, or None when it fits. `anyOf`: the
    first alternative's problem when none fits."""
    if "anyOf" in schema:
        problems = [validate(data, alt, where) for alt in schema["anyOf"]]
        return None if any(p is None for p in problems) else next((p for p in problems if p), f"{where} fits no form")
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
                if timeout < self.config.timeout:  # cut short by the run deadline: the run's limit, not the prompt's
                    raise RunFailure(f"run deadline of {self.config.run_deadline:g}s reached after {timeout:.0f}s "
                                     "of this request") from None
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
