"""Verification checklists specific to one item, from its own switches, env vars, models, parallel settings,
metrics and kernels (the steps are data: `defaults/rules/checklists.toml`).

A step is kept only when every placeholder it uses has a value for this item, so the same generic line
does not land on most items of a report; the generic fallback steps name the item's own module.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..analyse.porting import Applied
from ..analyse.target_code import for_target
from ..config import rule_data, rules_cache
from ..models import AnalysedItem
from .base import context_text
from .cjk import squeeze_cjk
from .escape import Md, code, fmt, join
from .escape import text as escape_text
from .explain import code_module, explain_body, file_role, identifiers, sentences
from .zh_words import function_words


@rules_cache
def checklist_rules() -> dict[str, Any]:
    """The checklist rules (the active rules directory's tables over the packaged ones), their patterns compiled."""
    data = rule_data("checklists")
    alt = "|".join(re.escape(m) for m in sorted(data["model_families"], key=len, reverse=True))
    data["_model"] = re.compile(rf"\b(?:{alt})[\w.\-]*\d[\w.\-]*", re.I)
    hw = "|".join(re.escape(h) for h in sorted(data["hardware"], key=len, reverse=True))
    data["_hardware"] = re.compile(rf"(?<![\w-])(?:{hw})(?![\w-])")
    par = "|".join(sorted(data["parallel"], key=len, reverse=True))
    data["_parallel"] = re.compile(rf"\b(?:(?:{par})\s?=?\s?\d+|(?:{par.lower()})(?:_size)?\s?=\s?\d+|(?:{par})\d+)\b")
    prefixes = "|".join(re.escape(p) for p in data["env_prefixes"])
    # a known prefix, or any UPPER_SNAKE name given a value
    data["_env"] = re.compile(rf"\b(?:(?:{prefixes})[A-Z0-9_]+(?:=[\w.-]+)?|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){{2,}}=[\w.-]+)")
    names = "|".join(re.escape(n) for n in sorted(data["version_names"], key=len, reverse=True))
    data["_version"] = re.compile(rf"(?<![\w-])(?:{names})\s?(?:[<>]=?|==|v)?\s?\d+\.\d+(?:\.\d+)?\+?")
    data["_graph"] = re.compile("|".join(re.escape(m) for m in data["graph_modes"]))
    data["_elsewhere"] = re.compile("|".join(re.escape(w) for w in data.get("elsewhere_words", [])) or r"(?!x)x", re.I)
    return data


_CLASS_TAIL = re.compile(r"\d[\w.\-]*?[a-z][A-Z][a-z]+[\w.\-]*?[a-z][A-Z][a-z]")


def model_names(text: str) -> list[str]:
    """The model names a text mentions (checklists.toml model_families followed by a version): never a class
    named after a model (`Qwen3OmniMoeThinkerTextExperts`, `Qwen2VLForConditionalGeneration`), whose part after
    the version runs two capitalised words together."""
    found = (m.rstrip(".-") for m in checklist_rules()["_model"].findall(text))
    return [m for m in found if not _CLASS_TAIL.search(m)]


_BOOL = re.compile(r"(?<![\w.])([A-Za-z_]\w*[_.][\w.]{1,80}\s?[:=]\s?(?:True|False|true|false))\b")
_FLAG = re.compile(r"(?<![\w.-])(--[a-z][\w-]{2,40}(?:[= ](?:True|False|true|false|\d+(?:\.\d+)?))?)")
_NAMED = re.compile(r"`([\w.\-]{3,80})`\s+(?:flag|option|switch|knob|argument|parameter|config)\b", re.I)
_SYMPTOM = re.compile(r"\b(error|fail|crash|hang|nan|wrong|incorrect|drop|oom|mismatch|exception|deadlock|leak|"
                      r"regress|broken|accuracy|assert)\w*", re.I)


def _code(values: list[str], sep: str) -> Md:
    return join([code(v) for v in values], sep)


def item_switches(ai: AnalysedItem) -> tuple[list[str], list[str]]:
    """(the switches an item adds or names where it says what it does: flags, `key=True/False`, a named
    option; the environment variables its text sets)."""
    r = checklist_rules()
    item = ai.item
    explained = explain_body(item.body)
    own = f"{item.title}\n" + " ".join(t for _, t in explained.mechanism + explained.motivation)
    # switches and variables come from what the change says, never from a command line, a log or a script
    # that only reproduces a benchmark
    text = prose_text(item)
    named = [n for n in _NAMED.findall(own) if n in text]
    # a key=True/False setting the author gives in prose, not one a table's cell describes
    bools = [b for b in (re.sub(r"\s?([:=])\s?", "=", m) for m in _BOOL.findall(prose_text(item, tables=False)))
             if b.split("=")[0].rsplit(".", 1)[-1] in own]
    tooling = set(r["tool_flags"])
    flags = [f for f in _FLAG.findall(own) if f.split("=")[0].split(" ")[0] not in tooling
             and f.split("=")[0].split(" ")[0] in text]  # said in prose, not only in a (cut) command block
    switches = list(dict.fromkeys(named + bools + flags))
    # one switch per key: `pad_x=True` and `pad_x=False` are the same switch
    switches = list({sw.split("=")[0].rsplit(".", 1)[-1]: sw for sw in reversed(switches)}.values())[::-1]
    envs = list(dict.fromkeys(r["_env"].findall(text)))
    elsewhere = _elsewhere(text)
    return ([s for s in switches if not elsewhere(s)], [e for e in envs if not elsewhere(e)])


def outside_tables(text: str) -> str:
    """`text` without its tables: from a line opening with "|" to the next blank line, so a row a squash commit
    wrapped over several lines goes too. What a table's cells describe (a symptom, a root cause, another
    project's default) is not a setting of the change."""
    kept, in_table = [], False
    for line in text.split("\n"):
        bare = line.strip()
        if bare.startswith("|"):
            in_table = True
        elif not bare:
            in_table = False
        if not in_table:
            kept.append(line)
    return "\n".join(kept)


def prose_text(item: Any, limit: int = 20000, tables: bool = True) -> str:
    """The title and the prose lines of the description: no code block, command line, log or stack trace (with
    `tables` off, no table either: `outside_tables`)."""
    body = item.body[:limit]
    return f"{item.title}\n" + _prose_of(body if tables else outside_tables(body))


@lru_cache(maxsize=256)
def _prose_of(body: str) -> str:
    """The prose lines of a description, kept for the last ones asked (the conclusion and the checklist of one
    report read each description more than once)."""
    from ..analyse.figures import prose_lines

    return "\n".join(line for _, line in prose_lines(body))


def _elsewhere(text: str) -> Any:
    """Whether a switch is named in a sentence saying it runs only on another platform (checklists.toml
    `elsewhere_words`), or sets a device of another platform (`X=cuda`)."""
    r = checklist_rules()
    words = r["_elsewhere"]
    lines = text.split("\n")

    def test(switch: str) -> bool:
        if words.search(switch):
            return True
        key = switch.split("=")[0].rsplit(".", 1)[-1]
        return any(key in line and words.search(line) for line in lines)

    return test


def item_facts(ai: AnalysedItem, lang: str, porting: list[Applied]) -> dict[str, str]:
    """The values the checklist placeholders take for this item ("" when the item gives none)."""
    r = checklist_rules()
    item, a = ai.item, ai.analysis
    explained = explain_body(item.body)
    # the change's own switches are named where it says what it does, not in its benchmark commands
    own = f"{item.title}\n" + " ".join(t for _, t in explained.mechanism + explained.motivation)
    text = prose_text(item)
    full = f"{item.title}\n{item.body[:20000]}"  # models and hardware a benchmark ran on count wherever named
    sep = "、" if lang == "zh" else ", "
    switches, envs = item_switches(ai)
    code_default, code_switches, code_envs, code_versions = _from_code(item.code)
    kept: dict[str, str] = {}  # what the diff adds first, one per key
    for sw in code_switches + switches:
        kept.setdefault(sw.split("=")[0].rsplit(".", 1)[-1], sw)
    switches = list(kept.values())
    envs = list(dict.fromkeys(code_envs + envs))
    models = list(dict.fromkeys([c.context["model"] for c in a.perf_claims if c.context.get("model")]
                                + model_names(full)))
    parallel = list(dict.fromkeys(p.replace(" ", "") for p in r["_parallel"].findall(text)))
    hardware = list(dict.fromkeys(r["_hardware"].findall(full)))
    from .escape import plain
    from .metrics import metric_name

    # a metric named with English grammar words ("wall clock for 150 steps") said with Chinese joints in zh
    metrics = list(dict.fromkeys(plain(metric_name(c.metric, lang)) if lang == "zh" and function_words(c.metric)
                                 else c.metric for c in a.perf_claims))
    versions: dict[tuple[str, str], str] = {}  # one spelling of each version, the first the item gives
    for v in code_versions + r["_version"].findall(own):  # ("vLLM 0.19+", "vLLM 0.19.0", "vLLM >= 0.19.0": one)
        versions.setdefault(_version_key(v), " ".join(v.split()))
    conditions = []
    for c in a.perf_claims[:1]:
        conditions = [context_text(c.context, {"context": _context_names(lang)})] if c.context else []
    kernel_files = [f.path.rsplit("/", 1)[-1] for f in item.files if file_role(f.path) == "kernel"]
    symptom = ""
    for _, block in explained.motivation + explained.mechanism[:2]:
        hit = next((s for s in sentences(block) if _SYMPTOM.search(s)), "")
        if hit:  # named in our words (the rules' symptom cues), never the author's sentence quoted
            symptom = sep.join(symptom_names(hit, lang))
            break
    topics = set(a.topics)
    training = item.repo in r["training_repos"] or bool(topics & set(r["training_topics"]))
    low = f"{item.title}\n{' '.join(t for _, t in explained.mechanism + explained.motivation)}".lower()
    eager = {m.lower() for m in r.get("eager_modes", [])}
    modes = [m for m in dict.fromkeys(r["_graph"].findall(text)) if m.lower() not in eager]
    gpu = [p for p in porting if p.entry.id != "npu-native"]
    # a long dotted config key by its last part (`pad_bshd_to_minibatch_max`): the step stays one line
    switches = [sw.rsplit(".", 1)[-1] if len(sw) > 32 and "." in sw.split("=")[0] else sw for sw in switches]
    # "on and off" is said of a switch, not of one setting: bare switches first; a `key=value` the author names
    # beside them is a precondition (use_remove_padding=False), and alone it is said by its key
    switches = [sw for sw in switches if "=" not in sw] or [sw.split("=", 1)[0].strip() for sw in switches[:1]]
    facts = {
        "switches": _code(switches[:2], sep), "envs": _code(envs[:2], sep), "model": sep.join(models[:2]),
        "hardware": sep.join(hardware[:2]), "parallel": sep.join(parallel[:3]),
        "metrics": sep.join(metrics[:3]), "conditions": sep.join(conditions[:3]),
        "kernels": _code(list(dict.fromkeys(kernel_files))[:3], sep), "symptom": symptom,
        "versions": sep.join(list(versions.values())[:3]),
        "modes": _code(modes[:3], sep), "module": code(code_module(item.files)) if item.files else "",
        "entry": gpu[0].entry.name.get(lang, gpu[0].entry.name["en"]) if gpu else "",
        "counterpart": gpu[0].counterpart.get(lang, gpu[0].counterpart.get("en", "")) if gpu else "",
        "code_default": code(code_default) if code_default else "",
    }
    flags = {"training": training, "serving": not training,
             "code": a.item_kind not in r.get("housekeeping_kinds", []),
             "kernel": bool(kernel_files) or "kernels" in topics,
             "bugfix": a.item_kind in ("bugfix", "issue-bug"),
             "weight-sync": any(w in low for w in r["weight_sync_words"]),
             "graph": bool(modes) or any(p.entry.id == "cuda-graph" for p in porting),
             "porting": bool(gpu), **{f"topic:{t}": True for t in topics},
             # the parallel setting is the change's own: named in its title or where it says what it does
             "parallel-own": any(p in own.replace(" ", "") for p in parallel),
             # not all on the host: its code files are not all host-side (tokenizer, API server, scheduler,
             # data loading) by their paths or by the read diff; a loss curve checks what runs on the device
             "device-side": "host-code" not in a.features and not for_target(item, "ascend").host_only}
    # the kind of change, as the dive's verification reads it (render/change_kind.py): its steps come first
    from .change_kind import change_kind, removed_names

    kind = change_kind(ai)
    if kind.id:
        flags[f"kind:{kind.id}"] = True
    removed = removed_names(ai) if kind.id == "removal" else []
    facts["removed"] = _code(removed, sep) if removed else ""
    facts["_flags"] = flags  # type: ignore[assignment]
    facts["_ids"] = identifiers(text, 3)  # type: ignore[assignment]
    return facts


_SWITCH_VALUES = {"true", "false", "on", "off", "yes", "no", "0", "1"}
_ON_VALUES = {"true", "on", "yes", "1"}


def _from_code(facts: dict | None) -> tuple[str, list[str], list[str], list[str]]:
    """What the diff gives the checklist: the first switch default it sets or moves ("name = value"), the
    switches and environment variables it adds, and the versions its gates now ask for ("vllm >= 0.25.1")."""
    if not facts:
        return "", [], [], []
    # a default moved, or a new switch shipped on: a new switch shipped off changes nothing for old configs
    moved = [d for d in facts.get("defaults", []) if str(d.get("value", "")).strip("\"'").lower() in _SWITCH_VALUES
             and (d.get("previous") != d.get("value") if d.get("previous") is not None
                  else str(d.get("value", "")).strip("\"'").lower() in _ON_VALUES)]
    default = f"{moved[0]['name']} = {moved[0]['value']}" if moved else ""
    switches = [d["name"] for d in moved]
    added = [s for s in facts.get("switches", []) if s.get("change") == "added"]
    switches += [s["name"] for s in added if s.get("kind") == "cli"]
    envs = [s["name"] for s in added if s.get("kind") == "env"]
    from ..analyse.code_facts import gate_said

    versions = [gate_said(g) for g in facts.get("version_gates", []) if g.get("after")]
    return default, list(dict.fromkeys(switches)), list(dict.fromkeys(envs)), list(dict.fromkeys(versions))


def _version_key(spelled: str) -> tuple[str, str]:
    """A version mention as (product, number without trailing ".0"s): "vLLM 0.19+", "vLLM >= 0.19.0" and
    "vllm v0.19" are one version."""
    found = re.match(r"(.*?)\s?(?:[<>]=?|==|v)?\s?(\d+(?:\.\d+)*)\+?$", spelled.strip())
    if not found:
        return (spelled, "")
    number = re.sub(r"(?:\.0)+$", "", found.group(2))
    return (found.group(1).lower(), number)


def symptom_names(sentence: str, lang: str, most: int = 2) -> list[str]:
    """What a sentence says went wrong, as the conclusion rules name it ("NaN", "崩溃或报错")."""
    from .mechanism import rules as conclusion_rules

    low = sentence.lower()
    found = [cue.get(lang) or cue["en"] for cue in conclusion_rules().data["motivation"]["cues"]
             if any(w in low for w in cue["words"])]
    return found[:most]


@lru_cache(maxsize=2)
def _context_names(lang: str) -> dict[str, str]:
    from .base import load_strings

    return load_strings(lang)["context"]


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def item_checklist(ai: AnalysedItem, lang: str, target: str, porting: list[Applied]) -> list[Md]:
    """The verification steps of one item, specific first; generic fallbacks only when it gives too little."""
    return checklist_options(ai, lang, target, porting)[0]


def checklist_options(ai: AnalysedItem, lang: str, target: str, porting: list[Applied],
                      sources: dict[str, tuple[str, dict[str, str]]] | None = None) -> tuple[list[Md], list[Md]]:
    """(steps, alternates): the item's steps, and the other fallbacks that also fit it (for a report that
    would otherwise repeat one fallback on too many items)."""
    r = checklist_rules()
    facts = item_facts(ai, lang, porting)
    flags = facts.pop("_flags")  # type: ignore[misc]
    facts.pop("_ids")
    values = {**facts, "target": target}

    def usable(step: dict[str, Any]) -> bool:
        if not all(flags.get(w) for w in step.get("when", [])):
            return False
        if any(flags.get(w) for w in step.get("unless_when", [])):  # a step of that kind says it instead
            return False
        if any(values.get(k) for k in step.get("unless", [])):
            return False
        needed = set(_PLACEHOLDER.findall(step["text"]["en"])) | set(step.get("needs", []))
        return all(values.get(k) for k in needed)

    escaped = {k: escape_text(v) if v else v for k, v in values.items()}  # each value escaped once, not per step

    def text(step: dict[str, Any]) -> Md:
        phrase = step["text"].get(lang, step["text"]["en"])
        # every value is escaped already: a phrase with no `{field}` in backticks is put together as it is
        out = fmt(phrase, **escaped) if "`{" in phrase else Md(phrase.format(**escaped))
        return squeeze_cjk(out) if lang == "zh" else out

    if sources is not None:  # each step's rule and the values it was filled with (its evidence record)
        for group in ("step", "fallback", "spare"):
            for i, s in enumerate(r.get(group, [])):
                if usable(s):
                    used = set(_PLACEHOLDER.findall(s["text"]["en"])) | set(s.get("needs", []))
                    sources[str(text(s))] = (f"{group}[{i}]", {k: str(values[k]) for k in sorted(used) if values.get(k)})
    steps = [text(s) for s in r["step"] if usable(s)][: int(r["max_steps"])]
    fallbacks = [text(s) for s in r["fallback"] if usable(s)]
    need = max(int(r["min_steps"]) - len(steps), 0)
    steps += fallbacks[:need]
    spares = [text(s) for s in r.get("spare", []) if usable(s)]
    return list(dict.fromkeys(steps)), fallbacks[need:] + spares


def checklist_sources(ai: AnalysedItem, lang: str, target: str,
                      porting: list[Applied]) -> list[tuple[str, str, dict[str, str]]]:
    """(step, the rule it was built from, the item's values it names) for each step the item's checklist may show."""
    from .escape import plain

    sources: dict[str, tuple[str, dict[str, str]]] = {}
    steps, alternates = checklist_options(ai, lang, target, porting, sources)
    # a report may show an alternate in place of a step another item already has: both have their records
    return [(plain(s), *sources[str(s)]) for s in dict.fromkeys([*steps, *alternates]) if str(s) in sources]


_CODE = re.compile(r"`[^`]*`|“[^”]*”|\([^)]*\)|（[^）]*）|[\d.]+")


@lru_cache(maxsize=1)
def _templates() -> list[tuple[str, re.Pattern[str], bool]]:
    """Every step text of the rules, in each language, as a pattern capturing its placeholders; with whether
    the values it names make it another step (a step's switches, env vars, kernels or versions are the item's
    own) or not (a fallback on a module, or a step of a `group`: the same sentence for any item)."""
    r = checklist_rules()
    out = []
    for group in ("step", "fallback", "spare"):
        for i, step in enumerate(r.get(group, [])):
            for text in step["text"].values():
                parts = _PLACEHOLDER.split(text)  # literal, name, literal, name, ...
                # a space of the template may be gone next to a value in CJK (`squeeze_cjk`)
                body = "".join(re.escape(p).replace("\\ ", " ?") if k % 2 == 0 else "(.+?)"
                               for k, p in enumerate(parts))
                by_value = group == "step" and not step.get("group")
                out.append((step.get("group") or f"{group}:{i}", re.compile(body, re.S), by_value))
    return out


def shape(step: str) -> str:
    """What a step is: the rule it was built from, with the item's own values when they make it another step
    (a module or a model filled into a fallback or a grouped step is the same step), else its text without
    code spans, quotes, parentheses and numbers."""
    for key, pattern, by_value in _templates():
        found = pattern.fullmatch(step)
        if found:
            return f"{key}|{'|'.join(found.groups())}" if by_value else key
    return " ".join(_CODE.sub(" ", step).split())


def spread_out(checklists: list[list[str]], alternates: list[list[str]] | None = None,
               most: int | None = None) -> list[list[str]]:
    """Checklists of one report where no step (the rule it was built from, `shape`) is on more than `max_share`
    of the items. Items are served in order (the deep dives first): a step already used as often as allowed
    is dropped from a later item that has other steps, swapped for another step that fits it when it has
    none, and otherwise left out, so an item with nothing of its own shows no line rather than a generic one.
    `most`: the steps an item shows at most (only those count as used)."""
    n = sum(1 for steps in checklists if steps)  # the share is of the items that show a checklist
    if n < 2:
        return checklists
    alternates = alternates or [[] for _ in checklists]
    limit = max(1, int(float(checklist_rules().get("max_share", 0.25)) * n))
    used: dict[str, int] = {}
    out = []
    for steps, spare in zip(checklists, alternates, strict=True):
        kept: list[str] = []
        shapes: set[str] = set()
        for step in [*steps, *spare]:
            sh = shape(step)
            if sh in shapes or used.get(sh, 0) >= limit:
                continue
            if step not in steps and kept:  # an alternate only stands in for an item with nothing left
                break
            kept.append(step)
            shapes.add(sh)
            if most is not None and len(kept) >= most:
                break
        for sh in shapes:
            used[sh] = used.get(sh, 0) + 1
        out.append(kept)
    return out


def verify_text(ai: AnalysedItem, t: dict[str, Any], target: str, profile: str, kind: str) -> Md:
    """The first `verify` variant of the kind whose placeholders all have a value for the item ("" for none)."""

    from ..analyse.porting import applied
    from .change_kind import kinds
    from .explain import described

    rule = next((r for r in kinds() if r["id"] == kind), None)
    if rule is None or not rule.get("verify"):
        return Md("")
    lang = t["lang"]
    facts = item_facts(ai, lang, applied(ai.item, profile, text=described(ai.item.body)))
    facts.pop("_flags", None)
    facts.pop("_ids", None)
    values: dict[str, Any] = {k: v for k, v in facts.items() if isinstance(v, str)}
    values["target"] = target
    for variant in rule["verify"]:
        phrase = variant.get(lang) or variant["en"]
        needed = set(re.findall(r"\{(\w+)\}", phrase))
        if all(values.get(k) for k in needed):
            said = fmt(phrase, **{k: values[k] for k in needed})
            return squeeze_cjk(said) if lang == "zh" else said
    return Md("")
