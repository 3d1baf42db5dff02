"""The adaptation grade (S/M/L) for the target platform, graded by what is left to do, and its reason.

The knowledge is in `defaults/rules/grades.toml`; `rules.py` computes the per-item facts (words
found, changed paths and their glob classes) and calls `grade`. In short:

- **native** (already written for the target): the repository is the target's own, a changed code
  file lies on a target path, or the title names the target (descriptions decide only when there are
  diffstat, e.g. an issue or a pasted page). Docs mentioning the target do not make it native.
- native items are graded by what the team still has to do: L for new or changed device kernels,
  S for a version gate / compatibility adaptation or a docs/tests/CI/config change (regress it),
  M otherwise (validate on hardware). Deleted kernel files are a removal, never "new kernels".
- other items: L when bound to device kernels or GPU features (a code file, a title word, or enough
  description words; a kernel file wins over light-file globs such as `**/*_config.py`), S for
  light files and observability/metrics work, M for device-dependent Python logic or a performance
  change whose benefit must be re-measured, else S (host-side).

Every reason names the rule (its template in grades.toml) and the evidence (paths, words, files).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .device_facts import kernel_label
from .target_code import TargetCode, read_target

if TYPE_CHECKING:  # pragma: no cover - types only
    from ..models import Item, PerfClaim, Text
    from .facts import Facts
    from .ruleset import RuleSet

__all__ = ["RULE_KEY", "grade", "host_tool", "is_native"]

_LANGS = ("en", "zh")
_NO_HITS: frozenset[int] = frozenset()
_DOC_EXT = (".md", ".rst", ".po", ".png", ".svg", ".jpg", ".txt")
_CI_PARTS = (".github/", ".buildkite/", "docker/", ".ci/")


@dataclass(slots=True)
class _Evidence:
    paths: list[tuple[str, str]] = field(default_factory=list)  # (signal, path)
    words: list[tuple[str, str]] = field(default_factory=list)  # (signal, phrase)
    deleted: list[tuple[str, str]] = field(default_factory=list)  # (signal, path) of removed files
    titled: bool = False  # some of the words are the title's or its tags'

    def __bool__(self) -> bool:
        return bool(self.paths or self.words)


def _is_code(classes: frozenset[str]) -> bool:
    return "code" in classes and "code_exclude" not in classes


def is_native(item: Item, facts: Facts, rules: RuleSet) -> bool:
    """Already written for the target: own repository, a target code path, or the title names it."""
    profile = rules.profile
    if item.repo.lower() in profile.native_repos:
        return True
    for path, classes, _ in facts.files:
        if "native" in classes and (_is_code(classes) or path.rsplit("/", 1)[-1].startswith("Dockerfile")):
            return True
    if facts.hit("title", "native") or facts.hit("tags", "native"):
        return True
    return not facts.diffstat and len(facts.hit("body", "native")) >= profile.native_body_min


def _evidence(facts: Facts, rules: RuleSet, key: str, signals: list[str], body_min: int,
              title_decides: bool, kernel: bool, signals_min: int = 99) -> _Evidence:
    """Files and words of `signals`: a code file decides, title words decide when `title_decides`,
    otherwise words need `body_min` distinct phrases or phrases of `signals_min` different signals (title
    and description together). With `kernel`, a code file of the signal counts even when a light glob
    also matches it."""
    found = _Evidence()
    union = rules.signal_pids.get(key, _NO_HITS)
    paths = [sid for sid in signals if facts.counts.get(f"sig:{sid}")]
    if not paths and not (union & (facts.found["title"] | facts.found["tags"] | facts.found["body"])):
        return found  # the common case: nothing of this grade anywhere
    for sid in paths:
        for path, classes, _ in facts.files:
            if f"sig:{sid}" not in classes or ("light" in classes and not (kernel and _is_code(classes))):
                continue
            (found.deleted if path in facts.deleted else found.paths).append((sid, path))
    title = [(sid, rules.index.texts[p]) for sid in signals
             for p in sorted(facts.hit("title", f"s:{sid}") | facts.hit("tags", f"s:{sid}")
                             | facts.hit("tags", f"stag:{sid}"))]
    body = [(sid, rules.index.texts[p]) for sid in signals for p in sorted(facts.hit("body", f"s:{sid}"))]
    pieces = title + body
    if (found or (title and title_decides) or len({w for _, w in pieces}) >= body_min
            or len({sid for sid, _ in pieces if sid in rules.profile.signals_min_from}) >= signals_min):
        found.words += pieces
        found.titled = bool(title)
    return found


def _light_files(facts: Facts, rules: RuleSet) -> bool:
    """Every changed file is light (docs, tests, CI, config), and none is a kernel source."""
    if not facts.files or not facts.diffstat:  # paths a text names are a partial view
        return False
    kernel = {f"sig:{s}" for s in [*rules.profile.signals_l, *rules.profile.native_l]}
    return all("light" in classes and not (kernel & classes and _is_code(classes))
               for _, classes, _ in facts.files)


def _light_kind(kind: str, rules: RuleSet) -> bool:
    return kind in rules.data["grades"].get("light_kinds", [])


def _light_category(facts: Facts) -> str:
    """What the light files are: docs, tests, ci, config (code such as config.py) or mixed."""
    cats = set()
    for path, classes, _ in facts.files:
        if "test" in classes:
            cats.add("tests")
        elif "code" in classes:
            cats.add("config_code")
        elif path.lower().endswith(_DOC_EXT) or path.startswith("docs/"):
            cats.add("docs")
        elif path.startswith(_CI_PARTS) or path.rsplit("/", 1)[-1].startswith("Dockerfile"):
            cats.add("ci")
        else:
            cats.add("config")
    if len(cats) == 1:
        return cats.pop()
    return "config_code" if cats & {"config_code", "tests"} else "mixed"


def _title_hit(facts: Facts, owner: str) -> bool:
    return bool(facts.hit("title", owner) or facts.hit("tags", owner))


def _measured(kind: str, claims: Sequence[PerfClaim], facts: Facts) -> bool:
    """A performance change: its benefit has to be measured again on the target."""
    if kind == "perf" or _title_hit(facts, "g:measure"):
        return True
    return any(c.ratio is not None or (c.before is not None and c.after is not None) for c in claims)


def grade(item: Item, kind: str, claims: Sequence[PerfClaim], facts: Facts,
          rules: RuleSet) -> tuple[str, bool, Text]:
    """(grade, native, reason) of one item. Where the diff was read its device facts decide first: removing the
    target's own code is a breaking change for the target (M, never S); an S whose diff uses another
    platform's libraries or kernels is M (the target needs their counterparts)."""
    code = read_target(item.code, rules.profile.topic, item.repo.lower() in rules.profile.native_repos)
    if code.removes_target:
        return "M", is_native(item, facts, rules), _reason("M_removes_target", _Evidence(), facts, rules,
                                                         removed=[*code.removed, *code.removed_guards[:1]])
    found = _grade(item, kind, claims, facts, rules, code)
    if found[0] == "S" and not found[1] and (code.other or code.kernels):
        return "M", False, _reason("M_device_code", _Evidence(), facts, rules, **_device_code_names(code))
    return found


def _device_code_names(code: TargetCode) -> dict[str, list[str]]:
    """The other platform's libraries (else kernel languages) the diff uses, and the files they are in."""
    return {"libs": code.other_labels() or list(dict.fromkeys(kernel_label(k["lang"]) for k in code.kernels)),
            "files": code.other_files() or list(dict.fromkeys(k["file"] for k in code.kernels))[:2]}


def _grade(item: Item, kind: str, claims: Sequence[PerfClaim], facts: Facts, rules: RuleSet,
           code: TargetCode) -> tuple[str, bool, Text]:
    profile = rules.profile
    if is_native(item, facts, rules):
        return _native_grade(item, kind, facts, rules)
    light = _light_kind(kind, rules) or _light_files(facts, rules)
    if light and not _kernel_files(facts, rules):
        key = f"S_{_light_category(facts)}" if facts.files else "S_kind"
        return "S", False, _reason(key, _Evidence(), facts, rules)
    found = _evidence(facts, rules, "L", profile.signals_l, profile.body_min_l, title_decides=True, kernel=True,
                      signals_min=profile.signals_min_l)
    if found:
        counterpart = _counterpart(found, rules)
        if counterpart:
            return "M", False, _reason("M_counterpart", found, facts, rules, counterpart=counterpart)
        if not (found.paths or found.titled) and code.read and not (code.other or code.kernels or code.other_guards):
            # only the description names device kernels or GPU features (the title names none), and the diff
            # that was read holds no device code and adds no GPU branch: the change itself carries over; what
            # the words name is where its effect comes from, to be checked on the target
            return "M", False, _reason("M_described", found, facts, rules)
        if code.other or code.kernels:  # the diff itself says what it is bound to
            return "L", False, _reason("L_device_code", found, facts, rules, **_device_code_names(code))
        return "L", False, _reason("L", found, facts, rules)
    if found.deleted:
        return "M", False, _reason("M_deleted", _Evidence(paths=found.deleted), facts, rules)
    if _host_side(facts, rules):
        key = "S_host" if host_tool(facts) and not _host_files(facts) else "S_hostpath"
        return "S", False, _reason(key, _Evidence(), facts, rules)
    if _title_hit(facts, "g:benefit") and _device_code(facts):
        # Python logic whose benefit depends on device timing or memory (a cache, memory use): re-measure
        return "M", False, _reason("M_benefit", _Evidence(), facts, rules)
    found = _evidence(facts, rules, "M", profile.signals_m, profile.body_min_m, title_decides=False, kernel=False)
    if found:
        return "M", False, _reason("M", found, facts, rules, what=found.paths or found.words)
    if _measured(kind, claims, facts):
        return "M", False, _reason("M_measure", _Evidence(), facts, rules)
    if not (facts.files and facts.diffstat):
        return "S", False, _reason("S_nofiles", _Evidence(), facts, rules)
    return "S", False, _reason("S" if code.device_free else "S_unread", _Evidence(), facts, rules)


def host_tool(facts: Facts) -> bool:
    """The title names observability or host-side tooling (metrics, logging, profiler), not log probs."""
    return _title_hit(facts, "g:host") and not _title_hit(facts, "g:hostnot")


def _device_code(facts: Facts) -> bool:
    """Some changed code file is not host-side code (or no diffstat tells: a page's title decides)."""
    if not facts.diffstat:
        return True
    return any(_is_code(classes) and "host" not in classes for _, classes, _ in facts.files)


def _model_code(facts: Facts, rules: RuleSet) -> bool:
    """Some changed code file is model structure or lies on a device path (grades.toml `model_paths`, the
    paths of the profile's M signals): what a wrapper of the target's fused ops changes is device behaviour."""
    device = {"model", *(f"sig:{s}" for s in rules.profile.signals_m)}
    return any(_is_code(classes) and device & classes and "host" not in classes for _, classes, _ in facts.files)


def _host_files(facts: Facts) -> list[str]:
    """The changed code files that are host-side code (grades.toml host_paths)."""
    return [path for path, classes, _ in facts.files if _is_code(classes) and "host" in classes]


def _host_side(facts: Facts, rules: RuleSet) -> bool:
    """Host-side work: every changed code file is host-side code, or the title names host-side work
    (tokenizer, API server, metrics ...) and no changed code file lies on a device path."""
    code = [classes for _, classes, _ in facts.files if _is_code(classes)]
    if facts.diffstat and code and all("host" in classes for classes in code):
        return True
    if not (host_tool(facts) or _title_hit(facts, "g:hostwork")):
        return False
    device = {f"sig:{s}" for s in rules.profile.signals_m}
    return not any(device & classes and "host" not in classes for classes in code)


def _counterpart(found: _Evidence, rules: RuleSet) -> list[tuple[str, str]]:
    """(mechanism, counterpart) when every piece of L evidence is a GPU mechanism the porting map says the
    target has a drop-in counterpart for (a `grade = "M"` entry): re-validate it there, nothing to rewrite.
    Empty when any piece is bound to the device with no such counterpart."""
    entries = rules.counterparts
    if not entries:
        return []
    matched: dict[str, tuple[str, str]] = {}
    for _, text in [*found.paths, *found.words]:
        entry = next((e for e in entries if e.matches(text)), None)
        if entry is None:
            return []
        matched[entry.id] = (entry.name, entry.counterpart)
    return list(matched.values())


def _kernel_files(facts: Facts, rules: RuleSet) -> bool:
    kernel = {f"sig:{s}" for s in [*rules.profile.signals_l, *rules.profile.native_l]}
    return any(kernel & classes and _is_code(classes) and path not in facts.deleted
               for path, classes, _ in facts.files)


def _native_grade(item: Item, kind: str, facts: Facts, rules: RuleSet) -> tuple[str, bool, Text]:
    profile = rules.profile
    light = _light_kind(kind, rules) or (_light_files(facts, rules) and not _kernel_files(facts, rules))
    if not light:
        found = _evidence(facts, rules, "native_L", profile.native_l, 99, title_decides=True, kernel=True)
        if found:
            return "L", True, _reason("native_L", found, facts, rules)
        if found.deleted:
            return "M", True, _reason("native_deleted", _Evidence(paths=found.deleted), facts, rules)
        # a version gate or compatibility adaptation is a regression run, unless it changes model structure or
        # code on a device path (an npu_* wrapper beside a GPU fused path: validate it on hardware)
        if _title_hit(facts, "adapt") and item.repo.lower() not in profile.native_repos \
                and not _model_code(facts, rules):
            return "S", True, _reason("native_gate", _Evidence(), facts, rules)
        # host-side code only (tokenizer, API server, scheduler bookkeeping): nothing runs on the device
        code = [classes for _, classes, _ in facts.files if _is_code(classes)]
        if facts.diffstat and code and all("host" in classes for classes in code):
            return "S", True, _reason("native_S_host", _Evidence(), facts, rules)
        found = _evidence(facts, rules, "M", profile.signals_m, 1, title_decides=True, kernel=False)
        return "M", True, _reason("native_M", found, facts, rules, what=found.paths or found.words)
    key = f"native_S_{_light_category(facts)}" if facts.files else "native_S_kind"
    return "S", True, _reason(key, _Evidence(), facts, rules)


RULE_KEY = "_rule"
_WORD_AFTER_WHAT = re.compile(r"\{what\}\s?([\u4e00-\u9fff]+|[A-Za-z]+)")


def _reason(key: str, found: _Evidence, facts: Facts, rules: RuleSet,
            what: Sequence[tuple[str, str]] = (), counterpart: Sequence[tuple[Text, Text]] = (),
            removed: Sequence[str] = (), libs: Sequence[str] = (), files: Sequence[str] = ()) -> Text:
    grades = rules.data["grades"]
    template = grades["reasons"][key]
    target = rules.profile.label
    ranked = _ranked_files(facts)
    generic = grades.get("generic_what", {"en": "Python", "zh": "Python"})
    out = {}
    for lang in _LANGS:
        subject = rules.signal_labels[what[0][0]][lang] if what else generic[lang]
        # a label that ends with the word the template puts after it ("设备执行路径" before "路径") says it once
        after = _WORD_AFTER_WHAT.search(template[lang])
        if after and subject.endswith(after.group(1)) and subject != after.group(1):
            subject = subject[: -len(after.group(1))].rstrip()
        sep = "; " if lang == "en" else "；"
        pairs = sep.join(f"{_lang(name, lang)} → {_lang(other, lang)}" for name, other in counterpart)
        listed = ", " if lang == "en" else "、"
        out[lang] = template[lang].format(evidence=_evidence_text(found, ranked, rules, lang), target=target[lang],
                                          what=subject, area=_area(ranked, grades, lang), counterpart=pairs,
                                          removed=listed.join(removed), libs=listed.join(libs),
                                          files=listed.join(files))
    out[RULE_KEY] = key  # which reason: the caller takes it out (analyse/rules.py) and keeps it as a flag
    return out


def _lang(text: Text, lang: str) -> str:
    return text.get(lang) or text.get("en", "")


def _area(ranked: list[str], grades: Mapping, lang: str) -> str:
    """The package directory of the largest changed file (`verl/trainer`), which a reason names."""
    if not ranked:
        return grades.get("no_area", {"en": "the code", "zh": "代码"})[lang]
    parts = ranked[0].split("/")[:-1]
    return "/".join(parts[:2]) if parts else ranked[0]


def _ranked_files(facts: Facts) -> list[str]:
    """Changed paths, code before docs/tests/config, larger changes first: what a reason should name."""
    ranked = sorted(facts.files, key=lambda f: ("light" in f[1], -f[2]))
    return [path for path, _, _ in ranked]


def _evidence_text(found: _Evidence, ranked: list[str], rules: RuleSet, lang: str) -> str:
    grades = rules.data["grades"]
    forms, limit = grades["evidence"], int(grades.get("max_evidence", 3))
    sep = "; " if lang == "en" else ";"
    seen_paths = list(dict.fromkeys(found.paths))[:limit]
    parts = [forms["path"][lang].format(what=rules.signal_labels[s][lang], path=p) for s, p in seen_paths]
    seen_words = list(dict.fromkeys(w for _, w in found.words))[: max(1, limit - len(parts))]
    parts += [forms["word"][lang].format(word=w) for w in seen_words]
    if not parts:
        parts = _file_list(ranked, forms, limit, lang)
    return sep.join(parts)


def _file_list(ranked: list[str], forms: Mapping[str, Text], limit: int, lang: str) -> list[str]:
    if not ranked:
        return [forms["none"][lang]]
    parts = [forms["files"][lang].format(path=path) for path in ranked[:limit]]
    if len(ranked) > limit:
        parts.append(forms["more"][lang].format(n=len(ranked) - limit))
    return [", ".join(parts) if lang == "en" else "、".join(parts)]
