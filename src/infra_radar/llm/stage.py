"""The optional LLM stage: model prose for items and reports, grounded, cached, over any OpenAI-compatible server.

Rules give the facts; this stage only adds wording. It never changes the item set, states, numbers,
files or grades: it returns prose keyed by item ref (and report-level prose) that llm.render lays over
the rule-based text. The item and row prompts give the model the item's numbered evidence records
(llm/records.py) and each sentence of the reply cites the records it rests on; a sentence is kept only
when they hold it (llm/cited.py). Report prose (the weekly, the daily headline) is grounded item-wide
(llm/grounding.py). Every dropped sentence is counted by reason; the run machinery is llm/run.py. A reply that fails for good is cached with its reason, so a
rerun sends nothing (unless --retry-failed). No `[llm]` model configured means this stage is never entered.
Configuration and prompts: llm/prompts.py (re-exported here); rendering: llm/render.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy.engine import Engine

from ..config import Settings
from ..models import AnalysedItem
from ..render.escape import plain, plain_line
from .cited import Support, join_sentences
from .client import LlmClient, LlmConfig
from .grounding import Grounds, claim_numbers
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
from .records import Record, item_records, records_block
from .run import FAILED, LlmRunSummary, _cited, _grounded, _Job, _run

__all__ = ["FAILED", "ITEM_FIELDS", "LlmEndpoint", "LlmRunSummary", "apply_llm", "daily_llm", "llm_config",
           "llm_endpoint", "load_prompt", "parse_prompt", "prompts_dir", "render_messages", "settings_prompt",
           "use_llm", "weekly_llm"]

ITEM_FIELDS = ("summary", "mechanism", "why", "boundary", "risks")


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


def _item_job(ai: AnalysedItem, lang: str, target: str, prompt: Prompt | None = None,
              records: list[Record] | None = None) -> _Job:
    values = _item_values(ai, lang, target)
    records = item_records(ai, lang, target) if records is None else records
    values["records"] = records_block(records, lang)
    refs = [ai.item.ref, *(lk.ref for lk in ai.analysis.links if lk.repo and lk.number is not None)]
    grounds = _item_grounds(ai, (str(v) for v in values.values()), refs, lang)
    prompt = prompt or load_prompt("item")
    return _Job(ai.item.ref, prompt, render_messages(prompt, lang, values), grounds, lang,
                Support.of(records, grounds, lang, ai) if cites(prompt) else None)


def cites(prompt: Prompt) -> bool:
    """Whether a prompt shows the records (the packaged item and row prompts do; a user's older copy may not:
    its replies are then grounded item-wide, as before records)."""
    return any("records" in text for texts in prompt.texts.values() for text in texts.values())


def _item_prose(reply: dict[str, Any], job: _Job, summary: LlmRunSummary) -> dict[str, str]:
    """The item reply's fields, each its kept sentences joined; the sentences and records noted in `summary`."""
    if job.support is None:  # a user's prompt file without records: the item-wide grounding alone
        prose = {k: _grounded(reply.get(k), job.grounds, summary) for k in ITEM_FIELDS}
        return {k: v for k, v in prose.items() if v}
    ref = job.key.removesuffix(" (conclusion)")
    summary.records[ref] = list(job.support.records.values())
    out: dict[str, str] = {}
    for k in ITEM_FIELDS:
        if k not in reply:
            continue
        kept = _cited(reply.get(k), job.support, summary)
        if kept:
            summary.cited.setdefault(ref, {})[k] = kept
            out[k] = join_sentences([c.text for c in kept], job.lang)
    return out


def _start(settings: Settings, config: LlmConfig | None) -> tuple[LlmConfig | None, LlmRunSummary]:
    """The model to use (None: rules only) and an empty run summary naming it."""
    config = config or llm_config(settings)
    return config, LlmRunSummary(model=config.model if config else "")


def apply_llm(settings: Settings, engine: Engine, analysed_items: Iterable[AnalysedItem], lang: str,
              dry_run: bool = False, *, config: LlmConfig | None = None, client: LlmClient | None = None,
              tick: Callable[[int], None] | None = None) -> LlmRunSummary:
    """Cited prose {ref: {summary, mechanism, why, boundary, risks}} for the items (the kept sentences and their
    records in `cited` and `records`); never raises on model failure."""
    config, summary = _start(settings, config)
    if config is None:
        return summary
    lang = config.language or lang
    prompt = settings_prompt(settings, "item")
    jobs = (_item_job(ai, lang, settings.target, prompt) for ai in analysed_items)
    prose: dict[str, dict[str, str]] = {}  # grounded as each reply arrives, while later requests are in flight
    _, done = _run(engine, config, jobs, dry_run, client, tick, summary,
                   lambda job, reply: prose.__setitem__(job.key, _item_prose(reply, job, summary)))
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
            summary.prose[job.key] = _item_prose(replies[job.key], job, summary)
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


def _daily_jobs(settings: Settings, inp: Any, ctx: dict[str, Any], lang: str, memo: dict[str, list[Record]]
                ) -> tuple[_Job | None, list[tuple[str, _Job]]]:
    """The headline prompt over the window's first P0/P1 items (key "daily"; None when there is none), and
    the row prompt for each P0/P1 item with its ref (key "<ref> (conclusion)"), whose grounds are the item's;
    each item's records go into `memo` (its deep dive shows the same)."""
    by_ref = {ai.item.ref: ai for ai in inp.items}
    rows = [r for r in [*ctx["top"], *ctx["more_top"]] if r["ref"] in by_ref]
    if not rows:
        return None, []
    prompt = settings_prompt(settings, "daily")  # read once: a user's prompt file is parsed on each call
    listed = rows[:prompt.items_listed or len(rows)]
    row_prompt = settings_prompt(settings, "row")
    jobs = []
    for r in rows:
        ai = by_ref[r["ref"]]
        records = memo[ai.item.ref] = item_records(ai, lang, settings.target)
        values = {"target": settings.target, **_daily_item(r, ai), "records": records_block(records, lang)}
        messages = render_messages(row_prompt, lang, values)
        grounds = _item_grounds(ai, values.values(), [r["ref"]], lang)
        jobs.append((r["ref"], _Job(f"{r['ref']} (conclusion)", row_prompt, messages, grounds, lang,
                                    Support.of(records, grounds, lang, ai) if cites(row_prompt) else None)))
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
        from .grounding import sentences

        n = len(sentences(headline))  # its kept sentences go after all: counted as filler, not kept
        summary.dropped_by["filler"] += n
        summary.dropped += n
        summary.kept -= n
        headline = ""
    return headline


def _conclusion(reply: dict[str, Any], ref: str, job: _Job, summary: LlmRunSummary) -> str:
    """The row prompt's conclusion: its kept sentences (cited ones, when the prompt showed records)."""
    if job.support is None:
        return _grounded(reply.get("conclusion"), job.grounds, summary)
    summary.records.setdefault(ref, list(job.support.records.values()))
    kept = _cited(reply.get("conclusion"), job.support, summary)
    if kept:
        summary.cited.setdefault(ref, {})["conclusion"] = kept
    return join_sentences([c.text for c in kept], job.lang)


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
    memo: dict[str, list[Record]] = {}  # an item's records, built once for its row and its dive
    head, rows = _daily_jobs(settings, inp, ctx, lang, memo)
    deep = [_item_job(by_ref[d["ref"]], lang, settings.target, prompt, memo.get(d["ref"]))
            for d in ctx["deep"] if d["ref"] in by_ref]
    # the headline first, then the rows in rank order: a run cut short by its deadline has the top of the day
    jobs = [*([head] if head else []), *(job for _, job in rows), *deep]
    replies, _ = _run(engine, config, jobs, dry_run, client, tick, summary)
    conclusions = {}
    for ref, job in rows:
        if job.key in replies:
            text = _conclusion(replies[job.key], ref, job, summary)
            if text:
                conclusions[ref] = text
    if head is not None and (head.key in replies or conclusions):
        summary.report = {"headline": _headline(replies[head.key], head.grounds, summary)
                          if head.key in replies else "", "conclusions": conclusions}
    for job in deep:
        if job.key in replies:
            summary.prose[job.key] = _item_prose(replies[job.key], job, summary)
    return summary

