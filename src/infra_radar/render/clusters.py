"""Weekly themes by mechanism, not by topic tag: items that share a specific identifier, a code module or a
linked PR form one theme. Greedy and bounded: no theme may hold more than `max_share` of the week's items,
so a repository's own platform tag ("NPU" in vLLM-Ascend) can never be a theme.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..models import AnalysedItem
from .conclusion import central_identifiers
from .explain import explain_rules, file_role


def _module(path: str, depth: int) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) + "/" if parts else ""


def item_keys(ai: AnalysedItem) -> dict[str, str]:
    """The keys an item can share with others: `id:` identifiers, `dir:` code modules, `ref:` linked PRs."""
    rules = explain_rules().get("weekly", {})
    depth = int(rules.get("module_depth", 3))
    keys: dict[str, str] = {}
    for ident in central_identifiers(ai, 6):
        if len(ident) >= 5 and not ident.startswith("--"):
            keys[f"id:{ident}"] = ident
    lines: Counter = Counter()
    code = [f for f in ai.item.files if file_role(f.path) not in ("tests", "docs")]
    for f in code or [f for f in ai.item.files if file_role(f.path) != "tests"]:
        module = _module(f.path, depth)
        if module:
            lines[module] += (f.additions or 0) + (f.deletions or 0) + 1
    ranked_files = sorted(code, key=lambda f: (-((f.additions or 0) + (f.deletions or 0)), f.path))
    for f in ranked_files[:2]:
        keys[f"file:{f.path}"] = f.path
    for module, _ in lines.most_common(2):
        keys[f"dir:{module}"] = module
        parent = "/".join(module.split("/")[: depth - 1]) + "/"
        if parent.count("/") >= 2 and parent != module:
            keys[f"area:{parent}"] = parent  # a wider module: only for what no specific key grouped
    own = f"{ai.item.repo}#{ai.item.number}" if ai.item.number is not None else ""
    if own:
        keys[f"ref:{own}"] = own
    for link in ai.analysis.links:
        if link.ref and link.ref != own and link.kind in ("references", "cherry-pick", "follow-up", "duplicate"):
            keys[f"ref:{link.ref}"] = link.ref
    return keys


def clusters(items: list[AnalysedItem], max_share: float | None = None, max_themes: int = 6,
             min_size: int = 2) -> list[dict[str, Any]]:
    """Disjoint themes over `items` (ranked order kept inside each), largest first.

    Each round takes the key shared by the most unassigned items, among keys that hold at most
    `max_share` of all items; identifiers and linked PRs win ties over directories, being more specific.
    """
    rules = explain_rules().get("weekly", {})
    share = float(rules.get("max_theme_share", 0.4) if max_share is None else max_share)
    cap = max(min_size, int(share * len(items)))
    index: dict[str, list[int]] = {}
    names: dict[str, str] = {}
    keys_of = []
    for i, ai in enumerate(items):
        keys = item_keys(ai)
        keys_of.append(keys)
        for key, label in keys.items():
            index.setdefault(key, []).append(i)
            names[key] = label
    assigned: set[int] = set()
    out = []
    specificity = {"id": 0, "ref": 1, "file": 2, "dir": 3, "area": 4}
    passes = [("id", "ref", "file", "dir"), ("area",)]
    while len(out) < max_themes and passes:
        best, best_members = None, []
        for key, members in index.items():
            if key.split(":", 1)[0] not in passes[0]:
                continue
            free = [i for i in members if i not in assigned]
            if len(free) < min_size or len(free) > cap:
                continue
            score = (len(free), -specificity[key.split(":", 1)[0]], -len(key))
            if best is None or score > best[0]:
                best, best_members = (score, key), free
        if best is None:
            passes.pop(0)
            continue
        key = best[1]
        assigned.update(best_members)
        members = [items[i] for i in best_members]
        shared = Counter(k for i in best_members for k in keys_of[i] if k.startswith("id:") and k != key)
        also = [names[k] for k, n in shared.most_common(3) if n >= 2]
        out.append({"key": key, "kind": "dir" if key.startswith("area:") else key.split(":", 1)[0], "label": names[key], "members": members,
                    "shared": also})
    return out
