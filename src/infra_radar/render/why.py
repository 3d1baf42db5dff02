"""Why a change works, from its own description: the causal sentences ("each new shape triggers a ~1 s graph
build", "step time is dominated by X", "each N costs M") found by the patterns of `defaults/rules/dives.toml`
[[cause]] and said in a Chinese or English frame, the author's terms through the title glossary. A sentence
that negates, asks or supposes is no cause. Also how much a description holds to argue a dive with
(`evidence_score`, used to choose the few items a daily radar deep-dives).

Linear in the description: its sentences are matched once by a few bounded patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..analyse.assertions import STRUCK, why_not
from ..config import rule_data, rules_cache
from ..models import AnalysedItem
from .escape import Md
from .explain import explain_body, sentences

__all__ = ["Cause", "causes", "dive_rules", "dive_score", "motivation_cues", "motivation_evidence", "rooted", "say_cause",
           "target_direct", "validation_cues"]


@rules_cache
def dive_rules() -> dict[str, Any]:
    """rules/dives.toml (the active rules directory's tables over the packaged ones), cause patterns compiled."""
    data = rule_data("dives")
    for c in data.get("cause", []):
        c["_re"] = re.compile(c["pattern"], re.I)
    cr = data["cause_rules"]
    cr["_not"] = re.compile("|".join(r"(?<![\w'])" + re.escape(w.strip()) + (r"(?![\w'])" if w.strip()[-1:].isalpha()
                                                                               else "") for w in cr["not_a_claim"]),
                            re.I)
    cr["_figure"] = re.compile(cr["figure"])
    return data


@dataclass(frozen=True)
class Cause:
    """A causal sentence read: the cause, what it brings, the figure its detail gives, the frame to say it in."""

    x: list[str]
    y: list[str]
    figure: str
    frame: dict[str, str]
    sentence: str = ""  # the description's sentence it was read from (its evidence record)


_PAREN = re.compile(r"\(([^()]{0,300})\)")
_CUT = re.compile(r",\s|;\s|\s—\s|\s-\s|\.\s|\.$|\s(?:and|which|so|while|where|because|but)\s", re.I)
_LEAD = re.compile(r"^(?:each|every|any|one|the|a|an)\s+", re.I)
_X_CUT = re.compile(r".*(?:,\s|;\s|\s(?:and|so|which|because|since|when|then|that)\s)", re.I)


def _head(text: str, most: int) -> list[str]:
    """The first clause of `text`, at most `most` words (its head: what follows is its detail)."""
    m = _CUT.search(text)
    return (text[: m.start()] if m else text).split()[:most]


_QUOTES = ('"', "“", "「", "'")


def causes(body: str, most: int = 1) -> list[Cause]:
    """The causal sentences of a description (the motivation and mechanism parts), at most `most`."""
    rules = dive_rules()
    cr = rules["cause_rules"]
    e = explain_body(body)
    out: list[Cause] = []
    for _, block in e.motivation + e.mechanism:
        if block.lstrip().startswith(">"):
            continue  # a quoted block: someone else's words
        for s in sentences(STRUCK.sub(" ", block) if "~" in block else block):
            if len(s) > 600 or cr["_not"].search(s) or s[:1] in _QUOTES:
                continue
            for c in rules.get("cause", []):
                m = c["_re"].search(s)
                if not m:
                    continue
                if why_not(s, m.start(), m.end()) in ("negated", "hypothetical"):
                    break  # a cause the sentence denies or only supposes is no cause of this change
                y_text = m.group("y")
                figure = ""
                for p in _PAREN.finditer(y_text[:200]):
                    f = cr["_figure"].search(p.group(1))
                    if f:
                        figure = f.group(0)
                        break
                y = _head(_PAREN.sub(" ", y_text), int(cr["words"]))
                x_text = _X_CUT.sub("", m.group("x")).strip()
                x = _LEAD.sub("", x_text).split()[-int(cr["words"]):]
                if x and y and _words(x, "zh") and _words(y, "zh"):
                    out.append(Cause(x, y, figure, c, s))
                break
            if len(out) >= most:
                return out
    return out


def _words(words: list[str], lang: str) -> str:
    from .saying import phrase

    return str(phrase(words, len(words), lang))


def say_cause(c: Cause, lang: str) -> Md:
    """The cause in our frame: "每个新的 shape 都会触发 cuDNN fused-attention Graph Build（约 ~1s）"."""
    from .cjk import tidy
    from .escape import text

    y = _words(c.y, lang)
    if c.figure:
        y += f"（约 {text(c.figure.lstrip('~'))}）" if lang == "zh" else f" (about {text(c.figure.lstrip('~'))})"
    said = c.frame.get(lang) or c.frame["en"]
    out = said.replace("{x}", f" {_words(c.x, lang)} ").replace("{y}", f" {y} ")
    return Md(tidy(out) if lang == "zh" else " ".join(out.split()))


def target_direct(ai: AnalysedItem, target: str = "ascend") -> bool:
    """The change touches the target directly: written for it, in one of its own repositories, using or adding
    the target's own code by its read diff, or removing the target's code (analyse/target_code.py)."""
    from ..analyse.target_code import for_target

    tc = for_target(ai.item, target)
    return ai.analysis.native or bool(tc.own) or tc.removes_target or bool(tc.own_removed)


def rooted(ai: AnalysedItem) -> bool:
    """The page says why: a causal sentence of the change, or a motivation sentence it asserts."""

    return bool(causes(ai.item.body)) or bool(motivation_evidence(ai, "en", 1))


def dive_score(ai: AnalysedItem, has_cause: bool, target: str = "ascend") -> float:
    """How strongly an item calls for a dive: its priority and how directly it touches the target (written for
    it, its own code in the diff, the target's code removed), and how much its sources hold to argue with (a
    causal or motivation sentence, figures, mechanism sentences, the author's list of changes, what the diff
    shows, validation, tests). 0 for an item with no mechanism to explain or of a kind that gets a row only."""
    from ..analyse.change_list import change_clauses
    from ..analyse.target_code import for_target
    from .explain import file_role

    s = dive_rules()["select"]
    a, item = ai.analysis, ai.item
    if a.item_kind in s.get("no_dive_kinds", []):
        return 0.0
    e = explain_body(item.body)
    listed = len(change_clauses(item.body, item.repo, dive_rules().get("changes", {})))
    moves = (item.code or {}).get("moves") or {}
    shown = sum(bool(moves.get(k)) for k in ("replaced", "registered", "patched", "added"))
    how = sum(len(sentences(t)) for _, t in e.mechanism) + listed + shown
    if not how and not has_cause:
        return 0.0
    tc = for_target(item, target)
    score = float(s["priority"].get(a.priority, 0.0))
    score += float(s["native"]) if a.native else 0.0
    score += float(s.get("direct", 0.0)) if (tc.own or tc.own_removed) and not a.native else 0.0
    score += float(s.get("removes", 0.0)) if tc.removes_target else 0.0
    score += float(s.get("diff_read", 0.0)) if tc.read else 0.0
    score += float(s.get("merged", 0.0)) if item.state == "merged" else 0.0
    score += float(s["cause"]) if has_cause else 0.0
    score += float(s.get("why", 0.0)) if not has_cause and motivation_evidence(ai, "en", 1) else 0.0
    score += float(s["figures"]) * min(len(a.perf_claims), int(s["figures_most"]))
    score += float(s["mechanism"]) * min(how, int(s["mechanism_most"]))
    if e.tests:  # each thing the author's validation covered (parity, backward, a benchmark, a training run)

        score += float(s["validation"]) * min(len(validation_cues(ai, "en")), int(s.get("validation_most", 3)))
    score += float(s["tests"]) if any(file_role(f.path) == "tests" for f in item.files) else 0.0
    return score


def validation_cues(ai: AnalysedItem, lang: str, most: int = 3) -> list[str]:
    """What the author's validation covered, as the rules name it (conclusions.toml [validation])."""
    from .mechanism import rules as conclusion_rules

    low = " ".join(t_ for _, t_ in explain_body(ai.item.body).tests).lower()[:6000]
    if not low:
        return []
    found = [cue.get(lang) or cue["en"] for cue in conclusion_rules().data["validation"]["cues"]
             if any(w in low for w in cue["words"])]
    return found[:most]


def motivation_cues(ai: AnalysedItem, lang: str, most: int = 2) -> list[str]:
    """What the description says went wrong, as the rules name it (conclusions.toml [motivation])."""
    return [label for label, _ in motivation_evidence(ai, lang, most)]


def motivation_evidence(ai: AnalysedItem, lang: str, most: int = 2) -> list[tuple[str, str]]:
    """(cue, the sentence asserting it) for what the description says went wrong: only in a section the author
    headed as the motivation, and only a sentence that says it of this change (analyse/assertions.py: not
    negated, not hypothetical, not another project's, not code, a log or a command)."""
    from ..analyse.assertions import asserted_sentence, own_names
    from .explain import sections
    from .mechanism import rules as conclusion_rules

    # only a section the author headed as the motivation ("Motivation", "Why", "Problem", "Root cause")
    blocks = [b for s in sections(ai.item.body) if s.role == "motivation" for b in s.blocks]
    text = "\n".join(t_ for _, t_ in blocks)[:4000]
    if not text:
        return []
    found = []
    own = own_names(ai.item.repo)
    for cue in conclusion_rules().data["motivation"]["cues"]:
        said = asserted_sentence(text, _cue_re(tuple(cue["words"])), own)
        if said:
            found.append((cue[lang] if lang in cue else cue["en"], said))
        if len(found) >= most:
            break
    return found


@cache
def _cue_re(words: tuple[str, ...]):
    from ..analyse.assertions import cue_pattern

    return cue_pattern(words)
