"""The tracked-item recheck and the scope's "since the last radar" line, as the report shows them.

Each tracked item gets one line: the item, its state at the window's end (a merged PR with its short merge
commit and its changed files), whether anything changed since the radar that last showed it, and why it is
tracked. What changed follows as short notes under the line; a change that would have earned a second deep
dive (merged with other files than shown, new figures, reopened) is an update note. Nothing changed: one line.
Every author piece (title, paths, figures, the reason typed with `radar watch add`) is escaped here.
"""

from __future__ import annotations

from typing import Any

from ..config import rule_data, rules_cache
from ..models import CLOSED, MERGED, OPEN, FileChange
from .base import claim_phrase, name, ref_url
from .escape import Md, code, join, link, text
from .inputs import DailyInput, WatchRecheck
from .titles import title_head

__all__ = ["SHOWN_FILES", "recheck_views", "since_last_line"]

SHOWN_FILES = 2  # changed files a line names (the largest first); the rest are counted
SHOWN_PATHS = 3  # added or removed paths a note names
SHOWN_FIGURES = 2  # new figures a note names


def _paths(paths: list[str], sep: str, more: str) -> Md:
    named = join([code(p) for p in paths[:SHOWN_PATHS]], sep)
    return Md(named + (more if len(paths) > SHOWN_PATHS else ""))


def _largest(files: list[FileChange]) -> list[str]:
    return [f.path for f in sorted(files, key=lambda f: (-((f.additions or 0) + (f.deletions or 0)), f.path))]


def _state(w: WatchRecheck, r: dict[str, Any], t: dict[str, Any]) -> Md:
    """The state at the window's end; a newer state known only from a source saved later (an undated page) is
    marked beside it, as the tables mark it."""
    if w.state_now == MERGED and w.merge_commit:
        return Md(r["merged"].format(sha=code(w.merge_commit[:7])))
    later = t["daily"]["later"].get(w.later_state, "") if w.later_state else ""
    if later:  # no source dates the close or merge: the state in the window is not known
        return text(t["daily"]["state_unknown"] + t["common"]["paren"].format(later))
    return text(name(t, "states", w.state_now))


def _files(w: WatchRecheck, r: dict[str, Any], t: dict[str, Any]) -> Md:
    """A merged PR's changed files, the largest first: all of them up to SHOWN_FILES, else those and a count."""
    if w.state_now != MERGED or not w.files:
        return Md("")
    paths = _largest(w.files)
    key = "files_more" if len(paths) > SHOWN_FILES else "files_one" if len(paths) == 1 else "files"
    return Md(r[key].format(n=len(paths), paths=join([code(p) for p in paths[:SHOWN_FILES]], t["common"]["sep"])))


def _origin(w: WatchRecheck, r: dict[str, Any], t: dict[str, Any]) -> Md:
    parts = []
    if w.origin_day:
        reasons = t["common"]["sep"].join(r["reasons"].get(x, x) for x in w.reasons)
        parts.append(Md(r["carried"].format(day=w.origin_day, reasons=reasons)))
    if w.hand is not None:
        parts.append(Md(r["hand_reason"].format(reason=text(w.hand))) if w.hand.strip() else Md(r["hand"]))
    return join(parts, t["common"]["semi"])


def _file_changes(w: WatchRecheck, r: dict[str, Any], t: dict[str, Any]) -> Md:
    sep = t["common"]["sep"]
    parts = []
    if w.files_added:
        parts.append(Md(r["added"].format(n=len(w.files_added), paths=_paths(w.files_added, sep, r["more"]))))
    if w.files_removed:
        parts.append(Md(r["removed"].format(n=len(w.files_removed), paths=_paths(w.files_removed, sep, r["more"]))))
    return join(parts, t["common"]["semi"])


def _notes(w: WatchRecheck, r: dict[str, Any], t: dict[str, Any]) -> list[Md]:
    """What changed since the radar that last showed the item, one short note each: the state, then the update
    notes (what would have earned a second deep dive), then the rest."""
    sep = t["common"]["sep"]
    notes: list[Md] = []
    moved = w.files_added or w.files_removed
    reopened = w.state_before in (CLOSED, MERGED) and w.state_now == OPEN
    if w.state_before and w.state_now != w.state_before and w.state_now in t["states"] and not reopened:
        notes.append(Md(r["state"].format(before=text(name(t, "states", w.state_before)),
                                          now=text(name(t, "states", w.state_now)))))
    if reopened:
        notes.append(Md(r["update_reopened"]))
    if moved and w.state_now == MERGED:
        notes.append(Md(r["update_files"].format(changes=_file_changes(w, r, t))))
    if w.new_claims:
        figures = join([text(claim_phrase(c)) for c in w.new_claims[:SHOWN_FIGURES]], sep)
        more = r["figures_more"].format(n=len(w.new_claims) - SHOWN_FIGURES) if len(w.new_claims) > SHOWN_FIGURES \
            else ""
        notes.append(Md(r["update_figures"].format(figures=figures) + more))
    if w.commit_before and w.merge_commit and w.commit_before[:7] != w.merge_commit[:7]:
        notes.append(Md(r["commit"].format(before=code(w.commit_before[:7]), now=code(w.merge_commit[:7]))))
    if moved and w.state_now != MERGED:
        notes.append(Md(r["files_changed"].format(changes=_file_changes(w, r, t))))
    if w.lines_moved:
        notes.append(Md(r["lines_moved"]))
    related = w.related or [(ref, "follow-up") for ref in w.new_refs]
    if related:
        refs = join([Md(f"{link(ref, url[0] if url else ref_url(ref))} {r['roles'].get(role, role)}")
                     for ref, role, *url in related], sep)
        notes.append(Md(r["related"].format(refs=refs)))
    if w.new_comments:
        notes.append(Md(r["comments_one" if w.new_comments == 1 else "comments"].format(n=w.new_comments)))
    if w.last_recheck and w.state_now in (MERGED, CLOSED):
        notes.append(Md(r["last_merged" if w.state_now == MERGED else "last_closed"]))
    return notes


def _change(w: WatchRecheck, changed: bool, r: dict[str, Any]) -> Md:
    if w.last_day:
        return Md(r["changed" if changed else "same"].format(day=w.last_day))
    if w.state_before:  # shown before, on a day the caller did not give
        return Md(r["changed_undated" if changed else "same_undated"])
    return Md(r["first"])


def recheck_view(w: WatchRecheck, t: dict[str, Any]) -> dict[str, Any]:
    """One tracked item: its line and the notes under it (none when nothing changed)."""
    r, semi = t["recheck"], t["common"]["semi"]
    view = {"ref": w.ref, "url": w.url, "title": w.title, "notes": [], "changed": False, "folded": False,
            "origin_day": w.origin_day or "", "state_changed": False}
    origin = _origin(w, r, t)
    if w.state_now == "unknown":
        line = join([x for x in (Md(r["unknown_line"].format(ref=text(w.ref))), origin) if x], semi)
        return {**view, "line": line, "short": line}
    notes = _notes(w, r, t)
    changed = bool(notes)
    state = _state(w, r, t)
    rest = join([x for x in (Md(state + _files(w, r, t)), _change(w, changed, r), origin) if x], semi)
    line = Md(r["line"].format(link=link(w.ref, w.url), title=text(title_head(w.title)), rest=rest))
    needs = still_needs(w, t)
    if needs:  # what it still needs stays in view while it is open
        notes = [*notes, Md(r["needs"].format(needs=join([text(x) for x in needs], t["common"]["sep"])))]
    # carried with nothing new and nothing it still needs: named on the one line of the unchanged
    # carried, or shown unchanged by the previous radar (pipeline.memory.unchanged): named on the one line
    folded = not changed and not needs and w.hand is None
    state_changed = bool(w.state_before) and w.state_now != w.state_before
    return {**view, "line": line, "notes": notes, "changed": changed, "folded": folded, "state_changed": state_changed,
            "short": Md(f"{link(w.ref, w.url)} {state}")}


@rules_cache
def _needs_labels() -> tuple[str, ...]:
    return tuple(rule_data("recheck").get("needs", []))


def still_needs(w: WatchRecheck, t: dict[str, Any]) -> list[str]:
    """What a tracked item still needs while it is not merged: its open risk labels that keep it in view
    (rules/recheck.toml `needs`), by name."""
    if w.state_now in (MERGED, CLOSED):
        return []
    return [name(t, "risks", x) for x in _needs_labels() if x in w.risks]


def recheck_views(rechecks: list[WatchRecheck], t: dict[str, Any]) -> list[dict[str, Any]]:
    """The recheck section's items: those with something new first, then the unchanged ones, then those folded
    (each group in the order the pipeline gave)."""
    return sorted((recheck_view(w, t) for w in rechecks), key=lambda v: (v["folded"], not v["changed"]))


def since_last_line(inp: DailyInput, t: dict[str, Any], views: list[dict[str, Any]] | None = None) -> Md | None:
    """The scope's line on what changed since the last published radar (None without memory). The tracked
    items are counted from the recheck's own views (`views`, else built here), so the line and the section
    under it say the same: state changed + changed otherwise + unchanged = tracked."""
    s, r = inp.since_last, t["recheck"]
    if s is None:
        return None
    if s.day is None:
        return Md(r["no_last"].format(new=s.new))
    views = recheck_views(inp.watch, t) if views is None else views
    state = sum(1 for v in views if v["state_changed"])
    other = sum(1 for v in views if v["changed"] and not v["state_changed"])
    key = "tracked_one" if len(views) == 1 and "tracked_one" in r else "tracked"
    # an unchanged item that still needs something (or was watched by hand) has its own line, not the one line
    # of the unchanged: said, so the count here and the "unchanged (n)" line under it agree
    apart = sum(1 for v in views if not v["changed"] and not v.get("folded"))
    tracked = r[key].format(n=len(views), state=state, other=other, same=len(views) - state - other,
                            apart=r["tracked_apart"].format(k=apart) if apart else "") \
        if views else r["tracked_none"]
    return Md(r["since_last"].format(day=s.day, new=s.new, tracked=tracked, stopped=s.stopped))
