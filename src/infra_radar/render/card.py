"""An item card's template context."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..analyse.porting import applied, target_name
from ..models import PR, FileChange
from .base import claim_rows, day, files_total, iso, lines, link_views, name, ref_url, row
from .checklist import item_checklist
from .code_view import code_lines, contradiction_clause
from .conclusion import conclusion
from .deepdive import deep_view
from .escape import code, fmt, join
from .evidence_risks import stated_risks
from .explain import described, whole
from .inputs import CardInput

# --- card ------------------------------------------------------------------------------------------

_REFERENCE_KINDS = ("references", "url", "cherry-pick")


def _file_groups(files: list[FileChange]) -> list[dict[str, Any]]:
    groups: dict[str, list[FileChange]] = {}
    for f in files:
        top = f.path.split("/")[0] + "/" if "/" in f.path else ""
        groups.setdefault(top, []).append(f)

    def total(fs: list[FileChange]) -> int:
        return sum(lines(f) for f in fs)

    ordered = sorted(groups.items(), key=lambda kv: (-total(kv[1]), kv[0]))
    return [{"dir": d, "n": len(fs), "additions": sum(f.additions or 0 for f in fs),
             "deletions": sum(f.deletions or 0 for f in fs),
             "files": sorted(fs, key=lambda f: (-lines(f), f.path))} for d, fs in ordered]


def adapted_views(entries: Iterable[Any], t: dict[str, Any], full_up: bool = False) -> list[dict[str, str]]:
    """Ledger entries (upstream PR adapted in downstream PR) as report lines: links, title, files, how."""
    k, sep = t["card"], t["common"]["sep"]
    views = []
    for e in entries:
        files = fmt(k["adapted_files"], files=join([code(f) for f in e.files[:6]], sep)) if e.files else ""
        how = fmt(k["adapted_how"], how=whole(e.how)) if e.how and whole(e.how) else ""
        views.append({"ref": e.down_ref, "url": ref_url(e.down_ref, PR), "title": e.down_title,
                      "up_ref": e.up_ref, "up_url": ref_url(e.up_ref, PR), "date": day(e.when),
                      "short": f"#{e.down_number}", "up_short": e.up_ref if full_up else f"#{e.up_number}",
                      "files": files, "how": how})
    return views


_MORE_SECTIONS = {"duplicate": "duplicates", "follow-up": "follow_ups", "adapted-in": "adapted"}


def more_views(more: dict[str, int], t: dict[str, Any]) -> dict[str, str]:
    """Per card section, "" or what follows its listed links: "and N more not listed"."""
    counts = dict.fromkeys(("referenced_by", "duplicates", "follow_ups", "adapted", "related"), 0)
    for kind, n in more.items():
        counts[_MORE_SECTIONS.get(kind, "referenced_by" if kind.startswith("referenced-by") else "related")] += n
    return {section: (t["card"]["more_similar" if section == "duplicates" else "more_links"].format(n=n) if n else "")
            for section, n in counts.items()}


def _moment(when) -> str:
    """A time as the source gave it: a date-only time (a page) as its date, never as midnight."""
    from ..windows import date_only

    return when.date().isoformat() if date_only(when) else iso(when)


def card_context(inp: CardInput, t: dict[str, Any]) -> dict[str, Any]:
    """One item's card: facts, analysis, files by directory and its links."""
    ai, links = inp.item, inp.item.analysis.links
    item = ai.item
    view = row(ai, t)
    view.update({
        "author": item.author or "—", "created": _moment(item.created_at), "merged": iso(item.merged_at),
        "created_bound": item.time_source == "created-bound",
        # merged with no merge time known (a page): no earlier than its opening, said as a bound
        "merged_unknown": item.state == "merged" and item.merged_at is None,
        "merged_after": _moment(item.created_at) if item.time_source != "created-bound" else "",
        "closed": iso(item.closed_at),
        "imported": iso(item.updated_at) if item.time_source == "import" else "", "branches": item.branches, "merge_commit": item.merge_commit or "",
        "labels": item.labels, "native": ai.analysis.native, "risks": [name(t, "risks", r) for r in
                                                                         stated_risks(ai)],
        "claims": claim_rows(ai.analysis.perf_claims, t), "file_groups": _file_groups(item.files),
        "files_total": files_total(item.files, t), "named_paths": item.named_paths[:20],
        "references": link_views((lk for lk in links if lk.kind in _REFERENCE_KINDS), inp.kinds),
        "referenced_by": link_views([*inp.referenced_by, *(lk for lk in links if lk.kind == "follow-up")],
                                    inp.kinds),
        "duplicates": link_views([*inp.duplicates, *(lk for lk in links if lk.kind == "duplicate")], inp.kinds),
        "related": link_views([*inp.related, *(lk for lk in links if lk.kind == "same-mechanism")], inp.kinds),
        "follow_ups": link_views(inp.chain, inp.kinds), "adapted": adapted_views(inp.adapted, t),
        "known": inp.known, "upstream_repo": item.repo, "more": more_views(inp.more, t),
        "code_clause": contradiction_clause(ai, t), "code_lines": code_lines(item, t),
    })
    if inp.known:
        porting = applied(item, inp.target, text=described(item.body))
        tname = target_name(inp.target, t["lang"])
        deep = deep_view(ai, t, porting, tname)
        view.update({"summary": conclusion(ai, t, porting), "grade_reason": deep["grade_reason"],
                     "motivation": deep["motivation"], "mech_blocks": deep["mech_blocks"], "tests": deep["tests"],
                     "porting": deep["porting"], "target": tname,
                     "checklist": item_checklist(ai, t["lang"], tname, porting)})
    return view
