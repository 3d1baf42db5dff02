"""The porting map: which GPU mechanisms an item touches, and their counterpart and caveat on the target.

The map is data (`defaults/rules/porting.toml`); a user's `porting.toml` in the rules directory replaces
whole entries by id and adds new ones. Matching is one pass of a compiled alternation over the title and
description per entry (linear in the text) and fnmatch over the changed paths.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from fnmatch import translate
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from .. import toml_cache
from ..config import rule_data, rules_cache
from ..errors import ConfigError
from ..models import Item, Text
from .assertions import own_names, sentence_list, why_not

PROFILES = ("ascend", "rocm", "cpu")


@dataclass(frozen=True)
class PortingEntry:
    """One GPU mechanism and what stands for it on each profile."""

    id: str
    name: Text
    words: re.Pattern[str] | None
    paths: re.Pattern[str] | None  # the entry's path patterns, compiled into one
    counterpart: dict[str, Text]  # by profile
    caveat: dict[str, Text]
    brief: dict[str, Text] | None = None  # by profile: the caveat in a few words (a conclusion's consequence)
    grade: dict[str, str] = field(default_factory=dict)  # by profile: "M" when the counterpart is a drop-in
    # words one of which must be in the same sentence as a word hit (`with_words`): "fp8" counts for the
    # low-precision entry only where the sentence says what computes in it (a GEMM, a kernel, quantization)
    near: re.Pattern[str] | None = None
    # device_facts.toml lib ids one of which a read diff must use for the entry to apply (empty: no such need)
    needs_libs: tuple[str, ...] = ()

    def matches(self, text: str) -> bool:
        """A phrase or a path of grade evidence is this mechanism (its words or its path patterns)."""
        return bool((self.words is not None and self.words.search(text))
                    or (self.paths is not None and self.paths.match(text)))


@dataclass(frozen=True)
class Applied:
    """An entry that matched an item, for one profile, with the evidence that matched."""

    entry: PortingEntry
    profile: str
    evidence: str

    @property
    def counterpart(self) -> Text:
        return self.entry.counterpart.get(self.profile, {})

    @property
    def caveat(self) -> Text:
        return self.entry.caveat.get(self.profile, {})

    @property
    def brief(self) -> Text:
        """The caveat in a few words: the entry's `brief`, else the caveat's first clause."""
        brief = (self.entry.brief or {}).get(self.profile)
        if brief:
            return brief
        return {k: re.split(r"[;；]", v, maxsplit=1)[0] for k, v in self.caveat.items()}


def _text(value: Any, where: str) -> Text:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()) or "en" not in value:
        raise ConfigError(f"porting.toml: {where} must be a table of strings with at least `en`")
    return dict(value)


def _words(words: list[str]) -> re.Pattern[str] | None:
    parts = []
    for w in words:
        body = re.escape(w.rstrip("*")).replace(r"\ ", r"[\s_-]?")
        parts.append(body + (r"\w*" if w.endswith("*") else r"\b"))
    return re.compile(r"(?<![\w.])(?:" + "|".join(parts) + ")", re.I) if parts else None


def compile_entries(data: dict[str, Any]) -> list[PortingEntry]:
    """Checked entries of a porting map (a ConfigError names the first bad one)."""
    out = []
    for i, raw in enumerate(data.get("entry", [])):
        where = f"entry[{i}]"
        if not isinstance(raw.get("id"), str):
            raise ConfigError(f"porting.toml: {where} needs a string `id`")
        words, paths = raw.get("words", []), raw.get("paths", [])
        if not all(isinstance(w, str) and w for w in words) or not all(isinstance(p, str) for p in paths):
            raise ConfigError(f"porting.toml: {where}: `words` and `paths` are lists of strings")
        counterpart, caveat, brief, grade = {}, {}, {}, {}
        for profile in PROFILES:
            if profile in raw:
                counterpart[profile] = _text(raw[profile].get("counterpart"), f"{where}.{profile}.counterpart")
                caveat[profile] = _text(raw[profile].get("caveat"), f"{where}.{profile}.caveat")
                if raw[profile].get("brief") is not None:
                    brief[profile] = _text(raw[profile]["brief"], f"{where}.{profile}.brief")
                if raw[profile].get("grade") is not None:
                    if raw[profile]["grade"] not in ("S", "M", "L"):
                        raise ConfigError(f"porting.toml: {where}.{profile}.grade must be S, M or L")
                    grade[profile] = raw[profile]["grade"]
        compiled = re.compile("|".join(translate(p) for p in paths)) if paths else None
        near = raw.get("with_words", [])
        if not all(isinstance(w, str) and w for w in near):
            raise ConfigError(f"porting.toml: {where}: `with_words` is a list of strings")
        out.append(PortingEntry(raw["id"], _text(raw.get("name"), f"{where}.name"), _words(words), compiled,
                                counterpart, caveat, brief, grade, _words(near), tuple(raw.get("needs_libs", []))))
    return out


@lru_cache(maxsize=4)
def load_map(rules_dir: Path | None = None) -> tuple[PortingEntry, ...]:
    """The packaged porting map, with entries of `rules_dir/porting.toml` replacing or adding by id."""
    text = (resources.files("infra_radar") / "defaults" / "rules" / "porting.toml").read_text(encoding="utf-8")
    entries = {e.id: e for e in compile_entries(toml_cache.loads(text))}
    user = rules_dir / "porting.toml" if rules_dir else None
    if user is not None and os.path.lexists(user):
        from ..guard.files import RULES_BYTES, read_toml
        from ..guard.patterns import check_rule_data

        user_data = read_toml(user, RULES_BYTES)
        check_rule_data(user_data, user)
        entries.update({e.id: e for e in compile_entries(user_data)})
    return tuple(entries.values())


def applied(item: Item, profile: str, entries: tuple[PortingEntry, ...] | None = None,
            limit: int = 3, text: str | None = None) -> list[Applied]:
    """The entries an item touches, for `profile`: by words in its title/description, else by changed path.

    Entries found in the title come first, then the description, then paths; at most `limit`. The
    "already native" entry is only kept when nothing GPU-specific matched. `text` stands for the
    description when the caller has removed its template parts (checklists mention every module).
    """
    entries = entries if entries is not None else load_map()
    key = (id(item), profile, id(entries), limit, text, item.repo, item.title, item.body if text is None else "",
           id(item.code), id(item.files), len(item.files))  # what it reads of the item, by value or identity
    last = _LAST_APPLIED.get(key)
    if last is not None and last[0] is item and last[1] is entries:  # the card, then its evidence: one item
        return list(last[2])
    picked = _applied(item, profile, entries, limit, text)
    _LAST_APPLIED.clear()  # only the last item's: a page asks for it twice in a row
    _LAST_APPLIED[key] = (item, entries, tuple(picked))
    return picked


# the last item's entries (key -> (item, entries, result)): held to check that the ids still name those objects
_LAST_APPLIED: dict[tuple, tuple[Item, tuple[PortingEntry, ...], tuple[Applied, ...]]] = {}


def _applied(item: Item, profile: str, entries: tuple[PortingEntry, ...], limit: int, text: str | None
             ) -> list[Applied]:
    found: list[tuple[int, int, Applied]] = []
    head, body = item.title, (item.body if text is None else text)[:20000]
    own = own_names(item.repo)
    device = (item.code or {}).get("device")
    used = {lib["id"] for lib in device.get("libs", []) if lib["change"] != "removed"} if device else set()
    for order, e in enumerate(entries):
        if profile not in e.counterpart:
            continue
        if e.needs_libs and device is not None and not used.intersection(e.needs_libs):
            continue  # the diff was read and does not use what the entry is about
        hit = None
        if e.words is not None:
            in_title = e.words.search(head)
            m, rank = (in_title[0] if in_title else None), 0
            if m and e.near is not None and not e.near.search(head):
                m = None
            if not m:  # in the description it must be a subject, not a passing mention: three times at least
                said = _asserted_hits(e, body, own)
                m, rank = (said[0] if len(said) >= 3 else None), 1
            if m:
                hit = (rank, m.strip())
        if hit is None and e.paths is not None:
            path = next((f.path for f in item.files if e.paths.match(f.path)), None)
            if path:
                hit = (2, path)
        if hit:
            found.append((hit[0], order, Applied(e, profile, hit[1])))
    found.sort(key=lambda x: (x[0], x[1]))
    picked = [a for _, _, a in found]
    specific = [a for a in picked if a.entry.id != "npu-native"]
    return (specific or picked)[:limit]


def _asserted_hits(e: PortingEntry, body: str, own: tuple[str, ...]) -> list[str]:
    """The entry's word hits in prose sentences that say them of this change (not negated, hypothetical or
    another project's; not in code, a command or a log), each in a sentence with one of its `with_words`."""
    out: list[str] = []
    if e.words is None or not e.words.search(body):
        return out
    for sentence in sentence_list(body):
        if e.near is not None and not e.near.search(sentence):
            continue
        for m in e.words.finditer(sentence):
            if not why_not(sentence, m.start(), m.end(), own):
                out.append(m[0])
                if len(out) >= 3:
                    return out
    return out


@rules_cache
def _profiles() -> dict[str, Any]:
    """grades.toml [profiles], read once for the names and the topics."""
    return rule_data("grades").get("profiles", {})


@rules_cache
def _profile_names() -> dict[str, Text]:
    return {k: v.get("name", {"en": k}) for k, v in _profiles().items()}


@rules_cache
def profile_topics() -> dict[str, str]:
    """The topic of each target profile (grades.toml [profiles.*] topic): "ascend" -> "npu", "rocm" -> "rocm"."""
    return {k: v["topic"] for k, v in _profiles().items() if v.get("topic")}


def target_name(profile: str, lang: str) -> str:
    """The display name of a target profile ("NPU", "AMD ROCm", ...), from the grade rules."""
    name = _profile_names().get(profile, {"en": profile})
    return name.get(lang) or name["en"]
