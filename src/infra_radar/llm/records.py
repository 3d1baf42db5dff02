"""The numbered evidence records a model writes about one item from, and cites per sentence.

A record is what the rules read or concluded, as one line: the title, the files, the description's own
sentences (quoted lines, commands and logs left out), the evidence records of render/evidence.py (causes,
motivation, figures with their conditions, porting entries, risks, switches), the code facts of the diff
(a default it ships, a switch, a version gate, a removal, a device check) with where the code contradicts
the description, and the verdict (grade, decision) with its reasons. Records of the code, the figures and
the verdict are *fixed*: the template places them; a model sentence never rewrites or contradicts them
(llm/cited.py checks that). The kinds' labels are data: grounding.toml [records].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..models import AnalysedItem

__all__ = ["FIXED_KINDS", "Record", "item_records", "records_block"]

# what the template places from the rules and a model may not override
FIXED_KINDS = frozenset({"code", "contradiction", "figure", "verdict"})
# which records a prompt keeps first when they do not all fit its budget
_FIRST = ("title", "contradiction", "code", "figure", "verdict", "cause", "motivation", "files", "porting",
          "switch", "risk", "sentence")
_EVIDENCE_KINDS = (("dives.toml", "cause"), ("conclusions.toml", "motivation"), ("claims", "figure"),
                   ("figures:", "figure"), ("porting.toml", "porting"), ("checklists.toml:switch", "switch"),
                   ("checklists.toml:env", "switch"), ("weekly.toml [risks] removal", "code"), ("risks", "risk"))


@dataclass(frozen=True, slots=True)
class Record:
    """One numbered record: `id` (1-based, as the prompt shows it), `kind`, its `text` and the rule it came from."""

    id: int
    kind: str
    text: str
    rule: str = ""

    @property
    def fixed(self) -> bool:
        return self.kind in FIXED_KINDS

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "text": self.text, "rule": self.rule, "fixed": self.fixed}


def _settings() -> dict[str, Any]:
    from .figures import grounding_rules

    return grounding_rules().get("records", {})


def _description(body: str, most: int, longest: int) -> list[str]:
    """The description's sentences (analyse.code_claims: fenced code, quoted lines, tables and indented blocks
    left out; hard-wrapped lines joined), whole: headings and a sentence longer than `longest` are left out,
    never cut."""
    from ..analyse.code_claims import _sentences

    out: list[str] = []
    for s in _sentences(body[:20000]):
        if (s.startswith(("#", "<", "- [", "`")) or s.endswith((":", "：")) or "<img" in s
                or not any(ch.isalpha() for ch in s)):
            continue  # headings, markup, a template's prompt ("Paste … here:"), a command: no statement
        if 12 <= len(s) <= longest and s not in out:
            out.append(s)
            if len(out) >= most:
                break
    return out


def _kind(rule: str) -> str:
    return next((kind for prefix, kind in _EVIDENCE_KINDS if rule.startswith(prefix)), "")


def item_records(ai: AnalysedItem, lang: str, target: str) -> list[Record]:
    """The numbered records of one item, in a fixed order (so a prompt is the same on every run)."""
    from ..render.base import load_strings, pick, top_files
    from ..render.code_view import code_lines, contradiction_clause
    from ..render.escape import plain
    from ..render.evidence import item_evidence

    conf = _settings()
    t = load_strings(lang)
    item, a = ai.item, ai.analysis
    raw: list[tuple[str, str, str]] = [("title", item.title, "title")]
    if item.files:
        raw.append(("files", f"+{item.additions}/-{item.deletions}: " + ", ".join(top_files(item.files, 8)),
                    "files"))
    said = _description(item.body, int(conf.get("sentences", 12)), int(conf.get("longest", 400)))
    raw += [("sentence", s, "body") for s in said]
    for e in item_evidence(ai, lang, target):
        kind = _kind(e.rule)
        if not kind or e.rule == "figures:none":
            continue  # checklist steps and states are the radar's advice, not what the change is; "no figures" no fact
        statement = e.statement if isinstance(e.statement, str) else plain(e.statement)
        quoted = " ".join(e.text.split())
        line = statement if not quoted or quoted in statement or quoted in said else f"{statement} ← {quoted}"
        raw.append((kind, line, e.rule))
    if item.code:
        lines = code_lines(item, t)
        raw += [("code", plain(line), "code_facts.toml") for line in lines[1:]]  # the first says where read
    clause = contradiction_clause(ai, t)
    if clause:
        raw.append(("contradiction", plain(clause), "code_facts.toml [contradictions]"))
    verdict = [f"{a.priority}/{a.grade}", pick(a.grade_reason, lang), pick(a.decision_reason, lang)]
    raw.append(("verdict", t["common"]["sep"].join(v for v in verdict if v), "grading"))
    seen: set[str] = set()
    unique: list[tuple[str, str, str]] = []
    for kind, text, rule in raw:
        text = " ".join(str(text).split())
        if text and text not in seen:
            seen.add(text)
            unique.append((kind, text, rule))
    # whole records within the budget, the facts first (the code, the figures, the verdict), then the rest in
    # their order; shown, and numbered, in reading order. A record is never cut: one that does not fit is left out.
    budget = int(conf.get("budget", 6000))
    rank = {kind: i for i, kind in enumerate(_FIRST)}
    chosen: set[int] = set()
    used = 0
    for i in sorted(range(len(unique)), key=lambda i: (rank.get(unique[i][0], len(rank)), i)):
        cost = len(unique[i][1]) + 16
        if used + cost <= budget:
            chosen.add(i)
            used += cost
    return [Record(n + 1, kind, text, rule)
            for n, (kind, text, rule) in enumerate(unique[i] for i in sorted(chosen))]


def records_block(records: list[Record], lang: str) -> str:
    """The records as the prompt shows them: `[n] label: text`, one a line (labels: grounding.toml [records])."""
    labels = _settings().get(lang, {})
    return "\n".join(f"[{r.id}] {labels.get(r.kind, r.kind)}: {r.text}" for r in records)
