"""The optional LLM stage: model prose for items and reports, grounded, cached, over any OpenAI-compatible server.

Rules give the facts; this stage only adds wording. It never changes the item set, states, numbers,
files or grades: it returns prose keyed by item ref (and report-level prose) that the renderers here
lay over the rule-based text. A sentence holding a number or a `#N` the prompt's sources do not hold
is dropped and counted. No `[llm]` model configured means this stage is never entered.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from jinja2 import Environment, StrictUndefined
from sqlalchemy.engine import Engine

from .analyse.grounding import Grounds, claim_numbers, ground, language_ok
from .analyse.llm import JSON_MODES, LlmClient, LlmConfig, LlmError, Request
from .config import Settings
from .errors import ConfigError
from .models import AnalysedItem
from .store import llm_cache
from .store.llm_cache import Cached, CacheKey

__all__ = ["LlmRunSummary", "apply_llm", "card_text", "llm_config", "render_card_llm", "render_daily_llm",
           "render_weekly_llm", "weekly_llm"]

_KEYS = {"base_url", "model", "api_key_env", "json_mode", "max_concurrency", "timeout", "token_budget",
         "language"}
ITEM_FIELDS = ("summary", "mechanism", "why", "risks")
_LANG_NAMES = {"zh": "Simplified Chinese", "en": "English"}


# --- configuration ---------------------------------------------------------------------------------

def _llm_table(settings: Settings) -> dict[str, Any]:
    path = settings.config_path
    if path is None or not path.exists():
        return {}
    with open(path, "rb") as fh:
        table = tomllib.load(fh).get("llm", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [llm] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{path}: [llm] unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}")
    return table


def llm_config(settings: Settings, env: Mapping[str, str] | None = None) -> LlmConfig | None:
    """The `[llm]` table of radar.toml with RADAR_LLM_* overrides; None when no model is configured."""
    env = os.environ if env is None else env
    table = _llm_table(settings)
    base = env.get("RADAR_LLM_BASE_URL") or table.get("base_url") or ""
    model = env.get("RADAR_LLM_MODEL") or table.get("model") or ""
    if not model or not base:
        return None
    key = env.get("RADAR_LLM_API_KEY") or (env.get(table["api_key_env"], "") if table.get("api_key_env") else "")
    mode = table.get("json_mode", "json_object")
    if mode not in JSON_MODES:
        raise ConfigError(f"[llm] json_mode must be one of {', '.join(JSON_MODES)}, not {mode!r}")
    language = table.get("language", "")
    if language not in ("", "zh", "en"):
        raise ConfigError(f"[llm] language must be zh or en, not {language!r}")
    try:
        return LlmConfig(base_url=str(base), model=str(model), api_key=key, json_mode=mode,
                         max_concurrency=max(int(table.get("max_concurrency", 4)), 1),
                         timeout=float(table.get("timeout", 60)), token_budget=int(table.get("token_budget", 200_000)),
                         language=language)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[llm]: {exc}") from None


def use_llm(settings: Settings, flag: bool | None) -> LlmConfig | None:
    """The config to use: None for --no-llm or no model; an error for --llm without a model."""
    if flag is False:
        return None
    config = llm_config(settings)
    if flag and config is None:
        raise ConfigError("--llm needs a model: set [llm] base_url and model in radar.toml, "
                          "or RADAR_LLM_BASE_URL and RADAR_LLM_MODEL")
    return config


# --- prompts ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Prompt:
    """A versioned prompt file: system and user templates per language and the reply schema."""

    id: str
    version: int
    schema: dict[str, Any]
    texts: dict[str, dict[str, str]]


@lru_cache(maxsize=8)
def load_prompt(name: str) -> Prompt:
    """The packaged prompt `defaults/prompts/{name}.toml`."""
    text = (resources.files("infra_radar") / "defaults" / "prompts" / f"{name}.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return Prompt(data["id"], int(data["version"]), data["schema"], {k: data[k] for k in ("zh", "en")})


_ENV = Environment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)


@lru_cache(maxsize=32)
def _template(source: str):
    return _ENV.from_string(source)  # compiling costs ~5 ms; every item of a run shares the template


def render_messages(prompt: Prompt, lang: str, values: dict[str, Any]) -> list[dict[str, str]]:
    """System and user messages of `prompt` in `lang`, rendered with StrictUndefined."""
    texts = prompt.texts[lang]
    return [{"role": role, "content": _template(texts[role]).render(**values)} for role in ("system", "user")]


# --- the run ---------------------------------------------------------------------------------------

@dataclass(slots=True)
class LlmRunSummary:
    """What the stage did: requests, cache hits, failures, dropped sentences, tokens; and the prose."""

    model: str = ""
    requests: int = 0
    cached: int = 0
    failed: int = 0
    dropped: int = 0  # sentences removed by grounding
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prose: dict[str, dict[str, str]] = field(default_factory=dict)  # item ref -> summary/mechanism/why/risks
    report: dict[str, Any] = field(default_factory=dict)  # executive_summary, themes, recommendations
    prompts: list[str] = field(default_factory=list)  # --dry-run: the rendered prompts
    errors: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for stderr or the run record."""
        return (f"llm {self.model}: {self.requests} request(s), {self.cached} cached, {self.failed} failed, "
                f"{self.dropped} ungrounded sentence(s) dropped, tokens {self.prompt_tokens}+{self.completion_tokens}")


@dataclass(slots=True)
class _Job:
    key: str  # item ref, or "report"
    prompt: Prompt
    messages: list[dict[str, str]]
    grounds: Grounds
    lang: str
    sha: str = ""  # sha256 of the messages and schema: with prompt id, version and model, the cache key

    def __post_init__(self) -> None:
        payload = json.dumps([self.messages, self.prompt.schema], ensure_ascii=False, sort_keys=True)
        self.sha = hashlib.sha256(payload.encode()).hexdigest()

    def cache_key(self, model: str) -> CacheKey:
        return CacheKey(self.prompt.id, self.prompt.version, model, self.sha)


def _prose_text(data: Any) -> str:
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        return " ".join(_prose_text(v) for k, v in data.items() if k != "name")
    if isinstance(data, list):
        return " ".join(_prose_text(v) for v in data)
    return ""


def _checker(lang: str) -> Callable[[dict[str, Any]], str | None]:
    def check(data: dict[str, Any]) -> str | None:
        return None if language_ok(_prose_text(data), lang) else f"the prose must be in {_LANG_NAMES[lang]}"
    return check


def _request(job: _Job) -> Request:
    return Request(job.key, job.messages, job.prompt.schema, job.prompt.id, _checker(job.lang))


def _pending(engine: Engine, model: str, jobs: Iterable[_Job], dry_run: bool, summary: LlmRunSummary,
             replies: dict[str, dict[str, Any]], seen: list[_Job]) -> Iterator[Request]:
    """Requests for the jobs the cache cannot answer, prepared chunk by chunk while earlier ones are sent."""
    chunk: list[_Job] = []
    for job in [*jobs, None]:
        if job is not None:
            chunk.append(job)
            if len(chunk) < 32:
                continue
        seen.extend(chunk)
        cached = llm_cache.get_many(engine, [j.cache_key(model) for j in chunk])
        for j in chunk:
            hit = cached.get(j.cache_key(model))
            if hit is not None:
                replies[j.key], summary.cached = hit.reply, summary.cached + 1
            elif dry_run:
                summary.prompts.append(f"=== {j.prompt.id} v{j.prompt.version} {j.key} ===\n"
                                       + "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in j.messages))
            else:
                yield _request(j)
        chunk = []


def _run(engine: Engine, config: LlmConfig, jobs: Iterable[_Job], dry_run: bool, client: LlmClient | None,
         tick: Callable[[int], None] | None, summary: LlmRunSummary) -> tuple[dict[str, dict[str, Any]], list[_Job]]:
    """Replies by job key (from the cache, else from the model, then cached; failures counted) and the jobs."""
    replies: dict[str, dict[str, Any]] = {}
    seen: list[_Job] = []
    pending = _pending(engine, config.model, jobs, dry_run, summary, replies, seen)
    if dry_run:
        list(pending)
        return replies, seen
    own = client is None
    client = client or LlmClient(config)
    try:
        answers = client.complete_all(pending, tick)
    finally:
        if own:
            client.close()
    fresh = []
    for job in (j for j in seen if j.key in answers):
        answer = answers[job.key]
        if isinstance(answer, LlmError):
            summary.failed += 1
            summary.errors.append(str(answer))
            continue
        summary.requests += 1
        summary.prompt_tokens += answer.prompt_tokens
        summary.completion_tokens += answer.completion_tokens
        fresh.append((job.cache_key(config.model), Cached(answer.data, answer.prompt_tokens, answer.completion_tokens)))
        replies[job.key] = answer.data
    llm_cache.put_many(engine, fresh)
    return replies, seen


def _grounded(text: Any, grounds: Grounds, summary: LlmRunSummary) -> str:
    kept, dropped = ground(str(text or "").strip(), grounds)
    summary.dropped += dropped
    return kept


# --- items -----------------------------------------------------------------------------------------

def _item_values(ai: AnalysedItem, lang: str, target: str) -> dict[str, Any]:
    from .render.context import claim_phrase, pick, top_files

    item, a = ai.item, ai.analysis
    files = f"+{item.additions}/-{item.deletions}, {len(item.files)} files: " + ", ".join(top_files(item.files, 8))
    return {"ref": item.ref, "kind": a.item_kind, "state": item.state, "priority": a.priority, "grade": a.grade,
            "title": item.title, "files": files, "summary": pick(a.summary, lang) or "-",
            "claims": "; ".join(claim_phrase(c) for c in a.perf_claims) or "-",
            "links": ", ".join(sorted({lk.ref for lk in a.links if lk.ref})) or "-",
            "body": item.body[:6000], "target": target}


def _item_job(ai: AnalysedItem, lang: str, target: str) -> _Job:
    values = _item_values(ai, lang, target)
    claims = ai.analysis.perf_claims
    extra = claim_numbers(v for c in claims for v in (c.before, c.after, c.change_pct, c.ratio))
    source = "\n".join([ai.item.body, *(str(v) for v in values.values()), *(c.source for c in claims)])
    refs = [ai.item.ref, *(lk.ref for lk in ai.analysis.links if lk.repo and lk.number is not None)]
    grounds = Grounds.of(source, refs, ai.item.repo, extra)
    prompt = load_prompt("item")
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
    jobs = (_item_job(ai, lang, settings.target) for ai in analysed_items)
    replies, done = _run(engine, config, jobs, dry_run, client, tick, summary)
    for job in done:
        if job.key in replies:
            summary.prose[job.key] = _item_prose(replies[job.key], job.grounds, summary)
    return summary


# --- weekly ----------------------------------------------------------------------------------------

def _weekly_job(settings: Settings, inp: Any, ctx: dict[str, Any], lang: str) -> _Job:
    rows = ctx["quick"]
    values = {"repo": inp.repo, "target": settings.target, "start": ctx["start"], "end": ctx["end"],
              "merged": ctx["merged"], "key": ctx["key"], "merged_before": ctx["merged_before"],
              "topics": ", ".join(ctx["top_topics"]) or "-", "summary": ctx["summary"],
              "items": [{"number": r["short"].lstrip("#"), "priority": r["priority"], "grade": r["grade"],
                         "title": r["title"], "summary": r["summary"], "claims": r["claims"]} for r in rows]}
    prompt = load_prompt("weekly")
    messages = render_messages(prompt, lang, values)
    refs = [r["ref"] for r in rows] + [m["ref"] for th in ctx["themes"] for m in th["members"]]
    return _Job("report", prompt, messages, Grounds.of(messages[1]["content"], refs, inp.repo), lang)


def _report_prose(reply: dict[str, Any], grounds: Grounds, summary: LlmRunSummary) -> dict[str, Any]:
    themes = [{"name": str(th.get("name", "")), "text": _grounded(th.get("text"), grounds, summary)}
              for th in reply.get("themes", []) if isinstance(th, dict)]
    recs = [_grounded(r, grounds, summary) for r in reply.get("recommendations", [])]
    return {"executive_summary": _grounded(reply.get("executive_summary"), grounds, summary),
            "themes": [th for th in themes if th["text"]], "recommendations": [r for r in recs if r]}


def _weekly_ctx(inp: Any, lang: str, weights: dict[str, float] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    from .render.context import load_strings, weekly_context

    t = load_strings(lang)
    return weekly_context(inp, t, weights), t


def weekly_llm(settings: Settings, engine: Engine, inp: Any, lang: str, dry_run: bool = False, *,
               config: LlmConfig | None = None, client: LlmClient | None = None,
               tick: Callable[[int], None] | None = None) -> LlmRunSummary:
    """Prose for a weekly report (render.context.WeeklyInput): its listed items and the report narrative."""
    config, summary = _start(settings, config)
    if config is None:
        return summary
    lang = config.language or lang
    ctx, _ = _weekly_ctx(inp, lang, settings.focus_weights)
    listed = {r["ref"] for r in ctx["quick"]} | {m["ref"] for th in ctx["themes"] for m in th["members"]}
    items = [ai for ai in inp.items if ai.item.ref in listed]
    jobs = [*(_item_job(ai, lang, settings.target) for ai in items), _weekly_job(settings, inp, ctx, lang)]
    replies, _ = _run(engine, config, jobs, dry_run, client, tick, summary)
    for job in jobs:
        if job.key == "report" and "report" in replies:
            summary.report = _report_prose(replies["report"], job.grounds, summary)
        elif job.key in replies:
            summary.prose[job.key] = _item_prose(replies[job.key], job.grounds, summary)
    return summary


# --- rendering with prose laid over the rule-based text --------------------------------------------

def _overlay_rows(rows: Iterable[dict[str, Any]], prose: dict[str, dict[str, str]]) -> None:
    for r in rows:
        text = prose.get(r["ref"], {}).get("summary")
        if text:
            r["summary"] = text


def render_weekly_llm(inp: Any, lang: str, summary: LlmRunSummary,
                      focus_weights: dict[str, float] | None = None) -> str:
    """The weekly report with model prose where it survived grounding, rule text elsewhere."""
    from .render.markdown import _render

    ctx, t = _weekly_ctx(inp, lang, focus_weights)
    _overlay_rows(ctx["quick"], summary.prose)
    _overlay_rows((m for th in ctx["themes"] for m in th["members"]), summary.prose)
    report = summary.report
    if report.get("executive_summary"):
        themes = t["common"]["semi"].join(f"{th['name']}{t['common']['colon']}{th['text']}"
                                          for th in report.get("themes", []))
        space = "" if lang == "zh" else " "
        ctx["summary"] = space.join(x for x in (report["executive_summary"], themes) if x)
    if report.get("recommendations"):
        ctx["recommendations"] = report["recommendations"][:5]
    return _render("weekly.md.j2", ctx, t, None)


def render_daily_llm(inp: Any, lang: str, summary: LlmRunSummary,
                     focus_weights: dict[str, float] | None = None) -> str:
    """The daily radar with model one-line conclusions and mechanisms where they survived grounding."""
    from .render.context import daily_context, load_strings
    from .render.markdown import _render

    t = load_strings(lang)
    ctx = daily_context(inp, t, focus_weights)
    _overlay_rows([*ctx["top"], *ctx["short"], *ctx["deep"]], summary.prose)
    for d in ctx["deep"]:
        p = summary.prose.get(d["ref"], {})
        if p.get("mechanism"):
            d["mechanism"] = " ".join(x for x in (p["mechanism"], p.get("why", "")) if x)
    return _render("daily.md.j2", ctx, t, None)


def render_card_llm(inp: Any, lang: str, summary: LlmRunSummary) -> str:
    """The item card with the model's summary, mechanism, why and risks when they survived grounding."""
    from .render.context import card_context, load_strings
    from .render.markdown import _render

    t = load_strings(lang)
    ctx = card_context(inp, t)
    p = summary.prose.get(ctx["ref"], {})
    if p:
        ctx["summary"] = " ".join(p[k] for k in ITEM_FIELDS if p.get(k))
    return _render("card.md.j2", ctx, t, None)


def card_text(settings: Settings, engine: Engine, inp: Any, flag: bool | None = None) -> str:
    """The card of a CardInput, with model prose when a model is configured and `flag` is not False."""
    from .render.markdown import render_card

    config = use_llm(settings, flag)
    if config is None or not inp.known:
        return render_card(inp, settings.lang)
    prose = apply_llm(settings, engine, [inp.item], settings.lang, config=config)
    return render_card_llm(inp, settings.lang, prose)
