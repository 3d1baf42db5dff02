"""The rule tables of `defaults/rules/*.toml`, compiled once per run (`RuleSet.load`), and the bot and
noise filters they define. `rules.py` applies them to items."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import translate
from re import _constants as _sre
from re import _parser as _sre_parser
from typing import Any

from ..config import Settings, load_rule_file, rule_data
from ..errors import ConfigError
from ..models import Text
from .matching import _Globs, _Index, words
from .versions import ENGINE_VERSION, RULE_FILES, rules_version

__all__ = ["ENGINE_VERSION", "KINDS", "RISKS", "RULE_FILES", "RuleSet", "is_bot", "load_noise_patterns", "strip_noise"]

KINDS = (
    "feature", "perf", "bugfix", "refactor", "docs", "ci", "test", "model-support", "deps", "revert",
    "release", "issue-bug", "issue-feature", "rfc", "misc",
)
RISKS = (
    "core-path", "no-test", "breaking", "new-default", "large-change", "platform-specific",
    "external-dependency", "silent-accuracy", "draft", "conflicts",
)
_LANGS = ("en", "zh")


# --------------------------------------------------------------------------- compiled tables


@dataclass(slots=True)
class _Weighted:
    kind: str
    weight: float
    owner: str


@dataclass(slots=True)
class _Topic:
    id: str
    label: Text
    path_share: float
    repos: frozenset[str] = frozenset()  # code changes in these repositories are on this topic


@dataclass(slots=True)
class _Profile:
    name: str
    label: Text
    topic: str
    native_repos: set[str]
    native_body_min: int
    native_l: list[str]  # signals that make a native item L
    signals_l: list[str]
    signals_m: list[str]
    body_min_l: int
    body_min_m: int
    signals_min_l: int = 99  # words of this many different L signals (of signals_min_from) decide L too
    signals_min_from: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Rule:
    """Flag conditions of a priority, decision or checklist rule, and what it yields."""

    all: frozenset[str]
    any: frozenset[str]
    none: frozenset[str]
    value: Any

    def holds(self, flags: set[str]) -> bool:
        return self.all <= flags and not (self.none & flags) and (not self.any or bool(self.any & flags))


@dataclass(slots=True)
class _Scores:
    base: float
    points: list[tuple[str, float]]
    caps: list[_Rule]
    floors: list[_Rule]


def _rule(entry: Mapping[str, Any], value: Any) -> _Rule:
    return _Rule(frozenset(entry.get("all", [])), frozenset(entry.get("any", [])),
                 frozenset(entry.get("none", [])), value)


def _text(value: Any, where: str) -> Text:
    if not isinstance(value, dict) or any(not value.get(lang) for lang in _LANGS):
        raise ConfigError(f"rules: {where} needs non-empty texts for {', '.join(_LANGS)}")
    return {lang: str(value[lang]) for lang in _LANGS}


def _check_kind(kind: str, where: str) -> str:
    if kind not in KINDS:
        raise ConfigError(f"rules: {where}: unknown kind {kind!r}; known: {', '.join(KINDS)}")
    return kind


def _regex(pattern: str, where: str, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ConfigError(f"rules: {where}: bad regular expression {pattern!r}: {exc}") from None


@dataclass(slots=True)
class RuleSet:
    """Every rule table, compiled once per run from the settings."""

    version: str
    target: str
    data: dict[str, dict[str, Any]]
    index: _Index
    globs: _Globs
    kind_rules: dict[str, list[_Weighted]]
    at_start: list[tuple[set[str], _Weighted]]
    issue_rules: list[tuple[str, str]]
    topics: list[_Topic]
    profile: _Profile
    signal_labels: dict[str, Text]
    priority_rules: list[_Rule]
    p0_never: list[_Rule]  # what is never P0 on its own (priority.toml `p0_never`): P0 rules are passed over
    decision_rules: list[_Rule]
    importance: _Scores
    insight: _Scores
    bot_names: set[str]
    bot_patterns: list[re.Pattern[str]]
    noise_patterns: list[re.Pattern[str]]
    template_lines: re.Pattern[str] | None
    drop_sections: re.Pattern[str] | None  # over a heading's words
    design_headings: re.Pattern[str] | None
    external_refs: list[re.Pattern[str]]
    core: dict[str, re.Pattern[str] | None]
    native_repos: set[str] = field(default_factory=set)
    lead_verbs: set[str] = field(default_factory=set)
    lead_prefixes: list[list[str]] = field(default_factory=list)
    component_tags: list[list[str]] = field(default_factory=list)  # tag groups that are not kinds
    metric_words: frozenset[str] = frozenset()  # words of real metric names (headline claims)
    topic_pids: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # pid -> (topic, source)
    topic_classes: dict[str, int] = field(default_factory=dict)  # glob class -> topic
    risk_pids: frozenset[int] = frozenset()  # every phrase of a word risk: most items hit none
    kind_pids: dict[tuple[str, int], list[_Weighted]] = field(default_factory=dict)  # (source, pid) -> rules
    signal_pids: dict[str, frozenset[int]] = field(default_factory=dict)  # "L"/"M"/"native_L" -> phrase ids
    counterparts: list[Any] = field(default_factory=list)  # porting entries with a drop-in counterpart (grade M)
    bot_cache: dict[str, bool] = field(default_factory=dict)  # authors recur: decide each login once

    @classmethod
    def load(cls, settings: Settings) -> RuleSet:
        """Load and compile every rule file (packaged, replaced table by table by the user's copy)."""
        data = {name: load_rule_file(name, settings) for name in RULE_FILES}
        return _compile(data, settings)

    @classmethod
    def version_of(cls, settings: Settings) -> str:
        """The version `load` gives, from the files' bytes alone (nothing parsed or compiled): enough to tell
        whether any item needs analysing, which is all a command showing one card needs when the store is
        up to date."""
        return rules_version(settings)

    def classes(self, path: str) -> frozenset[str]:
        """The glob classes (`topic:attention`, `sig:triton`, `light`, ...) a changed path falls in."""
        return self.globs.classes(path)


def _compile(data: dict[str, dict[str, Any]], settings: Settings) -> RuleSet:
    index = _Index()
    globs = _Globs()
    kinds = data["kinds"]
    kind_rules, at_start, issue_rules = _compile_kinds(kinds, index, globs)
    topics = _compile_topics(data["topics"], index, globs)
    profile, labels, native_repos = _compile_grades(data["grades"], settings.target, index, globs)
    _compile_risks(data["risks"], index, globs)
    prio = data["priority"]
    index.add(prio.get("mechanism_words", []), "mech")
    index.add(prio.get("noise_title_words", []), "noise", body=False)
    index.add(prio.get("adaptation_words", []), "adapt", body=False)
    index.add(prio.get("off_main_words", []), "offmain", body=False)
    index.add(prio.get("accuracy_words", []), "silent", body=False)
    index.add(prio.get("correctness_words", []), "correct", body=False)
    index.add(prio.get("mechanism_title_words", []), "mechtitle", body=False)
    index.add(prio.get("eval_words", []), "evaltitle", body=False)
    index.add(prio.get("doc_adds_words", []), "docadds", body=False)
    index.add(prio.get("eval_alignment_words", []), "evalalign", body=False)
    index.add(prio.get("cache_title_words", []), "cachetitle", body=False)
    index.add(prio.get("accuracy_body_words", []), "silentbody")
    globs.add("evalpath", prio.get("eval_paths", []))
    globs.add("aux", prio.get("aux_paths", []))
    index.add(prio.get("aux_title_words", []), "auxtitle", body=False)
    index.add(prio.get("aux_tags", []), "auxtag", body=False)
    index.add(prio.get("install_title_words", []), "installtitle", body=False)
    index.add(prio.get("kernel_title_words", []), "kerneltitle", body=False)
    index.add(prio.get("compile_title_words", []), "compiletitle", body=False)
    index.add(data["risks"].get("external_ref_context", []), "ref-context")
    bots = data["bots"]
    template = bots.get("template", {})
    lines = template.get("lines", [])
    return RuleSet(
        version=rules_version(settings), target=settings.target, data=data, index=index, globs=globs,
        kind_rules=kind_rules, at_start=at_start, issue_rules=issue_rules, topics=topics,
        profile=profile, signal_labels=labels,
        priority_rules=[_rule(r, (r.get("priority", "none"), _text(r.get("why"), "priority.rule.why")))
                        for r in prio.get("rule", [])],
        p0_never=[_rule(r, _text(r.get("why"), "priority.p0_never.why")) for r in prio.get("p0_never", [])],
        decision_rules=[_rule(r, (r["decision"], _text(r.get("reason"), "grades.decision")))
                        for r in data["grades"].get("decision", [])],
        importance=_scores(prio.get("importance", {})), insight=_scores(prio.get("insight", {})),
        bot_names={n.lower() for n in bots.get("bots", {}).get("names", [])},
        bot_patterns=[_regex(p, "bots.patterns", re.I) for p in bots.get("bots", {}).get("patterns", [])],
        noise_patterns=_noise(bots),
        template_lines=_line_regex(lines),
        drop_sections=_words_regex(template.get("sections", []), r"\A(?:{})\b"),
        design_headings=_words_regex(prio.get("design_headings", []), r"\b(?:{})\b"),
        external_refs=[_regex(p, "risks.external_ref_patterns") for p in data["risks"].get("external_ref_patterns", [])],
        core={r.name.lower(): _fnmatch_any(r.core_paths) for r in settings.repos},
        native_repos=native_repos,
        lead_verbs={" ".join(words(w)) for w in kinds.get("summary", {}).get("lead_verbs", [])},
        lead_prefixes=[words(p) for p in kinds.get("summary", {}).get("lead_prefixes", [])],
        component_tags=[words(p) for p in kinds.get("component_tags", []) if words(p)],
        metric_words=frozenset(w for p in kinds.get("summary", {}).get("metric_words", []) for w in words(p)),
        topic_pids=_topic_pids(topics, index),
        kind_pids=_kind_pids(kind_rules, index),
        signal_pids={key: frozenset().union(*(index.pids.get(f"{o}:{sid}", ()) for sid in sids for o in ("s", "stag")))
                     for key, sids in (("L", profile.signals_l), ("M", profile.signals_m),
                                       ("native_L", profile.native_l))},
        topic_classes={f"topic:{t.id}": order for order, t in enumerate(topics)},
        counterparts=_counterparts(settings),
        risk_pids=frozenset().union(*(p for o, p in index.pids.items() if o.startswith("r"))),
    )


@dataclass(frozen=True, slots=True)
class _Counterpart:
    """A GPU mechanism the target profile has a drop-in counterpart for (porting.toml, `grade = "M"`)."""

    id: str
    name: Text
    counterpart: Text
    entry: Any  # porting.PortingEntry

    def matches(self, text: str) -> bool:
        return self.entry.matches(text)


def _counterparts(settings: Settings) -> list[_Counterpart]:
    from .porting import load_map

    return [_Counterpart(e.id, e.name, e.counterpart[settings.target], e)
            for e in load_map(settings.rules_dir) if e.grade.get(settings.target) == "M"]


def _words_regex(phrases: list[str], shape: str) -> re.Pattern[str] | None:
    # Headings are reduced to their words first, so whole-word regexes over them are exact.
    alternatives = "|".join(re.escape(" ".join(words(p))) for p in phrases)
    return re.compile(shape.format(alternatives)) if alternatives else None


def _kind_pids(kind_rules: dict[str, list[_Weighted]], index: _Index) -> dict[tuple[str, int], list[_Weighted]]:
    found: dict[tuple[str, int], list[_Weighted]] = {}
    for source, weighted in kind_rules.items():
        for rule in weighted:
            for pid in index.pids.get(rule.owner, ()):
                found.setdefault((source, pid), []).append(rule)
    return found


def _topic_pids(topics: list[_Topic], index: _Index) -> dict[int, list[tuple[int, str]]]:
    found: dict[int, list[tuple[int, str]]] = {}
    for order, topic in enumerate(topics):
        for source in ("t", "tt", "tl", "ttl"):
            for pid in index.pids.get(f"{source}:{topic.id}", ()):
                found.setdefault(pid, []).append((order, source))
    return found


def _line_regex(lines: list[str]) -> re.Pattern[str] | None:
    # Whole lines starting (after spaces) with one of the patterns, removed in one pass over the text.
    body = "|".join(f"(?:{line})" for line in lines)
    return _regex(rf"\n[ \t]*+(?:{body})[^\n]*", "bots.template.lines", re.I) if lines else None


def _fnmatch_any(patterns: list[str]) -> re.Pattern[str] | None:
    # Same semantics as RepoSettings.is_core (fnmatch), compiled once instead of per call.
    return re.compile("|".join(translate(p) for p in patterns)) if patterns else None


def _noise(bots: Mapping[str, Any]) -> list[re.Pattern[str]]:
    return [_regex(p, "bots.noise.patterns", re.I | re.M) for p in bots.get("noise", {}).get("patterns", [])]


def _compile_kinds(kinds: Mapping[str, Any], index: _Index, globs: _Globs):
    rules: dict[str, list[_Weighted]] = {}
    at_start: list[tuple[set[str], _Weighted]] = []
    for source in ("tag", "type", "title", "label", "body"):
        rules[source] = []
        for i, entry in enumerate(kinds.get(source, [])):
            rule = _Weighted(_check_kind(entry["kind"], f"kinds.{source}"), float(entry.get("weight", 1)),
                             f"k{source}:{i}")
            if entry.get("at_start"):
                at_start.append(({" ".join(words(w)) for w in entry["words"]}, rule))
                continue
            index.add(entry["words"], rule.owner, body=source == "body")
            rules[source].append(rule)
    rules["paths"] = []
    for i, entry in enumerate(kinds.get("paths", [])):
        rule = _Weighted(_check_kind(entry["kind"], "kinds.paths"), float(entry.get("weight", 1)), f"kpath:{i}")
        globs.add(rule.owner, entry["globs"])
        rules["paths"].append(rule)
    issues = []
    for i, entry in enumerate(kinds.get("issue", [])):
        index.add(entry["words"], f"kissue:{i}", body=False)
        issues.append((_check_kind(entry["kind"], "kinds.issue"), f"kissue:{i}"))
    return rules, at_start, issues


def _compile_topics(data: Mapping[str, Any], index: _Index, globs: _Globs) -> list[_Topic]:
    topics = []
    for tid, entry in data.get("topics", {}).items():
        index.add(entry.get("keywords", []), f"t:{tid}")
        index.add(entry.get("tags", []), f"tt:{tid}", body=False)
        index.add(entry.get("title_keywords", []), f"ttl:{tid}", body=False)
        index.add(entry.get("labels", []), f"tl:{tid}", body=False)
        globs.add(f"topic:{tid}", entry.get("paths", []))
        topics.append(_Topic(tid, _text(entry.get("label"), f"topics.{tid}.label"), float(entry.get("path_share", 0)),
                             frozenset(r.lower() for r in entry.get("repos", []))))
    return topics


def _compile_grades(data: Mapping[str, Any], target: str, index: _Index, globs: _Globs):
    labels = {}
    for sid, entry in data.get("signals", {}).items():
        index.add(entry.get("words", []), f"s:{sid}")
        index.add(entry.get("tags", []), f"stag:{sid}", body=False)  # bracket tags only: read from the tags
        globs.add(f"sig:{sid}", entry.get("paths", []))
        labels[sid] = _text(entry.get("label"), f"grades.signals.{sid}.label")
    globs.add("light", data.get("light_paths", []))
    globs.add("host", data.get("host_paths", []))
    globs.add("model", data.get("model_paths", []))
    profiles = data.get("profiles", {})
    if target not in profiles:
        raise ConfigError(f"unknown target profile {target!r}; known: {', '.join(sorted(profiles))}")
    native_repos = {r.lower() for p in profiles.values() for r in p.get("native_repos", [])}
    raw = profiles[target]
    for sid in [*raw.get("native_L", []), *raw.get("L", []), *raw.get("M", [])]:
        if sid not in labels:
            raise ConfigError(f"rules: grades.profiles.{target}: unknown signal {sid!r}")
    index.add(raw.get("native_words", []), "native")
    index.add(data.get("measure_title_words", []), "g:measure", body=False)
    index.add(data.get("host_title_words", []), "g:host", body=False)
    index.add(data.get("host_title_exclude", []), "g:hostnot", body=False)
    index.add(data.get("host_work_words", []), "g:hostwork", body=False)
    index.add(data.get("device_benefit_words", []), "g:benefit", body=False)
    globs.add("native", raw.get("native_paths", []))
    profile = _Profile(
        target, _text(raw.get("name"), f"grades.profiles.{target}.name"), raw.get("topic", ""),
        {r.lower() for r in raw.get("native_repos", [])}, int(raw.get("native_body_min", 2)),
        list(raw.get("native_L", [])), list(raw.get("L", [])), list(raw.get("M", [])),
        int(raw.get("body_min_L", 3)), int(raw.get("body_min_M", 2)), int(raw.get("signals_min_L", 99)),
        frozenset(raw.get("signals_min_from", [])),
    )
    return profile, labels, native_repos


def _compile_risks(data: Mapping[str, Any], index: _Index, globs: _Globs) -> None:
    for rid, entry in data.get("words", {}).items():
        if rid not in RISKS:
            raise ConfigError(f"rules: risks.words.{rid}: unknown risk; known: {', '.join(RISKS)}")
        for part in ("title", "tags", "labels", "body"):
            index.add(entry.get(part, []), f"r{part}:{rid}", body=part == "body")
    for name, key in (("code", "code_globs"), ("code_exclude", "code_exclude"), ("test", "test_globs")):
        globs.add(name, data.get(key, []))
    globs.add("platform", data.get("platform", {}).get("paths", []))


def _scores(data: Mapping[str, Any]) -> _Scores:
    return _Scores(
        float(data.get("base", 1)), [(p["flag"], float(p["add"])) for p in data.get("points", [])],
        [_rule(c, int(c["max"])) for c in data.get("caps", [])],
        [_rule(f, int(f["min"])) for f in data.get("floors", [])],
    )


# --------------------------------------------------------------------------- bots and noise


def is_bot(author: str, rules: RuleSet) -> bool:
    """True when `author` is a bot login (bots.toml names or patterns)."""
    known = rules.bot_cache.get(author)
    if known is None:
        name = author.strip().lower()
        known = bool(name) and (name in rules.bot_names or any(p.search(name) for p in rules.bot_patterns))
        rules.bot_cache[author] = known
    return known


def load_noise_patterns(settings: Settings | None = None) -> list[re.Pattern[str]]:
    """The compiled noise patterns of bots.toml (the user's copy when settings name a rules_dir)."""
    if settings is not None:
        return _noise(load_rule_file("bots", settings))
    return _noise(rule_data("bots"))


_LITERAL_CHARS = frozenset(" -_:,'!/#@")
_GATES: dict[str, str | None] = {}


def _literal_runs(source: str) -> list[str] | None:
    """Literal runs every match of `source` must contain; None when a top-level `|` makes none required."""
    runs, cur, depth, i = [], "", 0, 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            nxt = source[i + 1:i + 2]
            if depth == 0 and nxt and not nxt.isalnum():
                cur += nxt  # an escaped punctuation mark is a literal
            else:
                runs.append(cur)
                cur = ""
            i += 2
            continue
        if ch == "[":  # a character class: skip it whole
            runs.append(cur)
            cur = ""
            i = source.find("]", i + 2) + 1 or len(source)
            continue
        if ch == "|" and depth == 0:
            return None
        if depth == 0 and (ch.isalnum() or ch in _LITERAL_CHARS):
            cur += ch
        else:
            if ch in "?*{":
                cur = cur[:-1]  # the quantified character is optional
            depth += (ch == "(") - (ch == ")")
            runs.append(cur)
            cur = ""
        i += 1
    return [*runs, cur]


def _required_runs(pattern: re.Pattern[str]) -> list[str]:
    """Literal runs every match must contain, read from the parsed pattern: inside groups and repeats of at
    least one too (what `_literal_runs` leaves out); none from an alternation, a class or a lookaround."""
    try:
        tree = _sre_parser.parse(pattern.pattern, pattern.flags)
    except Exception:  # noqa: BLE001 - the private parser changed: no gate, the pattern always runs
        return []
    runs: list[str] = []

    def walk(seq) -> None:
        cur: list[str] = []
        for op, arg in seq:
            if op is _sre.LITERAL:
                cur.append(chr(arg))
                continue
            runs.append("".join(cur))
            cur = []
            if op is _sre.SUBPATTERN:
                walk(arg[-1])
            elif op is _sre.ATOMIC_GROUP:
                walk(arg)
            elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and arg[0] >= 1:
                low, _high, item = arg
                if len(item) == 1 and item[0][0] is _sre.LITERAL:  # "-{5,}": five dashes at least
                    runs.append(chr(item[0][1]) * low)
                else:
                    walk(item)
        runs.append("".join(cur))

    walk(tree)
    return runs


def _gate(pattern: re.Pattern[str]) -> str | None:
    """A lower-case literal the pattern cannot match without (cached), so most texts skip the regex."""
    if pattern.pattern not in _GATES:
        gate = None
        if pattern.flags & re.IGNORECASE:
            runs = _literal_runs(pattern.pattern) or []
            best = max(runs, key=len, default="").strip()
            if len(best) < 4:  # none at the top level: any required literal inside groups or repeats
                best = max((r.strip() for r in _required_runs(pattern)), key=len, default="")
            gate = best.lower() or None
        _GATES[pattern.pattern] = gate
    return _GATES[pattern.pattern]


def strip_noise(text: str, patterns: Sequence[re.Pattern[str]]) -> str:
    """`text` with every noise match removed and the blank lines it leaves squeezed."""
    lowered = text.lower()
    for pattern in patterns:
        gate = _gate(pattern)
        if gate is None or gate in lowered:
            stripped = pattern.sub("", text)
            if stripped != text:  # what a deletion joins could hold a later pattern's literal
                text, lowered = stripped, stripped.lower()
    return re.sub(r"\n{3,}", "\n\n", text).strip()
