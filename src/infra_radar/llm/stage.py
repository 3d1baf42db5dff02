"""The optional LLM stage: model prose for items and reports, grounded, cached, over any OpenAI-compatible server.

Rules give the facts; this stage only adds wording. It never changes the item set, states, numbers,
files or grades: it returns prose keyed by item ref (and report-level prose) that llm.render lays over
the rule-based text. Every string of a reply is grounded (llm/grounding.py): a sentence holding a
number or a `#N` the prompt's sources do not hold, one that names nothing of its item (filler) or one in
the wrong language is dropped and counted. A reply that fails for good is cached with its reason, so a
rerun sends nothing (unless --retry-failed). No `[llm]` model configured means this stage is never entered.
Configuration and prompts: llm/prompts.py (re-exported here); rendering: llm/render.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from sqlalchemy.engine import Engine

from ..config import Settings
from ..models import AnalysedItem
from ..render.escape import plain, plain_line
from ..store import llm_cache
from ..store.llm_cache import Cached, CacheKey
from .client import LlmClient, LlmConfig, LlmError, Reply, Request, RunFailure
from .grounding import DROP_REASONS, Grounds, claim_numbers, field_language_ok, ground_counted
from .prompts import (
    LlmEndpoint,
    Prompt,
    llm_config,
    llm_endpoint,
    load_prompt,
    parse_prompt,
    prompts_dir,
    render_messages,
    settings_prompt,
    use_llm,
)

__all__ = ["LlmEndpoint", "LlmRunSummary", "apply_llm", "daily_llm", "llm_config", "llm_endpoint",
           "load_prompt", "parse_prompt", "prompts_dir", "render_messages", "settings_prompt", "use_llm",
           "weekly_llm"]

FAILED = "__failed__"  # a cached reply holding only this key is a failure and its reason
ITEM_FIELDS = ("summary", "mechanism", "why", "risks")
_LANG_NAMES = {"zh": "Simplified Chinese", "en": "English"}


# --- the run ---------------------------------------------------------------------------------------

@dataclass(slots=True)
class LlmRunSummary:
    """What the stage did: requests, cache hits, failures, dropped sentences, tokens; and the prose."""

    model: str = ""
    requests: int = 0
    cached: int = 0
    failed: int = 0
    dropped: int = 0  # sentences removed by grounding (all reasons)
    dropped_by: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    failures: list[tuple[str, str]] = field(default_factory=list)  # (item ref or report, why it fell back)
    notes: list[str] = field(default_factory=list)  # run-level events (json_schema refused)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prose: dict[str, dict[str, str]] = field(default_factory=dict)  # item ref -> summary/mechanism/why/risks
    report: dict[str, Any] = field(default_factory=dict)  # weekly: executive_summary, themes, recommendations;
    #                                                        daily: headline, conclusions {ref: one line}
    prompts: list[str] = field(default_factory=list)  # --dry-run: the rendered prompts
    errors: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for stderr or the run record."""
        by = ", ".join(f"{n} {k}" for k, n in self.dropped_by.items())
        return (f"llm {self.model}: {self.requests} request(s), {self.cached} cached, {self.failed} failed, "
                f"{self.dropped} sentence(s) dropped ({by}), tokens {self.prompt_tokens}+{self.completion_tokens}")

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
    for reason, n in dropped.items():
        summary.dropped_by[reason] += n
        summary.dropped += n
    return kept


# --- items -----------------------------------------------------------------------------------------

def _item_values(ai: AnalysedItem, lang: str, target: str) -> dict[str, Any]:
    from ..render.context import claim_phrase, pick, top_files

    item, a = ai.item, ai.analysis
    files = f"+{item.additions}/-{item.deletions}, {len(item.files)} files: " + ", ".join(top_files(item.files, 8))
    return {"ref": item.ref, "kind": a.item_kind, "state": item.state, "priority": a.priority, "grade": a.grade,
            "title": item.title, "files": files, "summary": pick(a.summary, lang) or "-",
            "claims": "; ".join(claim_phrase(c) for c in a.perf_claims) or "-",
            "links": ", ".join(sorted({lk.ref for lk in a.links if lk.ref})) or "-",
            "body": item.body[:6000], "target": target}


def _item_job(ai: AnalysedItem, lang: str, target: str, prompt: Prompt | None = None) -> _Job:
    values = _item_values(ai, lang, target)
    refs = [ai.item.ref, *(lk.ref for lk in ai.analysis.links if lk.repo and lk.number is not None)]
    grounds = _item_grounds(ai, (str(v) for v in values.values()), refs, lang)
    prompt = prompt or load_prompt("item")
    return _Job(ai.item.ref, prompt, render_messages(prompt, lang, values), grounds, lang)


def _item_prose(reply: dict[str, Any], grounds: Grounds, summary: LlmRunSummary) -> dict[str, str]:
    prose = {k: _grounded(reply.get(k), grounds, summary) for k in ITEM_FIELDS}
    return {k: v for k, v in prose.items() if v}


def _start(settings: Settings, config: LlmConfig | None) -> tuple[LlmConfig | None, LlmRunSummary]:
    """The model to use (None: rules only) and an empty run summary naming it."""
    config = config or llm_config(settings)
    return config, LlmRunSummary(model=config.model if config else "")


def apply_llm(settings: Settings, engine: Engine, analysed_items: Iterable[AnalysedItem], lang: str,
              dry_run: bool = False, *, config: LlmConfig | None = None, client: LlmClient | None = None,
              tick: Callable[[int], None] | None = None) -> LlmRunSummary:
    """Grounded prose {ref: {summary, mechanism, why, risks}} for the items; never raises on model failure."""
    config, summary = _start(settings, config)
    if config is None:
        return summary
    lang = config.language or lang
    prompt = settings_prompt(settings, "item")
    jobs = (_item_job(ai, lang, settings.target, prompt) for ai in analysed_items)
    prose: dict[str, dict[str, str]] = {}  # grounded as each reply arrives, while later requests are in flight
    _, done = _run(engine, config, jobs, dry_run, client, tick, summary,
                   lambda job, reply: prose.__setitem__(job.key, _item_prose(reply, job.grounds, summary)))
    for job in done:
        if job.key in prose:
            summary.prose[job.key] = prose[job.key]
    return summary


# --- weekly ----------------------------------------------------------------------------------------

def _weekly_job(settings: Settings, inp: Any, ctx: dict[str, Any], lang: str) -> _Job:
    rows = ctx["quick"]
    summary = " ".join(plain_line(x) for x in [ctx["summary"], *ctx.get("movements", [])])
    values = {"repo": inp.repo, "target": settings.target, "start": ctx["start"], "end": ctx["end"],
              "merged": ctx["merged"], "key": ctx["key"], "merged_before": ctx["merged_before"],
              "topics": ", ".join(ctx["top_topics"]) or "-", "summary": summary,
              "themes": [{"name": plain_line(th["name"]), "count": th["count"], "refs": ", ".join(th["refs"])}
                         for th in ctx["themes"]],
              "items": [{"number": r["short"].lstrip("#"), "priority": r["priority"], "grade": r["grade"],
                         "title": r["title"], "summary": "; ".join(x for x in (plain_line(r["summary"]), plain_line(r.get("rest", "")))
                                                                   if x),
                         "claims": plain(r["claims"])} for r in rows]}
    prompt = settings_prompt(settings, "weekly")
    messages = render_messages(prompt, lang, values)
    refs = [r["ref"] for r in rows] + [m["ref"] for th in ctx["themes"] for m in th["members"]]
    by_ref = {ai.item.ref: ai.item for ai in inp.items}
    names = [by_ref[r].title for r in refs if r in by_ref] + [f.path for r in refs if r in by_ref
                                                              for f in by_ref[r].files]
    analysed = {ai.item.ref: ai for ai in inp.items}
    claims = [c for r in dict.fromkeys(refs) if r in analysed for c in analysed[r].analysis.perf_claims]
    grounds = Grounds.of(messages[1]["content"], refs, inp.repo, names=names, lang=lang, claims=claims)
    return _Job("report", prompt, messages, grounds, lang)


def _report_prose(reply: dict[str, Any], grounds: Grounds, summary: LlmRunSummary) -> dict[str, Any]:
    """Every string of the weekly reply grounded: the summary, each theme's name (numbers and references only)
    and text, each recommendation; a theme whose name or text is left empty goes."""
    themes = []
    for th in reply.get("themes", []):
        if isinstance(th, dict):
            name, text = _grounded(th.get("name"), grounds, summary, filler=False), _grounded(th.get("text"),
                                                                                               grounds, summary)
            if name and text:
                themes.append({"name": name, "text": text})
    recs = [_grounded(r, grounds, summary) for r in reply.get("recommendations", [])]
    return {"executive_summary": _grounded(reply.get("executive_summary"), grounds, summary),
            "themes": themes, "recommendations": [r for r in recs if r]}


def _weekly_ctx(inp: Any, lang: str, weights: dict[str, float] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    from ..render.context import load_strings, weekly_context

    t = load_strings(lang)
    return weekly_context(inp, t, weights), t


def weekly_llm(settings: Settings, engine: Engine, inp: Any, lang: str, dry_run: bool = False, *,
               config: LlmConfig | None = None, client: LlmClient | None = None,
               tick: Callable[[int], None] | None = None) -> LlmRunSummary:
    """Prose for a weekly report (render.context.WeeklyInput): its listed P0/P1 items and the narrative."""
    config, summary = _start(settings, config)
    if config is None:
        return summary
    lang = config.language or lang
    ctx, _ = _weekly_ctx(inp, lang, settings.focus_weights)
    listed = {r["ref"] for r in ctx["quick"]} | {m["ref"] for th in ctx["themes"] for m in th["members"]}
    # item prose for the week's P0/P1 items only: a busy week lists dozens, and a small local model takes a
    # minute or more per item prompt; P2 rows keep their rule text
    items = [ai for ai in inp.items if ai.item.ref in listed and ai.analysis.priority in ("P0", "P1")]
    prompt = settings_prompt(settings, "item")
    jobs = [*(_item_job(ai, lang, settings.target, prompt) for ai in items), _weekly_job(settings, inp, ctx, lang)]
    replies, _ = _run(engine, config, jobs, dry_run, client, tick, summary)
    for job in jobs:
        if job.key == "report" and "report" in replies:
            summary.report = _report_prose(replies["report"], job.grounds, summary)
        elif job.key in replies:
            summary.prose[job.key] = _item_prose(replies[job.key], job.grounds, summary)
    return summary


# --- daily -----------------------------------------------------------------------------------------

def _daily_ctx(inp: Any, lang: str, weights: dict[str, float] | None) -> dict[str, Any]:
    from ..render.context import daily_context, load_strings

    return daily_context(inp, load_strings(lang), weights)


def _daily_item(row: dict[str, Any], ai: AnalysedItem) -> dict[str, str]:
    from ..render.context import claim_phrase, mechanism, top_files

    decision = row["decision"] + (f" ({row['decision_reason']})" if row["decision_reason"] else "")
    # "summary" (the rule conclusion) stays available to a user's prompt file; the packaged one leaves it out
    return {"ref": row["ref"], "priority": row["priority"], "state": row["state"], "grade": row["grade"],
            "kind": row["kind"], "topics": row["topics"], "title": row["title"], "summary": plain(row["summary"]),
            "files": ", ".join(top_files(ai.item.files, 5)) or "-",
            "claims": "; ".join(claim_phrase(c) for c in ai.analysis.perf_claims) or "-",
            "decision": decision, "excerpt": mechanism(ai.item.body, 2, 400) or "-"}


def _item_grounds(ai: AnalysedItem, shown: Iterable[str], refs: list[str], lang: str = "") -> Grounds:
    """What prose about one item may mention: its body, what the prompt showed of it, its claims' figures
    and sources, and `refs`; its title and files make a sentence specific."""
    claims = ai.analysis.perf_claims
    extra = claim_numbers(v for c in claims for v in (c.before, c.after, c.change_pct, c.ratio))
    source = "\n".join([*shown, *(c.source for c in claims), ai.item.body])  # what the prompt showed first
    names = [ai.item.title, *(f.path for f in ai.item.files)]
    return Grounds.of(source, refs, ai.item.repo, extra, names, lang, claims)


def _daily_jobs(settings: Settings, inp: Any, ctx: dict[str, Any], lang: str
                ) -> tuple[_Job | None, list[tuple[str, _Job]]]:
    """The headline prompt over the window's first P0/P1 items (key "daily"; None when there is none), and
    the row prompt for each P0/P1 item with its ref (key "<ref> (conclusion)"), whose grounds are the item's."""
    by_ref = {ai.item.ref: ai for ai in inp.items}
    rows = [r for r in [*ctx["top"], *ctx["more_top"]] if r["ref"] in by_ref]
    if not rows:
        return None, []
    prompt = settings_prompt(settings, "daily")  # read once: a user's prompt file is parsed on each call
    listed = rows[:prompt.items_listed or len(rows)]
    row_prompt = settings_prompt(settings, "row")
    jobs = []
    for r in rows:
        values = {"target": settings.target, **_daily_item(r, by_ref[r["ref"]])}
        messages = render_messages(row_prompt, lang, values)
        grounds = _item_grounds(by_ref[r["ref"]], values.values(), [r["ref"]], lang)
        jobs.append((r["ref"], _Job(f"{r['ref']} (conclusion)", row_prompt, messages, grounds, lang)))
    return _headline_job(settings, prompt, by_ref, ctx, lang, listed), jobs


def _headline_job(settings: Settings, prompt: Prompt, by_ref: dict[str, AnalysedItem], ctx: dict[str, Any],
                  lang: str, rows: list[dict[str, Any]]) -> _Job:
    """The headline prompt over `rows`: a headline may mention what the prompt shows, the items' text and
    figures, and the listed items."""
    items = [_daily_item(r, by_ref[r["ref"]]) for r in rows]
    values = {"target": settings.target, "date": ctx["date"], "repos": ", ".join(ctx["repos"]) or "-",
              "scanned": ctx["scanned"], "ranked": ctx["ranked"], "by_priority": ctx["by_priority"], "items": items,
              "total": len(ctx["top"])}
    messages = render_messages(prompt, lang, values)
    refs = [r["ref"] for r in rows]
    repos = {by_ref[r].item.repo for r in refs}
    numbers = [r.rsplit("#", 1)[1] for r in refs]
    # several repositories: a bare #N is grounded only when one item of the prompt has that number
    bare = [f"#{n}" for n in numbers if numbers.count(n) == 1] if len(repos) > 1 else []
    source = "\n".join([messages[1]["content"], *(by_ref[r].item.body for r in refs)])
    claims = [c for r in refs for c in by_ref[r].analysis.perf_claims]
    extra = claim_numbers(v for c in claims for v in (c.before, c.after, c.change_pct, c.ratio))
    names = [by_ref[r].item.title for r in refs] + [f.path for r in refs for f in by_ref[r].item.files]
    head = Grounds.of(source, [*refs, *bare], repos.pop() if len(repos) == 1 else "", extra, names, lang, claims)
    return _Job("daily", prompt, messages, head, lang)


def _headline(reply: dict[str, Any], grounds: Grounds, summary: LlmRunSummary) -> str:
    """The grounded headline; one that names no item of the day is filler."""
    headline = _grounded(reply.get("headline"), grounds, summary)
    if headline and not _NAMES_ITEM.search(headline):  # "…: today's highlights" names no change of the day
        summary.dropped_by["filler"] += 1
        summary.dropped += 1
        headline = ""
    return headline


_NAMES_ITEM = re.compile(r"#\d")  # a headline must point at an item of the day (refs are grounded already)


def daily_llm(settings: Settings, engine: Engine, inp: Any, lang: str, dry_run: bool = False, *,
              config: LlmConfig | None = None, client: LlmClient | None = None,
              tick: Callable[[int], None] | None = None) -> LlmRunSummary:
    """Prose for a daily radar (render.context.DailyInput): from the daily prompt the headline of the day and
    the one-line conclusion of each P0/P1 item; from the item prompt the mechanism of each deep dive."""
    config, summary = _start(settings, config)
    if config is None:
        return summary
    lang = config.language or lang
    ctx = _daily_ctx(inp, lang, settings.focus_weights)
    by_ref = {ai.item.ref: ai for ai in inp.items}
    prompt = settings_prompt(settings, "item")
    deep = [_item_job(by_ref[d["ref"]], lang, settings.target, prompt) for d in ctx["deep"] if d["ref"] in by_ref]
    head, rows = _daily_jobs(settings, inp, ctx, lang)
    # the headline first, then the rows in rank order: a run cut short by its deadline has the top of the day
    jobs = [*([head] if head else []), *(job for _, job in rows), *deep]
    replies, _ = _run(engine, config, jobs, dry_run, client, tick, summary)
    conclusions = {}
    for ref, job in rows:
        if job.key in replies:
            text = _grounded(replies[job.key].get("conclusion"), job.grounds, summary)
            if text:
                conclusions[ref] = text
    if head is not None and (head.key in replies or conclusions):
        summary.report = {"headline": _headline(replies[head.key], head.grounds, summary)
                          if head.key in replies else "", "conclusions": conclusions}
    for job in deep:
        if job.key in replies:
            summary.prose[job.key] = _item_prose(replies[job.key], job.grounds, summary)
    return summary

