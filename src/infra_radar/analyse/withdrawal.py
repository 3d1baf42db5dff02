"""An author withdrawing or superseding a change in a comment, as it stood at a radar's window end.

The phrases are data (defaults/rules/withdrawal.toml, the user's copy first): "closing this", "the mechanism I
claimed doesn't actually hold", "superseded by #N". Only the item's author's comments made by the window's end
count; a phrase negated or asked in the same sentence ("not closing this", "should I close this?") does not. The
row of a withdrawn or superseded item says so and gives no reuse advice (render/daily.py).
"""

from __future__ import annotations

import re
from datetime import datetime

from ..config import Settings, load_rule_file, rule_data, rules_cache

__all__ = ["Withdrawal", "active_rules", "compile_rules", "withdrawal"]

_SENTENCE = re.compile(r"[.!?。！？\n]")


class Withdrawal:
    """What a comment said: `kind` "withdrawn" or "superseded", `by` the superseding ref ("" when withdrawn)."""

    __slots__ = ("by", "kind", "said")

    def __init__(self, kind: str, by: str, said: str) -> None:
        self.kind, self.by, self.said = kind, by, said


def _compiled(data: dict) -> dict[str, list[re.Pattern]]:
    return {key: [re.compile(p, re.IGNORECASE) for p in data.get(key, [])]
            for key in ("withdrawn", "superseded", "negations")}


def compile_rules(settings: Settings) -> dict[str, list[re.Pattern]]:
    """The rules of withdrawal.toml (the user's copy first), compiled."""
    return _compiled(load_rule_file("withdrawal", settings))


@rules_cache
def active_rules() -> dict[str, list[re.Pattern]]:
    """The rules of the active rules directory (config.rule_data), compiled once until it changes."""
    return _compiled(rule_data("withdrawal"))


def _sentence(text: str, start: int, end: int) -> tuple[str, str]:
    """(the sentence of `text` holding [start, end), its part before `start`): from the last stop before it to the
    first after (linear)."""
    lo = max((m.end() for m in _SENTENCE.finditer(text, 0, start)), default=0)
    hi = _SENTENCE.search(text, end)
    return text[lo:hi.end() if hi else len(text)].strip(), text[lo:start]


def _negated(sentence: str, before: str, rules: dict[str, list[re.Pattern]]) -> bool:
    """A negation or condition before the phrase in its sentence, or a question."""
    return sentence.endswith(("?", "？")) or any(p.search(before) for p in rules["negations"])


def _by_then(when: datetime | None, until: datetime, days) -> bool:
    """Whether a comment dated `when` was made by `until`: a date-only time when its window holds its day
    (`days`, windows.owned_days) or the whole day ended by then."""
    from datetime import timedelta

    from ..windows import date_only

    if when is None or when >= until:
        return False
    return not date_only(when) or when + timedelta(days=1) <= until or when.date() in days


def withdrawal(item, until: datetime, rules: dict[str, list[re.Pattern]], days=()) -> Withdrawal | None:
    """The last withdrawal or supersession the item's author said in a comment made by `until` (a date-only
    comment: see `_by_then`), else None. When the source does not name the item's author (a saved page may not),
    every human comment is read."""
    found = None
    author = (item.author or "").lower()
    for c in sorted((c for c in item.comments if _by_then(c.created_at, until, days) and not c.is_bot
                     and (not author or c.author.lower() == author)), key=lambda c: c.created_at):
        body = c.body or ""
        for kind in ("superseded", "withdrawn"):
            hit = None
            for pattern in rules[kind]:
                m = pattern.search(body)
                if m and not _negated(*_sentence(body, m.start(), m.end()), rules):
                    hit = m
                    break
            if hit is not None:
                by = hit.group(1) if kind == "superseded" and hit.groups() else ""
                found = Withdrawal(kind, by, _sentence(body, hit.start(), hit.end())[0])
                break
    return found
