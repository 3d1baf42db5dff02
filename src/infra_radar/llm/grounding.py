"""Grounding of generated prose: a sentence survives only if its figures, numbers, references and code
names are the source's and it says something specific.

Figures are read as claims (llm/figures.py): a value with its unit, a ratio, a percentage or a range, in
digits, number words or Chinese numerals, with its direction and the conditions it is stated under. Each
must match a figure of the source the prompt was built from: the same value in the same unit class (ms,
μs, s convert; ms never matches tok/s), a ratio or percentage the source states or that follows from one
of its claims' before/after, never a contrary direction; a figure stated with a condition ("16x faster with
batch 32") only where the source states both together (one sentence, table row or claim). Both ends of a
range count. A plain number that is no figure (a count, 1,048.64 = 1048.64 = 1048.640) must occur in the
source. A reference `#N` or `owner/name#N` counts when it names an item of the prompt's context. A code name
the sentence leans on (a code span, a path or file name, a flag, an environment variable, a snake_case or
dotted identifier) must occur in the source (its description, title and files). A sentence is *filler*
when it names nothing of its item: no grounded number or reference, and none of the item's terms
(identifiers, files, APIs, models and the words of its title, minus the generic words of
defaults/prompts/grounding.toml). A sentence in the wrong language is dropped too. Each check is a few
regular-expression passes: linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from ..models import PerfClaim
from .figures import Reading, Segment, claim_segment, grounding_rules, match, read, segments

_REF = re.compile(r"(?<![\w/.-])(?:([A-Za-z0-9][\w.-]*/[\w.-]+))?#(\d+)\b")
# A number: digits with optional thousands commas and decimals; not part of a longer digit run.
_NUMBER = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])|(?<![\d.,])\d+(?:\.\d+)?(?![\d])")
# Sentence ends: CJK stops anywhere, Latin stops only before whitespace (keeps 1.5 and v0.9 whole).
_SENTENCE = re.compile(r"(?<=[。！？；])|(?<=[.!?;])\s+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
# A word or identifier: letters, digits, _ and inner . / - : (vllm_ascend/ops/mla.py, Qwen3-30B, torch.npu).
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[./:-][A-Za-z0-9_]+)*")
DROP_REASONS = ("ungrounded", "filler", "language")


_grounding_rules = grounding_rules  # the packaged grounding.toml (read once, in figures.py)


@lru_cache(maxsize=1)
def generic_words() -> frozenset[str]:
    """The packaged list of words that never make a sentence specific (defaults/prompts/grounding.toml)."""
    return frozenset(w.lower() for w in _grounding_rules().get("generic", []))


def echo_thresholds() -> tuple[int, float]:
    """Chinese prose says more than its item's title with at least this many CJK characters, and this many
    per character of the title (grounding.toml [echo])."""
    rule = _grounding_rules().get("echo", {})
    return int(rule.get("min_cjk", 20)), float(rule.get("cjk_per_title_char", 0.6))


def cjk_chars(text: str) -> int:
    return len(_CJK.findall(text))


@lru_cache(maxsize=1)
def _prompt_patterns() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in _grounding_rules().get("prompt_patterns", []))


def pastes_prompt(sentence: str) -> bool:
    """Whether `sentence` carries one of the prompts' field labels or item-header shapes (the model pasting
    its prompt back)."""
    return (any(label in sentence for label in _grounding_rules().get("prompt_labels", []))
            or any(p.search(sentence) for p in _prompt_patterns()))


# Shaped like a name of code or a model: a digit, one of _ . / : -, or a capital after the first letter.
_IDENTIFIER = re.compile(r"[\d_./:-]|.[A-Z]")


def terms(source: str, names: Iterable[str] = ()) -> set[str]:
    """What makes a sentence specific: the identifiers of `source` and every word of `names` (titles, file
    paths, with the parts of a path and a file's stem), lowercase, generic words left out."""
    generic = generic_words()
    found = {w.lower() for w in set(_WORD.findall(source)) if _IDENTIFIER.search(w)}
    for name in names:
        for m in _WORD.finditer(name):
            word = m.group().lower()
            found.add(word)
            parts = re.split(r"[/:]", word)
            found.update(parts)
            found.update(p.rsplit(".", 1)[0] for p in parts if "." in p)
    return {t for t in found if t not in generic and len(t) >= 2}


def normalise(number: str) -> str:
    """One spelling per value: thousands commas, leading zeros and trailing decimal zeros removed."""
    whole, _, frac = number.replace(",", "").partition(".")
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole


def numbers(text: str) -> set[str]:
    """The normalised numbers in `text`, references (#N) excluded."""
    return {normalise(m.group()) for m in _NUMBER.finditer(_REF.sub(" ", text))}


def refs(text: str, default_repo: str) -> set[str]:
    """The item references in `text` as `owner/name#N` (a bare #N belongs to `default_repo`)."""
    return {f"{(m.group(1) or default_repo).lower()}#{m.group(2)}" for m in _REF.finditer(text)}


def claim_numbers(values: Iterable[float | None]) -> set[str]:
    """Normalised spellings of extracted claim values (2.45, 42.0 -> 42, and their rounded forms)."""
    found: set[str] = set()
    for v in values:
        if v is None:
            continue
        found |= {normalise(f"{abs(v):.{d}f}") for d in range(4)}
    return found


@dataclass(slots=True)
class Grounds:
    """What a prompt's generated text may mention."""

    numbers: set[str]
    refs: set[str]  # lowercase owner/name#N
    default_repo: str
    terms: set[str] = field(default_factory=set)  # lowercase identifiers and title words (see `terms`)
    lang: str = ""  # the prose language ("" = not checked)
    facts: list[Segment] = field(default_factory=list)  # the source's figures, by what states them together
    names: str | None = None  # lowercase text a code name must occur in (None: names not checked)

    @classmethod
    def of(cls, source: str, item_refs: Iterable[str], default_repo: str,
           extra_numbers: Iterable[str] = (), names: Iterable[str] = (), lang: str = "",
           claims: Iterable[PerfClaim] | None = None) -> Grounds:
        """Grounds from the prompt's source text, the refs of its items, extra (claim) numbers, the names
        (titles, files) whose words make a sentence specific and whose names are the item's own, and the
        items' performance claims (read from the source when not given: the analysis found the same in
        the descriptions the source holds)."""
        from ..analyse.claims import extract_claims

        allowed = {r.lower() for r in item_refs}
        names = list(names)
        rows: dict[str, set[tuple[str, str]]] = {}
        counted = numbers(source) | set(extra_numbers) | numbers("\n".join(names))
        read_from = source[:_figure_limit()]  # what a prompt shows stays far inside; a huge body is cut
        facts = segments(read_from, rows, counted)
        found = extract_claims(read_from) if claims is None else list(claims)  # the items' own, when given
        facts += [claim_segment(c, rows) for c in found]
        return cls(counted, allowed, default_repo.lower(), terms(source, names), lang, facts,
                   " ".join(" ".join([source, *names]).split()).lower())


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (Latin and CJK punctuation)."""
    return [s for s in (p.strip() for p in _SENTENCE.split(text)) if s]


def _figure_limit() -> int:
    """How much of a source is read for figures (grounding.toml [figures] source_limit)."""
    return int(_grounding_rules().get("figures", {}).get("source_limit", 100_000))


def sentence_ok(sentence: str, grounds: Grounds) -> bool:
    """True when every reference, figure, plain number and code name in `sentence` is grounded."""
    if not refs(sentence, grounds.default_repo) <= grounds.refs:
        return False
    reading = read(sentence)
    if not reading.counts <= grounds.numbers or not figures_ok(reading, grounds.facts):
        return False
    return grounds.names is None or not foreign_names(sentence, grounds.names)


def figures_ok(reading: Reading, facts: list[Segment]) -> bool:
    """Whether every figure of a sentence (both ends of a range) matches a figure of the source, stated
    there together with every condition the sentence gives it."""
    if not reading.claims:
        return True
    usable = [s for s in facts if reading.conditions <= s.conditions] if reading.conditions else facts
    for claim in reading.claims:
        for end in claim.ends:
            if not any(match(written, fact) for s in usable for fact in s.figures for written in end):
                return False
    return True


@lru_cache(maxsize=1)
def _name_patterns() -> tuple[tuple[re.Pattern[str], ...], frozenset[str]]:
    rules = _grounding_rules().get("names", {})
    return (tuple(re.compile(p) for p in rules.get("patterns", [])),
            frozenset(w.lower() for w in rules.get("not_names", [])))


_PATHISH = re.compile(r"\.\w{1,5}/?$|_|/.*/|/$")


def foreign_names(sentence: str, source: str) -> list[str]:
    """The code names `sentence` leans on that `source` (lowercase) does not hold: code spans, paths and file
    names, flags, environment variables, snake_case and dotted identifiers (generic words exempt)."""
    patterns, not_names = _name_patterns()
    generic = generic_words()
    foreign = []
    for i, pattern in enumerate(patterns):
        for m in pattern.finditer(sentence):
            raw = m.group("n") if "n" in pattern.groupindex else m.group(1)
            name = " ".join(raw.split()).strip(".,:;").lower()
            if not name or name in generic or name in not_names:
                continue
            if i and "/" in name and not _PATHISH.search(name):  # P0/P1, tokens/s, TP/EP: no path
                continue
            if name not in source:
                foreign.append(raw)
    return foreign


def specific(sentence: str, grounds: Grounds) -> bool:
    """Whether `sentence` names something of its item: a reference, a number or one of its terms."""
    if _REF.search(sentence) or numbers(sentence):
        return True  # (sentence_ok has already required them grounded)
    return any(m.group().lower() in grounds.terms for m in _WORD.finditer(sentence))


def sentence_language_ok(sentence: str, lang: str) -> bool:
    """zh: not an English sentence (four Latin words and no Chinese); en: no Chinese."""
    cjk = _CJK.search(sentence) is not None
    if lang == "zh":
        return cjk or len(_LATIN_WORD.findall(sentence)) < 4
    return not cjk if lang == "en" else True


def judge(sentence: str, grounds: Grounds, filler: bool = True) -> str | None:
    """Why `sentence` must go (one of DROP_REASONS), or None to keep it."""
    if not sentence_ok(sentence, grounds):
        return "ungrounded"
    if grounds.lang and not sentence_language_ok(sentence, grounds.lang):
        return "language"
    if filler and (pastes_prompt(sentence) or not specific(sentence, grounds)):
        return "filler"
    return None


def ground_counted(text: str, grounds: Grounds, filler: bool = True) -> tuple[str, dict[str, int]]:
    """`text` without the sentences that must go, and how many went for each reason."""
    kept: list[str] = []
    dropped = dict.fromkeys(DROP_REASONS, 0)
    for s in sentences(text):
        reason = judge(s, grounds, filler)
        if reason is None:
            kept.append(s)
        else:
            dropped[reason] += 1
    joined = "".join(s if i == 0 or kept[i - 1].endswith(("。", "！", "？", "；")) else f" {s}"
                     for i, s in enumerate(kept))
    return joined, dropped


def ground(text: str, grounds: Grounds, filler: bool = False) -> tuple[str, int]:
    """`text` without its ungrounded (and, with `filler`, unspecific or wrong-language) sentences, and how many
    were dropped."""
    kept, dropped = ground_counted(text, grounds, filler)
    return kept, sum(dropped.values())


def field_language_ok(text: str, lang: str) -> bool:
    """One reply field on its own: zh fails when it is English (three Latin words, no Chinese; quoting an English
    title in Chinese prose is fine), en when it holds Chinese."""
    cjk = _CJK.search(text) is not None
    if lang == "zh":
        return cjk or len(_LATIN_WORD.findall(text)) < 3
    return not cjk if lang == "en" else True


def language_ok(text: str, lang: str) -> bool:
    """Whether prose is in `lang`: zh needs Chinese characters to dominate words, en needs none of them."""
    cjk = len(_CJK.findall(text))
    if lang == "zh":
        return cjk > 0 and cjk >= len(_LATIN_WORD.findall(text))
    return cjk == 0
