"""The reports with model prose laid over the rule-based text: weekly, daily, item card."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Engine

from ..config import Settings
from ..render.code_view import contradiction_clause
from ..render.escape import Md, join, plain, text
from .prompts import use_llm
from .stage import ITEM_FIELDS, LlmRunSummary, _weekly_ctx, apply_llm


def _overlay_rows(rows: Iterable[dict[str, Any]], prose: dict[str, dict[str, str]]) -> None:
    for r in rows:
        text = prose.get(r["ref"], {}).get("summary")
        if text:
            r["summary"] = text


def render_weekly_llm(inp: Any, lang: str, summary: LlmRunSummary,
                      focus_weights: dict[str, float] | None = None) -> str:
    """The weekly report with model prose where it survived grounding, rule text elsewhere."""
    from ..render.markdown import _render

    ctx, t = _weekly_ctx(inp, lang, focus_weights)
    _overlay_rows(ctx["quick"], summary.prose)
    _overlay_rows((m for th in ctx["themes"] for m in th["members"]), summary.prose)
    report = summary.report
    if report.get("executive_summary"):
        themes = t["common"]["semi"].join(f"{th['name']}{t['common']['colon']}{th['text']}"
                                          for th in report.get("themes", []))
        space = "" if lang == "zh" else " "
        ctx["summary"] = space.join(x for x in (report["executive_summary"], themes) if x)
    ctx["recommendations"] = merge_recommendations(ctx["recommendations"], report.get("recommendations", []))
    return _render("weekly.md.j2", ctx, t, None)


def merge_recommendations(rules: list[str], model: list[str], extra: int = 3) -> list[str]:
    """The rule recommendations, every one kept, then up to `extra` grounded model recommendations that do not
    repeat one of them (the model rewords, it never replaces). Model text stays `str`: author text to the
    templates, escaped where it is shown."""
    seen = {" ".join(plain(r).lower().split()) for r in rules}
    added = []
    for rec in model:
        norm = " ".join(rec.lower().split())
        if norm not in seen and len(added) < extra:
            seen.add(norm)
            added.append(rec)
    return [*rules, *added]


def render_daily_llm(inp: Any, lang: str, summary: LlmRunSummary,
                     focus_weights: dict[str, float] | None = None) -> str:
    """The daily radar with the daily prompt's headline and one-line conclusions and the item prompt's
    mechanisms where they survived grounding; rule text wherever they did not."""
    from ..render.context import daily_context, load_strings
    from ..render.markdown import _render

    t = load_strings(lang)
    ctx = daily_context(inp, t, focus_weights)
    for d in ctx["deep"]:
        overlay_dive(d, summary.prose.get(d["ref"], {}), t)
    by_ref = {ai.item.ref: ai for ai in inp.items}
    _overlay_daily(ctx, summary.report, t["common"]["semi"], t["common"]["colon"],
                   {ref: contradiction_clause(ai, t) for ref, ai in by_ref.items()})
    return _render("daily.md.j2", ctx, t, None)


def overlay_dive(d: dict[str, Any], prose: dict[str, str], t: dict[str, Any]) -> list[str]:
    """The model's mechanism, why and boundary in place of the rules' in one deep dive, each where its kept
    sentences are; the dive's first line (state, grade, decision), its figures and its code facts stay the
    rules'. The template writes a stop after the mechanism («做法：…，改动集中在 …。») and after the why, so
    the model's text goes in without its own. Returns the parts that came from the model."""
    from ..render.escape import fmt

    used = []
    if prose.get("mechanism"):
        d["mechanism"] = _unstop(text(prose["mechanism"]))
        used.append("mechanism")
    if prose.get("why"):
        d["why"] = fmt(t["daily"]["dive_why"], text=_unstop(text(prose["why"])))
        used.append("why")
    if prose.get("boundary"):
        d["boundary"] = text(prose["boundary"])
        used.append("boundary")
    return used


def _unstop(piece: Md) -> Md:
    """A piece of the radar's Markdown without its closing punctuation (an escape left without the character
    it escaped goes too)."""
    kept = piece.rstrip(_PUNCT)
    if (len(kept) - len(kept.rstrip("\\"))) % 2:
        kept = kept[:-1]
    return Md(kept)


def _overlay_daily(ctx: dict[str, Any], report: dict[str, Any], semi: str = "；", colon: str = "：",
                   code: dict[str, Md] | None = None) -> None:
    """The daily prompt's one-line conclusions over the P0/P1 rows, and its headline under the title. A line
    that only repeats the rule text or the title (a translated title names nothing new) leaves the rule text.
    `code`: by item, the clause where its code contradicts its description: a fact of the code, kept after
    the model's line as the rules' row has it."""
    code = code or {}
    from .grounding import numbers

    conclusions = report.get("conclusions", {})

    def laid_over(r: dict[str, Any], rest_key: str = "summary_rest") -> str:
        """The model's line with the rules' rest, or "" when the rule text stands."""
        line = conclusions.get(r["ref"], "")
        if not line or _copies(line, plain(r["summary"])) or not says_more_than_title(line, r["title"]):
            return ""
        # the model says what changed; where, the headline figure and the decision stay the rules'
        said = numbers(line)  # a figure the model already gave (its before and after) is not repeated
        rest = [p for p in r.get(rest_key, [])
                if len(numbers(plain(p)) & said) < min(2, len(numbers(plain(p))) or 1)]
        # the model's line is author text; the rules' pieces are Md (text when a piece is a plain str)
        joined = join([text(line.rstrip(_PUNCT)), *(_unstop(text(p)) for p in rest)], semi)
        stop = "。" if semi == "；" else "."
        clause = code.get(r["ref"])
        if clause:  # the code's fact, never the model's to drop or reword: its own sentence after the line
            said = _unstop(clause) if stop == "。" else Md(clause[:1].upper() + _unstop(clause)[1:])
            return Md(f"{joined}{stop}{'' if stop == '。' else ' '}{said}{stop}")
        return Md(joined + stop)

    for r in ctx["top"]:
        r["summary"] = laid_over(r) or r["summary"]
    # P0/P1 items of the short table: the same line in their note
    more = {r["ref"]: laid_over(r, "short_rest") for r in ctx.get("more_top", [])}
    for r in ctx.get("short", []):
        if more.get(r["ref"]):
            r["note"] = more[r["ref"]]
    if report.get("headline"):
        ctx["headline"] = report["headline"]


_PUNCT = "；;。.，,：: \t"


def _copies(model: str, rule: str) -> bool:
    """True when the model's line only repeats the rule text it was shown (whole, or cut short by grounding):
    it would replace the rule conclusion with less of itself, so the rule text stands."""
    a, b = model.strip(_PUNCT), rule.strip(_PUNCT)
    if not a:
        return True
    if a in b:
        return True
    from difflib import SequenceMatcher

    return SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.85


def says_more_than_title(line: str, title: str) -> bool:
    """Whether a model line says more than its item's title: Latin words beyond the title's (render's
    echo test), or, for Chinese prose whose meaning sits in CJK characters, enough of them for more than a
    translated title (grounding.toml [echo])."""
    from ..render.conclusion import bare_title, echoes
    from .grounding import cjk_chars, echo_thresholds

    bare = bare_title(title)
    if len(bare) >= 20 and bare.lower() in line.lower():  # the title pasted whole, with or without its header
        return False
    if not echoes(line, title):
        return True
    least, per_char = echo_thresholds()
    cjk = cjk_chars(line)
    return cjk >= least and cjk >= per_char * len(bare)


def render_card_llm(inp: Any, lang: str, summary: LlmRunSummary) -> str:
    """The item card with the model's summary, mechanism, why and risks when they survived grounding."""
    from ..render.context import card_context, load_strings
    from ..render.markdown import _render

    t = load_strings(lang)
    ctx = card_context(inp, t)
    p = summary.prose.get(ctx["ref"], {})
    if p:
        ctx["summary"] = ("" if lang == "zh" else " ").join(p[k] for k in ITEM_FIELDS if p.get(k))
    return _render("card.md.j2", ctx, t, None)


def card_text(settings: Settings, engine: Engine, inp: Any, flag: bool | None = None) -> str:
    """The card of a CardInput, with model prose when a model is configured and `flag` is not False."""
    from ..render.markdown import render_card

    config = use_llm(settings, flag)
    if config is None or not inp.known:
        return render_card(inp, settings.lang)
    prose = apply_llm(settings, engine, [inp.item], settings.lang, config=config)
    if not prose.prose.get(inp.item.item.ref):  # say why the card shows the rule text
        why = prose.failures[0][1] if prose.failures else "every sentence of the reply was dropped " + ", ".join(
            f"{n} {k}" for k, n in prose.dropped_by.items() if n)
        print(f"llm: {inp.item.item.ref}: rule text kept: {why}", file=sys.stderr)
    return render_card_llm(inp, settings.lang, prose)
