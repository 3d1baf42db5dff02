"""The rule engine: kind, topics, priority, scores, grade, decision, risks and summary.

The knowledge lives in `defaults/rules/*.toml` (kinds, topics, priority, grades, risks,
bots); `RuleSet.load` (ruleset.py) compiles it once per run and `analyse_item` applies it to one item.
The engine is pure: no store, no network, no clock. By job: matching.py (words, phrase index, path
globs), ruleset.py (compiled tables, bots and noise), this module (facts, kind, topics, risks, priority and
decision), flags.py (the flags the priority rules read, and the scores), grading.py (adaptation grade and its
reason), summary.py (summary); judge.py and learn.py lay the team's labels and calibration over an analysis.
The verification steps are chosen when a report is rendered (render/checklist.py, `defaults/rules/checklists.toml`).

Text is matched as words, never as raw substrings: titles, descriptions and labels are lower-cased
and split into runs of letters and digits, so `kv_cache`, `KV-cache` and `kv cache` are one phrase
and `doc` never matches `doctor`. Every phrase of every table is compiled into one index that finds
all of them in a single pass over the words; a regex alternation per topic, run over each
description, measured five times slower on the vllm-ascend history.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..config import Settings
from ..models import Analysis, FileChange, Item, PerfClaim
from .facts import _NO_HITS, Facts
from .flags import _first, _flags, _focus_bonus, _score, kin_features
from .grading import RULE_KEY
from .grading import grade as _grade
from .matching import words
from .ruleset import (
    ENGINE_VERSION,
    KINDS,
    RISKS,
    RULE_FILES,
    RuleSet,
    _gate,
    _Weighted,
    is_bot,
    load_noise_patterns,
    strip_noise,
)
from .summary import _summary

__all__ = [  # the engine's names, some defined in ruleset.py and matching.py
    "ENGINE_VERSION", "KINDS", "RISKS", "RULE_FILES", "RuleSet", "_gate", "analyse_item", "clean_description",
    "is_bot", "load_noise_patterns", "strip_noise", "words",
]

_LANGS = ("en", "zh")
_HOUSEKEEPING = ("docs", "ci", "test")
_BODY_CHARS = 5000  # descriptions are cut here: the substance comes first, logs and dumps last
_TITLE_TAGS = re.compile(r"^\s*((?:\[[^\]]*\]\s*:?\s*)+)")
_TITLE_TYPE = re.compile(r"^([A-Za-z][\w-]{1,15})(?:\(([^)]*)\))?!?\s*:\s*")
_TITLE_NUMBER = re.compile(r"\s*\(#\d+\)\s*$")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_HTML = re.compile(r"<!--.*?(?:-->|\Z)|<[A-Za-z/!][^<>]{0,600}>", re.S)
_URL = re.compile(r"https?://\S+")
# Line patterns start with a literal "\n" (the text gets one in front): `re` then jumps from newline
# to newline instead of trying every character, as it does for `^` in MULTILINE mode.
_HEADING = re.compile(r"\n[ \t]{0,3}(?:#{1,6}[ \t]*+((?:[^\n \t#]|[ \t#]++(?=[^\n \t#]))*+)[ \t#]*+|\*\*([^*\n]{2,60})\*\*:?|([A-Z][\w &/-]{2,40}):)[ \t]*+(?=\n|\Z)")
_SENTENCE_END = re.compile(r"[.!?:](?=\s+[A-Z`(\[*-])|[.!?:]\s*\Z")
_QUOTE = re.compile(r"\n[ \t]*>[^\n]*(?:\n(?![ \t]*(?:\n|#|>))[^\n]*)*")
_BLANKS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_REF_AT = re.compile(r"#\d|/pull/\d")
_MARKUP = re.compile(r"`+|\*\*+|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")  # code ticks, bold, italics


# --------------------------------------------------------------------------- text facts


def _split_title(title: str) -> tuple[list[str], str, str]:
    """(tag words with "" between groups, conventional type, the rest of the title)."""
    rest = _TITLE_NUMBER.sub("", title.strip())
    tags: list[str] = []
    type_word = ""
    for _ in range(2):  # `[scope] type: ...` and `title: [scope] type: ...`
        found = _TITLE_TAGS.match(rest)
        if found:
            for group in re.findall(r"\[([^\]]*)\]", found.group(1)):
                for piece in re.split(r"[,;|]", group):
                    tags.extend([*words(piece), ""])
            rest = rest[found.end():]
        typed = _TITLE_TYPE.match(rest)
        if not typed:
            break
        type_word = typed.group(1).lower()
        if typed.group(2):
            tags.extend([*words(typed.group(2)), ""])
        rest = rest[typed.end():]
    return tags, type_word, rest.strip()


def clean_description(body: str, rules: RuleSet) -> str:
    """The description without code blocks, HTML, links, template headings, checklists and trailers."""
    return _clean(body, rules)[0]


def _clean(body: str, rules: RuleSet) -> tuple[str, int]:
    """The cleaned description and the size of its design sections (whole-text passes: fast)."""
    text = "\n" + _URL.sub("", _HTML.sub(" ", _FENCE.sub("\n", body[: _BODY_CHARS + _BODY_CHARS // 2])))
    # Quoted blocks are template instructions (verl, VeOmni) or copied text; Markdown lets their
    # lines continue without ">" until a blank line, so the whole paragraph goes.
    text = _QUOTE.sub("", text)
    if rules.template_lines is not None:
        text = rules.template_lines.sub("", text)
    kept: list[str] = []
    design = pos = 0
    dropping = in_design = False
    for heading in _HEADING.finditer(text):
        if not dropping:
            kept.append(text[pos:heading.start()])
            design += len(kept[-1].strip()) if in_design else 0
        name = " ".join(words(next(g for g in heading.groups() if g is not None)))
        dropping = bool(rules.drop_sections and rules.drop_sections.match(name))
        in_design = bool(rules.design_headings and rules.design_headings.search(name))
        pos = heading.end()
    if not dropping:
        kept.append(text[pos:])
        design += len(kept[-1].strip()) if in_design else 0
    cleaned = _BLANKS.sub("\n\n", "\n\n".join(kept)).strip()
    return cleaned[:_BODY_CHARS], design


def _facts(item: Item, rules: RuleSet) -> Facts:
    tags, type_word, title = _split_title(item.title)
    title_words = words(title)
    label_words = [w for label in item.labels for w in [*words(label), ""]]
    found = {"title": rules.index.find(title_words), "tags": rules.index.find([*tags, type_word]),
             "labels": rules.index.find(label_words)}
    kind_tags = _kind_tags(tags, rules)
    found["kind_tags"] = found["tags"] if kind_tags is tags else rules.index.find([*kind_tags, type_word])
    facts = Facts(title, type_word, tags, title_words, "", 0, found, rules.index.pids, [])
    _add_files(facts, item, rules)
    if _housekeeping(facts, rules):
        # A change to docs, CI or tests only is judged on its title, labels and paths: its (often
        # templated) description cannot make it matter more, and skipping it saves a third of the time.
        found["body"] = set()
        return facts
    facts.body, facts.design_chars = _clean(item.body, rules)
    found["body"] = rules.index.find(words(facts.body), body=True)
    return facts


def _kind_tags(tags: list[str], rules: RuleSet) -> list[str]:
    """The tag words without the groups that name a component, not a kind (`[Model Runner V2]`, `[image]`)."""
    components = rules.component_tags
    if not components or not tags:
        return tags
    kept: list[str] = []
    group: list[str] = []
    dropped = False
    for word in tags:
        if word:
            group.append(word)
            continue
        if any(group[: len(c)] == c for c in components):
            dropped = True
        else:
            kept += [*group, ""]
        group = []
    return kept if dropped else tags


def _add_files(facts: Facts, item: Item, rules: RuleSet) -> None:
    # no diffstat (an issue, an RFC, a pasted page): the paths its text names stand in, without line counts
    facts.diffstat = bool(item.files)
    for change in item.files or [FileChange(path) for path in item.named_paths]:
        classes = rules.classes(change.path)
        size = (change.additions or 0) + (change.deletions or 0)
        facts.files.append((change.path, classes, size))
        if not change.additions and change.deletions:
            facts.deleted.add(change.path)
        facts.lines += size
        for cls in classes:
            facts.counts[cls] = facts.counts.get(cls, 0) + 1
        if "code" in classes and "code_exclude" not in classes:
            facts.has_code = True
            facts.code_lines += size
    facts.has_tests = "test" in facts.counts


def _housekeeping(facts: Facts, rules: RuleSet) -> bool:
    """Every changed file is docs, CI or tests (one of those path classes of kinds.toml)."""
    if not facts.files or not facts.diffstat:  # named paths are a partial view: the text still counts
        return False
    return any(facts.counts.get(rule.owner, 0) == len(facts.files) for rule in rules.kind_rules["paths"]
               if rule.kind in _HOUSEKEEPING)


# --------------------------------------------------------------------------- kind


def _kind(item: Item, facts: Facts, rules: RuleSet) -> str:
    if item.kind == "release":
        return "release"
    if item.kind == "issue":
        return _issue_kind(facts, rules)
    scores: dict[str, float] = {}
    typed = _type_kind(facts, rules, scores)
    scope = set(rules.data["kinds"].get("scope_kinds", [])) if typed else None
    if scope and _modules(facts.tag_words) > 1:
        # `[fsdp, perf, doc] fix:` lists the modules touched; `doc` there does not make it a docs change
        scope &= set(rules.data["kinds"].get("scope_kinds_listed", ["revert"]))
    for region, source in (("kind_tags", "tag"), ("title", "title"), ("labels", "label")):
        for pid in facts.found[region]:
            for rule in rules.kind_pids.get((source, pid), ()):
                if scope is None or source != "tag" or rule.kind in scope:
                    _keep_max(scores, rule)
    _start_kind(facts, rules, scores)
    _path_kind(facts, rules, scores)
    if not scores:  # the description only as a last resort
        for rule in rules.kind_rules["body"]:
            count = len(facts.hit("body", rule.owner))
            if count:
                scores[rule.kind] = scores.get(rule.kind, 0) + rule.weight * min(count, 3)
    return _best_kind(scores, rules)


def _modules(tag_words: list[str]) -> int:
    """How many modules the title brackets list (tag words come with "" after each one)."""
    return sum(1 for i, w in enumerate(tag_words) if not w and i and tag_words[i - 1])


def _keep_max(scores: dict[str, float], rule: _Weighted) -> None:
    # The strongest signal of each kind counts once: "[Bugfix] fix ..." is not twice a bugfix.
    scores[rule.kind] = max(scores.get(rule.kind, 0.0), rule.weight)


def _type_kind(facts: Facts, rules: RuleSet, scores: dict[str, float]) -> bool:
    """Score the conventional-commit type (`fix:`); True when the title has a known one."""
    if not facts.type_word:
        return False
    found = rules.index.find([facts.type_word])
    typed = False
    for rule in rules.kind_rules["type"]:
        if found & facts.pids.get(rule.owner, _NO_HITS):
            _keep_max(scores, rule)
            typed = True
    return typed


def _start_kind(facts: Facts, rules: RuleSet, scores: dict[str, float]) -> None:
    first = facts.title_words[0] if facts.title_words else ""
    for vocabulary, rule in rules.at_start:
        if first in vocabulary:
            _keep_max(scores, rule)


def _path_kind(facts: Facts, rules: RuleSet, scores: dict[str, float]) -> None:
    if not facts.files or not facts.diffstat:  # "every file is a test" needs every file, not the ones named
        return
    for rule in rules.kind_rules["paths"]:
        if facts.counts.get(rule.owner, 0) == len(facts.files):
            _keep_max(scores, rule)


def _best_kind(scores: Mapping[str, float], rules: RuleSet) -> str:
    kinds = rules.data["kinds"]
    if not scores:
        return kinds.get("default", "misc")
    order = {k: i for i, k in enumerate(kinds.get("precedence", []))}
    return min(scores, key=lambda k: (-scores[k], order.get(k, len(order))))


def _issue_kind(facts: Facts, rules: RuleSet) -> str:
    for kind, owner in rules.issue_rules:
        if any(facts.hit(region, owner) for region in ("tags", "labels", "title")):
            return kind
    return rules.data["kinds"].get("issue_default", "misc")


# --------------------------------------------------------------------------- topics


_TOPIC_SOURCES = {"title": ("t", "ttl"), "tags": ("t", "tt", "ttl"), "labels": ("t", "tl")}


def _topics(item: Item, facts: Facts, rules: RuleSet) -> list[str]:
    """Topics hit, strongest first: title, tags and labels 3, paths 2, each body keyword 0.5 (max 2)."""
    score: dict[int, float] = {}
    if facts.has_code:  # a code change in a repository written for one platform is on that platform
        for order, topic in enumerate(rules.topics):
            if item.repo.lower() in topic.repos:
                score[order] = 2.0
    for region, sources in _TOPIC_SOURCES.items():
        for pid in facts.found[region]:
            for order, source in rules.topic_pids.get(pid, ()):
                if source in sources:
                    score[order] = 3.0
    for cls, count in facts.counts.items():
        order = rules.topic_classes.get(cls)
        if order is not None and count >= rules.topics[order].path_share * len(facts.files):
            score[order] = score.get(order, 0.0) + 2.0
    body: dict[int, int] = {}
    for pid in facts.found["body"]:
        for order, source in rules.topic_pids.get(pid, ()):
            if source == "t":
                body[order] = body.get(order, 0) + 1
    body_min = int(rules.data["topics"].get("body_min", 2))
    chosen = set(score) | {order for order, hits in body.items() if hits >= body_min}
    ranked = sorted((-(score.get(o, 0.0) + 0.5 * min(body.get(o, 0), 4)), o) for o in chosen)
    return [rules.topics[o].id for _, o in ranked]


# --------------------------------------------------------------------------- risks


def _risks(item: Item, kind: str, topics: list[str], facts: Facts, rules: RuleSet) -> list[str]:
    risk = rules.data["risks"]
    found: set[str] = set()
    core = rules.core.get(item.repo.lower())
    if core is not None and any(core.match(path) for path, _, _ in facts.files):
        found.add("core-path")
    if facts.has_code and not facts.has_tests:
        found.add("no-test")
    if facts.lines > int(risk.get("large_lines", 500)) or len(facts.files) > int(risk.get("large_files", 20)):
        found.add("large-change")
    if item.draft:
        found.add("draft")
    words_hit = any(facts.found[region] & rules.risk_pids for region in ("title", "tags", "labels", "body"))
    for rid, entry in risk.get("words", {}).items():
        if entry.get("kinds") and kind not in entry["kinds"]:
            continue
        if not words_hit and not entry.get("extra"):
            continue
        if _word_risk(rid, entry, facts) or _extra_risk(entry.get("extra"), item, topics, facts, rules):
            found.add(rid)
    if "conflicts" not in found and _comment_conflicts(item, rules):
        found.add("conflicts")
    return [r for r in RISKS if r in found]


def _word_risk(rid: str, entry: Mapping[str, Any], facts: Facts) -> bool:
    if facts.hit("title", f"rtitle:{rid}") or facts.hit("tags", f"rtags:{rid}"):
        return True
    if facts.hit("labels", f"rlabels:{rid}"):
        return True
    return len(facts.hit("body", f"rbody:{rid}")) >= int(entry.get("body_min", 1))


def _extra_risk(extra: str | None, item: Item, topics: list[str], facts: Facts, rules: RuleSet) -> bool:
    if extra == "external-refs":
        return _depends_on_other_repo(item, rules)
    if extra == "platform-paths":
        if facts.counts.get("platform"):
            return True
        platform = rules.data["risks"].get("platform", {}).get("topics", [])
        return item.repo.lower() not in rules.native_repos and any(t in platform for t in topics)
    return False


def _depends_on_other_repo(item: Item, rules: RuleSet) -> bool:
    """A reference to another repository's PR/issue on a line that says it depends on it."""
    own, body, pos = item.repo.lower(), item.body, 0
    # the patterns have no literal prefix: scan near "#<digit>", each line once (linear: a line of 10k refs)
    while (at := _REF_AT.search(body, pos)) is not None:
        start = body.rfind("\n", max(pos - 1, 0), at.start()) + 1
        end = body.find("\n", at.end())
        end = len(body) if end < 0 else end
        line, pos = body[start:end], end + 1
        if any(m.group(1).lower() != own for rx in rules.external_refs for m in rx.finditer(line)):
            if rules.index.find(words(line), body=True) & rules.index.pids.get("ref-context", _NO_HITS):
                return True
    return False


def _comment_conflicts(item: Item, rules: RuleSet) -> bool:
    for comment in item.comments:
        if rules.index.find(words(comment.body), body=True) & rules.index.pids.get("rbody:conflicts", _NO_HITS):
            return True
    return False


# --------------------------------------------------------------------------- entry point


def analyse_item(item: Item, rules: RuleSet, claims: list[PerfClaim], settings: Settings) -> Analysis:
    """Every rule-made field of one item's analysis (links are left to the pipeline)."""
    facts = _facts(item, rules)
    kind = _kind(item, facts, rules)
    topics = _topics(item, facts, rules)
    grade, native, grade_reason = _grade(item, kind, claims, facts, rules)
    graded_by = grade_reason.pop(RULE_KEY, "")
    risks = _risks(item, kind, topics, facts, rules)
    flags = _flags(item, kind, topics, grade, native, risks, claims, facts, rules, settings)
    if graded_by in rules.data["grades"].get("flagged_reasons", []):  # a reason the conclusion's rules read
        flags.add(f"graded:{graded_by}")
    if "silent-body" in flags and "silent-accuracy" not in risks:  # the description says results were wrong
        risks = [r for r in RISKS if r in {*risks, "silent-accuracy"}]
        flags.add("risk:silent-accuracy")
    priority, why = _first(rules.priority_rules, flags, ("none", {"en": "-", "zh": "-"}))
    barred = _first(rules.p0_never, flags, None) if priority == "P0" else None
    if barred is not None:  # never P0 on its own: the P0 rules are passed over, the next rule that holds decides
        flags.add("p0-barred")
        priority, why = _first([r for r in rules.priority_rules if r.value[0] != "P0"], flags,
                               ("none", {"en": "-", "zh": "-"}))
        never = rules.data["priority"].get("p0_never_text", {"en": "; not P0: {why}", "zh": "；不作 P0：{why}"})
        why = {lang: f"{why[lang]}{never[lang].format(why=barred[lang])}" for lang in why}
    cap = rules.data["priority"].get("backport", {})
    if "backport" in flags and priority == "P0" and cap.get("max") == "P1":
        priority, why = "P1", {lang: f"{why[lang]}{cap['why'][lang]}" for lang in why}
    order = ("none", "P2", "P1", "P0")
    for floor in rules.data["priority"].get("floor", []):  # a flag that ranks an item at least this high
        if floor["flag"] in flags and order.index(priority) < order.index(floor["min"]):
            priority, why = floor["min"], {lang: f"{why[lang]}{floor['why'][lang]}" for lang in why}
    features = sorted(flags | {f"repo:{item.repo.lower()}", f"why:{why['en']}"} | kin_features(facts))
    flags.add(f"priority:{priority}")
    decision, decision_reason = _first(rules.decision_rules, flags, ("track-only", {"en": "-", "zh": "-"}))
    decision_reason = {lang: text.format(why=why[lang]) for lang, text in decision_reason.items()}
    return Analysis(
        item_kind=kind, topics=topics, priority=priority,
        importance=_score(rules.importance, flags, _focus_bonus(topics, rules, settings)),
        insight=_score(rules.insight, flags), grade=grade, grade_reason=grade_reason, native=native,
        decision=decision, decision_reason=dict(decision_reason), risk_labels=risks, perf_claims=claims,
        links=[], summary=_summary(kind, topics, native, claims, facts, rules),
        version=rules.version, features=features, why=dict(why),
    )
