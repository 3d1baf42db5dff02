"""Shared pieces of every report: strings, formatting, ranking and the facts of one item row.

All wording comes from i18n.toml through `t`; templates decide the layout.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..models import COMMIT, PR, AnalysedItem, FileChange, Link, PerfClaim, Text, format_number, github_url
from .escape import Md, text
from .explain import clickable

LANGS = ("zh", "en")
PRIORITY_ORDER = {"P0": 0, "P1": 1, "P2": 2, "none": 3}
TOP = ("P0", "P1")
CHANGE_KINDS = (PR, COMMIT)


# --- strings ---------------------------------------------------------------------------------------

def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@lru_cache(maxsize=1)
def _packaged_strings() -> dict[str, Any]:
    """The packaged i18n.toml, parsed once a process (a card reads its strings twice; nothing changes them)."""
    from ..toml_cache import loads  # as last parsed, when the file has not changed

    return loads((resources.files("infra_radar") / "defaults" / "i18n.toml").read_text(encoding="utf-8"))


def load_strings(lang: str, template_dir: Path | None = None) -> dict[str, Any]:
    """The fixed strings of language `lang`, with a template directory's i18n.toml merged over them."""
    if lang not in LANGS:
        raise ConfigError(f"report language must be one of {', '.join(LANGS)}, not {lang!r}")
    data = _packaged_strings()
    user = template_dir / "i18n.toml" if template_dir else None
    if user is not None and os.path.lexists(user):
        from ..guard.files import RULES_BYTES, read_toml

        data = _deep_merge(data, read_toml(user, RULES_BYTES))
    return {**data[lang], "codes": data["codes"], "lang": lang}


def name(t: dict[str, Any], table: str, code: str) -> str:
    """Display name of `code` in name table `table` (kinds, topics, risks, ...); the code if unknown."""
    return t[table].get(code, code)


def pick(text: Text, lang: str) -> str:
    """The `lang` version of a bilingual text, falling back to the other language."""
    return text.get(lang) or next((v for v in text.values() if v), "")


# --- small formatting helpers ----------------------------------------------------------------------

def iso(dt: datetime | None) -> str:
    """ISO-8601 UTC with a Z, or "" for no time."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if dt else ""


def day(dt: datetime | None) -> str:
    """The UTC date of `dt` as YYYY-MM-DD, or ""."""
    return dt.astimezone(UTC).strftime("%Y-%m-%d") if dt else ""


def signed(x: float, digits: int = 0, suffix: str = "") -> str:
    """A number with an explicit sign, using the typographic minus: +3, −42.0%."""
    body = f"{abs(x):.{digits}f}{suffix}"
    if body == f"{0:.{digits}f}{suffix}":
        return f"±{body}"
    return f"−{body}" if x < 0 else f"+{body}"


def with_unit(x: float | None, unit: str) -> str:
    """A measured value with its unit: 0.51 s, 93%, 2.45×; an em dash when unknown."""
    if x is None:
        return "—"
    value = format_number(x)
    if unit in ("%", "x", "×"):
        return f"{value}{'%' if unit == '%' else '×'}"
    return f"{value} {unit}" if unit else value


def mean(values: list[int]) -> str:
    """Average with one decimal, or an em dash for no values."""
    return f"{sum(values) / len(values):.1f}" if values else "—"


def delta(now: int, before: int) -> str:
    """Change between two counts: "+10 / +12.5%", or just "+10" when the base is zero."""
    text = signed(now - before)
    return f"{text} / {signed((now - before) / before * 100, 1, '%')}" if before else text


def short_ref(ai: AnalysedItem) -> str:
    """`#N` inside a one-repository report; the tag or short sha otherwise."""
    item = ai.item
    return f"#{item.number}" if item.number is not None else item.key[:10]


# relations whose target is a pull request by construction (a cherry-pick's origin, a PR with the same title
# and files, the downstream PR an upstream change was adapted in)
PR_RELATIONS = frozenset({"cherry-pick", "duplicate", "adapted-in"})


def link_url(link: Link) -> str:
    """Where a link points: its URL, else the GitHub page of the referenced number (models.github_url)."""
    if link.url:
        return link.url
    return github_url(link.repo, link.number, PR if link.kind in PR_RELATIONS else None) if link.repo else ""


def shown_url(link: Link, kind: str | None = None) -> str:
    """Where a report links a relation: the GitHub page of the referenced item, built from its repository and
    number (models.github_url: /pull/N for a relation to a pull request or an address of the author's that
    names one), or the author's URL when it is exactly that item's page (/pull/N or /issues/N); "" for an
    address from the text that is no item (a `url` link), which a report shows as text: author text never
    becomes a link. `kind`: the referenced item's kind where the store holds it (PR or issue), which decides."""
    if not link.repo or link.number is None:
        return ""
    if kind is not None:
        return github_url(link.repo, link.number, kind)
    own = f"https://github.com/{link.repo}/"
    url = link.url or ""
    rest = url[len(own):] if url.lower().startswith(own.lower()) else ""
    if rest in (f"pull/{link.number}", f"issues/{link.number}"):
        return url
    # a pull request's page, also when the author's address names one (/pull/N/files, /pull/N#issuecomment-…)
    said_pull = rest.startswith(f"pull/{link.number}") and not rest[len(f"pull/{link.number}"):][:1].isdigit()
    return github_url(link.repo, link.number, PR if link.kind in PR_RELATIONS or said_pull else None)


def ref_url(ref: str, kind: str | None = None) -> str:
    """GitHub URL of an `owner/name#N` reference of item kind `kind` (PR, ISSUE, or None when unknown)."""
    repo, _, number = ref.partition("#")
    return github_url(repo, int(number), kind) if number.isdigit() else f"https://github.com/{repo}"


# --- ranking ---------------------------------------------------------------------------------------

def focus_weight(ai: AnalysedItem, weights: dict[str, float]) -> float:
    """The largest focus weight among the item's topics (1.0 per unweighted topic)."""
    return max((weights.get(topic, 1.0) for topic in ai.analysis.topics), default=0.0)


def rank(items: Iterable[AnalysedItem], weights: dict[str, float] | None = None) -> list[AnalysedItem]:
    """Items by priority, then importance, insight and focus weight (highest first), then reference."""
    weights = weights or {}

    def key(ai: AnalysedItem) -> tuple:
        a = ai.analysis
        return (PRIORITY_ORDER.get(a.priority, 9), -a.importance, -a.insight, -focus_weight(ai, weights),
                ai.item.repo, ai.item.number or 0, ai.item.key)

    return sorted(items, key=key)


# --- shared views ----------------------------------------------------------------------------------

def lines(change: FileChange) -> int:
    return (change.additions or 0) + (change.deletions or 0)


def files_total(files: list[FileChange], t: dict[str, Any]) -> str:
    """"+412/−88, 6 files" in the report language."""
    add = sum(f.additions or 0 for f in files)
    dele = sum(f.deletions or 0 for f in files)
    key = "files_total_one" if len(files) == 1 else "files_total"
    return t["common"][key].format(add=add, dele=dele, n=len(files))


def top_files(files: list[FileChange], n: int = 5) -> list[str]:
    """The `n` paths with the most changed lines."""
    return [f.path for f in sorted(files, key=lambda f: (-lines(f), f.path))[:n]]


def context_text(context: dict[str, str], t: dict[str, Any]) -> str:
    order = ["model", "hardware", "batch", "concurrency", "config"]
    keys = [k for k in order if context.get(k)] + sorted(k for k in context if k not in order and context[k])
    fmt = t["context"]
    return fmt["joiner"].join(fmt.get(k, fmt["other"]).format(k=k, v=context[k]) for k in keys)


def change_text(claim: PerfClaim) -> str:
    """"−42.0%", "2.45×" or both; an em dash when the author gave neither."""
    parts = []
    if claim.change_pct is not None:
        parts.append(signed(claim.change_pct, 1, "%"))
    if claim.ratio is not None:
        parts.append(f"{format_number(claim.ratio)}×")
    return " / ".join(parts) or "—"


def claim_rows(claims: list[PerfClaim], t: dict[str, Any]) -> list[dict[str, str]]:
    """One table row per reported figure."""
    return [{"metric": c.metric, "before": with_unit(c.before, c.unit), "after": with_unit(c.after, c.unit),
             "change": change_text(c), "context": context_text(c.context, t) or "—"} for c in claims]


def claim_phrase(claim: PerfClaim) -> str:
    """A reported figure in one phrase: "TTFT p50 0.88 s → 0.51 s (−42.0%)"."""
    if claim.before is not None and claim.after is not None:
        return f"{claim.metric} {with_unit(claim.before, claim.unit)} → {with_unit(claim.after, claim.unit)} " \
               f"({change_text(claim)})"
    return f"{claim.metric} {change_text(claim) if claim.after is None else with_unit(claim.after, claim.unit)}"


def names(t: dict[str, Any], table: str, codes: list[str]) -> str:
    """Display names of several codes, joined, or the word for none."""
    return t["common"]["sep"].join(name(t, table, c) for c in codes) or t["common"]["none"]


def team_view(a, t: dict[str, Any]) -> Md:
    """What the team's judgment did to an analysis, in one line: its label (who, when, note, what the rules
    said) or the calibration's move and the flags that made it; empty when the rules' answer stands."""
    c = t["common"]
    rules = a.rules or {}
    if a.label:
        was = " / ".join(rules[k] for k in ("priority", "grade") if a.label.get(k) and rules.get(k))
        what = " / ".join(v for v in (a.label.get("priority"), a.label.get("grade")) if v)
        who, at = text(a.label.get("by") or "—"), (a.label.get("at") or "")[:10]
        who = c["team_who"].format(who=who, at=at) if at else who
        note = c["team_note"].format(note=text(a.label["note"])) if a.label.get("note") else ""
        return Md(c["team_label_line"].format(what=what, who=who, note=note, rules=was))
    if a.learned:
        now = " / ".join(a.learned[k] for k in ("priority", "grade") if a.learned.get(k))
        before = " / ".join(rules[k] for k in ("priority", "grade") if a.learned.get(k))
        moved_by = [(name, weight) for name, weight in a.learned.get("moved_by", []) if not name.startswith("label:")]
        flags = c["sep"].join(f"{text(name)} {weight:+.2f}" for name, weight in moved_by)
        by = a.learned.get("by") or []
        if by and "calibrated_by_line" in c:  # moved by the labels of kin items: which labels
            return Md(c["calibrated_by_line"].format(before=before, after=now, refs=c["sep"].join(text(r) for r in by)))
        return Md(c["calibrated_line"].format(before=before, after=now, flags=flags or c["none"]))
    return Md("")


def grade_shown(a, t: dict[str, Any]) -> str:
    """The grade as listings show it: the team's label carries the team's mark."""
    return f"{a.grade}{t['common']['team_mark']}" if (a.label or {}).get("grade") else a.grade


def row(ai: AnalysedItem, t: dict[str, Any]) -> dict[str, Any]:
    """The facts every listing of an item shows; a priority or grade the team labelled carries the team's mark."""
    item, a, lang = ai.item, ai.analysis, t["lang"]
    label, mark = a.label or {}, t["common"]["team_mark"]
    return {
        "ref": item.ref, "short": short_ref(ai), "url": item.url, "title": html.unescape(item.title),
        "priority": f"{a.priority}{mark}" if label.get("priority") else a.priority, "priority_code": a.priority,
        # the rule that decided the priority (for a P0: which act-now rule), as reasons quote it; a priority the
        # team's label or the calibration moved is explained by the team line instead
        "priority_why": pick(a.why, lang) if a.why and (a.rules or {}).get("priority", a.priority) == a.priority
        else "",
        "state": name(t, "states", "draft" if item.draft else item.state),
        "grade": grade_shown(a, t), "grade_name": name(t, "grades", a.grade),
        "team": team_view(a, t),
        "grade_reason": pick(a.grade_reason, lang), "decision": name(t, "decisions", a.decision),
        "decision_reason": pick(a.decision_reason, lang), "kind": name(t, "kinds", a.item_kind),
        "topics": names(t, "topics", a.topics), "risks": [name(t, "risks", r) for r in a.risk_labels],
        "summary": pick(a.summary, lang) or t["common"]["no_summary"],
        "importance": a.importance, "insight": a.insight,
    }


def link_views(links: Iterable[Link], kinds: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Links as a report lists them; `kinds` (lower-cased ref -> PR/issue, what the store holds) picks the page."""
    seen: dict[str, dict[str, str]] = {}
    kinds = kinds or {}
    for link in links:
        if link.ref and (not link.url or clickable(link.url)):
            seen.setdefault(link.ref, {"ref": link.ref, "url": shown_url(link, kinds.get(link.ref.lower())),
                                       "detail": link.detail})
    return list(seen.values())
