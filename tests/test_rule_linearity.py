"""Every rule is linear in its input (issue 44, high): no rule file holds a pattern whose repeats can share text,
a user's rules_dir copy holding one is refused in one line, and the code-fact rules run on adversarial lines of
growing length cost in proportion to the line. Times are compared as a ratio between two sizes in one run (the
thread's CPU time, best of several runs); nothing here asserts a wall-clock time.
"""

from __future__ import annotations

import re
import time
import tomllib
from pathlib import Path

import pytest

from infra_radar.analyse import code_facts as code_facts_module
from infra_radar.analyse.code_facts import ChangeFacts, compile_rules
from infra_radar.config import DEFAULTS, load_rules_in
from infra_radar.guard.patterns import UnsafePattern, check_rule_data, findings, witnesses

pytestmark = pytest.mark.no_store

RULES = DEFAULTS / "rules"
FACTOR, BOUND = 8, 24.0  # 8x the input: linear ~8x the work, quadratic ~64x


def _strings(data, out: list[str]) -> list[str]:
    if isinstance(data, dict):
        for value in data.values():
            _strings(value, out)
    elif isinstance(data, list):
        for value in data:
            _strings(value, out)
    elif isinstance(data, str):
        out.append(data)
    return out


def _patterns(path: Path) -> list[str]:
    out = []
    for text in _strings(tomllib.loads(path.read_text(encoding="utf-8")), []):
        try:
            re.compile(text)
        except re.error:
            continue
        out.append(text)
    return list(dict.fromkeys(out))


@pytest.mark.parametrize("shape, bad", [
    (r"^(?: {4})(?P<name>[a-z_]\w*)\s*:\s*[\w\[\], .|]+?\s*=\s*(?P<value>[^,(#][^#,]*?)\)?\s*(?:#.*)?$", True),
    (r"\s*:\s*[\w ]+?\s*=", True),
    (r"(?:\w+\s?)*$", True),
    (r"(a+)+b", True),
    (r"x\s*\(?\s*\d+", True),
    (r"\w+\d*!", True),
    (r"^\s*+(?P<name>\w++)\s*+:\s*+(?P<value>\S++)", False),
    (r"^\s*(?:#.*)?$", False),
    (r"(?:\w+\s)*!", False),
    (r"^[\w.-]+(?:/[\w.-]+)+$", False),
    (r"\s*+\s*", False),
    (r"(?>\s*)\d", False),
    (r"\b_?[A-Za-z][A-Za-z0-9]*+_VERSION", False),
])
def test_the_reading_finds_shared_repeats(shape: str, bad: bool) -> None:
    assert bool(findings(shape, 0, False)) is bad, findings(shape, 0, False)


@pytest.mark.parametrize("name", sorted(p.stem for p in RULES.glob("*.toml")))
def test_no_packaged_rule_file_holds_repeats_that_share_text(name: str) -> None:
    path = RULES / f"{name}.toml"
    check_rule_data(tomllib.loads(path.read_text(encoding="utf-8")), path)  # raises on the first one


def test_code_fact_rules_do_not_rescan_from_every_position() -> None:
    # the code-fact rules are searched in every changed line: a leading repeat would rescan a run per start
    bad = {p: findings(p) for p in _patterns(RULES / "code_facts.toml") if findings(p)}
    assert not bad


def test_a_users_rule_file_with_shared_repeats_is_refused_in_one_line(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "dives.toml").write_text('[x]\npattern = \'(?P<a>\\w+)\\s*,?\\s*(?P<b>\\d+)\'\n', encoding="utf-8")
    with pytest.raises(UnsafePattern) as caught:
        load_rules_in("dives", rules)
    message = str(caught.value)
    assert "dives.toml" in message and "[x.pattern]" in message and "\n" not in message
    (rules / "code_facts.toml").write_text(
        "[[defaults]]\nkinds = [\"python\"]\npattern = '^\\s*(?P<name>\\w+)\\s*=\\s*(?P<value>[\\w ]+?)\\s*$'\n",
        encoding="utf-8")
    code_facts_module._load.cache_clear()
    try:
        with pytest.raises(UnsafePattern, match="code_facts.toml"):
            code_facts_module._load(str(rules))
    finally:
        code_facts_module._load.cache_clear()
    # a copy of the packaged file is accepted as it is
    (rules / "code_facts.toml").write_text((RULES / "code_facts.toml").read_text(encoding="utf-8"),
                                           encoding="utf-8")
    try:
        assert code_facts_module._load(str(rules)).defaults
    finally:
        code_facts_module._load.cache_clear()


def _cost(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        best = min(best, time.thread_time() - start)
    return max(best, 1e-6)


def _growth(fn_small, fn_big, rounds: int = 4) -> float:
    fn_small()
    small = big = float("inf")
    for _ in range(rounds):
        small = min(small, _cost(fn_small, 2))
        big = min(big, _cost(fn_big, 1))
    return big / small


def _code_rules() -> list[re.Pattern[str]]:
    data = tomllib.loads((RULES / "code_facts.toml").read_text(encoding="utf-8"))
    rules = compile_rules(data)
    out = [r.regex for group in (rules.defaults, rules.switches, rules.gates, rules.devices, rules.definitions,
                                 rules.kernel_lines) for r in group]
    out += [r.regex for r in (rules.env_table, rules.casts) if r is not None]
    return out


@pytest.mark.parametrize("index", range(len(_code_rules())))
def test_each_code_fact_rule_is_linear_on_adversarial_lines(index: int) -> None:
    regex = _code_rules()[index]
    small, big = witnesses(regex.pattern, 48), witnesses(regex.pattern, 48 * FACTOR)

    def run(lines):
        return lambda: [regex.search(line) for line in lines for _ in range(20)]

    assert _growth(run(small), run(big)) < BOUND, regex.pattern


def _field_line(run: int) -> str:
    """The reported shape: a typed field with long runs of spaces around ':' and '=', a trailing comma."""
    pad = " " * run
    return f"    max_num_batched_tokens{pad}:{pad}Optional[int]{pad}={pad}None{pad},"


def test_a_changed_line_of_spaced_fields_costs_in_proportion_to_its_length() -> None:
    rules = compile_rules(tomllib.loads((RULES / "code_facts.toml").read_text(encoding="utf-8")))
    rules.caps["line_chars"] = 10 ** 6  # the ratio is of the rules, not of the cap

    def feed(run: int):
        line = _field_line(run)

        def go():
            facts = ChangeFacts(rules)
            facts.file("pkg/config.py")
            for _ in range(20):
                facts.line("+", line)
            facts.facts("git")
        return go

    assert _growth(feed(12), feed(12 * FACTOR)) < BOUND


def _compiled(obj, out: list[re.Pattern[str]], depth: int = 0) -> list[re.Pattern[str]]:
    """Every compiled pattern a rules object holds (dataclass fields, dicts, tuples, lists)."""
    if isinstance(obj, re.Pattern):
        out.append(obj)
    elif depth < 4 and isinstance(obj, dict):
        for value in obj.values():
            _compiled(value, out, depth + 1)
    elif depth < 4 and isinstance(obj, list | tuple):
        for value in obj:
            _compiled(value, out, depth + 1)
    elif depth < 4 and hasattr(obj, "__dataclass_fields__"):
        for name in obj.__dataclass_fields__:
            _compiled(getattr(obj, name, None), out, depth + 1)
    return out


def _built_patterns() -> dict[str, list[re.Pattern[str]]]:
    """The patterns the code builds from rule words and runs over whole descriptions."""
    from infra_radar.analyse.claim_rules import default_claim_rules
    from infra_radar.analyse.figures import default_figure_rules
    from infra_radar.analyse.refs import _SUFFIX
    from infra_radar.render.evidence_risks import _risk_patterns, _risk_words

    return {"risks": _compiled([_risk_patterns(rid) for rid in _risk_words()], []), "claims": _compiled(default_claim_rules(), []),
            "figures": _compiled(default_figure_rules(), []), "refs": [_SUFFIX]}


@pytest.mark.parametrize("name", ["risks", "claims", "figures", "refs"])
def test_patterns_built_from_rule_words_hold_no_shared_repeats(name: str) -> None:
    bad = [p.pattern[:120] for p in _built_patterns()[name] if findings(p.pattern, p.flags, False)]
    assert not bad


def test_a_gap_between_risk_words_is_linear_in_a_run_of_separators() -> None:
    # "remove ... argument*" over "remove" and a run of underscores or dashes (a markdown rule under a word):
    # the old separator and gap word shared "_", and 40 of them took over a minute
    from infra_radar.render.evidence_risks import _phrase_re

    regex = re.compile(_phrase_re("remove ... argument*"), re.I)
    assert not findings(regex.pattern, regex.flags, False)

    def run(size: int):
        texts = [f"remove{'_' * size}!", f"remove\n{'-' * size}\n", f"remove {'a_' * (size // 2)}!"]
        return lambda: [regex.search(t) for t in texts for _ in range(50)]

    assert _growth(run(64), run(64 * FACTOR)) < BOUND
