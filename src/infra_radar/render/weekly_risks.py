"""The week's risks, each argued with its PRs and why it matters, and the recommendations that follow from
the week's own facts (what to adopt first and why, what to measure again, what to watch).

Risks are found from the PRs' own text and files (defaults/rules/weekly.toml [risks]): a removed op, API,
flag or patch (a title saying so, a description saying it is gone, a code file whose lines were only
deleted); a fix of output that was wrong without an error; a dependency or toolchain version moved; a new
default; a large code change that came without a test. A category with no PR is left out, never shown as
"0": a count is shown only where it says something.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import translate
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..analyse.assertions import asserted_sentence, cue_pattern, own_names
from ..analyse.target_code import for_target
from ..models import AnalysedItem
from .base import context_text, pick
from .clusters import _identifier, weekly_rules
from .conclusion import headline_claim
from .escape import Md, code, text
from .evidence_risks import risk_evidence
from .explain import explain_body, file_role, identifiers, sentences
from .weekly_words import Refs, bare_title, figure, fitted, gist

_CODE_ROLES = ("tests", "docs", "config")
_TITLE = 400  # a title is read this far (GitHub's hold 256 characters; a pasted page's may run on)
_VERSION = re.compile(r"(?P<name>[A-Za-z][\w.+-]{1,30}?)\s*(?:\(|\s)(?:to\s+|==\s*|>=\s*)?v?(?P<v>\d+\.\d+[\w.+-]*)\)?")
_CLAUSE_END = re.compile(r"[,;:，；：(]|\s(?:and|for|so|because|when|since|after|which)\s")
_PART = re.compile(r"[\[(]\s*(\d{1,2})\s*/\s*(\d{1,2}|n)\s*[\])]", re.I)


@dataclass(frozen=True)
class _Rules:
    verbs: frozenset[str]
    objects: frozenset[str]
    sentences: re.Pattern[str]
    accuracy: re.Pattern[str]
    dependency: frozenset[str]
    removed_lines: int
    untested_lines: int
    manifests: re.Pattern[str]
    of_words: frozenset[str] = frozenset()  # "downcast of x": words after which the identifier is not what goes
    loud: re.Pattern[str] | None = None  # a crash or an error: a fix of it is no silent-accuracy fix
    silent: re.Pattern[str] | None = None
    new_file_lines: int = 100
    breaks: re.Pattern[str] | None = None  # "will break X": a change whose description says it breaks something
    breaks_not_kinds: frozenset[str] = frozenset()
    alias: re.Pattern[str] | None = None  # "`Old` is kept as an alias of `New`": a name that stays


def _alternation(words: list[str]) -> re.Pattern[str]:
    body = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"\b(?:{body})\b", re.I) if body else re.compile(r"(?!)")


@lru_cache(maxsize=4)
def _rules(rules_dir: Path | None) -> _Rules:
    r = weekly_rules(rules_dir).get("risks", {})
    return _Rules(frozenset(r.get("removal_verbs", [])), frozenset(r.get("removal_objects", [])),
                  _alternation(r.get("removal_sentences", [])), _alternation(r.get("accuracy_words", [])),
                  frozenset(r.get("dependency_words", [])), int(r.get("removed_file_lines", 30)),
                  int(r.get("untested_lines", 150)),
                  re.compile("|".join(translate(p) for p in r.get("dependency_files", [])) or r"(?!)"),
                  frozenset(r.get("removal_of_words", ["of", "for", "in", "on", "from", "around", "inside"])),
                  cue_pattern(r.get("loud_words", [])) if r.get("loud_words") else None,
                  cue_pattern(r.get("silent_words", [])) if r.get("silent_words") else None,
                  int(r.get("new_file_lines", 100)),
                  cue_pattern(r.get("breaks_words", [])) if r.get("breaks_words") else None,
                  frozenset(r.get("breaks_not_kinds", [])),
                  cue_pattern(r.get("alias_words", [])) if r.get("alias_words") else None)


def _code(ai: AnalysedItem) -> list:
    return [f for f in ai.item.files if file_role(f.path) not in _CODE_ROLES]


def _lines(files: list) -> int:
    return sum((f.additions or 0) + (f.deletions or 0) for f in files)


def removed(ai: AnalysedItem, rules_dir: Path | None = None) -> Md | None:
    """What a PR removes (identifiers its title names after the verb, a deleted file, or its title), or None
    when it removes nothing a downstream could depend on. Changes to tests and docs alone remove nothing."""
    found = _removal(ai, rules_dir)
    return found[0] if found else None


def _removal(ai: AnalysedItem, rules_dir: Path | None) -> tuple[Md, int] | None:
    """(what a PR removes, how plainly it says so: 3 its title names what, 2 its title says what kind of
    thing, 1 a code file was only deleted, 0 a label or its description)."""
    r = _rules(rules_dir)
    code_files = _code(ai)
    if not code_files or ai.analysis.item_kind in ("docs", "test", "ci"):
        return None
    facts = ai.item.code
    if facts and facts.get("complete"):  # the diff was read whole: what it removes, not what the title says
        gone = [x["name"] for x in facts.get("removed", []) if (x.get("kind") in ("env", "config") or (
            x.get("kind") in ("function", "class") and x.get("top") and not x["name"].startswith("_")))]
        kept = _kept_as_alias(ai, r)
        gone = [name for name in gone if name not in kept]
        return (Md("、".join(code(name) for name in gone[:2])), 4) if gone else None
    title = bare_title(ai.item.title[:_TITLE])
    for verb in re.finditer(r"[\w-]+", title):
        if verb[0].lower() not in r.verbs:
            continue
        clause = _CLAUSE_END.split(title[verb.end(): verb.end() + 120], maxsplit=1)[0].strip()
        after = clause.split()[:6]
        named = [w for w in identifiers(" ".join(after)) if len(w) >= 4]
        # "remove the downcast of `x`", "remove `x` downcast": what goes is something done to `x` (a cast, a
        # copy, a check), not `x` nor anything a downstream could depend on
        first = next((i for i, w in enumerate(after) if any(n in w for n in named)), None) if named else None
        if first and any(w.lower() in r.of_words for w in after[:first]):
            return None
        nxt = after[first + 1] if first is not None and first + 1 < len(after) else ""
        if nxt.isalpha() and nxt.islower() and nxt.rstrip("s") not in r.objects and nxt not in r.objects \
                and nxt not in r.of_words:
            return None
        if named:
            return Md("、".join(code(_identifier(w)) for w in named[:2])), 3
        if any(w.lower().rstrip("s") in r.objects or w.lower() in r.objects for w in after) and len(clause) <= 60:
            return text(clause), 2
    added, deleted = sum(f.additions or 0 for f in code_files), sum(f.deletions or 0 for f in code_files)
    gone = [f for f in code_files if not f.additions and (f.deletions or 0) >= r.removed_lines]
    if gone and deleted >= 2 * added:  # files only deleted, not moved: a move adds as much as it deletes
        return code(max(gone, key=lambda f: f.deletions or 0).path), 1
    said = explain_body(ai.item.body)
    if "breaking" in ai.analysis.risk_labels or any(
            r.sentences.search(s) for _, b in said.mechanism + said.motivation for s in sentences(b)):
        return (text(title) if len(title) <= 80 else code(_top(ai))), 0
    return None


def _kept_as_alias(ai: AnalysedItem, r: _Rules) -> str:
    """The description's sentences asserting a name is kept as an alias (or re-exported), joined: a removed
    definition they name is no removal; "" when none says so."""
    if r.alias is None:
        return ""
    said = []
    for s in sentences(ai.item.body[:20000]):
        if r.alias.search(s) and asserted_sentence(s, r.alias, own_names(ai.item.repo)):
            said.append(s)
    return " ".join(said)


_SWITCH = {"true", "false", "on", "off", "0", "1", "yes", "no"}


def _moved_defaults(ai: AnalysedItem) -> list[dict[str, Any]]:
    """The defaults the diff changes, or the new switches it sets on (read from the code, not the text)."""
    out = []
    for d in ai.item.code.get("defaults", []) if ai.item.code else []:
        value, before = str(d.get("value", "")).strip("\"'").lower(), d.get("previous")
        if (before is not None and before != d.get("value")) or (before is None and value in _SWITCH - {"false", "off", "0", "no"}):
            out.append(d)
    return out


def _moves_default(ai: AnalysedItem, rules_dir: Path | None = None) -> bool:
    """The diff changes a default's value, or sets a new switch on (read from the code, not the text), in code
    a deployment ran before: a default set in a file the change adds, or by a refactor that moves code, is
    no new default (weekly.toml [risks] new_file_lines)."""
    r = _rules(rules_dir)
    sizes = {f.path: (f.additions or 0, f.deletions or 0) for f in ai.item.files}

    def existing(d: dict[str, Any]) -> bool:
        if d.get("previous") is not None:
            return True
        added, deleted = sizes.get(d.get("file", ""), (0, 0))
        return ai.analysis.item_kind != "refactor" and not (deleted == 0 and added >= r.new_file_lines)

    return any(existing(d) for d in _moved_defaults(ai))


def default_said(ai: AnalysedItem, t: dict[str, Any]) -> Md:
    """What default the diff sets, as the code has it: "`name` 默认 `True`（`megatron.yaml`、`engine.py`）", with what
    the description said of it when the two disagree; the PR's gist when no diff was read."""
    moved = _moved_defaults(ai)
    if not moved:
        return gist(ai, t, 70)
    w, c = t["weekly"], t["common"]
    first = moved[0]
    files = list(dict.fromkeys(d["file"].rsplit("/", 1)[-1] for d in moved
                               if d["name"] == first["name"] and d["value"] == first["value"]))
    said = Md(w["default_set"].format(name=code(first["name"]), value=code(str(first["value"])),
                                      files=c["sep"].join(code(f) for f in files[:2])))
    if first.get("previous") is not None:
        said = Md(said + w["default_was"].format(value=code(str(first["previous"]))))
    told = next((x for x in ai.analysis.contradictions
                 if x.get("kind") == "default" and x.get("name") == first["name"] and x.get("said")), None)
    if told:
        said = Md(said + w["default_told"].format(said=c["sep"].join(text(x) for x in told["said"][:2])))
    return said


def accuracy_fix(ai: AnalysedItem, rules_dir: Path | None = None) -> bool:
    """A change to code that fixes output which was wrong without an error (its label or its title)."""
    if not _code(ai) or ai.analysis.item_kind in ("docs", "test", "ci", "feature"):
        return False
    r = _rules(rules_dir)
    if not ("silent-accuracy" in ai.analysis.risk_labels or r.accuracy.search(ai.item.title[:_TITLE])):
        return False
    return not loud(ai, rules_dir)


def loud(ai: AnalysedItem, rules_dir: Path | None = None) -> str:
    """The title or the description's asserting sentence saying the failure fixed was loud (a crash, an
    error), when nothing asserts wrong output: such a fix is no silent-accuracy one; "" otherwise."""
    r = _rules(rules_dir)
    if r.loud is None:
        return ""
    title = bare_title(ai.item.title[:_TITLE])
    own = own_names(ai.item.repo)
    if r.silent is not None and (r.silent.search(title) or asserted_sentence(ai.item.body[:20000], r.silent, own)):
        return ""
    if r.loud.search(title):
        return title
    return asserted_sentence(ai.item.body[:20000], r.loud, own)


def breaks(ai: AnalysedItem, rules_dir: Path | None = None) -> str:
    """The description's sentence asserting the change breaks something ("These issues will ... break FP8/MXFP
    quantization"), or ""; a fix's description of its bug is not one (weekly.toml [risks] breaks_words)."""
    r = _rules(rules_dir)
    if r.breaks is None or ai.analysis.item_kind in r.breaks_not_kinds or not _code(ai):
        return ""
    return asserted_sentence(ai.item.body[:20000], r.breaks, own_names(ai.item.repo))


def broken_said(ai: AnalysedItem, t: dict[str, Any], rules_dir: Path | None = None) -> Md:
    """"#N gist：描述称会破坏 FP8/MXFP 量化": what the asserting sentence says breaks, said in zh only where the
    rules can say it (else the names it gives), never a spliced English clause."""
    from .saying import phrase
    from .zh_words import spliced

    w = t["weekly"]
    what = gist(ai, t, 60)
    sentence = breaks(ai, rules_dir)
    ends = [m.end() for m in _rules(rules_dir).breaks.finditer(sentence)] if sentence else []
    tail = sentence[ends[-1]:].strip().rstrip(".!;") if ends else ""  # what the last cue says breaks
    words = tail.split()[:6]
    if t["lang"] == "zh" and words:
        said = phrase(words, 6, "zh")
        broken = str(said) if not spliced(said) else "、".join(code(x) if "_" in x else text(x)
                                                                for x in words if _name_like(x))
    else:
        broken = str(text(" ".join(words))) if words else ""
    return Md(w["breaks_what"].format(what=what, broken=broken) if broken else w["breaks_unnamed"].format(what=what))


def _name_like(word: str) -> bool:
    """A word with a capital after its first letter, a digit, a slash or an underscore: a name."""
    w = word.strip(".,;:")
    return any(ch.isdigit() or ch in "/_" for ch in w) or any(ch.isupper() for ch in w[1:])


def versions(ai: AnalysedItem, rules_dir: Path | None = None) -> list[str]:
    """The "name version" pairs a dependency PR's title moves to ("CANN 9.1.0"), runtime ones only: a PR
    that only touches CI workflow files moves no dependency of ours."""
    r = _rules(rules_dir)
    title = ai.item.title[:_TITLE]
    words = {w.lower() for w in re.findall(r"[a-z]+", title, re.I)}
    if ai.analysis.item_kind != "deps" and not (words & r.dependency):
        return []
    manifests = [f for f in ai.item.files if r.manifests.search(f.path)]
    if not manifests and "external-dependency" not in ai.analysis.risk_labels:
        return []  # a title that says "upgrade" but changes no dependency manifest moves no dependency
    if all(f.path.startswith(".github/") for f in ai.item.files):
        return []  # CI actions only
    out = []
    for m in _VERSION.finditer(title):
        if m["name"].lower() not in r.dependency and m["name"].lower() not in ("from", "to", "and", "vllm_version_is"):
            out.append(f"{m['name']} {m['v']}")
    return out


def series(ai: AnalysedItem) -> tuple[int, str] | None:
    """The step of a split change a title states ("[3/N]" -> (3, "N")), or None."""
    m = _PART.search(ai.item.title)
    return (int(m[1]), m[2].upper()) if m else None


# --- the risk section ------------------------------------------------------------------------------


@dataclass
class Found:
    """The week's risk facts, found once and shared by the risk section, the summary and the recommendations."""

    removed: list[tuple[AnalysedItem, Md]] = field(default_factory=list)
    accuracy: list[AnalysedItem] = field(default_factory=list)
    deps: list[tuple[AnalysedItem, list[str]]] = field(default_factory=list)
    defaults: list[AnalysedItem] = field(default_factory=list)
    breaks: list[AnalysedItem] = field(default_factory=list)
    untested: list[AnalysedItem] = field(default_factory=list)
    core: int = 0
    core_untested: int = 0


def find(ranked: list[AnalysedItem], rules_dir: Path | None = None) -> Found:
    """The risk facts of the week's changes (ranked order kept)."""
    r, out = _rules(rules_dir), Found()
    plain: list[tuple[int, int, AnalysedItem, Md]] = []
    for ai in ranked:
        labels = ai.analysis.risk_labels
        gone = _removal(ai, rules_dir)
        if gone is not None:
            plain.append((-gone[1], len(plain), ai, gone[0]))
        if accuracy_fix(ai, rules_dir):
            out.accuracy.append(ai)
        moved = versions(ai, rules_dir)
        if moved:
            out.deps.append((ai, moved))
        # a default moves where the diff says so; without a diff, only with a sentence saying it (not "off by default")
        if breaks(ai, rules_dir):
            out.breaks.append(ai)
        if _code(ai) and (_moves_default(ai, rules_dir) if ai.item.code else
                          "new-default" in labels and risk_evidence(ai, "new-default") is not None):
            out.defaults.append(ai)
        if "core-path" in labels and _code(ai):
            out.core += 1
            if "no-test" in labels:
                out.core_untested += 1
                if _lines(_code(ai)) >= r.untested_lines:
                    out.untested.append(ai)
    out.untested.sort(key=lambda ai: -_lines(_code(ai)))
    out.removed = [(ai, what) for _, _, ai, what in sorted(plain, key=lambda x: x[:2])]  # plainest first
    return out


def _listed(pairs: list[tuple[AnalysedItem, Md]], refs: Refs, t: dict[str, Any], most: int) -> Md:
    w, c = t["weekly"], t["common"]
    shown = [Md(f"{refs(ai)} {what}") for ai, what in pairs[:most]]
    more = w["and_more"].format(n=len(pairs) - most) if len(pairs) > most else ""
    return Md(c["semi"].join(shown) + more)


def risk_lines(found: Found, refs: Refs, t: dict[str, Any], most: int = 3, limit: int = 400,
               rules_dir: Path | None = None) -> list[Md]:
    """One argued line per risk the week holds: its PRs, what each does, and why it matters (fewer PRs
    named when the line would run past `limit` characters)."""
    w, c = t["weekly"], t["common"]
    lines = []

    def line(key: str, pairs: list[tuple[AnalysedItem, Md]]) -> None:
        if pairs:
            lines.append(fitted(refs, limit, [
                lambda r, k=k: Md(w["risk"].format(label=w[f"risk_{key}"], items=_listed(pairs, r, t, k),
                                                   why=w[f"risk_{key}_why"])) for k in range(most, 0, -1)]))

    line("breaks", [(ai, broken_said(ai, t, rules_dir)) for ai in found.breaks])
    line("removed", found.removed)
    line("accuracy", [(ai, gist(ai, t, 70)) for ai in found.accuracy])
    line("deps", [(ai, text(c["sep"].join(v))) for ai, v in found.deps])
    line("defaults", [(ai, default_said(ai, t)) for ai in found.defaults])
    line("untested", [(ai, Md(w["untested_what"].format(lines=_lines(_code(ai)),
                                                         file=code(_top(ai))))) for ai in found.untested])
    return lines


def _top(ai: AnalysedItem) -> str:
    return max(_code(ai), key=lambda f: ((f.additions or 0) + (f.deletions or 0), f.path)).path


# --- recommendations -------------------------------------------------------------------------------


def recommendations(ranked: list[AnalysedItem], found: Found, chains: list[tuple[str, list[AnalysedItem]]],
                    refs: Refs, t: dict[str, Any], most: int = 5, target: str = "ascend") -> list[Md]:
    """What to adopt first and why, what to measure again and on what, what to watch: each from the week's
    own PRs, figures and series; a kind of advice the week gives no fact for is left out. What a PR means for
    the `target` is said as the daily radar says it, from the PR's own grade and boundary."""
    w, c = t["weekly"], t["common"]
    out: list[Md] = []
    key = [ai for ai in ranked if ai.analysis.priority in ("P0", "P1")] or \
        [ai for ai in ranked if ai.analysis.priority == "P2"]  # a quiet week: its P2 items are what it has
    fixes = [ai for ai in found.accuracy if ai.analysis.priority in ("P0", "P1")] or found.accuracy
    if fixes:
        what = list(dict.fromkeys(gist(ai, t, 70) for ai in fixes[:2]))
        out.append(Md(w["rec_first_accuracy"].format(refs=refs.many(fixes[:2], c["sep"]), what=c["semi"].join(what))))
    measured = [ai for ai in key if headline_claim(ai.analysis.perf_claims)]
    adopt = [ai for ai in key if ai.analysis.decision == "adapt-now" and ai not in fixes]
    ai_first = None
    if adopt:
        ai = ai_first = next((x for x in adopt if x in measured), adopt[0])
        claim = headline_claim(ai.analysis.perf_claims)
        why = w["rec_why_figure"].format(figure=figure(claim, t)) if claim else \
            w["rec_why_grade"].format(grade=ai.analysis.grade) if ai.analysis.grade == "S" else \
            w["rec_why_reason"].format(reason=text(pick(ai.analysis.decision_reason, t["lang"]) or
                                                   pick(ai.analysis.grade_reason, t["lang"])))
        out.append(Md(w["rec_first"].format(ref=refs(ai), what=gist(ai, t, 70), why=why)))
    for ai in [x for x in measured if not (adopt and x is ai_first)][:2]:
        claim = headline_claim(ai.analysis.perf_claims)
        setting = {k: v for k, v in claim.context.items() if v and len(v) <= 40 and
                   k in ("model", "hardware", "batch", "concurrency")}
        where = text(context_text(setting, t))
        out.append(Md(w["rec_measure"].format(ref=refs(ai), figure=figure(claim, t, context=False),
                                              where=w["rec_where"].format(where=where) if where else "")))
    for label, members in chains[:1]:
        steps = sorted(s for s in (series(ai) for ai in members) if s)
        shared = _shared_file(members)
        out.append(Md(w["rec_series"].format(name=text(label), step=f"{steps[-1][0]}/{steps[-1][1]}",
                                             refs=refs.many(members[:4], c["sep"]),
                                             file=w["rec_series_file"].format(file=code(shared)) if shared else "")))
    if found.deps:
        ai, moved = found.deps[0]
        out.append(Md(w["rec_deps"].format(ref=refs(ai), versions=text(c["sep"].join(moved)))))
    if found.removed:
        out.append(Md(w["rec_removed"].format(items=_listed(found.removed, refs, t, 2))))
    if found.untested:
        ai = found.untested[0]
        out.append(Md(w["rec_untested"].format(ref=refs(ai), lines=_lines(_code(ai)), file=code(_top(ai)))))
    named = {id(x) for x in [*fixes, *adopt[:1], *measured[:3]]}
    kernels = [ai for ai in key if ai.analysis.grade == "L" and id(ai) not in named]
    if kernels and len(out) < 3:
        out.append(_track(kernels[:3], refs, t, target))
    # "reuse as is" only of a change whose diff was read and holds no device code (TargetCode.primary()
    # "clean"): of an unread diff the radar never says there is no device code
    reuse = [ai for ai in ranked if ai.analysis.grade == "S" and ai.analysis.priority in ("P0", "P1", "P2")
             and _code(ai) and id(ai) not in named and for_target(ai.item, target).primary() == "clean"]
    if reuse and len(out) < 3:
        out.append(Md(w["rec_reuse"].format(refs=refs.many(reuse[:3], c["sep"]),
                                            what=c["semi"].join(dict.fromkeys(gist(ai, t, 40) for ai in reuse[:3])))))
    return out[:most]


def _track(kernels: list[AnalysedItem], refs: Refs, t: dict[str, Any], target: str) -> Md:
    """"Track only the mechanism of #A, #B (what): why" with each PR's own consequence for the target (the
    daily radar's short one), PRs that share it named together."""
    from ..analyse.porting import applied
    from .conclusion import consequence
    from .explain import described

    w, c = t["weekly"], t["common"]
    why: dict[str, list[AnalysedItem]] = {}
    for ai in kernels:
        said = str(consequence(ai, t, applied(ai.item, target, text=described(ai.item.body)), target, short=True))
        why.setdefault(said.rstrip("。. "), []).append(ai)
    parts = [w["rec_track_item"].format(refs=refs.many(group, c["sep"]), why=said,
                                        what=c["semi"].join(gist(ai, t, 40) for ai in group[:2]))
             for said, group in why.items()]
    return Md(w["rec_track"].format(items=c["semi"].join(parts)))


def _shared_file(members: list[AnalysedItem]) -> str:
    """The code file most of a series' PRs change, or ""."""
    counts: dict[str, int] = {}
    for ai in members:
        for f in _code(ai):
            counts[f.path] = counts.get(f.path, 0) + 1
    best = max(counts.items(), key=lambda kv: (kv[1], kv[0]), default=("", 0))
    return best[0] if best[1] >= 2 else ""


def chains(ranked: list[AnalysedItem]) -> list[tuple[str, list[AnalysedItem]]]:
    """Split changes still under way: PRs whose titles state steps of one series ("[DSA][2/N]", "[3/N]"),
    grouped by the tag or words their titles share, largest first; (the shared word, its PRs by step)."""
    steps = [(ai, series(ai)) for ai in ranked if series(ai)]
    groups: dict[str, list[AnalysedItem]] = {}
    for ai, _ in steps:
        tags = re.findall(r"\[([^\]/]{2,30})\]", ai.item.title)
        named = [x for x in tags if not re.fullmatch(r"(?i)feature|bugfix|refactor|misc|doc|test|ci|perf\w*|"
                                                     r"ops|model|platform|v?\d[\w.]*", x)]
        key = named[-1] if named else bare_title(ai.item.title).split(" ")[0]
        groups.setdefault(key, []).append(ai)
    found = [(k, sorted(v, key=lambda ai: series(ai)[0])) for k, v in groups.items() if len(v) >= 2]
    return sorted(found, key=lambda kv: -len(kv[1]))
