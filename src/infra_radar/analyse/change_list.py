"""What a change does, from the author's own list of changes: the sentences of the description that open with an
imperative or present-tense verb of `dives.toml [changes] verbs` ("Wrap FusedMoE.weight_loader to keep ...",
"Add a new create_tcp_store helper ...") and are asserted (not negated, not hypothetical), each giving the first
code name it holds (a dotted or called name, CamelCase, snake_case, an UPPER_CASE variable). The deep dive names
them as the change's mechanism instead of identifiers picked by frequency. One pass over the sentences; each
token is checked by a pattern with no nested or adjacent unbounded repeats.
"""

from __future__ import annotations

import re
from typing import Any

from .assertions import own_names, sentence_list, why_not

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,80}(?:\.[A-Za-z_][A-Za-z0-9_]{0,80}){0,4}(?:=[\w.]{1,20})?")
_CAMEL = re.compile(r"[A-Z][a-z0-9]{1,40}[A-Z]")
_EDGE = "`*_:,.;()[]\"'"
_OWN_LINE = ("-", "*", "#", ">", "|", "```", "+")
_LEAD = frozenset({"for", "when", "on", "with", "in", "if"})


def _code_name(word: str) -> bool:
    """A word that names code: dotted, snake_case, CamelCase with an inner capital, or an UPPER_CASE variable."""
    if "." in word.strip(".") or ("_" in word.strip("_") and not word.isupper()):
        return True
    if "_" in word and word.replace("=", "").replace("_", "").isalnum() and word.split("=")[0].isupper():
        return True
    return len(word) >= 6 and _CAMEL.match(word) is not None


def _unwrapped(body: str) -> str:
    """A description whose prose lines were wrapped at a fixed width, each paragraph on one line again (a list
    item, a heading, a quote, a table row or a code fence starts its own line)."""
    out: list[str] = []
    for line in body.split("\n"):
        bare = line.strip()
        if out and out[-1].strip() and bare and not bare.startswith(_OWN_LINE) and not bare[:1].isdigit() \
                and not out[-1].rstrip().endswith((":", "```")):
            out[-1] = f"{out[-1].rstrip()} {bare}"
        else:
            out.append(line)
    return "\n".join(out)


def _noise(name: str, own: tuple[str, ...]) -> bool:
    """A name that says nothing of the change: the project's own package, a web address, an exception type."""
    low = name.lower()
    return (low in own or low.replace("_", "-") in own or "github" in low or low.startswith("www.")
            or low.endswith((".com", ".org", ".io", ".ai", ".html")) or name.endswith(("Error", "Exception")))


def _sentences(body: str, repo: str, rules: dict[str, Any]):
    """(sentence, first code name or "") of each asserted change sentence of the description, in order."""
    verbs = frozenset(rules.get("verbs", []))
    own = own_names(repo)
    for sentence in sentence_list(_unwrapped(body[:20000])):
        sentence = sentence.lstrip("-*•0123456789. ")
        words = sentence.split(None, 1)
        if words and words[0].lower() in _LEAD and "," in sentence:  # "For vLLM >= 0.19, continue disabling ..."
            sentence = sentence.split(",", 1)[1].lstrip()
            words = sentence.split(None, 1)
        if not words or words[0].lower() not in verbs:
            continue
        start = sentence.find(words[0])
        if why_not(sentence, start, start + len(words[0]), own):
            continue
        name = next((m.group(0) for m in _TOKEN.finditer(sentence) if _code_name(m.group(0).strip(_EDGE))), "")
        name = name.strip(_EDGE)
        yield sentence, ("" if not name or _noise(name, own) else name)


def change_names(body: str, repo: str, rules: dict[str, Any], title: str = "") -> list[str]:
    """The code names of the description's own change sentences, one per sentence, in order (at most
    `most`); [] when fewer than `least` sentences name one."""
    most, least = int(rules.get("most", 4)), int(rules.get("least", 2))
    found: list[str] = []
    for _sentence, name in _sentences(body, repo, rules):
        if name and name not in found and name.lower() not in title.lower():
            found.append(name)
            if len(found) >= most:
                break
    return found if len(found) >= least else []


_SPAN = re.compile(r"`[^`\n]{0,400}`")


def change_clauses(body: str, repo: str, rules: dict[str, Any]) -> list[tuple[str, str]]:
    """(clause, sentence) of each change sentence that names code: the sentence up to its first purpose or
    detail (`[changes] cut`: "... to avoid ...", "..., with support for ..."), at most `most`; [] when fewer
    than `least` sentences name code. A verb of `keep_to` keeps its " to " ("move X to Y")."""
    most, least = int(rules.get("most", 4)), int(rules.get("least", 2))
    cuts = [c for c in rules.get("cut", []) if c]
    keep_to = frozenset(rules.get("keep_to", []))
    drop = frozenset(rules.get("drop_lead", []))
    out: list[tuple[str, str]] = []
    shortest = int(rules.get("sentence_words", 0))
    for sentence, name in _sentences(body, repo, rules):
        if not name or len(sentence.split()) < shortest:
            continue  # a squashed commit's subject ("set calculate_log_probs") is no described change
        # a cut is looked for outside code spans (`[0xAB, 0xDC]` holds ", ")
        low, end = _SPAN.sub(lambda m: "x" * len(m.group(0)), sentence.lower()), len(sentence)
        verb = low.split(None, 1)[0]
        for cut in cuts:
            if cut == " to " and verb in keep_to:
                continue
            at = low.find(cut, len(verb))
            if 0 < at < end:
                end = at
        clause = sentence[:end].rstrip(" .,;:")
        first, _, rest = clause.partition(" ")
        if first.lower() in drop and rest:  # "continue disabling X": what it does is disabling X
            clause = rest
        names_code = any(_code_name(m.group(0).strip(_EDGE)) for m in _TOKEN.finditer(clause))
        # the clause names code itself, or is a whole phrase of a sentence that does ("patch Qwen3.5 GDN modules
        # on NPU so `use_triton_gdn=True` injects ..."); a bare "use detach()" says too little alone
        if (names_code or len(clause.split()) >= 4) and clause not in (c for c, _ in out):
            out.append((clause, sentence))
            if len(out) >= most:
                break
    return out if len(out) >= least else []


def change_purposes(body: str, repo: str, rules: dict[str, Any]) -> list[tuple[str, str]]:
    """(purpose, sentence) of the change sentences that say what a change is for: the clause after " to " /
    " in order to " / " so that " whose first word is one of `[changes] purpose_verbs` ("... to avoid
    compatibility issues on NPU"), up to its next detail; at most twice `purpose_most` (a purpose the dive
    cannot say is skipped there)."""
    verbs = frozenset(rules.get("purpose_verbs", []))
    marks = [m for m in rules.get("purpose_marks", [" in order to ", " so that ", " to "]) if m]
    most = 2 * int(rules.get("purpose_most", 2))
    shortest = int(rules.get("sentence_words", 0))
    out: list[tuple[str, str]] = []
    for sentence, name in _sentences(body, repo, rules):
        if not name or len(sentence.split()) < shortest:
            continue
        low = sentence.lower()
        at = min((i + len(m) for m in marks if (i := low.find(m)) > 0), default=-1)
        if at < 0:
            continue
        rest = sentence[at:]
        if rest.split(None, 1)[0].lower().strip(",.") not in verbs:
            continue
        end = min((i for c in (", ", "; ", ". ", " and ", " so ", " which ", " because ") if (i := rest.find(c)) > 0),
                  default=len(rest))
        purpose = rest[:end].rstrip(" .,;:")
        if len(purpose.split()) >= 2 and purpose not in (p for p, _ in out):
            out.append((purpose, sentence))
            if len(out) >= most:
                break
    return out
