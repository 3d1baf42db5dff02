"""The flags the priority, decision and score rules are written over (priority.toml lists them), computed from
one item's facts, and the scores (importance, insight) they give. rules.py calls them; analyse/judge.py scores
a judged analysis with the same `_score`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..config import Settings
from ..models import Item, PerfClaim
from .facts import Facts
from .grading import host_tool
from .ruleset import RuleSet, _Rule, _Scores, is_bot
from .summary import _win, no_gain
from .target_code import read_target


def _numbers(claims: Sequence[PerfClaim]) -> bool:
    return any((c.before is not None and c.after is not None) or c.change_pct is not None or c.ratio is not None
               for c in claims)


def _flags(item: Item, kind: str, topics: list[str], grade: str, native: bool, risks: list[str],
           claims: Sequence[PerfClaim], facts: Facts, rules: RuleSet, settings: Settings) -> set[str]:
    prio = rules.data["priority"]
    focus = [t for t in topics if t in settings.focus]
    named = bool(facts.hit("title", "native") or facts.hit("tags", "native"))
    flags = {f"kind:{kind}", f"grade:{grade}", *(f"topic:{t}" for t in topics), *(f"risk:{r}" for r in risks)}
    flags.add({"open": "open", "merged": "merged"}.get(item.state, "closed"))
    marks = [int(m) for m in prio.get("line_marks", [20, 50, 300, 1000])]
    flags.update(f"lines{m}" for m in marks if facts.code_lines >= m)
    conditions = {
        "draft": item.draft or "draft" in risks,
        "focus": bool(focus),
        "focus-x": any(t != rules.profile.topic for t in focus),
        "focus-mech": any(t in prio.get("mechanism_topics", []) for t in focus),
        "native": native, "target": native or rules.profile.topic in topics,
        "code": facts.has_code, "tests": facts.has_tests,
        "substance": facts.code_lines >= int(prio.get("substance_lines", 200)),
        "small": facts.diffstat and facts.code_lines < (marks[0] if marks else 0),  # unknown size is not small
        # figures that show a gain (a slowdown, or a result the author calls unchanged, ranks nothing)
        "numbers": _numbers(claims) and not no_gain(claims, facts.body),
        "no-gain": no_gain(claims, facts.body),
        "mechanism": _mechanism_count(facts) >= int(prio.get("mechanism_min", 4)),
        "design": facts.design_chars >= int(prio.get("design_min_chars", 200)),
        "long": len(facts.body) >= int(prio.get("long_chars", 1200)),
        "noise-title": bool(facts.hit("title", "noise") or facts.hit("tags", "noise")),
        "accuracy": bool(facts.hit("title", "rtitle:silent-accuracy")),
        "bot": is_bot(item.author, rules),
        # the watched field (serving, RL, multimodal, kernels, MoE, ...): relevance without the focus
        "domain": any(t in prio.get("domain_topics", []) for t in topics),
        "hot": "core-path" in risks or any(t in prio.get("hot_topics", []) for t in topics),
        "hot-core": "core-path" in risks or any(t in prio.get("hot_core_topics", []) for t in topics),
        "target-named": named,
        "target-x": named and item.repo.lower() not in rules.native_repos,
        "adaptation": bool(facts.hit("title", "adapt") or facts.hit("tags", "adapt")),
        "off-main": bool(facts.hit("title", "offmain") or facts.hit("tags", "offmain")),
        # an improvement, not a slowdown nor one faster row of a mostly slower sweep
        "win": _win(claims, float(prio.get("win_ratio", 1.05))) > 0,
        "big-win": _win(claims, float(prio.get("big_win_ratio", 1.2))) > 0,
        "issue": item.kind == "issue",
        "page": not facts.diffstat,  # no diffstat: an issue, an RFC or a pasted page
        # only on release branches: a backport of a change whose original on main carries the rank
        "backport": bool(item.branches) and all(b.startswith(tuple(prio.get("release_branches", ["release"])))
                                                 for b in item.branches),
        "work": facts.has_code or not facts.diffstat,  # code changed, or no diffstat to tell
        "silent": bool(facts.hit("title", "silent") or facts.hit("tags", "silent")),
        "correctness": bool(facts.hit("title", "correct") or facts.hit("tags", "correct")),
        "host-tool": host_tool(facts),
        "mech-title": bool(facts.hit("title", "mechtitle")),  # the title, not a module tag such as (update_weight)
        "eval": _eval_work(facts),
        "silent-body": kind == "bugfix" and bool(facts.hit("body", "silentbody")),
        "cache-title": bool(facts.hit("title", "cachetitle") or facts.hit("tags", "cachetitle")),
        "host-code": _host_code(facts),
        "doc-adds": facts.type_word in ("feat", "feature") or bool(facts.hit("title", "docadds")),
        "aux-title": _aux_title(facts),
        "aux-only": _aux_only(facts),
        "install-title": bool(facts.hit("title", "installtitle") or facts.hit("tags", "installtitle")),
        "kernel-title": bool(facts.hit("title", "kerneltitle") or facts.hit("tags", "kerneltitle")),
        "compile-title": bool(facts.hit("title", "compiletitle") or facts.hit("tags", "compiletitle")),
        # its diff removes the target's own code (target_code.py): a breaking change for the target
        "removes-target": read_target(item.code, rules.profile.topic,
                                      item.repo.lower() in rules.profile.native_repos).removes_target,
    }
    flags.update(name for name, on in conditions.items() if on)
    if flags & {"mechanism", "design", "long", "numbers"}:
        flags.add("explained")
    return flags


def _eval_work(facts: Facts) -> bool:
    """The title names an evaluation or a metric and every changed code file is evaluation, benchmark, test
    or tooling code: the change aligns how a score is computed, not what the model computes. Without a
    diffstat (a page), the title must name the alignment too, and the paths the text names (if any) count."""
    if not (facts.hit("title", "evaltitle") or facts.hit("tags", "evaltitle")):
        return False
    if facts.diffstat and not facts.files:
        return False
    if not facts.diffstat and not facts.hit("title", "evalalign"):  # a page: the title says it aligns a score
        return False
    return all("evalpath" in classes or "code_exclude" in classes
               for _, classes, _ in facts.files if "code" in classes)


_SERIES_STOP = frozenset("""a an and the for from into of on in to with when by via as at or is are be not no
support supports supported add adds added fix fixes fixed update updates updated use uses make makes
feat feature refactor chore misc perf bugfix doc docs""".split())
_SERIES_WORD = re.compile(r"[a-z][a-z_]{2,}")


def kin_features(facts: Facts, most_dirs: int = 3) -> set[str]:
    """What ties an item to a labelled one (the calibration's kin, analyse/learn.py): its series (the title's
    content words, digits and versions dropped: `series:adapt-ascend-npu-vllm`) and its places (the
    directories of its largest changed code files: `dir:verl/models/transformers`)."""
    found = sorted({w for w in _SERIES_WORD.findall(facts.title.lower().replace("-", " ")) if w not in _SERIES_STOP})
    out = {f"series:{'-'.join(found)}"} if len(found) >= 2 else set()
    code = sorted(((lines, path) for path, classes, lines in facts.files
                   if "code" in classes and "code_exclude" not in classes and "light" not in classes and "/" in path),
                  key=lambda lp: (-lp[0], lp[1]))
    out.update(f"dir:{path.rsplit('/', 1)[0]}" for _, path in code[:most_dirs])
    return out


def _aux_title(facts: Facts) -> bool:
    """The title names a recipe, an example, a script, a benchmark, an evaluation or docs (`aux_title_words`),
    or a bracket tag does (`aux_tags`)."""
    return bool(facts.hit("title", "auxtitle") or facts.hit("tags", "auxtag"))


def _aux_only(facts: Facts) -> bool:
    """Every changed file is auxiliary: docs, tests, CI, configuration, examples, recipes, scripts, evaluation
    or benchmark code (grades.toml light files, priority.toml `aux_paths` and `eval_paths`). Without a
    diffstat (a page, an issue), the title says so."""
    if not facts.diffstat:
        return _aux_title(facts)
    return bool(facts.files) and all(classes & _AUX for _, classes, _ in facts.files)


_AUX = frozenset({"light", "aux", "evalpath"})


def _host_code(facts: Facts) -> bool:
    """Every changed code file is host-side code (tokenizer, API server, scheduler, ...), at least one of them."""
    code = [classes for _, classes, _ in facts.files if "code" in classes and "code_exclude" not in classes]
    return facts.diffstat and bool(code) and all("host" in classes for classes in code)


def _mechanism_count(facts: Facts) -> int:
    return len(facts.hit("title", "mech") | facts.hit("body", "mech"))


def _first(rules: Sequence[_Rule], flags: set[str], default: Any) -> Any:
    return next((rule.value for rule in rules if rule.holds(flags)), default)


def _score(scores: _Scores, flags: set[str], bonus: float = 0.0) -> int:
    value = scores.base + bonus + sum(add for flag, add in scores.points if flag in flags)
    for cap in scores.caps:
        if cap.holds(flags):
            value = min(value, cap.value)
    for floor in scores.floors:
        if floor.holds(flags):
            value = max(value, floor.value)
    return max(1, min(5, int(value + 0.5)))


def _focus_bonus(topics: list[str], rules: RuleSet, settings: Settings) -> float:
    weights = [settings.focus_weights.get(t, 1.0) for t in topics if t in settings.focus]
    factor = float(rules.data["priority"].get("importance", {}).get("focus_weight_factor", 1.0))
    return (max(weights) - 1.0) * factor if weights else 0.0
