"""A small client for any OpenAI-compatible `POST {base}/chat/completions` server (vLLM, Ollama, DeepSeek...).

Requests run on a bounded thread pool; 429 (honouring Retry-After), 5xx, timeouts and connection errors
are retried with backoff. Replies must be one JSON object matching the prompt's schema; a reply that
is not gets exactly one repair request. A token budget caps a run. The API key is sent in a header
and scrubbed from every message this module produces.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..errors import RadarError

JSON_MODES = ("json_object", "json_schema")
_RETRY_STATUS = {429, 500, 502, 503, 504}


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


class LlmClient:
    """Chat completions against one server and model, with retries, repair and a token budget."""

    def __init__(self, config: LlmConfig, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config, self.budget, self._sleep = config, Budget(config.token_budget), sleep
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        # verify only matters for https; skipping it for http saves loading the CA bundle (~0.1 s)
        self._http = httpx.Client(base_url=config.base_url.rstrip("/"), headers=headers,
                                  timeout=config.timeout, transport=transport,
                                  verify=config.base_url.startswith("https:"),
                                  limits=httpx.Limits(max_connections=max(config.max_concurrency, 1)))

    def close(self) -> None:
        self._http.close()

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

    def _wait(self, attempt: int, response: httpx.Response | None) -> float:
        after = response.headers.get("retry-after") if response is not None else None
        if after and after.strip().replace(".", "", 1).isdigit():
            return min(float(after), self.config.max_wait)
        return min(0.5 * 2 ** attempt, self.config.max_wait)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """One completion, retried on 429/5xx/timeouts; the decoded response JSON."""
        problem = ""
        for attempt in range(self.config.retries + 1):
            self.budget.check()
            response = None
            try:
                response = self._http.post("/chat/completions", json=body)
                if response.status_code not in _RETRY_STATUS:
                    response.raise_for_status()
                    return response.json()
                problem = f"HTTP {response.status_code}"
            except httpx.TimeoutException:
                problem = f"timed out after {self.config.timeout:g}s"
            except httpx.TransportError as exc:
                problem = f"connection failed ({type(exc).__name__})"
            except httpx.HTTPStatusError as exc:
                raise LlmError(self._scrub(f"model server answered HTTP {exc.response.status_code}: "
                                           f"{exc.response.text[:200]}")) from None
            except ValueError:
                raise LlmError("model server answered with a body that is not JSON") from None
            if attempt < self.config.retries:
                self._sleep(self._wait(attempt, response))
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

    def complete_all(self, reqs: Iterable[Request], tick: Callable[[int], None] | None = None
                     ) -> dict[str, Reply | LlmError]:
        """Every request on at most `max_concurrency` threads (sent while `reqs` is still being produced);
        a failure is returned, not raised."""
        def one(req: Request) -> tuple[str, Reply | LlmError]:
            try:
                return req.key, self.complete(req)
            except LlmError as exc:
                return req.key, exc
            finally:
                if tick:
                    tick(1)

        with ThreadPoolExecutor(max_workers=max(self.config.max_concurrency, 1)) as pool:
            return dict(pool.map(one, reqs))
