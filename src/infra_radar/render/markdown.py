"""Render the daily radar, weekly reports and item cards as Markdown, and an item as its export object.

Templates load through one Jinja2 environment whose loader looks in the user's template directory
first and the packaged `defaults/templates` second, so built-ins load exactly like user additions and a
user's copy of a template wins.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import (
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PackageLoader,
    StrictUndefined,
    pass_eval_context,
)

from ..models import PerfClaim

# the card's own modules only: `radar show` never imports the daily's and the weekly's (read where they render)
from .base import iso, link_url, load_strings, pick
from .card import card_context
from .escape import Md, cell, code, fill, join, link, plain
from .escape import text as inline
from .template_cache import bytecode_cache, fingerprint

if TYPE_CHECKING:
    from .inputs import CardInput, DailyInput, WeeklyInput

__all__ = ["card_json", "render_card", "render_daily", "render_weekly"]

def nostop(text: str) -> str:
    """Text without its closing full stop, to continue the sentence (an escape left without the character it
    escaped goes too)."""
    kept = text.rstrip("。.；; ")
    if (len(kept) - len(kept.rstrip("\\"))) % 2:
        kept = kept[:-1]
    return Md(kept) if isinstance(text, Md) else kept


@pass_eval_context
def _join(_eval_ctx: Any, value: Any, d: str = "", attribute: str | None = None) -> Md:
    """Jinja's `join` for Markdown: each piece that is not `Md` is author text and escaped (`escape.join`).
    (It takes the evaluation context as Jinja's own does, so templates compiled before, in the bytecode
    cache, call it the same way.)"""
    items = [getattr(v, attribute, None) if not isinstance(v, dict) else v.get(attribute) for v in value] \
        if attribute else list(value)
    return join(items, d)


def _link(label: Any, url: str) -> Md:
    """`[label](url)` of a link the radar builds (`escape.link`)."""
    return link(label, url)


def fmt(template: str, *args: Any, **values: Any) -> str:
    """str.format for the HTML templates: `{{ t.daily.window | fmt(since=a, until=b) }}` (the Markdown
    templates' `fmt` is `escape.fill`)."""
    return template.format(*args, **values)


@lru_cache(maxsize=8)
def environment(template_dir: Path | None = None) -> Environment:
    """The template environment: `template_dir` (when given) first, then the packaged templates."""
    loaders = [FileSystemLoader(str(template_dir))] if template_dir else []
    loaders.append(PackageLoader("infra_radar", "defaults/templates"))
    env = Environment(loader=ChoiceLoader(loaders), undefined=StrictUndefined, autoescape=False,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    # fmt: our phrase with values the template escaped; a `{field}` in backticks becomes a code span
    env.filters.update(cell=cell, inline=inline, fmt=fill, code=code, nostop=nostop, join=_join, mdlink=_link)
    env.bytecode_cache = bytecode_cache(fingerprint(env))
    return env


def _render(name: str, ctx: dict[str, Any], t: dict[str, Any], template_dir: Path | None) -> str:
    text = environment(template_dir).get_template(name).render(**ctx, t=t)
    # Blank-line runs come from skipped optional blocks; one blank line is all Markdown needs.
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render_daily(inp: DailyInput, lang: str, *, template_dir: Path | None = None,
                 focus_weights: dict[str, float] | None = None) -> str:
    """The daily radar in `lang` (zh or en): scope, P0/P1, deep dives, recheck, short table, checks, links."""
    from .daily import daily_context

    t = load_strings(lang, template_dir)
    return _render("daily.md.j2", daily_context(inp, t, focus_weights), t, template_dir)


def render_weekly(inp: WeeklyInput, lang: str, *, template_dir: Path | None = None,
                  focus_weights: dict[str, float] | None = None) -> str:
    """The weekly report of one repository in `lang`."""
    from .weekly import weekly_context

    t = load_strings(lang, template_dir)
    return _render("weekly.md.j2", weekly_context(inp, t, focus_weights), t, template_dir)


def render_card(inp: CardInput, lang: str, *, template_dir: Path | None = None) -> str:
    """The card of one item in `lang`."""
    t = load_strings(lang, template_dir)
    return _render("card.md.j2", card_context(inp, t), t, template_dir)


def _claim_json(c: PerfClaim) -> dict[str, Any]:
    return {"metric": c.metric, "before": c.before, "after": c.after, "unit": c.unit,
            "change_pct": c.change_pct, "ratio": c.ratio, "context": dict(c.context), "source": c.source}


def _links_json(inp: CardInput) -> list[dict[str, Any]]:
    links = [*inp.item.analysis.links, *inp.referenced_by, *inp.duplicates, *inp.chain, *inp.related,
             *(e.down_link() for e in inp.adapted)]
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for lk in links:
        seen.setdefault((lk.kind, lk.ref), {"kind": lk.kind, "ref": lk.ref, "url": link_url(lk) or None,
                                            "detail": lk.detail})
    return list(seen.values())


def _checklist_json(inp: CardInput) -> list[str]:
    """The item's own verification steps (as its card shows them), in English, as text (the export is data)."""
    from ..analyse.porting import applied, target_name
    from .checklist import item_checklist
    from .explain import described

    ai = inp.item
    return [plain(step) for step in item_checklist(ai, "en", target_name(inp.target, "en"),
                                                    applied(ai.item, inp.target, text=described(ai.item.body)))]


def _evidence_json(inp: CardInput) -> list[dict[str, str]]:
    from .evidence import item_evidence

    if not inp.known:
        return []
    return [e.json() for e in item_evidence(inp.item, "en", inp.target)]


_CODE_KEYS = ("defaults", "switches", "version_gates", "device_checks", "kernels", "removed", "tests")


def code_json(code: dict[str, Any] | None) -> dict[str, Any] | None:
    """The code facts read from an item's diff as the export gives them; None when no diff was read."""
    if not code:
        return None
    out = {"source": code.get("source"), "complete": bool(code.get("complete")),
           **{key: list(code.get(key) or []) for key in _CODE_KEYS}}
    out["removed"] = [{k: r.get(k) for k in ("name", "kind", "file")} for r in out["removed"]]
    if code.get("device") is not None:  # device libraries, guards, kernels and host files (device_facts.py)
        out["device"] = code["device"]
    return out


def card_json(inp: CardInput) -> dict[str, Any]:
    """The export object of one item (SPEC §5); prose fields in English, times as ISO-8601 Z or null."""
    item, a = inp.item.item, inp.item.analysis
    return {
        "repo": item.repo, "number": item.number, "kind": item.kind, "state": item.state,
        "title": item.title, "url": item.url, "author": item.author,
        "created_at": iso(item.created_at) or None, "merged_at": iso(item.merged_at) or None,
        "closed_at": iso(item.closed_at) or None,
        "files": [{"path": f.path, "additions": f.additions, "deletions": f.deletions} for f in item.files],
        "named_paths": list(item.named_paths),  # paths the text names: not a diffstat
        "imported_at": (iso(item.updated_at) or None) if item.time_source == "import" else None,  # no own date
        # created_at is only the latest the item can have been opened (a page that does not give its opening)
        "created_bound": item.time_source == "created-bound",
        "item_kind": a.item_kind, "topics": list(a.topics), "priority": a.priority,
        "importance": a.importance, "insight": a.insight, "grade": a.grade,
        "grade_reason": pick(a.grade_reason, "en"), "decision": a.decision,
        "decision_reason": pick(a.decision_reason, "en"), "risk_labels": list(a.risk_labels),
        "perf_claims": [_claim_json(c) for c in a.perf_claims],
        "links": _links_json(inp),
        "summary": pick(a.summary, "en"), "branches": list(item.branches), "merge_commit": item.merge_commit,
        "labels": list(item.labels), "checklist": _checklist_json(inp),
        # each templated statement about the item with the sentence, field and rule it rests on (issue 32)
        "evidence": _evidence_json(inp),
        # what the diff says (null: no diff read) and where the description says otherwise
        "code": code_json(item.code),
        "contradictions": [{k: c.get(k) for k in ("description", "code", "file")} for c in a.contradictions],
        # the team's judgment: `priority` and `grade` above are the effective ones (the team's label, else the
        # calibration's, else the rules'); `label` is the team's own label (who, when, note), `learned` the
        # calibration's move and the flags that made it, `rules` what the rules alone said
        "label": dict(a.label) if a.label else None,
        "learned": dict(a.learned) if a.learned else None,
        "rules": {k: a.rules[k] for k in ("priority", "grade", "decision") if k in a.rules} if a.rules else None,
        # how many related items of each link kind were left out (only when some were): at most
        # links.toml [related] max_per_kind of one kind are listed, the nearest
        **({"links_omitted": dict(sorted(inp.more.items()))} if inp.more else {}),
    }
