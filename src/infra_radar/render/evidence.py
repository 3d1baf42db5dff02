"""Evidence records: for each statement the radar makes about an item, where it came from.

A record is {statement, source, field, text, rule}: the statement as the report says it, the source the item was
read from (`jsonl`, `git`, `page`, `github`), the field (title, body, files, state, labels), the sentence or span
the statement rests on, and the rule that fired (the rules file and entry). The statements are the templated
ones: figures (or what was read when there are none), the cause, the target boundary, risk labels, switches and
environment variables, checklist steps and a state learnt later. No record, no statement: the functions here
are the ones the deep dive, the weekly risks and the checklist read, so a statement without a record is not made.
`radar show ITEM --evidence` lists them, the export carries them and the site's item page shows them.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache
from typing import Any

from ..config import rule_data, rules_cache
from ..models import AnalysedItem
from .evidence_risks import Evidence, _source, risk_evidence, stated_risks

__all__ = ["Evidence", "evidence_text", "figure_evidence", "item_evidence", "risk_evidence", "stated_risks"]


# --------------------------------------------------------------------------- figures


def figure_evidence(ai: AnalysedItem, t: dict[str, Any]) -> list[Evidence]:
    """A record per figure (perf claims, then the other shapes), or one saying what was read when none is."""
    from ..analyse.figures import description_cut, extract_figures, unread_figure
    from .conclusion import claim_text
    from .escape import plain

    item, src = ai.item, _source(ai)
    most = _bounds()["figures"]
    out = [Evidence(plain(claim_text(c, t)), src, "body", c.source, "claims.toml")
           for c in ai.analysis.perf_claims[:most]]
    out += [Evidence(f.text, src, "body", f.line, f"claims_figures.toml:{f.shape}")
            for f in extract_figures(item.body, taken=[c.span for c in ai.analysis.perf_claims])[:most - len(out)]]
    if out:
        return [_quoted(e) for e in out]
    d = t["daily"]
    if description_cut(item.body):
        tail = item.body.rstrip().rsplit("\n", 1)[-1].strip()
        return [Evidence(d["dive_cut"], src, "body", tail, "figures:cut")]
    seen, line = unread_figure(item.body)
    if seen:
        return [Evidence(d["dive_figures_unread"].format(figure=seen), src, "body", line, "figures:unread")]
    return [Evidence(d["dive_no_figures"], src, "body", f"{len(item.body)} characters", "figures:none")]


def _removal_record(ai: AnalysedItem) -> Evidence | None:
    """The record of what the weekly says a PR removes (weekly_risks.removed): the title, a deleted file or the
    description it read it from."""
    from .escape import plain
    from .weekly_risks import _removal

    found = _removal(ai, None)
    if found is None:
        return None
    what, plainness = found
    field, text = {3: ("title", ai.item.title), 2: ("title", ai.item.title)}.get(plainness, ("files", plain(what)))
    if plainness == 0:
        field, text = "body", ai.item.title
    return Evidence(plain(what), _source(ai), field, text, f"weekly.toml [risks] removal ({plainness})")


def _weekly_risk_records(ai: AnalysedItem, t: dict[str, Any]) -> list[Evidence]:
    """The records of what the weekly's risks say of a PR beyond its labels: the description's sentence that
    says the change breaks something, the defaults the diff sets in code a deployment ran before."""
    from .weekly_risks import _moved_defaults, _moves_default, breaks

    w, src, out = t["weekly"], _source(ai), []
    said = breaks(ai)
    if said:
        out.append(Evidence(w["risk_breaks"], src, "body", said, "weekly.toml [risks] breaks_words"))
    if ai.item.code and _moves_default(ai):
        moved = "; ".join(f"{d['name']} = {d['value']} ({d['file']})" for d in _moved_defaults(ai)[:3])
        out.append(Evidence(w["risk_defaults"], src, "code", moved, "code_facts.toml defaults"))
    return out


# --------------------------------------------------------------------------- everything of one item


@cache
def _strings(lang: str) -> dict[str, Any]:
    """The packaged wording of `lang`, read once (a site build asks for it on every item page)."""
    from .base import load_strings

    return load_strings(lang)


def item_evidence(ai: AnalysedItem, lang: str, target: str, porting: list | None = None) -> list[Evidence]:
    """Every evidence record of one item, in the order a reader meets the statements."""
    from ..analyse.porting import applied, target_name
    from .base import pick
    from .checklist import checklist_sources, item_switches
    from .explain import described
    from .why import motivation_evidence

    t = _strings(lang)
    item, src = ai.item, _source(ai)
    porting = applied(item, target, text=described(item.body)) if porting is None else porting
    from .escape import plain
    from .why import causes, say_cause

    out = [Evidence(plain(say_cause(c, lang)), src, "body", c.sentence, "dives.toml [[cause]]")
           for c in causes(item.body) if c.sentence]
    out += [Evidence(f"{t['daily']['dive_why'].format(text=label)}".rstrip("。."), src, "body", said,
                     "conclusions.toml [motivation]") for label, said in motivation_evidence(ai, lang)]
    out += figure_evidence(ai, t)
    for p in porting:
        field = "title" if p.evidence.lower() in item.title.lower() else (
            "files" if any(f.path == p.evidence for f in item.files) else "body")
        out.append(Evidence(pick(p.brief, lang) or pick(p.caveat, lang), src, field, p.evidence,
                            f"porting.toml:{p.entry.id}"))
    from .code_view import device_lines

    out += [Evidence(plain(said), src, "diff", line or "—", rule) for said, line, rule in device_lines(item, t)]
    # what the change does: the author's list of changes said one by one, what the diff shows, and the kind of
    # change the dive's verification follows (render/diff_mechanism.py, render/change_kind.py)
    from .change_kind import change_kind
    from .diff_mechanism import changes_said, moves_said

    out += [Evidence(plain(said), src, "body", sentence, "dives.toml [changes]")
            for said, sentence in changes_said(ai, lang)]
    out += [Evidence(plain(said), src, "diff", line or "—", rule) for said, line, rule in moves_said(ai, t)]
    if not causes(item.body) and not motivation_evidence(ai, lang):  # the dive's why is then the purposes
        from .diff_mechanism import purposes_said

        out += [Evidence(plain(said), src, "body", sentence, "dives.toml [changes] purpose_verbs")
                for said, sentence in purposes_said(ai, lang)]
    kind = change_kind(ai, target)
    if kind.id:
        field = "diff" if kind.evidence.startswith(("removes-", "kernel-added", "version-gate")) else (
            "title" if kind.evidence.startswith("kernel-title") else "analysis")
        out.append(Evidence(f"kind: {kind.id}", src, field, kind.evidence, f"dives.toml [[kind]] {kind.id}"))
    for rid in ai.analysis.risk_labels:
        found = risk_evidence(ai, rid, t)
        if found is not None:
            out.append(found)
    gone = _removal_record(ai)
    if gone is not None:
        out.append(gone)
    out += _weekly_risk_records(ai, t)
    switches, envs = item_switches(ai)
    lines = [line for line in f"{item.title}\n{item.body[:20000]}".split("\n")]
    for kind, values in (("switch", switches), ("env", envs)):
        for v in values[:4]:
            key = v.split("=")[0]
            line = next((ln.strip() for ln in lines if key in ln), key)
            out.append(Evidence(v, src, "title" if key in item.title else "body", line, f"checklists.toml:{kind}"))
    for step, rule, values in checklist_sources(ai, lang, target_name(target, lang), porting):
        out.append(Evidence(step, src, "checklist", "; ".join(f"{k}={v}" for k, v in values.items()) or "—",
                            f"checklists.toml:{rule}"))
    if ai.later_state:
        out.append(Evidence(ai.later_state, src, "state", ai.later_state, "page: state learnt after the window"))
    said = ai.withdrawn if ai.withdrawn is not None else _withdrawal_now(item)
    if said is not None:  # the author's comment the radar's "withdrawn" / "superseded" rests on (first: never cut)
        out.insert(0, Evidence(said.kind + (f" by {said.by}" if said.by else ""), src, "comment", said.said,
                            f"withdrawal.toml:{said.kind}"))
    return [_quoted(e) for e in out[:_bounds()["records"]]]


# --------------------------------------------------------------------------- bounds


@rules_cache
def _bounds() -> dict[str, int]:
    """dives.toml [evidence]: figure records, records in all and characters quoted per record."""
    data = rule_data("dives").get("evidence", {})
    return {"figures": int(data.get("figures", 12)), "records": int(data.get("records", 60)),
            "text_chars": int(data.get("text_chars", 320))}


_SENTENCE_END = re.compile(r"[.!?;。！？；](?=\s)|[。！？；]|\n")
_EXCERPT = " (excerpt)"


def _quoted(e: Evidence) -> Evidence:
    """A record quoting at most `text_chars` characters of its source (see `excerpt`)."""
    if e.field.endswith(_EXCERPT):
        return e
    text, cut = excerpt(e.text, e.statement if isinstance(e.statement, str) else "", _bounds()["text_chars"])
    return replace(e, text=text, field=e.field + _EXCERPT) if cut else e


def excerpt(text: str, anchor: str, limit: int) -> tuple[str, bool]:
    """`text` itself when it has at most `limit` characters; else (the excerpt, True): the sentence holding
    `anchor` (its start when the anchor is not in it), and when that sentence is longer than `limit`, its
    `limit` characters around the anchor cut at spaces (at characters for a text without any). Never an "…".
    Reads at most 2 x `limit` characters around the anchor: linear in the text."""
    if len(text) <= limit:
        return text, False
    at = text.find(anchor) if anchor and len(anchor) <= limit else -1
    at, size = (at, len(anchor)) if at >= 0 else (0, 0)
    low = max(0, at - limit)
    start = low
    for m in _SENTENCE_END.finditer(text, low, at):
        start = m.end()
    found = _SENTENCE_END.search(text, at + size, min(len(text), at + size + limit))
    end = found.end() if found else min(len(text), at + size + limit)
    if end - start > limit:
        start = max(start, at - (limit - size) // 2)
        if start > 0 and not text[start - 1].isspace() and (space := text.find(" ", start, at)) >= 0:
            start = space + 1
        stop = min(end, start + limit)
        if stop < len(text) and not text[stop].isspace() and (space := text.rfind(" ", at + size, stop)) > start:
            stop = space
        end = stop
    return text[start:end].strip().rstrip("…").rstrip(), True


def _withdrawal_now(item) -> Any:
    """The withdrawal or supersession the item's author said in any comment (analyse/withdrawal.py), or None."""
    from datetime import UTC, datetime

    from ..analyse.withdrawal import active_rules, withdrawal

    return withdrawal(item, datetime.max.replace(tzinfo=UTC), active_rules())


def evidence_text(inp: Any, lang: str, as_json: bool = False) -> str:
    """What `radar show ITEM --evidence` prints: one block per statement (statement, then the rule, source and
    field, then the sentence it rests on), or the records as a JSON array."""
    import json

    from .escape import plain

    if not inp.known:
        return (json.dumps([], indent=2) + "\n") if as_json else f"{inp.item.item.ref}: no evidence (not in the store)\n"
    records = item_evidence(inp.item, lang, inp.target)
    if as_json:
        return json.dumps([e.json() for e in records], ensure_ascii=False, indent=2) + "\n"
    lines = [f"# {inp.item.item.ref} · evidence", ""]
    for e in records:
        lines.append(f"- {plain(e.statement) if not isinstance(e.statement, str) else e.statement}")
        lines.append(f"  rule: {e.rule} · source: {e.source} · field: {e.field}")
        lines.append(f"  text: {' '.join(e.text.split())}")
    return "\n".join(lines) + "\n"
