"""The actions of a title (`render/mechanism.py` reads them) said in one clause, in a Chinese or English frame
from `defaults/rules/conclusions.toml`. The author's objects stay in English (identifiers in code spans, generic
words through the glossary); nothing is quoted and nothing is cut: a phrase too long loses its leading
modifiers, an action its extra modifiers, a title its second action.

Linear in the phrase: a left-to-right walk over its words.
"""

from __future__ import annotations

import re

from .cjk import tidy
from .escape import Md, code, text
from .mechanism import _TRAIL, Action, _low, is_identifier, lemma, rules
from .zh_words import Zh, joint, spliced
from .zh_words import words as zh_words

__all__ = ["WHOLE", "phrase", "say", "say_zh_or_none"]


# words that turn what follows them into its opposite: a trimmed phrase never keeps what they negate without them
_NEGATION = {"not", "never", "no", "cannot", "can't", "doesn't", "don't", "didn't", "isn't", "aren't", "wasn't",
             "weren't", "won't", "without", "nor"}
_FAILS = {"fails", "fail", "failed", "failing"}  # a negation when "to" follows: "fails to start"
_AUXILIARY = {"does", "do", "did", "is", "are", "was", "were", "can", "could", "will", "would", "should", "has",
              "have", "had", "may", "might", "must"}


def _negated_clause(words: list[str], most: int) -> list[str] | None:
    """When `words` is over `most` words and holds a negation: the negated clause, from after the last comma
    before the negation (from its auxiliary, "does not", when that clause is still over twice `most` words), so
    a trim never leaves the negation behind nor keeps the clauses before it; else None."""
    kept = [w for w in words if w not in (",", ";")]
    if len(kept) <= most:
        return None
    neg = next((i for i, w in enumerate(words) if _low(w) in _NEGATION
                or _low(w) in _FAILS and i + 1 < len(words) and _low(words[i + 1]) == "to"), -1)
    if neg < 0:
        return None
    start = next((i + 1 for i in range(neg - 1, -1, -1) if words[i] in (",", ";")), 0)
    if sum(_low(w) not in ("a", "an", "the", ",", ";") for w in words[start:]) > 2 * most:
        start = neg - 1 if neg > 0 and _low(words[neg - 1]) in _AUXILIARY else neg
    return words[start:]


def _trim(words: list[str], most: int) -> list[str]:
    r = rules()
    words = [w for w in words if _low(w) not in r.filler and "…" not in w and "..." not in w]
    # a negation and the clause it negates are found at the usual phrase length, whatever is kept
    clause = _negated_clause(words, min(most, int(r.data["limits"]["phrase_words"])))
    words = [w for w in (clause if clause is not None else words) if w not in (",", ";")]
    if clause is not None:
        most = len(words)  # a negation and what it negates stay whole
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
        words = [w for w in words if _low(w) not in ("a", "an", "the")]  # said as nothing: no joint to "of"
        if len(words) > 1 and _low(words[-1]) == "support":  # "for decoding support": for decoding
            words = words[:-1]
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


_FIGURE = re.compile(r"^[~≈]?\d[\d.,]*(?:\s?[~–-]\s?\d[\d.,]*)?\s?(?:x|×|%|倍)?$", re.I)


def _figure_words(words: list[str]) -> bool:
    """Whether a phrase is one figure ("1.5~2x", "30%", "2 x")."""
    return bool(words) and len(words) <= 2 and bool(_FIGURE.match("".join(words)))


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
    for k, (prep, words) in enumerate(a.mods):
        if prep == "by" and _figure_words(words):  # "by 1.5~2x": the figure measures the act, not a means
            template, used = entry.get("by_figure") or template + r.preps["by"].get("figure", "（{y}）"), k
            break
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


# words a Chinese clause keeps of a phrase: all of them (a title's phrase is never this long)
WHOLE = 40


def say_zh_or_none(actions: list[Action], mods: int | None = None, count: int | None = None) -> Md | None:
    """The actions as one Chinese clause that keeps every object whole and carries no English grammar word,
    adjective, adverb, participle or plain verb (zh_words.spliced); None when the rules cannot build one (a
    verb they do not know, a word they cannot say): the caller gives the title as a title instead."""
    if not actions or any(a.unknown for a in actions):
        return None
    clause = say(actions, "zh", WHOLE, mods, count)
    return None if not clause.strip() or spliced(clause) else clause
