"""Whether a sentence asserts something of the change it describes: read the sentence, not the word.

A cue word (a cause, a risk, a symptom) counts only where the author's prose says it of this change: not negated
("rather than a crash", "no NaN", "latency unchanged"), not a hypothetical ("if the cache is full it could
hang"), not about another project ("as in SGLang, the scheduler hangs"), and never in code, a log, a stack trace,
a command line or a quoted block. The words are data (`defaults/rules/assertions.toml`); each text is split once
into sentences and each sentence into clauses, so the work is linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..config import rule_data, rules_cache
from .figures import prose_lines

_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s+|(?<=[。！？；])|\n")


def _runs(parts: Iterable[tuple[str, str, str]]) -> str:
    """Alternatives (before, word, after), in order, as one alternation in which each run of neighbours with the
    same lookarounds shares them: `(?<!X)(?:a|b)(?!X)` tries what `(?<!X)a(?!X)|(?<!X)b(?!X)` tries, in the same
    order, so it matches the same text, but under re.I each `[A-Za-z]` class is compiled once a run instead of
    once a word (84 ms → 4 ms for the assertion rules: the card compiles them)."""
    runs: list[tuple[str, list[str], str]] = []
    for before, word, after in parts:
        if runs and runs[-1][0] == before and runs[-1][2] == after:
            runs[-1][1].append(word)
        else:
            runs.append((before, [word], after))
    return "|".join(before + (f"(?:{'|'.join(words)})" if (before or after) and len(words) > 1 else "|".join(words))
                    + after for before, words, after in runs)


def _alternation(words: Iterable[str]) -> str:
    return _runs((r"(?<![A-Za-z])" if re.match(r"[A-Za-z]", w) else "", re.escape(w),
                  r"(?![A-Za-z])" if re.search(r"[A-Za-z]$", w) else "")
                 for w in sorted(set(words), key=len, reverse=True))


@dataclass(frozen=True, slots=True)
class AssertionRules:
    negation_before: re.Pattern[str]
    negation_after: re.Pattern[str]
    hypothetical: re.Pattern[str]
    other_project: re.Pattern[str]
    clause_break: re.Pattern[str]


def compile_assertion_rules(data: dict[str, Any]) -> AssertionRules:
    projects = _alternation(data["projects"])
    cues = _alternation(data["project_cues"])
    return AssertionRules(
        negation_before=re.compile(_alternation(data["negation_before"]), re.I),
        negation_after=re.compile(_alternation(data["negation_after"]), re.I),
        hypothetical=re.compile(_alternation(data["hypothetical"]), re.I),
        other_project=re.compile(rf"(?:{cues})\s+(?:the\s+)?(?P<p1>{projects})|(?P<p2>{projects})(?:'s|’s)", re.I),
        clause_break=re.compile("|".join(re.escape(b) for b in data["clause_breaks"])),
    )


@rules_cache
def default_assertion_rules() -> AssertionRules:
    return compile_assertion_rules(rule_data("assertions"))


@lru_cache(maxsize=256)
def sentence_list(text: str) -> tuple[str, ...]:
    """`sentences(text)` as a tuple, kept for the last texts asked (a report reads one description several
    times: the porting map, the conclusion, the checklist)."""
    return tuple(sentences(text))


# struck-through text (`~~withdrawn~~`, `~withdrawn~`): what the author took back is no claim
STRUCK = re.compile(r"~~[^~\n]{1,400}~~|(?<![~\w])~[^~\s][^~\n]{0,400}~(?![~\w])")


# a line that starts a block of its own (a list item, a heading, a table row, a quote): never the continuation
# of the line above it
_OWN_LINE = re.compile(r"[ \t]{0,3}(?:[-*+][ \t]|\d{1,3}[.)][ \t]|#|\||>)")


def sentences(text: str) -> Iterator[str]:
    """The prose sentences of `text`: quoted lines, commands, logs, stack-trace frames and struck-through text
    left out. A hard-wrapped paragraph or list item (a commit message wrapped at 72 columns) is read as one
    text: a line right below another, starting no block of its own, continues it."""
    para: list[str] = []
    end, joins = -2, False
    for start, line in prose_lines(text):
        if line.lstrip().startswith(">"):
            yield from _split(para)
            para, end = [], -2
            continue
        if "~" in line:
            line = STRUCK.sub(" ", line)
        own = _OWN_LINE.match(line) is not None
        if para and joins and start == end + 1 and not own:
            para.append(line.strip())
        else:
            yield from _split(para)
            para = [line.strip()]
            joins = not line.lstrip().startswith(("#", "|"))  # a heading or a table row takes no continuation
        end = start + len(line)
    yield from _split(para)


def _split(para: list[str]) -> Iterator[str]:
    for s in _SENTENCE.split(" ".join(para)):
        if s.strip():
            yield s.strip()


def _clause(sentence: str, lo: int, hi: int, rules: AssertionRules) -> tuple[str, str]:
    """The text of the cue's clause before and after the cue."""
    start = 0
    for m in rules.clause_break.finditer(sentence, 0, lo):
        start = m.end()
    after = rules.clause_break.search(sentence, hi)
    return sentence[start:lo], sentence[hi: after.start() if after else len(sentence)]


def why_not(sentence: str, lo: int, hi: int, own: Iterable[str] = (), rules: AssertionRules | None = None) -> str:
    """Why the cue at sentence[lo:hi] is not asserted of this change: "negated", "hypothetical", "other-project",
    or "" when it is. `own`: names of the item's own project (a mention of it is not another project)."""
    rules = rules or default_assertion_rules()
    before, after = _clause(sentence, lo, hi, rules)
    if rules.negation_before.search(before) or rules.negation_after.match(after.lstrip()[:40]) \
            or rules.negation_after.match(after[:40]):
        return "negated"
    if rules.hypothetical.search(before):
        return "hypothetical"
    mine = {o.lower() for o in own}
    for m in rules.other_project.finditer(sentence):
        if (m.group("p1") or m.group("p2")).lower() not in mine:
            return "other-project"
    return ""


def cue_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """Cue words as stems matched at a word start; words of four letters or fewer are whole words ("nan",
    "oom"), so "nan" is not found in "maintenance" nor "hang" in "change"."""
    return re.compile(_runs((r"(?<![A-Za-z])" if re.match(r"[A-Za-z]", w) else "", re.escape(w.strip()),
                             r"(?:s|es|ed|ing)?(?![A-Za-z])" if len(w.strip()) <= 4 and re.search(r"[A-Za-z]$", w)
                             else "")
                            for w in sorted(set(words), key=len, reverse=True)), re.I)


def asserted_sentence(text: str, pattern: re.Pattern[str], own: Iterable[str] = (),
                      rules: AssertionRules | None = None) -> str:
    """The first prose sentence of `text` asserting one of `pattern`'s cues of this change, or ""."""
    rules = rules or default_assertion_rules()
    own = tuple(own)
    for s in sentences(text):
        for m in pattern.finditer(s):
            if not why_not(s, m.start(), m.end(), own, rules):
                return s
    return ""


def own_names(repo: str) -> tuple[str, ...]:
    """The names by which an item's own project is mentioned: its repository's name and owner."""
    owner, _, name = repo.lower().partition("/")
    return tuple(x for x in (name, owner, name.replace("-", "_")) if x)
