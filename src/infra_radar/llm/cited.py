"""Cited prose: each sentence of a model's reply names the records it rests on, and is kept only when they
hold it.

A reply field is a list of `{"text": sentence, "records": [ids]}` (a string with inline `[n]` markers is read
too; a sentence that cites nothing is ungrounded). A sentence is kept when, in this order, it is no *seam*
(no state, priority, grade, decision or template string of the radar inside it), its *language* is the
report's (no English grammar word in Chinese, no English phrase half translated, «作为逃逸 hatch»), it does
not *contradict* a fact of the code (a setting the diff ships on said to be opt-in, a removed function said
to be added, a version gate said otherwise), it is *grounded* (the item-wide checks of llm/grounding.py, its
cited records exist, every number, identifier and technical term of it appears in them, and a causal or
comparative claim cites a record that asserts one) and it is no *filler* (it shares a specific term with its
records and is not a stock phrase of grounding.toml). Each dropped sentence is counted by reason. Every check
is a few linear passes over the sentence and its records; the word lists are grounding.toml's
[support], [contradiction] and [records].
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..models import AnalysedItem
from .grounding import Grounds, numbers, pastes_prompt, refs, sentence_language_ok, sentence_ok, sentences
from .records import Record

__all__ = ["CITED_REASONS", "Cited", "Support", "check_field", "join_sentences", "proposed"]

CITED_REASONS = ("ungrounded", "filler", "contradiction", "language", "seam")
# a citation marker inside a text: [3], [E3], 【3】, [1, 2] (no leading blank in the pattern: a run of blanks
# would be tried from each of its positions; the text is stripped after)
_MARK = re.compile(r"[\[【](?:E|e|R|r|#)?(\d{1,3})(?:[ ]?[,，、][ ]?(?:E|e|R|r|#)?\d{1,3}){0,20}[\]】]")
_ID = re.compile(r"\d{1,3}")
_CODE = re.compile(r"`+([^`\n]{1,120})`+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[./:-][A-Za-z0-9_]+)*")
_IDENTIFIER = re.compile(r"[\d_./:-]|.[A-Z]")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_QUOTED = re.compile(r"「[^」\n]{0,200}」|“[^”\n]{0,200}”")  # a quoted title or phrase: said as written
_PLAIN = re.compile(r"(?<![A-Za-z0-9_./-])[a-z]{3,}(?![A-Za-z0-9_./-])")  # a plain lowercase English word
_PLAIN_WORD = re.compile(r"[a-z]{3,}")
_REF_TEXT = re.compile(r"(?<![\w/.-])(?:[A-Za-z0-9][\w.-]*/[\w.-]+)?#\d+\b")
_LEAD = "，,。.；;：:、 "
_ENDS = ("。", "！", "？", "；", ".", "!", "?", ";")


@dataclass(frozen=True, slots=True)
class Cited:
    """One sentence of model prose and the ids of the records it cites."""

    text: str
    records: tuple[int, ...]

    def json(self) -> dict[str, Any]:
        return {"text": self.text, "records": list(self.records), "source": "model"}


def proposed(value: Any) -> tuple[list[Cited], bool]:
    """The sentences a reply field proposes, with their cited ids, and whether the field had a usable shape.
    A list of {"text", "records"} objects (also "sentence"/"ids"/"cite"), a list of strings, or one string;
    `[n]` markers inside a text are citations too (taken out of the text)."""
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else None
    if items is None:
        return [], value is None
    out: list[Cited] = []
    ok = True
    for it in items:
        if isinstance(it, dict):
            text = next((it[k] for k in ("text", "sentence", "content") if isinstance(it.get(k), str)), "")
            ids = next((it[k] for k in ("records", "ids", "cite", "cites", "evidence") if k in it), [])
        elif isinstance(it, str):
            text, ids = it, []
        else:
            ok = False
            continue
        base = tuple(int(x) for x in _ids(ids))
        for s in sentences(text):
            marks = tuple(int(x) for m in _MARK.finditer(s) for x in _ID.findall(m.group()))
            clean = " ".join(_MARK.sub(" ", s).split()).lstrip(_LEAD).rstrip("，,、：: ")
            clean = re.sub(r" (?=[。．.!?！？；;，,])", "", clean)  # the blank a marker left before a stop
            if clean and any(ch.isalnum() for ch in clean):
                out.append(Cited(clean, tuple(dict.fromkeys(base + marks))))
    return out, ok


def _ids(ids: Any) -> list[str]:
    if isinstance(ids, (int, str)):
        ids = [ids]
    if not isinstance(ids, list):
        return []
    return [m for x in ids if isinstance(x, (int, str)) and not isinstance(x, bool) for m in _ID.findall(str(x))[:1]]


@lru_cache(maxsize=1)
def _support_rules() -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str], tuple[str, ...], tuple[str, ...],
                              dict[str, re.Pattern[str]]]:
    from .figures import grounding_rules

    data = grounding_rules()
    s = data.get("support", {})
    contra = {k: re.compile("|".join(f"(?:{p})" for p in v), re.IGNORECASE)
              for k, v in data.get("contradiction", {}).items() if v}
    return (tuple(w.lower() for w in s.get("causal", [])), tuple(w.lower() for w in s.get("comparative", [])),
            frozenset(s.get("asserting_kinds", [])), tuple(w.lower() for w in s.get("filler_phrases", [])),
            tuple(s.get("seam_strings", [])), contra)


@lru_cache(maxsize=1)
def _target_rules() -> tuple[tuple[tuple[str, re.Pattern[str]], ...], frozenset[str]]:
    """grounding.toml [support] target_words, each with its pattern as a word of its own (not inside a name or
    a repository: `npu_patch`, vllm-ascend#1), and own_kinds."""
    from .figures import grounding_rules

    s = grounding_rules().get("support", {})
    words = tuple((w.lower(), re.compile(rf"(?<![A-Za-z0-9_/.#-]){re.escape(w.lower())}(?![A-Za-z0-9_/.#-])"))
                  for w in s.get("target_words", []))
    return words, frozenset(s.get("own_kinds", []))


@lru_cache(maxsize=1)
def _claim_rules() -> tuple[dict[str, Any], ...]:
    """grounding.toml [[support.claims]]: the kinds of effect a sentence may claim only from a record of that kind."""
    from .figures import grounding_rules

    return tuple({"said": tuple(w.lower() for w in r.get("said", [])),
                  "with": tuple(w.lower() for w in r.get("with", [])),
                  "needs": tuple(w.lower() for w in r.get("needs", [])),
                  "figure_counts": bool(r.get("figure_counts", False)),
                  "kinds_exempt": frozenset(r.get("kinds_exempt", []))}
                 for r in grounding_rules().get("support", {}).get("claims", []))


def _has_cue(text: str, cues: tuple[str, ...]) -> bool:
    """Whether lowercase `text` holds one of `cues` (a Latin cue as a word start, a CJK one anywhere)."""
    for cue in cues:
        at = text.find(cue)
        while at >= 0:
            if _CJK.match(cue) or at == 0 or not text[at - 1].isalnum():
                return True
            at = text.find(cue, at + 1)
    return False


@lru_cache(maxsize=4)
def _radar_strings(lang: str) -> tuple[str, ...]:
    """The radar's own names of states, priorities, grades and decisions (i18n.toml) and the template pieces
    of grounding.toml [support] seam_strings: none belongs inside a model sentence."""
    from ..render.base import load_strings

    t = load_strings(lang)
    names = [v for sec in ("states", "grades", "decisions") for v in t.get(sec, {}).values() if isinstance(v, str)]
    names += [v.split("（")[0].split(" (")[0] for v in t.get("grades", {}).values() if isinstance(v, str)]
    from .figures import grounding_rules

    exempt = set(grounding_rules().get("support", {}).get("seam_exempt", []))
    found = [n for n in names if len(n) >= 2 and (_CJK.search(n) or " " in n) and n not in exempt]
    return tuple(dict.fromkeys([*found, *_verdict_pieces(lang), *_support_rules()[4]]))


_MODALS = ("需要", "需", "先", "应")
_PLACEHOLDER = re.compile(r"\{[a-z_]{1,30}\}")
_PIECE_BREAK = re.compile(r"[；;。]|——")


def _verdict_pieces(lang: str) -> list[str]:
    """The clauses of the radar's own verdicts (grades.toml [[decision]] reasons, conclusions.toml
    [[consequence]] texts): the template places them beside a model's sentence, so a model sentence that repeats
    one ("上游仍 open", "需在目标平台复现 A/B 后再跟进") is a seam. Each clause at least 6 characters long, split at
    its placeholders ({target} read as the target's names)."""
    from ..config import rule_data

    texts = [r.get("reason", {}).get(lang, "") for r in rule_data("grades").get("decision", [])]
    for c in rule_data("conclusions").get("consequence", []):
        texts += [c.get("text", {}).get(lang, ""), c.get("short", {}).get(lang, "")]
    pieces = []
    for text in texts:
        for clause in _PIECE_BREAK.split(text.replace("{target}", "NPU")):
            pieces += [p.strip(" ，,：:（）()") for p in _PLACEHOLDER.split(clause)]
    # the clause as a model rewrites it: without its leading modal («在目标平台复现 A/B 后再跟进»)
    pieces += [p[len(m):] for p in pieces for m in _MODALS if p.startswith(m)]
    return [p for p in dict.fromkeys(pieces) if len(p) >= 6]


@dataclass(slots=True)
class Support:
    """What the sentences about one item are checked against: its records, the item-wide grounds, its code."""

    records: dict[int, Record]
    grounds: Grounds
    lang: str
    ai: AnalysedItem | None = None
    _low: dict[int, str] = field(default_factory=dict)
    _words: dict[int, dict[str, set[str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._low = {i: " ".join(r.text.split()).lower() for i, r in self.records.items()}

    @classmethod
    def of(cls, records: list[Record], grounds: Grounds, lang: str, ai: AnalysedItem | None = None) -> Support:
        return cls({r.id: r for r in records}, grounds, lang, ai)

    def judge(self, c: Cited) -> str | None:
        """Why the sentence must go (one of CITED_REASONS), or None to keep it."""
        s = c.text
        if seam(s, self.lang):
            return "seam"
        if self.lang and (not sentence_language_ok(s, self.lang) or self._spliced(s, c.records)):
            return "language"
        if self.contradicts(s):
            return "contradiction"
        if not sentence_ok(s, self.grounds) or not self._supported(c):
            return "ungrounded"
        if pastes_prompt(s) or _has_cue(s.lower(), _support_rules()[3]) or not self._specific(c):
            return "filler"
        if not self._target_held(c, s.lower()):
            return "ungrounded"  # the target named where only the radar's own verdict names it
        return None

    # --- what the cited records hold

    def _cited(self, c: Cited) -> str:
        return "\n".join(self._low[i] for i in c.records if i in self._low)

    def _supported(self, c: Cited) -> bool:
        if not c.records or any(i not in self.records for i in c.records):
            return False
        cited = self._cited(c)
        low = c.text.lower()
        if not numbers(c.text) <= (numbers(cited) | self._figure_numbers(c)):
            return False
        item_ref = self.grounds.default_repo
        if not {r for r in refs(c.text, item_ref)} <= refs(cited, item_ref) | self.grounds.refs:
            return False
        if any(t not in cited for t in _terms(c.text, self.lang, self.grounds.terms)):
            return False
        causal, comparative, kinds = _support_rules()[:3]
        for cues in (causal, comparative):
            if _has_cue(low, cues) and not any(
                    self.records[i].kind in kinds or _has_cue(self._low[i], causal + comparative) for i in c.records):
                return False
        return all(self._claim_held(c, low, claim) for claim in _claim_rules())

    def _target_held(self, c: Cited, low: str) -> bool:
        """A sentence naming the target (NPU, Ascend) cites a record of the author's text or code naming it."""
        words, kinds = _target_rules()
        plain = _CODE.sub(" ", low)  # a name in code or a repository (`npu_patch.py`, vllm-ascend#1) is no claim
        said = [w for w, pattern in words if pattern.search(plain)]
        if not said:
            return True
        return any(self.records[i].kind in kinds and _has_cue(self._low[i], tuple(said)) for i in c.records)

    def _claim_held(self, c: Cited, low: str, claim: dict[str, Any]) -> bool:
        """A sentence claiming a kind of effect (performance, stability, a fix) cites a record of that kind."""
        if not _has_cue(low, claim["said"]) or (claim["with"] and not _has_cue(low, claim["with"])):
            return True
        if self.ai is not None and self.ai.analysis.item_kind in claim["kinds_exempt"]:
            return True
        return any((claim["figure_counts"] and self.records[i].kind == "figure")
                   or _has_cue(self._low[i], claim["needs"]) for i in c.records)

    def _figure_numbers(self, c: Cited) -> set[str]:
        """A cited figure record grounds the figures the item-wide check derives from its claims."""
        if any(self.records[i].kind == "figure" for i in c.records if i in self.records):
            return self.grounds.numbers
        return set()

    def _specific(self, c: Cited) -> bool:
        cited = self._cited(c)
        if numbers(c.text) or refs(c.text, self.grounds.default_repo):
            return True
        return any(t in cited for t in _terms(c.text, self.lang, self.grounds.terms, every=True))

    def _pairs(self, i: int) -> dict[str, set[str]]:
        """Record i's plain lowercase words: each with the plain lowercase words beside it (an empty set when
        it also stands alone), read once in one pass."""
        if i not in self._words:
            from ..render.zh_words import words

            grammar = words().function  # "rope into": a grammar word beside it makes no phrase
            found: dict[str, set[str]] = {}
            tokens = [t.strip(".,;:!?()[]\"'") for t in self._low[i].split()]
            plain = [bool(_PLAIN_WORD.fullmatch(t)) and t not in grammar for t in tokens]
            for k, t in enumerate(tokens):
                if not plain[k]:
                    continue
                near = {tokens[j] for j in (k - 1, k + 1) if 0 <= j < len(tokens) and plain[j]}
                seen = found.get(t)
                found[t] = set() if seen == set() or not near else (seen or set()) | near
            self._words[i] = found
        return self._words[i]

    def _spliced(self, s: str, ids: tuple[int, ...]) -> bool:
        """zh: an English grammar word outside code, or an English phrase of the records half translated (a
        lowercase word of the sentence, not of the item's title or files, that the records only use beside
        another lowercase word the sentence leaves out: «作为逃逸 hatch» where they say "escape hatch")."""
        if self.lang != "zh":
            return False
        from ..render.zh_words import function_words

        if function_words(_QUOTED.sub(" ", s)):
            return True
        rest = _QUOTED.sub(" ", _CODE.sub(" ", s))
        low = rest.lower()
        for m in _PLAIN.finditer(rest):
            w = m.group()
            if w in self.grounds.terms:  # a word of the title or a file: the item's own name for something
                continue
            pairs = [self._pairs(i).get(w) for i in ids if i in self._low]
            if any(p == set() for p in pairs):  # a record uses the word on its own
                continue
            partners = set().union(*(p for p in pairs if p))
            if partners and not any(x in low for x in partners):
                return True
        return False

    # --- the code's facts

    def contradicts(self, s: str) -> bool:
        """Whether `s` says against a fact of the item's diff: a setting it ships on (off) said to be off (on),
        a function or class it removes said to be added, a version gate with another version."""
        ai = self.ai
        if ai is None or not ai.item.code:
            return False
        from ..analyse.code_claims import _names, _switch_state
        from ..analyse.code_facts import load_code_rules

        facts, low = ai.item.code, s.lower()
        phrases = load_code_rules().phrases
        extra = _support_rules()[5]
        for d in facts.get("defaults", []):
            state = _switch_state(str(d.get("value", "")))
            if state is None or not any(n.lower() in low for n in _names(str(d.get("name", "")))):
                continue
            against = "off" if state == "on" else "on"
            if any(p is not None and p.search(s) for p in (phrases.get(against), extra.get(against))):
                return True
        added = extra.get("added")
        for r in facts.get("removed", []):
            name = str(r.get("name", ""))
            if added is not None and len(name) >= 4 and re.search(rf"\b{re.escape(name)}\b", s) and added.search(s):
                return True
        for g in facts.get("version_gates", []):
            pkg = str(g.get("package", "")).lower()
            said = set(re.findall(r"\d+\.\d+(?:\.\d+)*", s))
            known = set(re.findall(r"\d+\.\d+(?:\.\d+)*", f"{g.get('before') or ''} {g.get('after') or ''}"))
            if pkg and pkg in low and said and not said <= known:
                return True
        return False


def _terms(sentence: str, lang: str, item_terms: set[str], every: bool = False) -> list[str]:
    """The technical terms of a sentence, lowercase: code spans, identifier-shaped words, the item's own terms,
    and (zh) every Latin word; with `every`, also the Latin words of an English sentence (filler test)."""
    from .grounding import generic_words

    generic = generic_words()
    sentence = _REF_TEXT.sub(" ", sentence)  # references are checked on their own
    out = [m.group(1).strip().lower() for m in _CODE.finditer(sentence)]
    rest = _CODE.sub(" ", sentence)
    for m in _WORD.finditer(rest):
        w = m.group().strip(".:-/").lower()
        if len(w) < 2 or w in generic:
            continue
        if _IDENTIFIER.search(m.group()) or w in item_terms or lang == "zh" or (every and len(w) >= 4):
            out.append(w)
    return list(dict.fromkeys(out))


def seam(s: str, lang: str) -> bool:
    """Whether a model sentence holds one of the radar's own strings (a state, grade, decision, template piece)."""
    return any(x in s for x in _radar_strings(lang or "zh"))


def join_sentences(kept: list[str], lang: str) -> str:
    """Sentences as one text: each ends with its stop (。 or .), joined with nothing (zh) or a space."""
    out = []
    for s in kept:
        s = s.strip().lstrip(_LEAD).rstrip("，,：:、 ")
        if not s:
            continue
        while s.endswith(("。。", "..")) and not s.endswith("..."):
            s = s[:-1]
        if not s.endswith(_ENDS):
            s += "。" if lang == "zh" or _CJK.search(s[-1:]) else "."
        out.append(s)
    return ("" if lang == "zh" else " ").join(out)


def check_field(value: Any, support: Support) -> tuple[list[Cited], dict[str, int], int, bool]:
    """The kept sentences of one reply field, the dropped ones by reason, how many were proposed, and whether
    the field's shape was usable."""
    found, ok = proposed(value)
    dropped = dict.fromkeys(CITED_REASONS, 0)
    kept: list[Cited] = []
    for c in found:
        reason = support.judge(c)
        if reason is None:
            kept.append(c)
        else:
            dropped[reason] += 1
    return kept, dropped, len(found), ok
