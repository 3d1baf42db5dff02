"""Description against code: where an item's description says one thing and its diff another (pure).

Two checks, their phrases in code_facts.toml's [contradictions]: a sentence naming a setting says its default
is off (or on) while the diff sets it on (or off); a sentence says there is no API change while the diff
removes a public function or class. Fenced code, quoted lines and negated phrases are not claims.
"""

from __future__ import annotations

import re
from typing import Any

from .code_facts import CodeRules

_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.MULTILINE | re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n\s*\n|\n\s*[-*]\s+")
_NEGATION = re.compile(r"(?:\bnot|\bno longer|\bnever|\bisn't|\bwasn't|不再|并非|不是)\W{0,3}\w*\W{0,3}$", re.IGNORECASE)
_ON = {"true", "on", "yes", "1", "enabled", "enable"}
_OFF = {"false", "off", "no", "0", "disabled", "disable"}
_MAX_SENTENCE = 600  # a longer run without a sentence end is a table or a log, not a statement


def _sentences(body: str) -> list[str]:
    text = _FENCE.sub("\n\n", body)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith((">", "|", "    "))]
    return [" ".join(s.split()) for s in _SENTENCE_END.split("\n".join(lines))
            if s.strip() and len(s) <= _MAX_SENTENCE]


def _said(pattern: re.Pattern[str] | None, sentence: str) -> list[str]:
    """The phrases of `pattern` the sentence says (not negated just before them), as written."""
    if pattern is None:
        return []
    return list(dict.fromkeys(m.group(0).strip() for m in pattern.finditer(sentence)
                              if not _NEGATION.search(sentence[:m.start()])))


def _switch_state(value: str) -> str | None:
    word = value.strip().strip("\"'`").lower()
    return "on" if word in _ON else "off" if word in _OFF else None


def _names(name: str) -> list[str]:
    """How a description may name a setting: whole, or its last dotted part when that is distinctive."""
    last = name.rsplit(".", 1)[-1].lstrip("-")
    return [n for n in dict.fromkeys([name, last]) if len(n) >= 6 and ("_" in n or "-" in n or "." in n)]


def contradictions(body: str, code: dict[str, Any] | None, rules: CodeRules) -> list[dict[str, Any]]:
    """[{"description", "code", "file"}] of each statement of the description the diff contradicts, with what
    the report words it from: `kind` ("default" or "api"), `said` (the phrases as written), `name`, `value`."""
    if not code or not body:
        return []
    sentences = _sentences(body)
    lowered = [s.lower() for s in sentences]
    found: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for default in code.get("defaults", []):
        state = _switch_state(str(default.get("value", "")))
        if state is None or default.get("previous") is not None and _switch_state(default["previous"]) == state:
            continue  # not a switch, or its value did not move
        against = rules.phrases.get("off" if state == "on" else "on")
        for sentence, low in zip(sentences, lowered, strict=True):
            said = _said(against, sentence) if any(n.lower() in low for n in _names(default["name"])) else []
            if said:
                key = (default["name"], default["file"])
                if key not in seen:
                    seen.add(key)
                    found.append({"description": sentence, "code": f"{default['name']} = {default['value']}",
                                  "file": default["file"], "kind": "default", "said": said[:3],
                                  "name": default["name"], "value": default["value"]})
                break
    # an API is what a module offers at its top level under a public name (a method or nested helper is not)
    public = [r for r in code.get("removed", []) if r.get("kind") in ("function", "class") and r.get("top")
              and not r["name"].startswith("_")]
    if public:
        for sentence in sentences:
            said = _said(rules.phrases.get("no_api_change"), sentence)
            if said:
                for removed in public[:3]:
                    found.append({"description": sentence, "code": f"removes {removed['kind']} {removed['name']}",
                                  "file": removed["file"], "kind": "api", "said": said[:3],
                                  "name": removed["name"], "value": removed["kind"]})
                break
    return found
