"""What an item changes, said in one clause with no model: its title (or, failing that, the description's
"This PR adds ..." sentence) read as actions ("verb object modifiers"), a noun phrase ("X refactor",
"implementation of X", "X metrics") or a symptom ("X crashes at Y"), put in a Chinese or English frame from
`defaults/rules/conclusions.toml`. The author's objects stay in English (identifiers in code spans, generic
words through the glossary); nothing is quoted and nothing is cut: a phrase too long loses its leading
modifiers, an action its extra modifiers, a title its second action.

Linear in the text read: one tokenising pass, then a left-to-right walk over the tokens.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from .escape import Md, code, text
from .zh_words import Zh, glossary_extra, joint
from .zh_words import words as zh_words

__all__ = ["Action", "clean_title", "cjk_share", "is_identifier", "read", "say", "tidy", "uncut"]

# --- rules -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rules:
    data: dict[str, Any]
    prefix: re.Pattern[str]
    suffix: re.Pattern[str]
    verbs: dict[str, dict[str, str]]
    forms: dict[tuple[str, ...], str]  # multi-word verb forms, as word tuples
    preps: dict[str, dict[str, Any]]
    nouns: dict[str, str]
    added: frozenset[str]
    ambiguous: frozenset[str]
    filler: frozenset[str]
    symptoms: dict[tuple[str, ...], str]
    glossary: dict[tuple[str, ...], str]
    longest: int  # the most words of a glossary or symptom phrase


@lru_cache(maxsize=1)
def rules() -> _Rules:
    """The packaged conclusion rules, compiled once."""
    raw = (resources.files("infra_radar") / "defaults" / "rules" / "conclusions.toml").read_text(encoding="utf-8")
    data = tomllib.loads(raw)
    nouns = {k: v for k, v in data["nouns"].items() if isinstance(v, str)}
    glossary = {tuple(k.lower().split()): v for k, v in {**glossary_extra(), **data["glossary"]}.items()}
    symptoms = {tuple(k.lower().split()): v for k, v in data["symptoms"].items()}
    amb = data.get("ambiguous", {})
    return _Rules(
        data=data, prefix=re.compile(data["title"]["prefix"], re.I), suffix=re.compile(data["title"]["suffix"]),
        verbs=data["verbs"], forms={tuple(k.split()): v for k, v in data.get("verb_forms", {}).items()},
        preps=data["preps"], nouns=nouns, added=frozenset(data["nouns"].get("added", [])),
        ambiguous=frozenset(amb.get("words", [])), filler=frozenset(amb.get("filler", [])), symptoms=symptoms,
        glossary=glossary, longest=max(len(k) for k in [*glossary, *symptoms]),
    )


# --- tokens ----------------------------------------------------------------------------------------

_TOKEN = re.compile(r"`[^`\n]{1,120}`|\([^()\n]{0,120}\)|[\w.]*\w\([^()\n]{0,60}\)|[^\s,;]+|[,;]")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_IDENT = re.compile(r"^(?:--?[A-Za-z][\w-]*(?:=\S+)?|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|[\w./-]*_[\w./-]*"
                    r"|[A-Za-z_]\w*\(\)|[\w.]*\w\([^()]{0,60}\)|[\w.-]+=[\w.-]+|[\w-]+(?:/[\w.-]+)+\.\w+"
                    r"|[\w-]+\.(?:py|cpp|cc|cu|h|hpp|yaml|yml|toml|json|sh|md))$")
_TRAIL = ".,:;!?\"'“”"
_STOP = {"-", "—", "–", ":", ";", "|"}


def _low(tok: str) -> str:
    return tok.strip(_TRAIL).lower()


def is_identifier(tok: str) -> bool:
    """Whether a title word is code: a code span, snake_case, a dotted or called name, a flag, key=value or a path."""
    word = tok.strip(_TRAIL)
    return tok.startswith("`") or (bool(_IDENT.match(word)) and not word.replace(".", "").replace("_", "").isdigit()
                                   and any(ch.isalpha() for ch in word))


def cjk_share(s: str) -> float:
    """The share of CJK characters among the letters of `s`."""
    letters = sum(ch.isalpha() for ch in s)
    return len(_CJK.findall(s)) / letters if letters else 0.0


_SPACE_CJK = re.compile(r"(?<=[\u4e00-\u9fff（），、；：。])\s+(?=[\u4e00-\u9fff（），、；：。])"
                        r"|(?<=[（，、；：])\s+|\s+(?=[（），、；：。])")
_LATIN_CJK = re.compile(r"(?<=[A-Za-z0-9`+%)])(?=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9`(])")


def tidy(s: str) -> str:
    """Chinese spacing: one space between Latin and CJK, none between CJK and CJK or around CJK punctuation."""
    s = re.sub(r"\s{2,}", " ", s).strip()
    return _LATIN_CJK.sub(" ", _SPACE_CJK.sub("", s))


def squeeze_cjk(s: str) -> str:
    """`s` without the spaces that sit between CJK characters or around CJK punctuation: a spaced template
    ("在 {target} 上") filled with a value that begins or ends in CJK. Adds nothing (code is left as it is)."""
    out = _SPACE_CJK.sub("", s)
    return Md(out) if isinstance(s, Md) else out


# --- reading ---------------------------------------------------------------------------------------


@dataclass
class Action:
    """One action of a title: its verb lemma ("" for a bare noun phrase), object, modifiers, purpose, symptom."""

    verb: str
    obj: list[str]
    mods: list[tuple[str, list[str]]] = field(default_factory=list)  # (preposition key, words)
    purpose: Action | None = None
    symptom: tuple[str, str] = ("", "")  # a bug title: (Chinese, the author's words) after its subject (obj)
    revert: list[Action] = field(default_factory=list)  # a revert: what it reverts
    subject: list[str] = field(default_factory=list)  # "MTP supports torchair": the subject before the verb
    negated: bool = False  # "Do not read ip": the change stops doing it
    component: bool = False  # the subject is the component the title names first ("ReplaySSM: cache X")
    fallback: bool = False  # read as a bare noun phrase: no verb or structure of the rules was found
    unknown: str = ""  # the title's verb, when the rules do not know it: said after the object, never framed


def clean_title(title: str) -> tuple[str, str]:
    """(the title without its tags, conventional prefix and trailing references; the verb its conventional
    type implies, or "")."""
    r = rules()
    m = r.prefix.match(title)
    head = m.group(0) if m else ""
    rest = r.suffix.sub("", title[len(head):].strip()).strip()
    rest = uncut(rest)
    verb = ""
    for tag in re.findall(r"[A-Za-z]+", head.lower()):
        verb = r.data["title"]["type_verbs"].get(tag, verb) or verb
    return rest, verb


_BETTER = {"better", "faster", "lower", "higher", "less", "more", "improved", "reduced", "smaller", "larger"}
_DANGLING = {"to", "for", "in", "on", "of", "with", "and", "or", "the", "a", "an", "by", "from", "at", "into", "when"}


def uncut(text_: str) -> str:
    """A text someone else cut with "…" (GitHub shortens long titles) taken back to its last whole word, with
    no preposition or article left hanging: "avoid spelling errors in adv_esti…" -> "avoid spelling errors"."""
    body = text_.rstrip()
    if not body.endswith(("…", "...")):
        return text_
    words = body.rstrip(".…").split()[:-1]  # the last word is the cut one
    while words and words[-1].lower().strip(",;:") in _DANGLING:
        words.pop()
    return " ".join(words).rstrip(",;:-")


def lemma(word: str) -> str:
    """The verb of [verbs] a word is a form of ("Added" -> add, "caching" -> cache), else ""."""
    verbs = rules().verbs
    w = word.strip(_TRAIL).lower()
    if not w.isascii() or not w[:1].isalpha():
        return ""
    cands = [w]
    if w.endswith("ies"):
        cands.append(w[:-3] + "y")
    elif w.endswith("es"):
        cands += [w[:-2], w[:-1]]
    elif w.endswith("s") and not w.endswith("ss"):
        cands.append(w[:-1])
    elif w.endswith("ied"):
        cands.append(w[:-3] + "y")
    elif w.endswith("ed"):
        cands += [w[:-2], w[:-1]] + ([w[:-3]] if len(w) > 4 and w[-3] == w[-4] else [])
    elif w.endswith("ing"):
        cands += [w[:-3], w[:-3] + "e"] + ([w[:-4]] if len(w) > 5 and w[-4] == w[-5] else [])
    return next((c for c in cands if len(c) > 1 and c in verbs), "")


def _verb_at(words: list[str], i: int) -> tuple[str, int]:
    """(verb lemma, words it takes) at position i, multi-word forms first."""
    r = rules()
    low = tuple(_low(w) for w in words[i:i + 4])
    for form, verb in r.forms.items():
        if low[: len(form)] == form and verb in r.verbs:
            return verb, len(form)
    if i < len(words) and not is_identifier(words[i]) and not words[i].startswith("("):
        v = lemma(words[i])
        if v:
            return v, 1
    return "", 0


def _prep(words: list[str], i: int) -> tuple[str, int]:
    """(preposition key, words it takes) at position i, or ("", 0); "purpose" for "so that" / "in order to"."""
    w = _low(words[i])
    nxt = _low(words[i + 1]) if i + 1 < len(words) else ""
    if w == "instead" and nxt == "of":
        return "instead", 2
    if w == "based" and nxt == "on":
        return "based", 2
    if (w, nxt) in (("so", "that"), ("in", "order")):
        return "purpose", 3 if nxt == "order" else 2
    spec = rules().preps.get(w)
    if spec is None or spec.get("keep"):
        return "", 0
    return w, 1


def _clause_like(words: list[str]) -> bool:
    """A modifier that is a clause ("when there is memory"), not a phrase: it is left out."""
    return any(_low(w) in ("is", "are", "was", "were", "has", "have", "does", "do", "there", "it", "we", "can", "will")
               for w in words)


def _read_rest(words: list[str], depth: int) -> tuple[list[str], list[tuple[str, list[str]]], Action | None]:
    """An action's words after its verb: (object, modifiers, purpose action)."""
    obj: list[str] = []
    mods: list[tuple[str, list[str]]] = []
    purpose: Action | None = None
    i = 0
    while i < len(words):
        w = words[i]
        if w in _STOP:
            break
        key, n = _prep(words, i)
        if key == "to" and _verb_at(words, i + 1)[0] and (obj or mods):
            key, n = "purpose", 1
        if key == "for" and i + 1 < len(words) and _low(words[i + 1]).endswith("ing") and lemma(words[i + 1]) \
                and (obj or mods):  # "validation for avoiding X": what it is for
            key, n = "purpose", 1
        if key == "for" and i + 1 < len(words) and _low(words[i + 1]) in _BETTER:  # "for better X": an aim
            key, n = "for_better", 1  # the comparative stays in the phrase (said in English, dropped in zh)
        if key == "purpose":
            if depth == 0:
                purpose = _read_action(words[i + n:], depth + 1)
            break
        if key and (obj or mods or key in ("for", "to")):
            mods.append((key, []))
            i += n
            continue
        (mods[-1][1] if mods else obj).append(w)
        i += 1
    mods = [(k, v) for k, v in mods if v and not _clause_like(v)]
    if not obj and mods:  # "repair for ci custom ops": the modifier's phrase is the object
        obj = mods.pop(0)[1]
    return obj, mods, purpose


def _symptom_at(words: list[str]) -> tuple[int, int, str]:
    """(position, length, Chinese) of the first symptom after a subject, or (-1, 0, "")."""
    r = rules()
    for i in range(1, len(words)):
        if words[i] in _STOP:
            break
        for n in range(min(3, len(words) - i), 0, -1):
            key = tuple(_low(w) for w in words[i:i + n])
            if key in r.symptoms:
                return i, n, r.symptoms[key]
    return -1, 0, ""


def _noun_phrase(words: list[str], depth: int) -> Action | None:
    """A title with no verb first: "implementation of X", "X refactor", "X metrics", or a bare phrase."""
    r = rules()
    for i in range(min(3, len(words) - 2)):
        head = _low(words[i])
        if head in r.nouns and (_low(words[i + 1]) == "of" or (i == 0 and _low(words[i + 1]) == "for")):
            obj, mods, purpose = _read_rest(words[i + 2:], depth)
            return Action(r.nouns[head], obj, mods, purpose)
    obj, mods, purpose = _read_rest(words, depth)
    if not obj:
        return None
    parts = _split_nouns(obj)
    if len(parts) > 1:
        return Action("", parts[0][1], mods, purpose, revert=[Action(v, o) for v, o in parts])
    last = _low(obj[-1])
    if last in r.nouns and len(obj) > 1:
        return Action(r.nouns[last], obj[:-1], mods, purpose)
    if last in r.added:
        return Action("add", obj, mods, purpose)
    return Action("", obj, mods, purpose, fallback=True)


def _split_nouns(obj: list[str]) -> list[tuple[str, list[str]]]:
    """"X refactor and performance improvements": two noun phrases with act heads, as (verb, object)."""
    r = rules()
    cuts = [i for i, w in enumerate(obj) if _low(w) in ("and", "&") and i > 0 and _low(obj[i - 1]) in r.nouns]
    if not cuts or _low(obj[-1]) not in r.nouns:
        return []
    out, start = [], 0
    for cut in [*cuts, len(obj)]:
        part = obj[start:cut]
        if part and _low(part[-1]) in r.nouns:
            out.append((r.nouns[_low(part[-1])], part[:-1] or part))
        start = cut + 1
    return out if len(out) > 1 else []


def _read_action(words: list[str], depth: int = 0, type_verb: str = "") -> Action | None:
    """One action: verb-first, a symptom after a subject, a noun phrase, or the conventional type's verb."""
    r = rules()
    while words and _low(words[0]) in ("please", "also", "then", "to", "and"):
        words = words[1:]
    if not words:
        return None
    negated = False
    if _low(words[0]) in ("don't", "never", "no") or (len(words) > 2 and (_low(words[0]), _low(words[1])) == ("do", "not")):
        negated, words = True, words[2 if _low(words[0]) == "do" else 1:]
        if not words:
            return None
    verb, n = _verb_at(words, 0)
    last = _low(words[-1])
    if verb in r.ambiguous and len(words) > 2 and (last in r.nouns or last in r.added) and not any(
            _prep(words, i)[0] for i in range(1, len(words))) and words[1][:1].isupper():
        verb, n = "", 0  # "Batch Invariant FLASHINFER_MLA support" names a thing
    if verb == "revert":
        inner, _ = clean_title(" ".join(words[n:]).strip("\"'“”"))
        reverted = [a for a in (_read_action(_TOKEN.findall(inner), depth + 1),) if a is not None]
        return Action("revert", _TOKEN.findall(inner)[-6:], revert=reverted)
    if verb == "add" and len(words) > n + 1 and _low(words[n]) == "support" and _low(words[n + 1]) in ("for", "of", "to"):
        verb, n = "support", n + 2  # "add support for X" says "support X"
    subject: list[str] = []
    if not verb and not depth:  # "MTP supports torchair", "main2main upgrade vllm to v0.23.0"
        for i in (1, 2):
            v, k = _verb_at(words, i) if i < len(words) - 1 else ("", 0)
            nxt = _low(words[i + k]) if i + k < len(words) else ""
            if (v and v not in r.ambiguous and (i == 1 or _low(words[i]).endswith("s")) and nxt
                    and nxt not in ("and", "or", "&", "for", "of") and not any(_prep(words, j)[0] for j in range(i))):
                subject, words, verb, n = words[:i], words[i:], v, k
                break
    if verb:
        obj, mods, purpose = _read_rest(words[n:], depth)
        if verb == "add" and len(obj) > 1 and _low(obj[-1]) == "support":
            verb, obj = "support", obj[:-1]
        return Action(verb, obj, mods, purpose, subject=subject, negated=negated)
    if depth:
        return None
    at, n, symptom = _symptom_at(words)
    if at > 0:
        subject = [w for w in words[:at] if _low(w) not in r.filler and not _low(w).endswith("ly")
                   and _low(w) not in ("is", "are", "was", "will", "not", "can't", "cannot")]
        _, mods, _ = _read_rest(["x", *words[at + n:]], 1)
        keep = [(k, v) for k, v in mods if k in ("at", "on", "in", "when", "during", "after", "with")]
        return Action("", subject, keep, symptom=(symptom, " ".join(words[at:at + n])))
    if _unknown_verb(words):  # "revise the X", "centralize async DCP save": a verb the rules do not know
        obj, _mods, _purpose = _read_rest(words[1:], depth)
        if obj:  # the object only: the rest hangs on a verb we cannot say
            return Action("", obj, fallback=True, unknown=_low(words[0]))
    found = _noun_phrase(words, depth)
    if found is not None and not found.verb and type_verb and not found.revert:
        found.verb = type_verb
    return found


_DETERMINERS = {"the", "a", "an", "all", "some", "any", "each", "every", "its", "their", "our", "this", "these"}
_VERB_ENDING = re.compile(r"^[a-z]{3,}(?:ize|ify)$")
_ADJECTIVE = re.compile(r"(?:al|wise|ic|ous|ive|ed|ing|less|ful|able|ible|ly)$")


def _unknown_verb(words: list[str]) -> bool:
    """Whether a title opens with a verb the rules do not know: a plain word (no digit, not all capitals, not a
    known noun or glossary word) followed by a determiner, an adverb in -ly or an identifier, or a word made
    as a verb ("-ize", "-ify")."""
    r = rules()
    if len(words) < 2 or is_identifier(words[0]):
        return False
    first, raw, nxt = _low(words[0]), words[0].strip(_TRAIL), words[1]
    if (not first.isalpha() or raw[1:] != raw[1:].lower() or first in r.nouns or first in r.added
            or (first,) in r.glossary or first in r.preps or lemma(first) or _ADJECTIVE.search(first)
            or _low(words[-1]) in r.nouns):
        return False
    return (_low(nxt) in _DETERMINERS or (_low(nxt).endswith("ly") and len(words) > 2) or is_identifier(nxt)
            or bool(_VERB_ENDING.match(first)))


def _split_actions(words: list[str]) -> list[list[str]]:
    """A title's actions: split at ", " / "; " / " and " where a verb follows ("update X, add Y")."""
    out: list[list[str]] = [[]]
    i = 0
    while i < len(words):
        w = words[i]
        if (w in (",", ";") or _low(w) in ("and", "&")) and out[-1]:
            j = i + 1 + (1 if i + 1 < len(words) and _low(words[i + 1]) in ("and", "also", "then") else 0)
            verb, _ = _verb_at(words, j)
            after = _low(words[j + 1]) if j + 1 < len(words) else ""
            if verb and (w in (",", ";") or _verb_at(out[-1], 0)[0]) and words[j + 1:j + 2] != [","] and not (
                    verb in rules().ambiguous and after in ("and", "of")):
                out.append([])
                i = j
                continue
        out[-1].append(w)
        i += 1
    return [a for a in out if a]


# "vLLM >=0.18 and vLLM < 0.19", "torch >= 2.5": a version range said as one code span
_VERSIONS = re.compile(r"\b([A-Za-z][\w.-]*)\s*(>=|<=|==|>|<)\s*v?(\d[\w.]*)"
                       r"(?:\s*(?:,|and|&)\s*(?:\1\s*)?(>=|<=|>|<)\s*v?(\d[\w.]*))?")
_COMPONENT = re.compile(r"^([A-Za-z][\w.+/-]*(?: [A-Za-z0-9][\w.+/-]*){0,2}):\s+(\S.*)$")


def _version_span(m: re.Match[str]) -> str:
    second = f",{m.group(4)}{m.group(5)}" if m.group(4) else ""
    return f"`{m.group(1)}{m.group(2)}{m.group(3)}{second}`"


def read(title: str, kind_verb: str = "") -> tuple[list[Action], str]:
    """The actions a title states (at most [limits] actions), or, for a title in Chinese, the title itself."""
    r = rules()
    rest, type_verb = clean_title(title)
    if not rest or rest.lower().strip(" .!") in r.data["title"].get("empty", []):
        return [], ""
    cjk = len(_CJK.findall(rest))
    if cjk >= int(r.data["title"]["cjk_chars"]) and cjk_share(rest) >= float(r.data["title"]["cjk_share"]):
        return [], rest
    rest = _VERSIONS.sub(_version_span, rest)
    component: list[str] = []
    m = _COMPONENT.match(rest)
    if m and _verb_at(m.group(2).split(), 0)[0]:  # "ReplaySSM: cache SSM inputs": the component, then the change
        component, rest = m.group(1).split(), m.group(2)
    actions = []
    for i, words in enumerate(_split_actions(_TOKEN.findall(rest))):
        a = _read_action(words, type_verb=(type_verb or kind_verb) if i == 0 else "")
        if a is not None and i == 0 and component and not a.subject:
            a.subject, a.component = component, True
        if a is not None and (a.obj or a.revert or a.verb in ("cleanup", "refactor")):
            actions.append(a)
        if len(actions) >= int(r.data["limits"]["actions"]) or (i == 0 and a is None):
            break
    return actions, ""


# --- saying ----------------------------------------------------------------------------------------


def _trim(words: list[str], most: int) -> list[str]:
    r = rules()
    words = [w for w in words if w not in (",", ";") and _low(w) not in r.filler and "…" not in w and "..." not in w]
    while words and _low(words[0]) in ("a", "an", "the", "some", "all", "any", "this", "these"):
        words = words[1:]
    but = next((i for i, w in enumerate(words) if _low(w) == "but" and 0 < i < len(words) - 1), -1)
    if len(words) > most and but > 0 and len(words) <= 2 * most + 1:
        return words  # "X but Y": both sides say the change, neither goes
    if len(words) > most:  # the head noun is last: the leading modifiers go
        words = words[-most:]
        while words and _low(words[0]) in ("and", "or", "of", "for", "with", "to", "in", "on", "&"):
            words = words[1:]
    return words


def _word(w: str) -> str:
    if is_identifier(w):
        return code(w.strip("`") if w.startswith("`") else w.strip(_TRAIL))
    # a word of our sentence, never its first (`conclusion.join_sentence` guards the start)
    return text(w.strip(_TRAIL) if len(w) > 1 else w, inside=True)


def phrase(words: list[str], most: int, lang: str) -> Md:
    """An object phrase: articles and fillers dropped, at most `most` words, identifiers as code; in zh the
    glossary's words in Chinese, "A of B" as "B 的 A" and every English grammar word said as a Chinese joint
    or dropped (zh_words.toml)."""
    words = _trim(words, most)
    if lang == "zh":
        of = next((i for i, w in enumerate(words) if _low(w) == "of"), -1)
        if 0 < of < len(words) - 1 and of <= 3 and not any(joint(words, k)[0] for k in range(of + 1, len(words))):
            words = [*words[of + 1:], "的", *words[:of]]
        return Md(tidy(" ".join(o for o in _render_zh(words) if o)))
    return Md(" ".join(o for o in (_word(w) for w in words) if o))


def _render_zh(words: list[str]) -> list[str]:
    """A phrase's pieces in zh: glossary words in Chinese, grammar words as joints (a joint with an `np`
    frame takes the words up to the next joint as {y}, and with {x} the words since the last one)."""
    r = rules()
    out: list[str] = []
    seg = 0  # where the words since the last joint begin in `out`
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("(") and w.endswith(")") and len(w) > 2 and not is_identifier(w):
            inner = " ".join(o for o in _render_zh(w[1:-1].split()) if o)  # a parenthesis said in zh too
            out.append(Zh(f"（{inner}）") if inner else "")
            i += 1
            continue
        if w != "的" and not is_identifier(w):
            n, said = joint(words, i)
            if n == 1 and _low(w) == "to" and i + 1 < len(words) and lemma(words[i + 1]):
                said = "以"  # "to determine X": a purpose
            if n:
                i += n
                if isinstance(said, dict):
                    k = i
                    while k < len(words) and (is_identifier(words[k]) or not joint(words, k)[0]):
                        k += 1
                    y, i = " ".join(o for o in _render_zh(words[i:k]) if o), k
                    x = " ".join(out[seg:])
                    frame = said["np"]
                    if "{x}" in frame:
                        del out[seg:]
                        out.append(Zh(frame.replace("{x}", x).replace("{y}", y)) if x and y else Zh(x or y))
                    elif y:
                        out.append(Zh(frame.replace("{y}", y) if out else frame.strip("（）").replace("{y}", y)))
                elif said and (out or n > 1 or _low(w) not in zh_words().single):  # a joint opening it joins nothing
                    out.append(Zh(said))
                seg = len(out)
                continue
            hit = next((n for n in range(min(r.longest, len(words) - i), 0, -1)
                        if tuple(_low(x) for x in words[i:i + n]) in r.glossary
                        and not any(x.strip(_TRAIL).isupper() and len(x.strip(_TRAIL)) > 1 for x in words[i:i + n])), 0)
            if hit:
                out.append(r.glossary[tuple(_low(x) for x in words[i:i + hit])])
                i += hit
                continue
        out.append(w if w == "的" else _word(w))
        i += 1
    return out


def _fill(template: str, x: str, y: str = "") -> str:
    return template.replace("{x}", f" {x} " if x else "").replace("{y}", f" {y} " if y else "")


def _say_zh(a: Action, most: int, mods: int, purpose: bool) -> str:
    r = rules()
    if a.revert and a.verb == "revert":
        inner = "".join(_say_zh(x, most, 1, False) for x in a.revert[:1])
        return tidy(f"回退“{inner}”" if inner else "回退")
    if a.revert:  # two noun phrases with act heads
        return "，并".join(_say_zh(x, most, 0, False) for x in a.revert[:2])
    x = phrase(a.obj, most, "zh")
    if a.unknown:  # the component first, the author's verb after it: "`foo.md`：revise"
        return tidy(f"{x}：{text(a.unknown, inside=True)}")
    if a.symptom[0]:
        pre = [_fill(r.preps[k]["pre"], "", phrase(v, most, "zh")) for k, v in a.mods[:1] if r.preps.get(k, {}).get("pre")]
        return tidy(f"{''.join(pre)} {x} {a.symptom[0]}" if pre and a.mods[0][0] == "when" else
                    f"{x} {''.join(pre)} {a.symptom[0]}")
    entry = r.verbs.get(a.verb, {})
    template, used = (entry.get("zh", "{x}") if a.verb else "{x}"), -1
    for k, (prep, _words) in enumerate(a.mods):
        if prep in entry:
            template, used = entry[prep], k
            break
    body = _fill(template, x, phrase(a.mods[used][1], most, "zh") if used >= 0 else "")
    if a.negated:
        body = "不再" + body.strip()
    if a.subject and not a.component:
        body = f"{phrase(a.subject, most, 'zh')} {body}"
    pre, post = [], []
    for k, (prep, words) in enumerate(a.mods):
        if k == used or len(pre) + len(post) + (used >= 0) >= mods:
            continue
        spec = r.preps.get(prep, {})
        y = phrase(words[1:] if prep == "for_better" else words, most, "zh")
        if not a.verb and spec.get("np"):
            post.append(_fill(spec["np"], "", y))
        elif spec.get("pre") and a.verb:
            if spec["pre"].startswith("在") and (template.startswith("在") or any(p.strip().startswith("在") for p in pre)):
                continue  # one place is enough: "在 A 中在 B 上" reads badly
            pre.append(_fill(spec["pre"], "", y))
        elif spec.get("post"):
            post.append(_fill(spec["post"], "", y))
    origin = next((p for p in pre if p.strip().startswith("从")), "")
    if origin and body.startswith("把") and f" {x} " in f" {body} ":  # "把 X 从 A 增大到 B"
        pre.remove(origin)
        body = body.replace(str(x), f"{x} {origin.strip()}", 1)
    clause = " ".join([*pre, body]) + "".join(post)
    if a.subject and a.component:  # the component first, then the change: "ReplaySSM：缓存 SSM 输入"
        clause = f"{phrase(a.subject, most, 'zh')}：{clause}"
    if purpose and a.purpose is not None:
        inner = _say_zh(a.purpose, most, 1, False)
        if inner:
            clause += r.data["purpose"]["zh"].format(action=inner)
    return tidy(clause)


def _say_en(a: Action, most: int, mods: int, purpose: bool, base: bool = False) -> str:
    r = rules()
    if a.revert and a.verb == "revert":
        inner = "".join(_say_en(x, most, 1, False) for x in a.revert[:1])
        return f"reverts “{inner}”" if inner else "reverts a change"
    if a.revert:
        return " and ".join(_say_en(x, most, 0, False) for x in a.revert[:2])
    x = phrase(a.obj, most, "en")
    if a.unknown:
        return f"{a.unknown} {x}"
    if a.symptom[0]:
        tail = [f"{k} {phrase(v, most, 'en')}" for k, v in a.mods[:1]]
        return " ".join([x, text(a.symptom[1], inside=True), *tail])
    verb = (a.verb if base else r.verbs.get(a.verb, {}).get("en", "")) if a.verb else ""
    parts = [verb, x] if verb and a.verb not in ("report", "request", "propose") else [x]
    if a.negated:
        parts[0] = f"no longer {a.verb}s" if verb else parts[0]
    if a.subject:
        parts.insert(0, phrase(a.subject, most, "en"))
    entry = r.verbs.get(a.verb, {})
    first = next((m for m in a.mods if m[0] in entry), None)  # the modifier the verb's own frame takes stays
    shown = ([first] if first else []) + [m for m in a.mods if m is not first][: max(mods - (first is not None), 0)]
    parts += [f"{r.preps.get(k, {}).get('en', 'instead of' if k == 'instead' else k)} {phrase(v, most, 'en')}"
              for k, v in shown]
    if purpose and a.purpose is not None:
        inner = _say_en(a.purpose, most, 1, False, base=True)
        parts.append(f"to {inner}".rstrip())
    return " ".join(p for p in parts if p).replace(" ,", ",")


def say(actions: list[Action], lang: str, most: int | None = None, mods: int | None = None,
        count: int | None = None) -> Md:
    """The actions in one clause (zh or en): at most `count` actions, `mods` modifiers each, `most` words per
    phrase (defaults from [limits]). A purpose is kept while modifiers are."""
    limits = rules().data["limits"]
    most = int(limits["phrase_words"]) if most is None else most
    mods = int(limits["modifiers"]) if mods is None else mods
    chosen = actions[: int(limits["actions"]) if count is None else count]
    lead = ""
    if len(chosen) > 1 and not chosen[0].obj and not chosen[0].mods and chosen[0].verb in rules().verbs:
        # "Refactor and simplify X": the first verb shares the second's object
        first, chosen = chosen[0], chosen[1:]
        lead = (_fill(rules().verbs[first.verb]["zh"], "").strip() + "并" if lang == "zh"
                else rules().verbs[first.verb].get("en", first.verb) + " and ")
    if lang == "zh":
        return Md(tidy(lead + "，并".join(_say_zh(a, most, mods, mods > 0) for a in chosen)))
    return Md(lead + ", and ".join(_say_en(a, most, mods, mods > 0) for a in chosen))
