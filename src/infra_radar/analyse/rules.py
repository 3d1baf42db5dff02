"""The rule engine: kind, topics, priority, scores, grade, decision, risks, summary and checklist.

The knowledge lives in `defaults/rules/*.toml` (kinds, topics, priority, grades, risks, checklist,
bots); `RuleSet.load` compiles it once per run and `analyse_item` applies it to one item. The engine
is pure: no store, no network, no clock.

Text is matched as words, never as raw substrings: titles, descriptions and labels are lower-cased
and split into runs of letters and digits, so `kv_cache`, `KV-cache` and `kv cache` are one phrase
and `doc` never matches `doctor`. Every phrase of every table is compiled into one index that finds
all of them in a single pass over the words; a regex alternation per topic, run over each
description, measured five times slower on the vllm-ascend history.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import translate
from pathlib import Path
from typing import Any

from ..config import DEFAULTS, Settings, load_rule_file
from ..errors import ConfigError
from ..models import Analysis, FileChange, Item, PerfClaim, Text

try:  # one formatting of figures across the project, when the claims module provides it
    from .claims import format_number
except ImportError:  # pragma: no cover - claims.py is written separately

    def format_number(x: float) -> str:
        """Shortest faithful text for a figure: 1048.64 -> "1048.64", 12.0 -> "12"."""
        return str(int(x)) if float(x).is_integer() else repr(x)


__all__ = [
    "ENGINE_VERSION", "RULE_FILES", "RuleSet", "analyse_item", "clean_description", "is_bot",
    "load_noise_patterns", "strip_noise", "words",
]

ENGINE_VERSION = "2"
RULE_FILES = ("kinds", "topics", "priority", "grades", "risks", "checklist", "bots")
KINDS = (
    "feature", "perf", "bugfix", "refactor", "docs", "ci", "test", "model-support", "deps", "revert",
    "release", "issue-bug", "issue-feature", "rfc", "misc",
)
RISKS = (
    "core-path", "no-test", "breaking", "new-default", "large-change", "platform-specific",
    "external-dependency", "silent-accuracy", "draft", "conflicts",
)
_LANGS = ("en", "zh")
_HOUSEKEEPING = ("docs", "ci", "test")
_GAP = 4  # words allowed between the parts of an `a ... b` phrase
_BODY_CHARS = 5000  # descriptions are cut here: the substance comes first, logs and dumps last
_WORD = re.compile(r"[a-z0-9]+")
_TITLE_TAGS = re.compile(r"^\s*((?:\[[^\]]*\]\s*:?\s*)+)")
_TITLE_TYPE = re.compile(r"^([A-Za-z][\w-]{1,15})(?:\(([^)]*)\))?!?\s*:\s*")
_TITLE_NUMBER = re.compile(r"\s*\(#\d+\)\s*$")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_HTML = re.compile(r"<!--.*?(?:-->|\Z)|<[A-Za-z/!][^<>]{0,600}>", re.S)
_URL = re.compile(r"https?://\S+")
# Line patterns start with a literal "\n" (the text gets one in front): `re` then jumps from newline
# to newline instead of trying every character, as it does for `^` in MULTILINE mode.
_HEADING = re.compile(r"\n[ \t]{0,3}(?:#{1,6}[ \t]*(.*?)[ \t]*#*|\*\*([^*\n]{2,60})\*\*:?|([A-Z][\w &/-]{2,40}):)[ \t]*(?=\n|\Z)")
_SENTENCE_END = re.compile(r"[.!?:](?=\s+[A-Z`(\[*-])|[.!?:]\s*\Z")
_QUOTE = re.compile(r"\n[ \t]*>[^\n]*(?:\n(?![ \t]*(?:\n|#|>))[^\n]*)*")
_BLANKS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_REF_AT = re.compile(r"#\d|/pull/\d")
_MARKUP = re.compile(r"`+|\*\*+|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")  # code ticks, bold, italics


# Every byte but [0-9a-z] becomes a space; non-ASCII characters become "?" first, so a space too.
_WORD_BYTES = bytes(c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))


def words(text: str) -> list[str]:
    """The lower-cased words of `text` (runs of ASCII letters and digits), in order."""
    # Same result as re.findall("[a-z0-9]+", text.lower()), in a third of the time.
    return text.lower().encode("ascii", "replace").translate(_WORD_BYTES).decode("ascii").split()


# --------------------------------------------------------------------------- phrase index


@dataclass(frozen=True, slots=True)
class _Phrase:
    pid: int
    parts: tuple[tuple[str, bool, int], ...]  # (word, is_prefix, words allowed before it)
    needs: frozenset[str]  # the exact words after the first: a cheap test before matching in order
    joined: str  # " a b " for phrases of adjacent exact words: a substring test on the joined words
    heads: frozenset[str]  # first three letters of the later prefix words (`qwen*` -> "qwe")


def _parse_phrase(text: str) -> tuple[tuple[str, bool, int], ...]:
    parts: list[tuple[str, bool, int]] = []
    gap = 0
    for token in text.lower().split():
        if token == "...":
            gap = _GAP
            continue
        prefix = token.endswith("*")
        pieces = _WORD.findall(token)
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            parts.append((piece, prefix and last, gap if i == 0 else 0))
        gap = 0
    if not parts or (parts[0][1] and len(parts[0][0]) < 2):
        raise ConfigError(f"rule phrase {text!r} has no words (a prefix needs at least two letters)")
    return tuple(parts)


@dataclass(slots=True)
class _Tables:
    """Lookup tables of the phrases searched in one kind of text."""

    single: dict[str, list[int]] = field(default_factory=dict)  # one exact word -> phrase ids
    plain: dict[str, list[_Phrase]] = field(default_factory=dict)  # first word -> adjacent exact words
    multi: dict[str, list[_Phrase]] = field(default_factory=dict)  # first word -> with gaps or prefixes
    prefix: dict[str, list[_Phrase]] = field(default_factory=dict)  # first two letters -> prefix phrases

    def put(self, phrase: _Phrase) -> None:
        word, prefix, _ = phrase.parts[0]
        if prefix:
            self.prefix.setdefault(word[:2], []).append(phrase)
        elif len(phrase.parts) == 1:
            self.single.setdefault(word, []).append(phrase.pid)
        else:
            (self.plain if phrase.joined else self.multi).setdefault(word, []).append(phrase)


class _Index:
    """Every phrase of every rule table -> the owners that listed it; one pass finds them all.

    Titles, tags and labels are short and searched for every phrase; descriptions are long and only
    searched for the phrases some rule reads there (`body=True`), which keeps the pass cheap.
    """

    def __init__(self) -> None:
        self._tables = {False: _Tables(), True: _Tables()}  # body? -> tables
        self._ids: dict[tuple[tuple[str, bool, int], ...], _Phrase] = {}
        self._placed: set[tuple[int, bool]] = set()
        self.texts: list[str] = []
        self.pids: dict[str, frozenset[int]] = {}  # owner -> the phrase ids it listed

    def add(self, phrases: Iterable[str], owner: str, body: bool = True) -> None:
        """Register `phrases` for `owner`, searched in short texts and (if `body`) in descriptions."""
        for text in phrases:
            parts = _parse_phrase(text)
            phrase = self._ids.get(parts)
            if phrase is None:
                plain = not any(pre or gap for _, pre, gap in parts)
                phrase = self._ids[parts] = _Phrase(
                    len(self.texts), parts, frozenset(w for w, pre, _ in parts[1:] if not pre),
                    " " + " ".join(w for w, _, _ in parts) + " " if plain else "",
                    frozenset(w[:3] for w, pre, _ in parts[1:] if pre and len(w) >= 3))
                self.texts.append(text)
            for where in (False, True) if body else (False,):
                if (phrase.pid, where) not in self._placed:
                    self._placed.add((phrase.pid, where))
                    self._tables[where].put(phrase)
            self.pids[owner] = self.pids.get(owner, frozenset()) | {phrase.pid}

    def find(self, seq: Sequence[str], body: bool = False) -> set[int]:
        """The ids of the phrases found in the word sequence (`pids[owner] & found`: an owner's hits)."""
        if not seq:
            return set()
        tables = self._tables[body]
        distinct = set(seq)
        # Later prefix words are tested by their first letters: cheap, and most candidates fail it.
        heads = {w[:3] for w in distinct} if body else None
        found: set[int] = set()
        for word in distinct & tables.single.keys():
            found.update(tables.single[word])
        joined = ""
        for word in distinct & tables.plain.keys():
            for phrase in tables.plain[word]:
                if phrase.needs <= distinct:
                    joined = joined or " " + " ".join(seq) + " "
                    if phrase.joined in joined:
                        found.add(phrase.pid)
        for word in distinct & tables.multi.keys():
            _find_at(seq, word, tables.multi[word], found, distinct, heads)
        keys = tables.prefix.keys()
        for word in [w for w in distinct if w[:2] in keys]:
            for phrase in tables.prefix[word[:2]]:
                if phrase.pid not in found and word.startswith(phrase.parts[0][0]):
                    if len(phrase.parts) == 1:
                        found.add(phrase.pid)
                    else:
                        _find_at(seq, word, [phrase], found, distinct, heads)
        return found


def _find_at(seq: Sequence[str], word: str, phrases: list[_Phrase], found: set[int], distinct: set[str],
             heads: set[str] | None) -> None:
    """Add the phrases (all starting with `word`) that match at some occurrence of `word`."""
    todo = [p for p in phrases
            if p.pid not in found and p.needs <= distinct and (heads is None or p.heads <= heads)]
    i = -1
    while todo:
        try:
            i = seq.index(word, i + 1)
        except ValueError:
            return
        for phrase in todo:
            if len(phrase.parts) == 1 or _rest_matches(seq, i, phrase.parts):
                found.add(phrase.pid)
        todo = [p for p in todo if p.pid not in found]


def _rest_matches(seq: Sequence[str], i: int, parts: tuple[tuple[str, bool, int], ...]) -> bool:
    pos, size = i, len(seq)
    for word, prefix, gap in parts[1:]:
        for j in range(pos + 1, min(size, pos + 2 + gap)):
            if (seq[j].startswith(word) if prefix else seq[j] == word):
                pos = j
                break
        else:
            return False
    return True


# --------------------------------------------------------------------------- globs


def _glob_regex(pattern: str) -> str:
    """`*` stays in one directory, `**` crosses directories, a pattern without `/` matches a name."""
    if "/" not in pattern:
        pattern = "**/" + pattern
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            ch = pattern[i]
            out.append("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch))
            i += 1
    return "".join(out)


_WILD = re.compile(r"[*?\[\]]")


class _Globs:
    """Named glob classes; tells which classes a path falls in.

    Most globs are of a few simple shapes (`*.ext`, `name`, `**/dir/**`, `dir/**`, `*part*`); those
    are answered by dictionary lookups on the path's parts, the rest by a regex after a cheap
    substring test. A history has ~10k distinct paths and ~50 classes: regexes alone cost a second.
    """

    def __init__(self) -> None:
        self._name: dict[str, set[str]] = {}  # exact file name
        self._ext: dict[str, set[str]] = {}  # ".ext" of the file name
        self._dir: dict[str, set[str]] = {}  # a directory name at any depth
        self._under: dict[str, set[str]] = {}  # "a/b/": a path prefix
        self._part: list[tuple[str, str]] = []  # (text inside the file name, class)
        self._start: list[tuple[str, str]] = []  # (start of the file name, class)
        self._other: list[tuple[str, re.Pattern[str], str]] = []  # (literal, regex, class)
        self._cache: dict[str, frozenset[str]] = {}

    def add(self, name: str, patterns: Iterable[str]) -> None:
        """Register the globs of class `name`."""
        for pattern in patterns:
            self._add(name, pattern if "/" in pattern else "**/" + pattern)

    def _add(self, name: str, pattern: str) -> None:
        rest = pattern.removeprefix("**/")
        anywhere, plain = rest != pattern, not _WILD.search(rest)
        if anywhere and plain and "/" not in rest:
            self._name.setdefault(rest, set()).add(name)
        elif anywhere and "/" not in rest and rest.startswith("*.") and not _WILD.search(rest[1:]):
            self._ext.setdefault(rest[1:], set()).add(name)
        elif anywhere and "/" not in rest and rest[:1] == rest[-1:] == "*" and not _WILD.search(rest[1:-1]):
            self._part.append((rest[1:-1], name))
        elif anywhere and "/" not in rest and rest.endswith("*") and not _WILD.search(rest[:-1]):
            self._start.append((rest[:-1], name))
        elif anywhere and rest.endswith("/**") and not _WILD.search(rest[:-3]) and "/" not in rest[:-3]:
            self._dir.setdefault(rest[:-3], set()).add(name)
        elif not anywhere and pattern.endswith("/**") and not _WILD.search(pattern[:-3]):
            self._under.setdefault(pattern[:-2], set()).add(name)
        else:
            literal = max(re.split(r"[*?\[\]]+", rest), key=len)
            self._other.append((literal, re.compile(_glob_regex(pattern) + r"\Z"), name))

    def classes(self, path: str) -> frozenset[str]:
        """The classes `path` falls in (cached: the same paths recur across a history)."""
        found = self._cache.get(path)
        if found is None:
            found = self._cache[path] = frozenset(self._match(path))
        return found

    def _match(self, path: str) -> set[str]:
        dirs, _, base = path.rpartition("/")
        hits = set(self._name.get(base, ()))
        dot = base.rfind(".")
        if dot > 0:
            hits.update(self._ext.get(base[dot:], ()))
        parts = dirs.split("/") if dirs else []
        for i, part in enumerate(parts):
            hits.update(self._dir.get(part, ()))
            hits.update(self._under.get("/".join(parts[: i + 1]) + "/", ()))
        hits.update(name for text, name in self._part if text in base)
        hits.update(name for text, name in self._start if base.startswith(text))
        hits.update(name for literal, rx, name in self._other if literal in path and rx.match(path))
        return hits


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
    decision_rules: list[_Rule]
    importance: _Scores
    insight: _Scores
    step_rules: list[_Rule]
    fallback_rules: list[_Rule]
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
    topic_pids: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # pid -> (topic, source)
    topic_classes: dict[str, int] = field(default_factory=dict)  # glob class -> topic
    risk_pids: frozenset[int] = frozenset()  # every phrase of a word risk: most items hit none
    kind_pids: dict[tuple[str, int], list[_Weighted]] = field(default_factory=dict)  # (source, pid) -> rules
    signal_pids: dict[str, frozenset[int]] = field(default_factory=dict)  # "L"/"M"/"native_L" -> phrase ids
    bot_cache: dict[str, bool] = field(default_factory=dict)  # authors recur: decide each login once

    @classmethod
    def load(cls, settings: Settings) -> RuleSet:
        """Load and compile every rule file (packaged, replaced table by table by the user's copy)."""
        data = {name: load_rule_file(name, settings) for name in RULE_FILES}
        return _compile(data, settings)

    def classes(self, path: str) -> frozenset[str]:
        """The glob classes (`topic:attention`, `sig:triton`, `light`, ...) a changed path falls in."""
        return self.globs.classes(path)


def _version(data: Mapping[str, Any], settings: Settings) -> str:
    # Everything an analysis depends on: the rule tables, the claim rules and the code version, and
    # the settings the rules read (target profile, focus), so changing any of them re-analyses.
    claims = (DEFAULTS / "rules" / "claims.toml").read_text(encoding="utf-8")
    code = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(Path(__file__).parent.glob("*.py")))).hexdigest()
    blob = json.dumps({"engine": ENGINE_VERSION, "code": code, "rules": data, "claims": claims, "target": settings.target,
                       "focus": sorted(settings.focus), "weights": settings.focus_weights},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


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
    index.add(data["risks"].get("external_ref_context", []), "ref-context")
    bots = data["bots"]
    template = bots.get("template", {})
    lines = template.get("lines", [])
    return RuleSet(
        version=_version(data, settings), target=settings.target, data=data, index=index, globs=globs,
        kind_rules=kind_rules, at_start=at_start, issue_rules=issue_rules, topics=topics,
        profile=profile, signal_labels=labels,
        priority_rules=[_rule(r, r.get("priority", "none")) for r in prio.get("rule", [])],
        decision_rules=[_rule(r, (r["decision"], _text(r.get("reason"), "grades.decision")))
                        for r in data["grades"].get("decision", [])],
        importance=_scores(prio.get("importance", {})), insight=_scores(prio.get("insight", {})),
        step_rules=[_rule(r, _text(r.get("text"), "checklist.step")) for r in data["checklist"].get("step", [])],
        fallback_rules=[_rule(r, _text(r.get("text"), "checklist.fallback"))
                        for r in data["checklist"].get("fallback", [])],
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
        topic_pids=_topic_pids(topics, index),
        kind_pids=_kind_pids(kind_rules, index),
        signal_pids={key: frozenset().union(*(index.pids.get(f"s:{sid}", ()) for sid in sids))
                     for key, sids in (("L", profile.signals_l), ("M", profile.signals_m),
                                       ("native_L", profile.native_l))},
        topic_classes={f"topic:{t.id}": order for order, t in enumerate(topics)},
        risk_pids=frozenset().union(*(p for o, p in index.pids.items() if o.startswith("r"))),
    )


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
    return _regex(rf"\n[ \t]*(?:{body})[^\n]*", "bots.template.lines", re.I) if lines else None


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
        globs.add(f"sig:{sid}", entry.get("paths", []))
        labels[sid] = _text(entry.get("label"), f"grades.signals.{sid}.label")
    globs.add("light", data.get("light_paths", []))
    profiles = data.get("profiles", {})
    if target not in profiles:
        raise ConfigError(f"unknown target profile {target!r}; known: {', '.join(sorted(profiles))}")
    native_repos = {r.lower() for p in profiles.values() for r in p.get("native_repos", [])}
    raw = profiles[target]
    for sid in [*raw.get("native_L", []), *raw.get("L", []), *raw.get("M", [])]:
        if sid not in labels:
            raise ConfigError(f"rules: grades.profiles.{target}: unknown signal {sid!r}")
    index.add(raw.get("native_words", []), "native")
    globs.add("native", raw.get("native_paths", []))
    profile = _Profile(
        target, _text(raw.get("name"), f"grades.profiles.{target}.name"), raw.get("topic", ""),
        {r.lower() for r in raw.get("native_repos", [])}, int(raw.get("native_body_min", 2)),
        list(raw.get("native_L", [])), list(raw.get("L", [])), list(raw.get("M", [])),
        int(raw.get("body_min_L", 3)), int(raw.get("body_min_M", 2)),
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
    return _noise(tomllib.loads((DEFAULTS / "rules" / "bots.toml").read_text(encoding="utf-8")))


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


def _gate(pattern: re.Pattern[str]) -> str | None:
    """A lower-case literal the pattern cannot match without (cached), so most texts skip the regex."""
    if pattern.pattern not in _GATES:
        runs = _literal_runs(pattern.pattern) or []
        best = max(runs, key=len, default="").strip()
        _GATES[pattern.pattern] = best.lower() if len(best) >= 4 and pattern.flags & re.IGNORECASE else None
    return _GATES[pattern.pattern]


def strip_noise(text: str, patterns: Sequence[re.Pattern[str]]) -> str:
    """`text` with every noise match removed and the blank lines it leaves squeezed."""
    lowered = text.lower()
    for pattern in patterns:
        gate = _gate(pattern)
        if gate is None or gate in lowered:
            text = pattern.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# --------------------------------------------------------------------------- text facts


_NO_HITS: frozenset[int] = frozenset()


@dataclass(slots=True)
class _Facts:
    """What the rules look at, extracted once per item."""

    title: str  # the title without tags, type and trailing (#N)
    type_word: str
    tag_words: list[str]
    title_words: list[str]
    body: str  # cleaned description
    design_chars: int
    found: dict[str, set[int]]  # region (title, tags, body, labels) -> ids of the phrases found there
    pids: dict[str, frozenset[int]]  # the index's owner -> phrase ids
    files: list[tuple[str, frozenset[str], int]]  # path, glob classes, changed lines
    counts: dict[str, int] = field(default_factory=dict)  # glob class -> number of files in it
    code_lines: int = 0
    lines: int = 0
    has_code: bool = False
    has_tests: bool = False
    diffstat: bool = True  # False: `files` are paths the text names (no line counts known)

    def hit(self, region: str, owner: str) -> set[int] | frozenset[int]:
        return self.found[region] & self.pids.get(owner, _NO_HITS)

    def share(self, cls: str) -> float:
        """The share of changed files in glob class `cls` (0 without files)."""
        return self.counts.get(cls, 0) / len(self.files) if self.files else 0.0


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


def _facts(item: Item, rules: RuleSet) -> _Facts:
    tags, type_word, title = _split_title(item.title)
    title_words = words(title)
    label_words = [w for label in item.labels for w in [*words(label), ""]]
    found = {"title": rules.index.find(title_words), "tags": rules.index.find([*tags, type_word]),
             "labels": rules.index.find(label_words)}
    facts = _Facts(title, type_word, tags, title_words, "", 0, found, rules.index.pids, [])
    _add_files(facts, item, rules)
    if _housekeeping(facts, rules):
        # A change to docs, CI or tests only is judged on its title, labels and paths: its (often
        # templated) description cannot make it matter more, and skipping it saves a third of the time.
        found["body"] = set()
        return facts
    facts.body, facts.design_chars = _clean(item.body, rules)
    found["body"] = rules.index.find(words(facts.body), body=True)
    return facts


def _add_files(facts: _Facts, item: Item, rules: RuleSet) -> None:
    # no diffstat (an issue, an RFC, a pasted page): the paths its text names stand in, without line counts
    facts.diffstat = bool(item.files)
    for change in item.files or [FileChange(path) for path in item.named_paths]:
        classes = rules.classes(change.path)
        size = (change.additions or 0) + (change.deletions or 0)
        facts.files.append((change.path, classes, size))
        facts.lines += size
        for cls in classes:
            facts.counts[cls] = facts.counts.get(cls, 0) + 1
        if "code" in classes and "code_exclude" not in classes:
            facts.has_code = True
            facts.code_lines += size
    facts.has_tests = "test" in facts.counts


def _housekeeping(facts: _Facts, rules: RuleSet) -> bool:
    """Every changed file is docs, CI or tests (one of those path classes of kinds.toml)."""
    if not facts.files or not facts.diffstat:  # named paths are a partial view: the text still counts
        return False
    return any(facts.counts.get(rule.owner, 0) == len(facts.files) for rule in rules.kind_rules["paths"]
               if rule.kind in _HOUSEKEEPING)


# --------------------------------------------------------------------------- kind


def _kind(item: Item, facts: _Facts, rules: RuleSet) -> str:
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
    for region, source in (("tags", "tag"), ("title", "title"), ("labels", "label")):
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


def _type_kind(facts: _Facts, rules: RuleSet, scores: dict[str, float]) -> bool:
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


def _start_kind(facts: _Facts, rules: RuleSet, scores: dict[str, float]) -> None:
    first = facts.title_words[0] if facts.title_words else ""
    for vocabulary, rule in rules.at_start:
        if first in vocabulary:
            _keep_max(scores, rule)


def _path_kind(facts: _Facts, rules: RuleSet, scores: dict[str, float]) -> None:
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


def _issue_kind(facts: _Facts, rules: RuleSet) -> str:
    for kind, owner in rules.issue_rules:
        if any(facts.hit(region, owner) for region in ("tags", "labels", "title")):
            return kind
    return rules.data["kinds"].get("issue_default", "misc")


# --------------------------------------------------------------------------- topics


_TOPIC_SOURCES = {"title": ("t", "ttl"), "tags": ("t", "tt", "ttl"), "labels": ("t", "tl")}


def _topics(item: Item, facts: _Facts, rules: RuleSet) -> list[str]:
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


# --------------------------------------------------------------------------- grade


@dataclass(slots=True)
class _Evidence:
    paths: list[tuple[str, str]] = field(default_factory=list)  # (signal, path)
    words: list[tuple[str, str]] = field(default_factory=list)  # (signal, phrase)

    def __bool__(self) -> bool:
        return bool(self.paths or self.words)


def _is_native(item: Item, facts: _Facts, rules: RuleSet) -> bool:
    profile = rules.profile
    if item.repo.lower() in profile.native_repos or facts.counts.get("native"):
        return True
    if facts.hit("title", "native") or facts.hit("tags", "native"):
        return True
    return len(facts.hit("body", "native")) >= profile.native_body_min


def _evidence(facts: _Facts, rules: RuleSet, key: str, signals: list[str], body_min: int,
              title_decides: bool) -> _Evidence:
    """Files and words of `signals`: a code file decides, title words decide when `title_decides`,
    otherwise words need `body_min` distinct phrases (title and description together)."""
    found = _Evidence()
    union = rules.signal_pids.get(key, _NO_HITS)
    paths = [sid for sid in signals if facts.counts.get(f"sig:{sid}")]
    if not paths and not (union & (facts.found["title"] | facts.found["tags"] | facts.found["body"])):
        return found  # the common case: nothing of this grade anywhere
    for sid in paths:
        found.paths += [(sid, path) for path, classes, _ in facts.files
                        if f"sig:{sid}" in classes and "light" not in classes]
    title = [(sid, rules.index.texts[p]) for sid in signals
             for p in sorted(facts.hit("title", f"s:{sid}") | facts.hit("tags", f"s:{sid}"))]
    body = [(sid, rules.index.texts[p]) for sid in signals for p in sorted(facts.hit("body", f"s:{sid}"))]
    if found or (title and title_decides) or len({w for _, w in title + body}) >= body_min:
        found.words += title + body
    return found


def _light(kind: str, facts: _Facts, rules: RuleSet) -> bool:
    if kind in rules.data["grades"].get("light_kinds", []):
        return True
    return bool(facts.files) and facts.counts.get("light", 0) == len(facts.files)


def _grade(item: Item, kind: str, facts: _Facts, rules: RuleSet) -> tuple[str, bool, Text]:
    profile = rules.profile
    native = _is_native(item, facts, rules)
    if native:
        found = _evidence(facts, rules, "native_L", profile.native_l, 99, title_decides=True)
        if found and kind not in rules.data["grades"].get("light_kinds", ["docs", "ci"]):
            return "L", True, _reason("native_L", found, facts, rules)
        grade = "S" if _light(kind, facts, rules) else "M"
        return grade, True, _reason(f"native_{grade}", _Evidence(), facts, rules)
    if _light(kind, facts, rules):
        return "S", False, _reason("S_light", _Evidence(), facts, rules)
    for grade, signals, body_min in (("L", profile.signals_l, profile.body_min_l),
                                     ("M", profile.signals_m, profile.body_min_m)):
        found = _evidence(facts, rules, grade, signals, body_min, title_decides=grade == "L")
        if found:
            return grade, False, _reason(grade, found, facts, rules)
    return "S", False, _reason("S", _Evidence(), facts, rules)


def _reason(key: str, found: _Evidence, facts: _Facts, rules: RuleSet) -> Text:
    template = rules.data["grades"]["reasons"][key]
    target = rules.profile.label
    ranked = _ranked_files(facts)
    return {lang: template[lang].format(evidence=_evidence_text(found, ranked, rules, lang), target=target[lang])
            for lang in _LANGS}


def _ranked_files(facts: _Facts) -> list[str]:
    """Changed paths, code before docs/tests/config, larger changes first: what a reason should name."""
    ranked = sorted(facts.files, key=lambda f: ("light" in f[1], -f[2]))
    return [path for path, _, _ in ranked]


def _evidence_text(found: _Evidence, ranked: list[str], rules: RuleSet, lang: str) -> str:
    grades = rules.data["grades"]
    forms, limit = grades["evidence"], int(grades.get("max_evidence", 3))
    sep = "; " if lang == "en" else ";"
    seen_paths = list(dict.fromkeys(found.paths))[:limit]
    parts = [forms["path"][lang].format(what=rules.signal_labels[s][lang], path=p) for s, p in seen_paths]
    seen_words = list(dict.fromkeys(w for _, w in found.words))[: max(1, limit - len(parts))]
    parts += [forms["word"][lang].format(word=w) for w in seen_words]
    if not parts:
        parts = _file_list(ranked, forms, limit, lang)
    return sep.join(parts)


def _file_list(ranked: list[str], forms: Mapping[str, Text], limit: int, lang: str) -> list[str]:
    if not ranked:
        return [forms["none"][lang]]
    parts = [forms["files"][lang].format(path=path) for path in ranked[:limit]]
    if len(ranked) > limit:
        parts.append(forms["more"][lang].format(n=len(ranked) - limit))
    return [", ".join(parts) if lang == "en" else "、".join(parts)]


# --------------------------------------------------------------------------- risks


def _risks(item: Item, kind: str, topics: list[str], facts: _Facts, rules: RuleSet) -> list[str]:
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


def _word_risk(rid: str, entry: Mapping[str, Any], facts: _Facts) -> bool:
    if facts.hit("title", f"rtitle:{rid}") or facts.hit("tags", f"rtags:{rid}"):
        return True
    if facts.hit("labels", f"rlabels:{rid}"):
        return True
    return len(facts.hit("body", f"rbody:{rid}")) >= int(entry.get("body_min", 1))


def _extra_risk(extra: str | None, item: Item, topics: list[str], facts: _Facts, rules: RuleSet) -> bool:
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
    own = item.repo.lower()
    for at in _REF_AT.finditer(item.body):  # the patterns have no literal prefix: scan near "#<digit>"
        start = item.body.rfind("\n", 0, at.start()) + 1
        end = item.body.find("\n", at.end())
        line = item.body[start:end if end >= 0 else None]
        if any(m.group(1).lower() != own for rx in rules.external_refs for m in rx.finditer(line)):
            if rules.index.find(words(line), body=True) & rules.index.pids.get("ref-context", _NO_HITS):
                return True
    return False


def _comment_conflicts(item: Item, rules: RuleSet) -> bool:
    for comment in item.comments:
        if rules.index.find(words(comment.body), body=True) & rules.index.pids.get("rbody:conflicts", _NO_HITS):
            return True
    return False


# --------------------------------------------------------------------------- flags and scores


def _numbers(claims: Sequence[PerfClaim]) -> bool:
    return any((c.before is not None and c.after is not None) or c.change_pct is not None or c.ratio is not None
               for c in claims)


def _flags(item: Item, kind: str, topics: list[str], grade: str, native: bool, risks: list[str],
           claims: Sequence[PerfClaim], facts: _Facts, rules: RuleSet, settings: Settings) -> set[str]:
    prio = rules.data["priority"]
    focus = [t for t in topics if t in settings.focus]
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
        "numbers": _numbers(claims),
        "mechanism": _mechanism_count(facts) >= int(prio.get("mechanism_min", 4)),
        "design": facts.design_chars >= int(prio.get("design_min_chars", 200)),
        "long": len(facts.body) >= int(prio.get("long_chars", 1200)),
        "noise-title": bool(facts.hit("title", "noise") or facts.hit("tags", "noise")),
        "accuracy": bool(facts.hit("title", "rtitle:silent-accuracy")),
        "bot": is_bot(item.author, rules),
    }
    flags.update(name for name, on in conditions.items() if on)
    return flags


def _mechanism_count(facts: _Facts) -> int:
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


# --------------------------------------------------------------------------- summary and checklist


def _best_claim(claims: Sequence[PerfClaim]) -> PerfClaim | None:
    # The first figure the author gave is usually the headline one; the largest change is often an
    # outlier from a side table.
    paired = [c for c in claims if c.before is not None and c.after is not None]
    if paired:
        return paired[0]
    return next((c for c in claims if c.ratio is not None or c.change_pct is not None), None)


def _claim_text(claim: PerfClaim, lang: str, summary: Mapping[str, Any], short: bool = False) -> str:
    unit = claim.unit or ""
    unit = f" {unit}" if unit[:1].isalnum() else unit
    if claim.before is not None and claim.after is not None:
        key, values = "claim_pair", {"before": format_number(claim.before), "after": format_number(claim.after)}
    elif claim.ratio is not None:
        key, values = "claim_ratio", {"ratio": format_number(claim.ratio)}
    else:
        pct = claim.change_pct or 0.0
        key, values = "claim_pct", {"pct": ("+" if pct > 0 else "") + format_number(pct)}
    text = summary[key][lang].format(metric=claim.metric, unit=unit, **values)
    if short:  # the checklist names the figure without the "(self-reported)" note
        text = re.sub(r"\s*[((][^()()]*[))]\s*$", "", text)
    return text


def _lead(facts: _Facts, rules: RuleSet) -> str:
    """The first meaningful sentence of the description when it says what the change does, else the title."""
    prefixes = rules.lead_prefixes
    for paragraph in re.split(r"\n\s*\n", facts.body[:1500])[:3]:
        text = " ".join(line.strip().lstrip("-*+ ").strip() for line in paragraph.splitlines()).strip()
        end = _SENTENCE_END.search(text, 0, 400)
        sentence = _MARKUP.sub("", text[: end.start() if end else 400]).strip().rstrip(".:")
        seq = words(sentence)
        if len(seq) < 4:
            continue
        for prefix in prefixes:
            if seq[: len(prefix)] == prefix:
                sentence = _drop_words(sentence, len(prefix))
                seq = seq[len(prefix):]
                break
        if seq and seq[0] in rules.lead_verbs:
            return sentence[:1].upper() + sentence[1:]
        break
    return facts.title


def _drop_words(sentence: str, n: int) -> str:
    found = list(re.finditer(r"[A-Za-z0-9]+", sentence))
    return sentence[found[n - 1].end():].strip() if len(found) >= n else sentence


def _summary(kind: str, topics: list[str], native: bool, claims: Sequence[PerfClaim], facts: _Facts,
             rules: RuleSet) -> Text:
    summary = rules.data["kinds"].get("summary", {})
    names = rules.data["kinds"].get("names", {})
    limit = int(summary.get("max_chars", 120))
    labels = {t.id: t.label for t in rules.topics}
    shown = [t for t in topics if t != kind and not (native and t == rules.profile.topic)][:2]
    lead, best = _lead(facts, rules), _best_claim(claims)
    out: Text = {}
    for lang in _LANGS:
        kind_name = names.get(kind, {}).get(lang, kind)
        topic_text = summary["topics"][lang].format(topics=summary["topic_sep"][lang].join(
            labels[t][lang] for t in shown)) if shown else ""
        claim = summary["claim_sep"][lang] + _claim_text(best, lang, summary) if best else ""
        room = limit - len(kind_name) - len(topic_text) - len(claim) - 2
        if room < min(len(lead), 48):  # the lead says more than the topic names
            room, topic_text = room + len(topic_text), ""
        out[lang] = summary["line"][lang].format(kind=kind_name, topics=topic_text, lead=_shorten(lead, room),
                                                 claim=claim)
    return out


def _shorten(text: str, room: int) -> str:
    room = max(room, 24)
    if len(text) <= room:
        return text
    cut = text[: room - 1].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:-") + "…"


def _checklist(flags: set[str], claims: Sequence[PerfClaim], topics: list[str], rules: RuleSet,
               settings: Settings) -> list[Text]:
    checklist = rules.data["checklist"]
    summary = rules.data["kinds"].get("summary", {})
    most, least = int(checklist.get("max_steps", 4)), int(checklist.get("min_steps", 2))
    chosen = [r.value for r in rules.step_rules if r.holds(flags)][:most]
    for rule in rules.fallback_rules:
        if len(chosen) >= least:
            break
        if rule.holds(flags) and rule.value not in chosen:
            chosen.append(rule.value)
    metrics = list(dict.fromkeys(c.metric for c in claims if c.metric))[:3]
    best = _best_claim(claims)
    labels = {t.id: t.label for t in rules.topics}
    values = {}
    for lang in _LANGS:
        sep = ", " if lang == "en" else "、"
        values[lang] = {
            "metrics": sep.join(metrics) if metrics else checklist["default_metrics"][lang],
            "claim": _claim_text(best, lang, summary, short=True) if best else "",
            "target": rules.profile.label[lang],
            "topics": sep.join(labels[t][lang] for t in topics if t in settings.focus),
        }
    return [{lang: text[lang].format(**values[lang]) for lang in _LANGS} for text in chosen]


# --------------------------------------------------------------------------- entry point


def analyse_item(item: Item, rules: RuleSet, claims: list[PerfClaim], settings: Settings) -> Analysis:
    """Every rule-made field of one item's analysis (links are left to the pipeline)."""
    facts = _facts(item, rules)
    kind = _kind(item, facts, rules)
    topics = _topics(item, facts, rules)
    grade, native, grade_reason = _grade(item, kind, facts, rules)
    risks = _risks(item, kind, topics, facts, rules)
    flags = _flags(item, kind, topics, grade, native, risks, claims, facts, rules, settings)
    priority = _first(rules.priority_rules, flags, "none")
    flags.add(f"priority:{priority}")
    decision, decision_reason = _first(rules.decision_rules, flags, ("track-only", {"en": "-", "zh": "-"}))
    return Analysis(
        item_kind=kind, topics=topics, priority=priority,
        importance=_score(rules.importance, flags, _focus_bonus(topics, rules, settings)),
        insight=_score(rules.insight, flags), grade=grade, grade_reason=grade_reason, native=native,
        decision=decision, decision_reason=dict(decision_reason), risk_labels=risks, perf_claims=claims,
        links=[], summary=_summary(kind, topics, native, claims, facts, rules),
        checklist=_checklist(flags, claims, topics, rules, settings), version=rules.version,
    )
