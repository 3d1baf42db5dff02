"""What an item changes, read with no model: its title (or, failing that, the description's "This PR adds ..."
sentence) read as actions ("verb object modifiers"), a noun phrase ("X refactor", "implementation of X",
"X metrics") or a symptom ("X crashes at Y"), with the rules of `defaults/rules/conclusions.toml`. Saying the
actions in a Chinese or English frame is `render/saying.py`; Chinese spacing is `render/cjk.py`.

Linear in the text read: one tokenising pass, then a left-to-right walk over the tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..config import rule_data, rules_cache
from .cjk import _CJK, cjk_share
from .zh_words import glossary_extra

__all__ = ["Action", "clean_title", "is_identifier", "read", "uncut"]

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
    act_adjectives: frozenset[str]
    verb_nouns: frozenset[str]
    compound_verbs: frozenset[str]
    ambiguous: frozenset[str]
    filler: frozenset[str]
    symptoms: dict[tuple[str, ...], str]
    glossary: dict[tuple[str, ...], str]
    longest: int  # the most words of a glossary or symptom phrase


@rules_cache
def rules() -> _Rules:
    """The conclusion rules (the active rules directory's tables over the packaged ones), compiled once."""
    data = rule_data("conclusions")
    nouns = {k: v for k, v in data["nouns"].items() if isinstance(v, str)}
    glossary = {tuple(k.lower().split()): v for k, v in {**glossary_extra(), **data["glossary"]}.items()}
    symptoms = {tuple(k.lower().split()): v for k, v in data["symptoms"].items()}
    amb = data.get("ambiguous", {})
    return _Rules(
        data=data, prefix=re.compile(data["title"]["prefix"], re.I), suffix=re.compile(data["title"]["suffix"]),
        verbs=data["verbs"], forms={tuple(k.split()): v for k, v in data.get("verb_forms", {}).items()},
        preps=data["preps"], nouns=nouns, added=frozenset(data["nouns"].get("added", [])),
        act_adjectives=frozenset(w.lower() for w in data["nouns"].get("act_adjectives", [])),
        verb_nouns=frozenset(w.lower() for w in data["nouns"].get("verb_nouns", [])),
        compound_verbs=frozenset(w.lower() for w in data["nouns"].get("compound_verbs", [])),
        ambiguous=frozenset(amb.get("words", [])), filler=frozenset(amb.get("filler", [])), symptoms=symptoms,
        glossary=glossary, longest=max(len(k) for k in [*glossary, *symptoms]),
    )


# --- tokens ----------------------------------------------------------------------------------------

# a key given a bracketed value ("x.shape=[2,192]", "[2,192]、[1,256]") is one word: its commas are its own
_BRACKETED = r"[\w.]*\w=\[[^\]\n]{0,60}\](?:[、,]\s?\[[^\]\n]{0,60}\])*"
_TOKEN = re.compile(r"`[^`\n]{1,120}`|\([^()\n]{0,120}\)|[\w.]*\w\([^()\n]{0,60}\)|" + _BRACKETED + r"|[^\s,;]+|[,;]")
_IDENT = re.compile(r"^(?:--?[A-Za-z][\w-]*(?:=\S+)?|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|[\w./-]*_[\w./-]*"
                    r"|[A-Za-z_]\w*\(\)|[\w.]*\w\([^()]{0,60}\)|[\w.-]+=[\w.-]+|" + _BRACKETED + r"|[\w-]+(?:/[\w.-]+)+\.\w+"
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
        if any(low[:n] in r.glossary for n in range(2, len(low) + 1)):
            return "", 0  # "load balancing" is a thing of the field (the glossary's phrase), not "load"
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
            if key in r.symptoms and not _modifier(words, i, n):
                return i, n, r.symptoms[key]
    return -1, 0, ""


def _modifier(words: list[str], at: int, n: int) -> bool:
    """Whether the symptom words at `at` qualify a noun rather than say the subject's symptom: after a
    preposition ("in crash dumps") or before the noun they qualify ("crash dumps") (conclusions.toml
    [symptom_context])."""
    ctx = rules().data.get("symptom_context", {})
    before = _low(words[at - 1]) if at > 0 else ""
    after = _low(words[at + n]) if at + n < len(words) else ""
    return before in ctx.get("not_after", []) or after in ctx.get("compound_heads", [])


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
    # the head noun is the last word before any trailing parenthesis: "LoRA & MTP support (with Bridge)"
    core = len(obj)
    while core > 1 and obj[core - 1].startswith("(") and obj[core - 1].endswith(")"):
        core -= 1
    last = _low(obj[core - 1])
    # "logic modification" modifies the logic; "secondary modification" modifies nothing named
    if last in r.nouns and core > 1 and not all(_low(w) in r.act_adjectives for w in obj[:core - 1]):
        return Action(r.nouns[last], obj[:core - 1] + obj[core:], mods, purpose)
    last = _low(obj[-1])
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
            # "add Dockerfiles and install guide": a verb that names the kind of a thing it ends with is a noun
            compound = (verb in rules().compound_verbs and after in rules().verb_nouns and j + 2 >= len(words))
            # "add X overview and supported tags": a participle after "and" qualifies a noun, it is no action
            compound = compound or (_low(words[j]).endswith(("ed", "ing")) and not _low(out[-1][0]).endswith(
                ("ed", "ing")) and _verb_at(out[-1], 0)[0] != "")
            if verb and (w in (",", ";") or _verb_at(out[-1], 0)[0]) and words[j + 1:j + 2] != [","] and not (
                    verb in rules().ambiguous and after in ("and", "of")) and not compound:
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


_POSSESSIVE = re.compile(r"`['’]s\b")


def read(title: str, kind_verb: str = "") -> tuple[list[Action], str]:
    """The actions a title states (at most [limits] actions), or, for a title in Chinese, the title itself."""
    r = rules()
    rest, type_verb = clean_title(title)
    if not rest or rest.lower().strip(" .!") in r.data["title"].get("empty", []):
        return [], ""
    cjk = len(_CJK.findall(rest))
    if cjk >= int(r.data["title"]["cjk_chars"]) and cjk_share(rest) >= float(r.data["title"]["cjk_share"]):
        return [], rest
    rest = _POSSESSIVE.sub("`", _VERSIONS.sub(_version_span, rest))  # "`Engine`'s sync": the engine's sync
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
