"""The run of the model stage: the summary of what it did, the jobs (a prompt and what its reply is checked
against), the cache lookups, the requests in flight and the arrivals stored as they come, and the checks that
keep a reply's sentences (item-wide grounding for report prose, cited records for item prose)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from sqlalchemy.engine import Engine

from ..store import llm_cache
from ..store.llm_cache import Cached, CacheKey
from .cited import CITED_REASONS, Cited, Support, check_field, join_sentences, seam
from .client import LlmClient, LlmConfig, LlmError, Reply, Request, RunFailure
from .grounding import Grounds, field_language_ok, ground_counted, sentences
from .prompts import Prompt
from .records import Record

FAILED = "__failed__"  # a cached reply holding only this key is a failure and its reason
_LANG_NAMES = {"zh": "Simplified Chinese", "en": "English"}

@dataclass(slots=True)
class LlmRunSummary:
    """What the stage did: requests, cache hits, failures, dropped sentences, tokens; and the prose."""

    model: str = ""
    requests: int = 0
    cached: int = 0
    failed: int = 0
    proposed: int = 0  # sentences the replies proposed
    kept: int = 0  # sentences that reached the prose
    dropped: int = 0  # sentences removed by grounding (all reasons)
    dropped_by: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CITED_REASONS, 0))
    malformed: int = 0  # reply fields of no usable shape (their rule text stands)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (item ref or report, why it fell back)
    notes: list[str] = field(default_factory=list)  # run-level events (json_schema refused)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prose: dict[str, dict[str, str]] = field(default_factory=dict)  # item ref -> summary/mechanism/why/boundary/risks
    # item ref -> field (the item prompt's, and "conclusion" of the row prompt) -> the kept sentences and their records
    cited: dict[str, dict[str, list[Cited]]] = field(default_factory=dict)
    records: dict[str, list[Record]] = field(default_factory=dict)  # item ref -> the records its prompts showed
    report: dict[str, Any] = field(default_factory=dict)  # weekly: executive_summary, themes, recommendations;
    #                                                        daily: headline, conclusions {ref: one line}
    prompts: list[str] = field(default_factory=list)  # --dry-run: the rendered prompts
    errors: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for stderr or the run record."""
        by = ", ".join(f"{n} {k}" for k, n in self.dropped_by.items())
        return (f"llm {self.model}: {self.requests} request(s), {self.cached} cached, {self.failed} failed, "
                f"{self.proposed} sentence(s) proposed, {self.kept} kept, {self.dropped} dropped ({by}), "
                f"{self.malformed} malformed field(s), tokens {self.prompt_tokens}+{self.completion_tokens}")

    def lines(self) -> list[str]:
        """The summary line, then one line per failure (rule text used instead) and per run-level note."""
        return [self.line(), *(f"llm: {key}: rule text kept: {why}" for key, why in self.failures),
                *(f"llm: {note}" for note in self.notes)]

    def fail(self, key: str, why: str) -> None:
        self.failed += 1
        self.failures.append((key, why))
        self.errors.append(f"{key}: {why}")


@dataclass(slots=True)
class _Job:
    key: str  # item ref, or "report"
    prompt: Prompt
    messages: list[dict[str, str]]
    grounds: Grounds
    lang: str
    support: Support | None = None  # the item's records: its reply cites them sentence by sentence
    sha: str = ""  # sha256 of the messages, schema and max_tokens: with prompt id, version and model, the cache key

    def __post_init__(self) -> None:
        # the completion cap is part of the key: a reply cut at a lower cap says nothing of a higher one
        payload = json.dumps([self.messages, self.prompt.schema, self.prompt.max_tokens], ensure_ascii=False,
                             sort_keys=True)
        self.sha = hashlib.sha256(payload.encode()).hexdigest()

    def cache_key(self, model: str) -> CacheKey:
        return CacheKey(self.prompt.id, self.prompt.version, model, self.sha)


def _prose_text(data: Any) -> str:
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        return " ".join(_prose_text(v) for k, v in data.items() if k not in ("name", "ref"))
    if isinstance(data, list):
        return " ".join(_prose_text(v) for v in data)
    return ""


def _strings(data: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every prose string of a reply with its path (refs are keys, not prose)."""
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for k, v in data.items():
            if k != "ref":
                yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _strings(v, f"{path}[{i}]")


def _checker(lang: str) -> Callable[[dict[str, Any]], str | None]:
    """Each field on its own must be in `lang` (one Chinese field does not carry an English one)."""
    def check(data: dict[str, Any]) -> str | None:
        wrong = [path for path, text in _strings(data, "") if not field_language_ok(text, lang)]
        if not wrong:
            return None
        return f"{', '.join(wrong[:6])} must be written in {_LANG_NAMES[lang]}"
    return check


def _request(job: _Job) -> Request:
    return Request(job.key, job.messages, job.prompt.schema, job.prompt.id, _checker(job.lang),
                   max_tokens=job.prompt.max_tokens)


_Finish = Callable[[_Job, dict[str, Any]], None]  # what a stage does with a reply (grounding), as it arrives


def _pending(engine: Engine, model: str, jobs: Iterable[_Job], dry_run: bool, summary: LlmRunSummary,
             replies: dict[str, dict[str, Any]], seen: list[_Job], finish: _Finish | None = None,
             retry_failed: bool = False) -> Iterator[Request]:
    """Requests for the jobs the cache cannot answer, prepared chunk by chunk while earlier ones are sent.
    Chunks grow 4, 4, 8, 16 up to 32 jobs: the first requests go out early, later ones batch the cache lookups."""
    chunk: list[_Job] = []
    for job in chain(jobs, [None]):
        if job is not None:
            chunk.append(job)
            if len(chunk) < min(max(len(seen), 4), 32):
                continue
        seen.extend(chunk)
        cached = llm_cache.get_many(engine, [j.cache_key(model) for j in chunk])
        for j in chunk:
            hit = cached.get(j.cache_key(model))
            if hit is not None and FAILED in hit.reply and not retry_failed:
                summary.cached += 1
                summary.fail(j.key, f"{hit.reply[FAILED]} (cached; --retry-failed resends it)")
            elif hit is not None and FAILED not in hit.reply:
                replies[j.key], summary.cached = hit.reply, summary.cached + 1
                if finish is not None:
                    finish(j, hit.reply)
            elif dry_run:
                summary.prompts.append(f"=== {j.prompt.id} v{j.prompt.version} {j.key} ===\n"
                                       + "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in j.messages))
            else:
                yield _request(j)
        chunk = []


class _Arrivals:
    """What happens in the run's thread as each request finishes, while later ones are in flight: the reply
    is stored (in transactions of up to 32 rows or every second, so a run that is killed or fails keeps
    the replies it already paid for, and the last write is short) and handed to the stage's `finish`."""

    def __init__(self, engine: Engine, model: str, seen: list[_Job], finish: _Finish | None) -> None:
        self.engine, self.model, self.seen, self.finish = engine, model, seen, finish
        self.jobs: dict[str, _Job] = {}
        self.indexed = 0  # how much of `seen` is in `jobs`
        self.rows: list[tuple[CacheKey, Cached]] = []
        self.last = time.monotonic()

    def add(self, key: str, answer: Reply | LlmError) -> None:
        if isinstance(answer, RunFailure):
            return  # the server, the budget or the deadline failed, not this prompt: the next run sends it
        if key not in self.jobs:
            self.jobs.update((j.key, j) for j in self.seen[self.indexed:])
            self.indexed = len(self.seen)
        job = self.jobs[key]
        if isinstance(answer, LlmError):  # the same prompt fails the same way at temperature 0: remember why
            self.rows.append((job.cache_key(self.model), Cached({FAILED: str(answer)}, 0, 0)))
        else:
            self.rows.append((job.cache_key(self.model), Cached(answer.data, answer.prompt_tokens,
                                                                answer.completion_tokens)))
        if len(self.rows) >= 32 or time.monotonic() - self.last >= 1.0:
            self.flush()
        if self.finish is not None and not isinstance(answer, LlmError):
            self.finish(job, answer.data)

    def flush(self) -> None:
        rows, self.rows, self.last = self.rows, [], time.monotonic()
        llm_cache.put_many(self.engine, rows)


def _run(engine: Engine, config: LlmConfig, jobs: Iterable[_Job], dry_run: bool, client: LlmClient | None,
         tick: Callable[[int], None] | None, summary: LlmRunSummary, finish: _Finish | None = None
         ) -> tuple[dict[str, dict[str, Any]], list[_Job]]:
    """Replies by job key (from the cache, else from the model, then cached; failures counted) and the jobs.
    `finish(job, reply)`, when given, runs in this thread for every reply as soon as it is known."""
    replies: dict[str, dict[str, Any]] = {}
    seen: list[_Job] = []
    pending = _pending(engine, config.model, jobs, dry_run, summary, replies, seen, finish, config.retry_failed)
    if dry_run:
        list(pending)
        return replies, seen
    arrivals = _Arrivals(engine, config.model, seen, finish)
    own = client is None
    client = client or LlmClient(config)
    try:
        answers = client.complete_all(pending, tick, arrivals.add)
    finally:
        if own:
            client.close()
        arrivals.flush()
    summary.notes.extend(client.notes)
    for job in (j for j in seen if j.key in answers):
        answer = answers[job.key]
        if isinstance(answer, LlmError):
            summary.fail(job.key, str(answer))
            continue
        summary.requests += 1
        summary.prompt_tokens += answer.prompt_tokens
        summary.completion_tokens += answer.completion_tokens
        replies[job.key] = answer.data
    return replies, seen


def _grounded(text: Any, grounds: Grounds, summary: LlmRunSummary, filler: bool = True) -> str:
    """`text` (any reply value: only a string is prose) without the sentences that must go, counted by reason.
    `filler=False` for names (a theme's name is short and need not name an identifier)."""
    kept, dropped = ground_counted(text.strip() if isinstance(text, str) else "", grounds, filler)
    said = sentences(kept)
    kept_sentences = []
    for s in said:  # the checks of cited prose that need no records: no seam, no English grammar in zh
        reason = "seam" if seam(s, grounds.lang) else "language" if _spliced_zh(s, grounds.lang) else None
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
        else:
            kept_sentences.append(s)
    for reason, n in dropped.items():
        summary.dropped_by[reason] += n
        summary.dropped += n
    summary.proposed += sum(dropped.values()) + len(kept_sentences)
    summary.kept += len(kept_sentences)
    return kept if len(kept_sentences) == len(said) else join_sentences(kept_sentences, grounds.lang)


def _spliced_zh(s: str, lang: str) -> bool:
    if lang != "zh":
        return False
    from ..render.zh_words import function_words
    from .cited import _QUOTED

    return bool(function_words(_QUOTED.sub(" ", s)))


def _cited(value: Any, support: Support, summary: LlmRunSummary) -> list[Cited]:
    """The sentences of one reply field that their cited records hold, the rest counted by reason."""
    kept, dropped, n, ok = check_field(value, support)
    summary.proposed += n
    summary.kept += len(kept)
    summary.malformed += 0 if ok else 1
    for reason, k in dropped.items():
        summary.dropped_by[reason] += k
        summary.dropped += k
    return kept
