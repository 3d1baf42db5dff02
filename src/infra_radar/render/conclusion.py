"""The one-sentence conclusion of an item, the team's way and with no model: what changes (the mechanism in
the item's own identifiers, render/mechanism.py), the headline figure with its direction and condition, and
the consequence for the target (what carries over, what must be re-measured; `conclusions.toml`
[[consequence]]). In zh the frame is Chinese and the author's objects stay English; nothing is quoted.

A sentence that would be too wide is built shorter (fewer identifiers, no condition, one action, fewer
modifiers, shorter phrases), never cut.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..analyse.device_facts import kernel_label
from ..analyse.porting import Applied, profile_topics
from ..analyse.summary import _best_claim, calls_flat, no_gain
from ..analyse.target_code import for_target
from ..models import AnalysedItem, PerfClaim
from .base import change_text, context_text, name, pick, signed, with_unit
from .cjk import tidy
from .escape import Md, code, fmt, plain, start, text
from .explain import doing_sentence, explain_body, identifiers
from .mechanism import is_identifier, read, rules
from .metrics import metric_name
from .saying import say, say_zh_or_none
from .titles import title_head
from .zh_words import spliced

_WORD = re.compile(r"[a-z0-9]+")
_ENV = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,}")


def _words(text_: str) -> set[str]:
    return set(_WORD.findall(text_.lower()))


_TAGS = re.compile(r"\[[^\]]*\]")


def bare_title(title: str) -> str:
    """The title without its bracketed tags ("[Feature][Ops] …")."""
    return _TAGS.sub(" ", title).strip()


def echoes(text_: str, title: str) -> bool:
    """True when `text_` says little beyond the title: most of its words are the title's words."""
    words, head = _words(text_), _words(bare_title(title))
    if not words:
        return True
    return len(words - head) <= max(2, len(words) // 4)


def central_identifiers(ai: AnalysedItem, limit: int) -> list[str]:
    """The identifiers the description is about: the most mentioned first, then by first mention."""
    explained = explain_body(ai.item.body)
    said = " ".join(t for _, t in explained.mechanism + explained.motivation)
    found = identifiers(said)
    if not found:
        return []
    if ai.analysis.native or "npu" in ai.analysis.topics:  # a change for the target: not the path it leaves alone
        found = [i for i in found if not _elsewhere_only(i, said)]
    # named in the author's prose, not only in a command line or a log (an unclosed fence of a cut page runs on
    # to the end: a reproduction's `key=value` arguments are not the change's names)
    from .checklist import prose_text

    prose = prose_text(ai.item)
    found = [i for i in found if i in prose]
    # a setting named only in a table's cells (a root-cause column: "all workers `local_rank=0`") is a state the
    # table describes, not a name of the change
    untabled = prose_text(ai.item, tables=False)
    found = [i for i in found if "=" not in i or i in untabled]
    if not found:
        return []
    body = ai.item.body[:20000]
    counts = Counter({ident: body.count(ident) for ident in found})
    order = {ident: i for i, ident in enumerate(found)}

    def weight(x: str) -> int:  # env vars, Class.attr and key=value name the change more exactly
        exact = bool(_ENV.match(x)) or "=" in x
        return min(counts[x], 5) + (2 if exact else 1 if "." in x[1:] else 0)

    picked: list[str] = []
    for ident in sorted(found, key=lambda x: (-weight(x), order[x])):
        inside = next((i for i, p in enumerate(picked) if p in ident), None)
        if inside is not None:  # the longer name says more: `forced_max_seqlen` over `forced_max`
            picked[inside] = ident
            continue
        if any(ident in p for p in picked):
            continue
        picked.append(ident)
    # what the title already names goes last: the conclusion should add to the title, not repeat it
    title = ai.item.title.lower()
    return sorted(picked, key=lambda x: x.lower() in title)[:limit]


def _elsewhere_only(ident: str, text: str) -> bool:
    """Whether every sentence naming `ident` says it is another platform's path ("`flash_qla` stays the GPU
    path"; checklists.toml `elsewhere_words`): an NPU change's row does not list it among its own names."""
    from .checklist import checklist_rules
    from .explain import sentences

    words = checklist_rules()["_elsewhere"]
    naming = [s for s in sentences(text) if ident in s]
    return bool(naming) and all(words.search(s) for s in naming)


# --- the figure ------------------------------------------------------------------------------------


def headline_claim(claims: list[PerfClaim], goal: set[str] | None = None) -> PerfClaim | None:
    """The figure to quote: the author's first figure when it is a clear win (≥ 10%: the author's own
    headline), else the largest improvement on the change's goal, a slowdown only when nothing improved (then
    written as one), the first figure when no direction is known (analyse.summary)."""
    if not claims:
        return None
    first = claims[0]
    if first.ratio is not None and first.ratio >= 1.1 and first.before is not None and first.after is not None:
        return first
    return _best_claim(claims, goal)


def _signed_pct(c: PerfClaim) -> str:
    return signed(c.change_pct, 1, "%") if c.change_pct is not None else ""


_TIME_UNITS = {"s", "ms", "μs", "us", "ns", "min", "h"}
_MEMORY_UNITS = {"B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"}


def _worse(unit: str) -> str:
    """Which word says a figure got worse: slower (a time), more memory, else worse."""
    return "slower" if unit in _TIME_UNITS else "more_memory" if unit in _MEMORY_UNITS else "worse"


def claim_text(c: PerfClaim, t: dict[str, Any], flat: bool = False, condition: bool = True) -> Md:
    """A figure with its direction and condition: "Qwen3.5-35B-A3B 上 Total Step Time 534.13 s → 397.71 s
    （−25.5%）"; a slowdown says so, as does a result its author calls unchanged. Percent and factor are the
    claim's own (computed from its before and after)."""
    f = t["figure"]
    metric = Md(metric_name(c.metric, t["lang"]))
    if c.before is not None and c.after is not None:
        body = f"{metric} {with_unit(c.before, c.unit)} → {with_unit(c.after, c.unit)}"
        notes = [_signed_pct(c)] if c.change_pct is not None else []
        if c.ratio is not None and c.ratio >= 2:
            notes.append(f"{c.ratio:g}×" if c.ratio < 100 else f"{c.ratio:.0f}×")
        if flat:
            notes.append(f["flat"])
        elif c.ratio is not None and c.ratio < 1:
            notes.append(f[_worse(c.unit)])
    elif c.after is not None:
        body, notes = f"{metric} {with_unit(c.after, c.unit)}", []
    else:
        body, notes = f"{metric} {change_text(c)}", [f["flat"]] if flat else []
    notes = [n for n in notes if n]
    if notes:
        body += t["common"]["paren"].format(t["common"]["comma"].join(notes))
    cond = context_text({k: v for k, v in c.context.items() if k in ("model", "hardware", "concurrency", "batch")},
                        t) if condition else ""
    if cond:
        cond = t["common"]["sep"].join(cond.split(t["context"]["joiner"])[:2])
    return Md(tidy(f["on"].format(cond=text(cond), figure=body)) if cond and t["lang"] == "zh"
              else f["on"].format(cond=text(cond), figure=body) if cond else body)


# --- the consequence -------------------------------------------------------------------------------


def target_short(target: str, lang: str) -> str:
    """The target's name in a conclusion ("NPU")."""
    names = rules().data.get("targets", {}).get(target, {})
    return names.get(lang) or names.get("en") or target


def _platform(ai: AnalysedItem, target: str) -> tuple[str, str]:
    """Which platform the item is about, from its own topics (the topic of a target profile, grades.toml):
    ("target", "") when it is the target's, ("other", profile) when only another profile's, else ("", "")."""
    topics, own = set(ai.analysis.topics), profile_topics()
    if own.get(target) in topics:
        return "target", ""
    other = next((p for p, topic in own.items() if p != target and topic in topics), "")
    return ("other", other) if other else ("", "")


def _flags(ai: AnalysedItem, porting: list[Applied], figure: bool, platform: str = "",
           target: str = "ascend") -> set[str]:
    a, item = ai.analysis, ai.item
    state = "open" if item.draft else item.state
    gpu = [p for p in porting if p.entry.id != "npu-native"]
    flags = {f"kind:{a.item_kind}", f"grade:{a.grade}", f"state:{state}", f"decision:{a.decision}",
             *(f"topic:{x}" for x in a.topics), *(f"risk:{r}" for r in a.risk_labels),
             *(f for f in a.features if f.startswith("graded:"))}
    if a.native:
        flags.add("native")
    if gpu and not a.native:
        flags.add("porting")
    if figure:
        flags.add("figure")
    if no_gain(a.perf_claims, item.body):
        flags.add("no-gain")
    if platform:
        flags.add(f"platform:{platform}")
    return flags | _code_flags(ai, target)


def _code_flags(ai: AnalysedItem, target: str) -> set[str]:
    """What the diff says for the target (analyse/target_code.py): diff:<TargetCode.primary()>, host-only,
    removes-target."""
    code = for_target(ai.item, target)
    flags = {f"diff:{code.primary()}"}
    if code.read and code.host_only:
        flags.add("host-only")
    if code.removes_target:
        flags.add("removes-target")
    if code.own_removed:
        flags.add("removes-own")
    return flags


def consequence(ai: AnalysedItem, t: dict[str, Any], porting: list[Applied], target: str, short: bool = False,
                figure: bool = False) -> Md:
    """What the change means for the target, from the first [[consequence]] rule whose flags hold."""
    platform, other = _platform(ai, target)
    lang, flags = t["lang"], _flags(ai, porting, figure, platform, target)
    gpu = [p for p in porting if p.entry.id != "npu-native"]
    found = for_target(ai.item, target)
    listed = ", " if lang == "en" else "、"
    values = {"devices": listed.join(found.other_labels() or dict.fromkeys(kernel_label(k["lang"]) for k in found.kernels)),
              "guards": Md(listed.join(str(code(g["line"])) for g in found.other_guards[:1])),
              "aux": Md(listed.join(str(code(f)) for lib in found.aux for f in lib["files"][:1])),
              "removed": Md(listed.join([*(str(text(r)) for r in (found.removed or found.own_removed)[:2]),
                                         *(str(code(r)) for r in found.removed_guards[:1])])),
              "target": target_short(target, lang),
              "brief": pick(gpu[0].brief, lang) if gpu else "",
              "entry": pick(gpu[0].entry.name, lang) if gpu else "",
              "platform": target_short(other, lang) if other else ""}
    for rule in rules().data.get("consequence", []):
        if all(f in flags for f in rule.get("when", [])) and not any(f in flags for f in rule.get("unless", [])):
            chosen = rule["short" if short and "short" in rule else "text"]
            return fmt(pick(chosen, lang), **values)  # our phrase (conclusions.toml); its values as text
    return Md(text(name(t, "decisions", ai.analysis.decision)))


# --- the mechanism ---------------------------------------------------------------------------------

_SUBJECT = re.compile(r"^(?:this (?:pr|patch|change|commit|fix)|we|it)\s+(?:now\s+|also\s+|mainly\s+)?", re.I)


def title_actions(ai: AnalysedItem) -> tuple[list[Any], str]:
    """(the actions the item's title states, else those of its description's "This PR adds ..." sentence;
    the title itself when it is in Chinese)."""
    kind_verb = rules().data["kinds"]["verbs"].get(ai.analysis.item_kind, "")
    actions, chinese = read(ai.item.title, kind_verb)
    if not chinese and not actions:
        doing = doing_sentence(ai.item.body, ai.item.title)
        actions, _ = read(_SUBJECT.sub("", doing), kind_verb) if doing else ([], "")
    return actions, chinese


def mechanism(ai: AnalysedItem, t: dict[str, Any], most: int | None = None, mods: int | None = None,
              count: int | None = None, read_as: tuple[list[Any], str] | None = None) -> Md:
    """What the item changes, in one clause: its title read, else the description's "This PR adds ..."
    sentence read, else the kind with the description's identifiers; framed by the kind (RFC, bug report).
    `read_as`: the item's `title_actions`, when the caller has them already."""
    r, lang = rules().data, t["lang"]
    kind = ai.analysis.item_kind
    actions, chinese = read_as if read_as is not None else title_actions(ai)
    if chinese:
        clause = Md(text(chinese))
    elif lang == "zh" and actions:
        # every object of the title survives: a Chinese clause keeps its phrases whole (a shorter sentence
        # drops modifiers, a second action, names, never a phrase's words); a clause the rules cannot build
        # in Chinese is not built, the title is given as a title
        whole = say_zh_or_none(actions, mods, count)
        if whole is None:
            return titled(ai)
        clause = whole
    else:
        clause = say(actions, lang, most, mods, count) if actions else Md("")
    if not clause:
        ids = central_identifiers(ai, 2) or _code_files(ai)
        kind_name = name(t, "kinds", kind)
        if ids:
            sep = "、" if lang == "zh" else ", "
            clause = Md(f"{kind_name}{'，涉及' if lang == 'zh' else ' touching'} {sep.join(code(i) for i in ids)}")
        else:
            clause = Md(r["kinds"]["bare"][lang].format(kind=kind_name))
        return Md(tidy(clause) if lang == "zh" else clause)
    frame = r["kinds"]["frame"].get(kind)
    if frame:
        clause = Md(frame[lang].replace("{x}", clause))
    return Md(tidy(clause) if lang == "zh" else clause)


class Titled(Md):
    """The item's English title given as a title, where the rules cannot say it as a Chinese clause."""


def titled(ai: AnalysedItem) -> Titled:
    """The item's title, its tags and conventional prefix dropped, as a title (never inside a Chinese clause)."""
    from .mechanism import clean_title

    return Titled(text(clean_title(ai.item.title)[0] or ai.item.title.strip()))


def _models_and_hardware(ai: AnalysedItem) -> list[str]:
    """The models and hardware the item's figures or description name (checklists.toml families)."""
    from .checklist import checklist_rules, model_names

    r = checklist_rules()
    text = f"{ai.item.title}\n{ai.item.body[:20000]}"
    models = [c.context["model"] for c in ai.analysis.perf_claims if c.context.get("model")]
    models += model_names(text)
    return list(dict.fromkeys([*models, *r["_hardware"].findall(text)]))


def _code_files(ai: AnalysedItem, most: int = 2) -> list[str]:
    """The names of the code files an item changes most (a version bump touches only config: name it)."""
    from .explain import file_role

    files = ai.item.files
    code_ = [f for f in files if file_role(f.path) not in ("tests", "docs", "config")] or files
    ordered = sorted(code_, key=lambda f: (-((f.additions or 0) + (f.deletions or 0)), f.path))
    return list(dict.fromkeys(f.path.rsplit("/", 1)[-1] for f in ordered))[:most]


# --- the sentence ----------------------------------------------------------------------------------

_CODE_OR_LINK = re.compile(r"`+[^`]*`+|\]\([^)]*\)")
_LATIN_WORD = re.compile(r"[A-Za-z][\w.+/-]*")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def width(md: str) -> int:
    """Display width of built Markdown as a reader sees it: a CJK character counts two, code fences, link
    targets and escapes nothing."""
    shown = re.sub(r"\]\([^)]*\)", "]", plain(Md(md))).replace("`", "")
    return sum(2 if "\u2e80" <= ch <= "\uffef" else 1 for ch in shown)


def chinese_main(md: str, margin: float = 1.0) -> bool:
    """Whether Chinese is the main language of `md` outside code spans and links: at least `margin` CJK
    characters per Latin word."""
    rest = _CODE_OR_LINK.sub(" ", plain(Md(md)))
    return len(_CJK.findall(rest)) >= margin * len(_LATIN_WORD.findall(rest))


def _goal(ai: AnalysedItem) -> set[str]:
    return _words(ai.item.title)


def _figure(ai: AnalysedItem, t: dict[str, Any], condition: bool) -> Md:
    claims = ai.analysis.perf_claims
    best = headline_claim(claims, _goal(ai))
    if best is None:
        return Md("")
    flat = calls_flat(ai.item.body) and no_gain(claims, ai.item.body) and (best.ratio or 0) <= 1.2
    return claim_text(best, t, flat=flat, condition=condition)


def _once(memo: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """memo[key], made by `make` the first time it is asked for."""
    if key not in memo:
        memo[key] = make()
    return memo[key]


def own_identifiers(ai: AnalysedItem, most: int, said: str = "", memo: dict[Any, Any] | None = None) -> list[str]:
    """The item's own names a conclusion adds to its title: its switches and environment variables first,
    then the identifiers its description is about, then (with none of those) the code files it changes; none
    already in `said` or in the title. `memo`: what was read of the item already (one conclusion tries several
    variants of one item)."""
    from .checklist import item_switches

    memo = {} if memo is None else memo
    if "switches" not in memo:
        switches, envs = item_switches(ai)
        short = [sw.rsplit(".", 1)[-1] if len(sw) > 32 and "." in sw.split("=")[0] else sw for sw in switches]
        short.sort(key=lambda sw: "=" in sw)  # a switch the change adds before a setting it is tried with
        memo["switches"] = (short, envs)
    short, envs = memo["switches"]

    # central_identifiers(ai, n) is the first n of a longer list: one list serves every n up to six
    central = (_once(memo, "central", lambda: central_identifiers(ai, 6)) if most <= 3
               else central_identifiers(ai, most + 3))
    ids = sorted(central[: most + 3], key=lambda x: len(x) > 28)  # short names say as much in less
    found = list(dict.fromkeys([*short, *envs, *ids]))
    if len(found) < most:  # few names of its own: the code files it changes, then the models and hardware
        found += _once(memo, ("files", most), lambda: _code_files(ai, most))
        if len(found) < most:
            found += _once(memo, "models", lambda: _models_and_hardware(ai))
    title, said = ai.item.title, plain(Md(said))  # what a reader sees of the built clause
    out: list[str] = []
    for ident in found:
        key = ident.split("=")[0]
        if key in said or key in title or any(key in o or o.split("=")[0] in ident for o in out):
            continue
        if key.lower().rstrip("()") in _frame_words() or "…" in ident:  # a generic name (`torch.compile`) says nothing of its own
            continue
        out.append(ident)
    return out[:most]


def _variants(short: bool) -> list[dict[str, Any]]:
    """From the richest sentence to the plainest: the title's words go before the item's own names (the title
    stands next to the conclusion), then the figure's condition, then the figure."""
    if short:
        return [dict(ids=3, module=True, cond=False, count=1, mods=1, most=5, figure=True),
                dict(ids=3, module=False, cond=False, count=1, mods=0, most=4, figure=True),
                dict(ids=3, module=False, cond=False, count=1, mods=0, most=4, figure=False),
                dict(ids=3, module=False, cond=False, count=1, mods=0, most=2, figure=False),
                dict(ids=2, module=False, cond=False, count=1, mods=1, most=5, figure=True),
                dict(ids=2, module=False, cond=False, count=1, mods=0, most=4, figure=False),
                dict(ids=1, module=False, cond=False, count=1, mods=0, most=4, figure=False),
                dict(ids=0, module=False, cond=False, count=1, mods=0, most=3, figure=False)]
    return [dict(ids=3, module=True, cond=True, count=None, mods=None, most=None, figure=True),
            dict(ids=3, module=True, cond=True, count=1, mods=1, most=5, figure=True),
            dict(ids=3, module=False, cond=False, count=1, mods=0, most=4, figure=True),
            dict(ids=2, module=True, cond=True, count=1, mods=1, most=5, figure=True),
            dict(ids=2, module=False, cond=False, count=1, mods=0, most=4, figure=True),
            dict(ids=1, module=False, cond=False, count=1, mods=0, most=4, figure=True),
            dict(ids=1, module=False, cond=False, count=1, mods=0, most=3, figure=False),
            dict(ids=0, module=False, cond=False, count=1, mods=0, most=3, figure=False)]


def _all_under(ids: list[str], module: str, files: list[Any]) -> bool:
    """Every changed file a name of `ids` stands for lies under `module` ("位于 X" says so of each file named);
    a name that is no changed file's name says nothing of the place."""
    where = module.rstrip("/") + "/"
    for ident in ids:
        paths = [f.path for f in files if f.path.rsplit("/", 1)[-1] == ident or f.path == ident]
        if paths and not any(p.startswith(where) for p in paths):
            return False
    return True


def _with_names(what: Md, ids: list[str], module: str, t: dict[str, Any]) -> Md:
    """"mechanism（`a`、`b`，位于 `dir/`）"."""
    c = t["common"]
    inner = c["sep"].join(code(i) if is_identifier(i) or not i.replace("-", "").replace(" ", "").isalnum()
                          or i[:1].islower() else text(i) for i in ids)
    if module:
        place = t["figure"]["where"].format(module=code(module))
        inner = f"{inner}{c['comma']}{place}" if inner else place
    if not inner:
        return what
    close = c["paren"].format("")[-1:]
    if what.endswith(close):  # "…（配合 X）" goes on inside its own parenthesis: "…（配合 X；`a`、`b`）"
        return Md(f"{what[:-len(close)]}{c['semi']}{inner}{close}")
    return Md(f"{what}{c['paren'].format(inner)}")


def conclusion_parts(ai: AnalysedItem, t: dict[str, Any], porting: list[Applied], short: bool = False,
                     target: str = "ascend", compact: bool = False,
                     title_shown: bool = False) -> tuple[list[Md], list[Md]]:
    """The conclusion's parts: ([what changes], [the figure if any, the consequence]). Model prose may say
    the first better; the rest are the rules' facts. `short`: the short table's note (the short consequence);
    `compact`: a short note held to `compact_width` (the short table lists every P1 item, one compact line each).
    The richest variant that fits the width (and, in zh, keeps Chinese the main language and carries no
    English grammar word, adjective or participle outside the title) is taken. Where the title cannot be said
    in Chinese it is given as a title (`Titled`); `title_shown`: the row shows the whole title beside the
    conclusion, which then opens with the kind of change and the item's own names instead."""
    from .explain import code_module

    lang = t["lang"]
    base = "compact_width" if short and compact else "note_width" if short else "row_width"
    limits = rules().data["limits"]
    limit = int(limits.get(base + ("_en" if lang == "en" else ""), limits.get(base, limits["note_width"])))
    # a compact note that names nothing beyond its title may take the short note's width to say something
    wider = int(limits.get("note_width" + ("_en" if lang == "en" else ""), limits["note_width"])) \
        if short and compact else limit
    module = code_module(ai.item.files) if ai.item.files else ""
    fitting: list[tuple[list[Md], list[Md]]] = []
    # within `wider`: (names of its own beyond the title, within `limit`, -order) -> parts; the best is taken
    said: dict[tuple[int, bool, bool, int], tuple[list[Md], list[Md]]] = {}
    last: tuple[list[Md], list[Md]] | None = None
    # the variants share most of their parts: each is worked out once per item
    memo: dict[Any, Any] = {}
    read_as = title_actions(ai)
    # the title said in Chinese first (whole phrases: fewer modifiers, actions and names, never fewer words of
    # an object); then, where no such sentence is Chinese enough, the title as a title (`Titled`) or, where the
    # row shows it beside, what the change touches
    passes = [False, True] if lang == "zh" else [False]
    for other in passes:
        for v in _variants(short):
            what = _once(memo, ("what", v["most"], v["mods"], v["count"]),
                         lambda v=v: mechanism(ai, t, v["most"], v["mods"], v["count"], read_as))
            if other and not isinstance(what, Titled):
                what = titled(ai)
            elif not other and isinstance(what, Titled) and lang == "zh":
                continue  # said in the second pass
            title = str(what) if isinstance(what, Titled) else ""
            beside = bool(title) and title_shown and title_head(ai.item.title) == plain(what)
            if beside:  # the row shows the title: the conclusion opens with what the change touches
                what, title = Md(""), ""
            ids = own_identifiers(ai, v["ids"], what, memo) if v["ids"] else []
            place = module if v["module"] and module not in what and _all_under(ids, module, ai.item.files) else ""
            what = _with_names(what, ids, place, t)
            if beside:
                inner = what[1:-1] if what.startswith(t["common"]["paren"].format("")[:1]) else what
                what = Md(t["figure"]["touches"].format(names=inner) if inner else
                          text(name(t, "kinds", ai.analysis.item_kind)))
            figure = _once(memo, ("figure", v["cond"]), lambda v=v: _figure(ai, t, v["cond"])) if v["figure"] \
                else Md("")
            rest = [p for p in (figure, _once(memo, ("then", bool(figure)),
                                                   lambda f=bool(figure): consequence(ai, t, porting, target, short, f)))
                    if p]
            last = ([what], rest)
            sentence = join_sentence(last, t)
            wide = width(sentence)
            said_zh = sentence.replace(title, " ", 1) if title else sentence  # the title is the author's, as written
            # the gate reads our clause; a figure's metric is the author's name for it ("Loading model weights")
            clause = str(what).replace(title, " ", 1) if title else str(what)
            if wide <= wider and (lang != "zh" or (chinese_main(said_zh, 1.2) and not spliced(clause))):
                own = beyond_title(sentence, ai.item.title)
                if own >= 3 and wide <= limit and not (other and any(k[0] >= 3 and k[1] for k in said)):
                    return last
                said[(min(own, 3), not other, wide <= limit, -len(said))] = last  # the title said in Chinese first
                if wide <= limit:
                    fitting.append(last)
        if fitting and not (title_shown and lang == "zh"):
            break  # beside its title a row may still say three names of its own in the second pass
    assert last is not None
    # none within the width names three things of its own beyond the title (the title stands beside it): a
    # compact note takes the one its wider width allows that names the most (the compact one at a tie), else
    # the richest that fits
    if short and compact and said:
        return said[max(said)]
    return fitting[0] if fitting else last


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{2,}")


def beyond_title(sentence: str, title: str) -> int:
    """How many names (Latin words, identifiers, figures' metrics and models) a sentence says that its
    title does not: what a reader learns from the row beyond the title beside it."""
    said = {w.lower() for w in _NAME.findall(plain(Md(sentence)))}
    return len(said - {w.lower() for w in _NAME.findall(title)} - _frame_words())


def _frame_words() -> set[str]:
    """Latin words of our own fixed strings (i18n, the porting map, the conclusion rules): not news about
    the item."""
    if not _FRAME:
        from importlib import resources

        base = resources.files("infra_radar") / "defaults"
        for name in ("i18n.toml", "rules/porting.toml", "rules/conclusions.toml"):
            _FRAME.update(w.lower() for w in _NAME.findall((base / name).read_text(encoding="utf-8")))
    return _FRAME


_FRAME: set[str] = set()


def join_sentence(parts: tuple[list[Md], list[Md]], t: dict[str, Any]) -> Md:
    """One sentence: "what，figure；consequence。" (en: "what, figure; consequence.")."""
    what, rest = parts
    head = what[0] if what else Md("")
    if len(rest) == 2:
        head = Md(f"{head}{t['common']['comma']}{rest[0]}")
        rest = rest[1:]
    body = t["common"]["semi"].join([head, *rest]) if head else t["common"]["semi"].join(rest)
    end = "。" if t["lang"] == "zh" else "."
    body = body.rstrip("。.；; ")
    if (len(body) - len(body.rstrip("\\"))) % 2:  # an escape left without the character it escaped
        body = body[:-1]
    if t["lang"] == "en" and body:
        body = body[0].upper() + body[1:]
    return start(Md(f"{body}{end}"))  # its words were escaped as words inside a line: it may open one


def conclusion(ai: AnalysedItem, t: dict[str, Any], porting: list[Applied], target: str = "ascend") -> Md:
    """One sentence: what changes, the headline figure, and what it means for the target."""
    return join_sentence(conclusion_parts(ai, t, porting, target=target), t)
