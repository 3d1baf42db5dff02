"""The deep dive's mechanism from the change itself: the author's own list of changes (analyse/change_list.py
`change_clauses`, each clause read as an action and said in our words) and what the diff shows (the code facts'
`moves`, analyse/diff_moves.py: a call replaced by another in the same hunk, a backend or op registered, a class's
attribute patched, files added by role). Each statement comes with what it rests on, for `radar show
--evidence`: the description's sentence or the diff line. Rules and frames: dives.toml [changes],
diff_moves.toml, i18n.toml [daily] move_*.
"""

from __future__ import annotations

import posixpath
import re
from fnmatch import translate
from typing import Any

from ..config import rule_data, rules_cache
from ..models import AnalysedItem
from .escape import Md, code, fmt, join


@rules_cache
def _roles() -> list[tuple[str, dict[str, str], re.Pattern[str], bool]]:
    data = rule_data("diff_moves")
    return [(r["id"], r["name"], re.compile("|".join(f"(?:{translate(p)})" for p in r["paths"])), bool(r.get("named")))
            for r in data.get("added_roles", [])]


def _said_rules() -> dict[str, int]:
    return {k: int(v) for k, v in rule_data("diff_moves").get("added_said", {}).items()}


def changes_said(ai: AnalysedItem, lang: str) -> list[tuple[Md, str]]:
    """(our clause, the author's sentence) for each change the description lists, said in `lang`; a clause the
    rules cannot say as an action is left out (never the author's English inside a Chinese sentence)."""
    from ..analyse.change_list import change_clauses
    from .cjk import tidy
    from .mechanism import read
    from .saying import say, say_zh_or_none
    from .why import dive_rules

    rules = dive_rules().get("changes", {})
    out: list[tuple[Md, str]] = []
    for clause, sentence in change_clauses(ai.item.body, ai.item.repo, rules):
        actions, _ = read(clause)
        if not actions:
            continue
        said = say_zh_or_none(actions) if lang == "zh" else say(actions, lang)
        if said:
            out.append((Md(tidy(said)) if lang == "zh" else said, sentence))
        if len(out) >= int(rules.get("said_most", 4)):
            break
    return out


def purposes_said(ai: AnalysedItem, lang: str) -> list[tuple[Md, str]]:
    """(our clause, the author's sentence) for what the listed changes are for ("在 NPU 上避免兼容性 issues")."""
    from ..analyse.change_list import change_purposes
    from .cjk import tidy
    from .mechanism import read
    from .saying import say, say_zh_or_none
    from .why import dive_rules

    out: list[tuple[Md, str]] = []
    for purpose, sentence in change_purposes(ai.item.body, ai.item.repo, dive_rules().get("changes", {})):
        actions, _ = read(purpose)
        said = (say_zh_or_none(actions) if lang == "zh" else say(actions, lang)) if actions else None
        if said:
            out.append((Md(tidy(said)) if lang == "zh" else said, sentence))
        if len(out) >= int(dive_rules().get("changes", {}).get("purpose_most", 2)):
            break
    return out


def _role(path: str, kernels: set[str]) -> tuple[str, dict[str, str], bool]:
    name = path.rpartition("/")[2]
    for rid, names, regex, named in _roles():
        if rid == "kernel" and path in kernels:
            return rid, names, named
        if regex.match(path) or regex.match(name):
            return rid, names, named
    return "", {}, False


def _added_said(ai: AnalysedItem, t: dict[str, Any]) -> tuple[Md, str] | None:
    """The files the change adds, by role, with the folder they all share: "在 `X/` 下新增 3 个 kernel 文件、
    1 个 patch（`a_patch.py`）与 2 个测试"; None under `least` files or with no role."""
    moves = (ai.item.code or {}).get("moves") or {}
    added = moves.get("added", [])
    said_rules = _said_rules()
    if len(added) < said_rules.get("least", 2):
        return None
    device = (ai.item.code or {}).get("device") or {}
    kernels = {k["file"] for k in device.get("kernels", []) if k.get("change") == "added"}
    groups: dict[str, tuple[dict[str, str], bool, list[str]]] = {}
    for path in added:
        rid, names, named = _role(path, kernels)
        if rid:
            groups.setdefault(rid, (names, named, []))[2].append(path)
    if not groups:
        return None
    lang, d = t["lang"], t["daily"]
    parts = []
    for names, named, paths in list(groups.values())[: said_rules.get("roles_most", 4)]:
        label = names.get(lang) or names["en"]
        # a Latin role name is set off by a space ("1 个 patch"), a Chinese one is not ("2 个测试")
        part = d["move_added_role"].format(n=len(paths), role=(" " + label) if label[:1].isascii() else label)
        if named and len(paths) <= 2:
            part += t["common"]["paren"].format(t["common"]["sep"].join(code(p.rpartition("/")[2]) for p in paths))
        parts.append(part)
    shown = [p for _, _, paths in groups.values() for p in paths]
    folder = posixpath.commonpath([posixpath.dirname(p) for p in shown]) if len(shown) > 1 else ""
    text = join([Md(p) for p in parts], t["common"]["sep"])
    said = fmt(d["move_added_under"], folder=code(folder + "/"), text=text) if folder else fmt(d["move_added"], text=text)
    return said, "; ".join(shown[:6])


def moves_said(ai: AnalysedItem, t: dict[str, Any], most: int = 2) -> list[tuple[Md, str, str]]:
    """(our statement, the diff line or files it rests on, the rule) of what the diff shows the change does."""
    moves = (ai.item.code or {}).get("moves") or {}
    d = t["daily"]
    out: list[tuple[Md, str, str]] = []
    for r in moves.get("replaced", [])[:most]:
        out.append((fmt(d["move_replaced"], old=code(r["old"]), new=code(r["new"]), file=code(r["file"])),
                    r["line"], "diff_moves.toml [replaced]"))
    for r in moves.get("registered", [])[:most]:
        out.append((fmt(d["move_registered"], name=code(r["name"]), call=code(r["call"])), r["line"],
                    "diff_moves.toml [[registered]]"))
    patched = moves.get("patched", [])
    if patched:
        names = join([code(p["target"]) for p in patched[:most + 1]], t["common"]["sep"])
        out.append((fmt(d["move_patched"], targets=names, file=code(patched[0]["file"])), patched[0]["line"],
                    "diff_moves.toml [patched]"))
    # a device branch the change removes or adds (device facts' guards): `if is_npu_available: return ...`
    guards = ((ai.item.code or {}).get("device") or {}).get("guards", [])
    for change in ("removed", "added"):
        g = next((g for g in guards if g.get("change") == change and g.get("line")), None)
        if g is not None:
            out.append((fmt(d[f"move_guard_{change}"], line=code(g["line"]), file=code(g["file"].rpartition("/")[2])),
                        g["line"], f"device_facts.toml [[guard]] {g['id']}"))
    added = _added_said(ai, t)
    if added is not None:
        out.append((added[0], added[1], "diff_moves.toml [[added_roles]]"))
    return out
