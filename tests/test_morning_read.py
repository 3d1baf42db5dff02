"""The morning read: the daily radar of the team's windows (all shared history and the 24 thread pages,
rules only) read as the team's engineer would, and the same checks on days nobody tuned on (the next days,
days of August for verl and vllm-ascend) and in English:

- the size of the team's 2026-07-02 window stays within twice the team's own radar (9,298 bytes);
- no line is cut with "…";
- every P0/P1 conclusion and short-table note is one sentence whose main language is Chinese outside code
  and links, quoting no English sentence;
- the downstream repository (vllm-ascend) is never in the upstream tables, and has its own section;
- every figure's percent and factor follow from its own before and after (here and over every claim the
  shared history yields);
- states are shown as they stood: a state known only from a page saved later is marked, never decided on;
- a slowdown or a result its author calls unchanged is never a win and never ranks an item by itself;
- the deep dives are one paragraph of our own (nothing pasted), the checklist one line per item.

The store is the session's (conftest.full_store); the reports are rendered once per module.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main

from .conftest import SHARED
from .report_checks import checklist_share, table_rows

pytestmark = pytest.mark.one_store  # the daily's text on the team's days: the same read from either store

TEAM_BYTES = 9298  # ../shared/seeds/radar-2026-07-02.md
TEAM = ("2026-06-29T02:00Z", "2026-07-02T02:12Z")
WINDOWS = {  # name: (since, until, lang)
    "team zh": (*TEAM, "zh"),
    "team en": (*TEAM, "en"),
    "07-03 zh": ("2026-07-02T02:12Z", "2026-07-03T02:11:27Z", "zh"),
    "07-04 zh": ("2026-07-03T02:11:27Z", "2026-07-04T02:14Z", "zh"),
    "08-06 zh": ("2026-08-05T00:00Z", "2026-08-06T00:00Z", "zh"),
    "08-13 zh": ("2026-08-12T00:00Z", "2026-08-13T00:00Z", "zh"),
    "08-19 en": ("2026-08-18T00:00Z", "2026-08-19T00:00Z", "en"),
}
HEAD = {"zh": ("P0 / P1", "简表", "重点机制", "验证清单", "下游进展"),
        "en": ("P0 / P1", "Short table", "Deep dives", "Verification checklist", "Downstream")}
DOWNSTREAM = "vllm-project/vllm-ascend"


def radar(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def reports(full_store) -> dict[str, str]:
    home, url = full_store
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        mp.setenv("RADAR_DB_URL", url)
        return {name: radar("daily", "--since", since, "--until", until, "--lang", lang)
                for name, (since, until, lang) in WINDOWS.items()}


def section(text: str, heading: str) -> str:
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0] if f"## {heading}\n" in text else ""


def conclusions(text: str, lang: str) -> list[tuple[str, str]]:
    """(item cell, sentence) of every P0/P1 row and short-table row."""
    top, short = HEAD[lang][:2]
    return ([(r[1], r[4]) for r in table_rows(text, top)] if "| " in section(text, top) else []) + \
           ([(r[1], r[3]) for r in table_rows(text, short)] if "| " in section(text, short) else [])


_CODE_OR_LINK = re.compile(r"`+[^`]*`+|\[[^\]]*\]\([^)]*\)")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_.+/-]*")
_CJK = re.compile(r"[\u4e00-\u9fff]")
# a quoted English sentence: four Latin words or more inside quotes
_QUOTED = re.compile(r"[“\"「『]\s*[A-Za-z][^”\"」』]*?(?:\s+[A-Za-z][\w'-]*){3,}[^”\"」』]*[”\"」』]")


def chinese_is_main(sentence: str) -> bool:
    """More CJK characters than Latin words outside code spans and links."""
    rest = _CODE_OR_LINK.sub(" ", sentence)
    return len(_CJK.findall(rest)) > len(_LATIN.findall(rest))


# --- size, cuts, language ------------------------------------------------------------------------


def test_the_teams_window_is_within_twice_the_teams_size(reports) -> None:
    size = len(reports["team zh"].encode("utf-8"))
    assert size <= 2 * TEAM_BYTES, f"{size} bytes, {size / TEAM_BYTES:.2f}x the team's"
    # the caps hold on every day, whatever it brings
    for name, text in reports.items():
        assert len(text.encode("utf-8")) <= 2 * TEAM_BYTES, name


def test_no_line_is_cut(reports) -> None:
    for name, text in reports.items():
        cut = [ln for ln in text.splitlines() if "…" in ln]
        assert not cut, f"{name}: {cut[:3]}"


def test_conclusions_are_one_chinese_sentence_quoting_nothing(reports) -> None:
    for name, text in reports.items():
        lang = WINDOWS[name][2]
        rows = conclusions(text, lang)
        assert rows or name.startswith("08"), name
        for cell, sentence in rows:
            assert not _QUOTED.search(sentence), f"{name}: {cell}: {sentence}"
            assert "作者：" not in sentence and "the author:" not in sentence.lower()
            if lang == "zh":
                assert chinese_is_main(sentence), f"{name}: {cell}: {sentence}"
                assert sentence.endswith("。") and sentence.count("。") == 1, sentence
            else:
                assert sentence.endswith(".") and not _CJK.search(_CODE_OR_LINK.sub("", sentence).split(":")[0])


def test_the_downstream_repository_has_its_own_section(reports) -> None:
    for name, text in reports.items():
        lang = WINDOWS[name][2]
        top, short, deep, _, down = HEAD[lang]
        for heading in (top, short, deep):
            assert f"[{DOWNSTREAM}#" not in section(text, heading), f"{name}: {heading}"
        if f"{DOWNSTREAM}#" in text:
            assert section(text, down).count(f"[{DOWNSTREAM}#") >= 1, name
    team = section(reports["team zh"], "下游进展")
    assert "vllm-ascend：窗口内 " in team and "适配上游 [vllm-project/vllm#" in team


# --- figures -----------------------------------------------------------------------------------------

_NUM = r"(-?\d+(?:\.\d+)?)"
_PAIR = re.compile(_NUM + r"(?: ?[^\s→|（(]{0,12})? → " + _NUM + r"(?: ?[^\s|（(]{0,12})?\s?[（(]([−+±][\d.]+)%(?:[，,] ?([\d.]+)×)?")
_ROW = re.compile(r"^\| [^|]+ \| " + _NUM + r"[^|]* \| " + _NUM + r"[^|]* \| ([−+±][\d.]+)% / ([\d.]+)× \|", re.M)


def _consistent(before: float, after: float, pct: str, ratio: str | None) -> bool:
    if before == 0:
        return True
    want = (after - before) / before * 100
    got = float(pct.replace("−", "-").replace("±", ""))
    if abs(got - round(want, 1)) > 0.051 + 1e-9 and abs(got - want) > 0.051:
        return False
    if ratio is None:
        return True
    r = float(ratio)
    return before > 0 and after > 0 and min(abs(r - before / after), abs(r - after / before)) <= 0.01 * r + 0.006


def test_every_figure_shown_follows_from_its_own_values(reports) -> None:
    seen = 0
    for name, text in reports.items():
        for m in _PAIR.finditer(text):
            seen += 1
            assert _consistent(float(m[1]), float(m[2]), m[3], m[4]), f"{name}: {m[0]}"
        for m in _ROW.finditer(text):
            seen += 1
            assert _consistent(float(m[1]), float(m[2]), m[3], m[4]), f"{name}: {m[0]}"
    assert seen >= 5


def _bodies() -> list[str]:
    out = []
    for path in sorted((SHARED / "git").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            out += [rec["body"] for rec in map(json.loads, fh) if rec.get("kind") == "commit" and rec.get("body")]
    return out + [p.read_text(encoding="utf-8") for p in sorted((SHARED / "pages").rglob("*.txt"))]


def test_every_claim_of_the_shared_history_has_its_own_percent_and_factor(full_store) -> None:
    """Over every claim the shared history yields: percent = (after − before) / before, and a factor is
    before/after or after/before (never a factor written elsewhere in the sentence)."""
    from infra_radar.analyse.claims import extract_claims

    checked = 0
    for body in _bodies():
        for c in extract_claims(body):
            if c.before is None or c.after is None:
                continue
            checked += 1
            if c.before:
                assert c.change_pct == pytest.approx((c.after - c.before) / c.before * 100, abs=0.006), c
            if c.ratio is not None:
                assert c.before > 0 and c.after > 0, c
                assert min(abs(c.ratio - c.before / c.after), abs(c.ratio - c.after / c.before)) <= 0.006, c
    assert checked >= 100


def test_a_factor_written_near_a_pair_is_not_taken_for_it() -> None:
    from infra_radar.analyse.claims import extract_claims

    (claim,) = extract_claims("TTFT dropped from 0.92 s -> 0.47 s on the 8B model (35x less memory traffic).")
    assert claim.change_pct == pytest.approx(-48.91) and claim.ratio == pytest.approx(1.96)
    (stated,) = extract_claims("TTFT 0.92 s -> 0.47 s, a 2x speedup")
    assert stated.ratio == pytest.approx(1.96)  # the author's rounded factor, computed from the values


# --- states and slowdowns ---------------------------------------------------------------------------


def test_states_known_only_from_a_later_page_are_marked_and_never_decide(reports) -> None:
    text = reports["team zh"]
    for ref in ("verl-project/verl#6907", "verl-project/verl#6908", "vllm-project/vllm-omni#4802"):
        row = next(ln for ln in text.splitlines() if ln.startswith("| ") and f"[{ref}]" in ln)
        state = row.split(" | ")[2]
        # no source dates the close: the state in the window is unknown, never "open" (issue 42)
        assert state == "窗口内状态未知（页面保存时已关闭）", row
    dive = section(text, "重点机制")
    dived = [ref for ref in ("verl-project/verl#6907", "verl-project/verl#6908") if f"[{ref}]" in dive]
    assert dived  # the few dives of the day hold one of them at least
    for ref in dived:
        part = dive.split(f"[{ref}]", 1)[1].split("\n### ", 1)[0]
        # its decision (first line) and anything the dive says come from the state as it stood
        assert "上游已关闭" not in part and "先验证" in part, part
    english = reports["team en"]
    assert "state in the window unknown (closed by the time the page was saved)" in english
    assert "open (closed by the time" not in english


def test_a_slowdown_is_never_a_win_nor_ranks_an_item(full_store) -> None:
    """vllm-ascend#11211 measured 11 → 12.56 μs and calls it almost identical: its figures do not rank it,
    and wherever its figure is shown it says slower or unchanged."""
    from infra_radar.analyse.item import analyse
    from infra_radar.analyse.ruleset import RuleSet
    from infra_radar.analyse.summary import no_gain
    from infra_radar.config import load_settings
    from infra_radar.pipeline.home import open_store
    from infra_radar.render.base import load_strings
    from infra_radar.render.conclusion import conclusion
    from infra_radar.store import queries

    home, url = full_store
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(home))
        settings = load_settings(db_url=url)
        engine = open_store(settings)
        ai = queries.analysed_item(engine, DOWNSTREAM, 11211)
        engine.dispose()
    assert ai is not None and ai.analysis.perf_claims and no_gain(ai.analysis.perf_claims, ai.item.body)
    rules = RuleSet.load(settings)
    from dataclasses import replace

    without = analyse(replace(ai.item, body=re.sub(r"\|.*\|", "", ai.item.body)), rules, settings)
    assert ai.analysis.priority == without.priority  # the figures alone never lift it
    line = conclusion(ai, load_strings("zh"), [])
    assert "变慢" in line or "基本持平" in line or "未见收益" in line, line


# --- deep dives and checklist ----------------------------------------------------------------------


def test_deep_dives_are_one_paragraph_of_our_own(reports) -> None:
    for name, text in reports.items():
        lang = WINDOWS[name][2]
        dives = section(text, HEAD[lang][2]).split("\n### ")[1:]
        for dive in dives:
            lines = [ln for ln in dive.splitlines()[1:] if ln.strip()]
            prose = [ln for ln in lines if not ln.startswith("|")]
            assert not any(ln.startswith(">") for ln in lines), f"{name}: pasted text"
            assert 1 <= len(prose) <= 2, f"{name}: {prose}"  # the paragraph, and a table's condition line
            table = [ln for ln in lines if ln.startswith("|")]
            assert not table or len(table) >= 5, f"{name}: a table for fewer than three figures"
            if lang == "zh":
                assert chinese_is_main(prose[0]), prose[0]


def test_checklist_is_one_line_per_item_naming_its_own_things(reports) -> None:
    for name, text in reports.items():
        lang = WINDOWS[name][2]
        part = section(text, HEAD[lang][3])
        lines = [ln for ln in part.splitlines() if ln.startswith("- [")]
        refs = [re.match(r"- \[([^\]]+)\]", ln)[1] for ln in lines]
        assert len(refs) == len(set(refs)), name  # one line per item
        assert not any(_QUOTED.search(ln) for ln in lines), name
        share, shape = checklist_share(text, HEAD[lang][3])
        assert share <= 0.25, f"{name}: “{shape}” on {share:.0%}"
    team = section(reports["team zh"], "验证清单")
    assert "pad_bshd_to_minibatch_max" in team and "VLLM_ASCEND_AUTO_DETECT_QUANTIZATION=0" in team


_CJK_GAP = re.compile(r"[\u4e00-\u9fff）] +[\u4e00-\u9fff]")


def test_checklist_steps_read_as_chinese_and_name_each_version_once(reports) -> None:
    """A value filled into a spaced template leaves no space between two Chinese characters ("在 NPU 上" is
    right, "在 昇腾 上" is not), and one version spelled three ways ("vLLM 0.19+", "vLLM 0.19.0",
    "vLLM >= 0.19.0") is named once."""
    from infra_radar.render.checklist import _version_key

    for name, text in reports.items():
        if WINDOWS[name][2] != "zh":
            continue
        for line in section(text, HEAD["zh"][3]).splitlines():
            prose = re.sub(r"`[^`]*`|\[[^\]]*\]\([^)]*\)", "x", line)  # code and links are not prose
            assert not _CJK_GAP.search(prose), f"{name}: {line}"
    assert _version_key("vLLM 0.19+") == _version_key("vLLM >= 0.19.0") == _version_key("vllm v0.19.0")
    assert _version_key("torch 2.1") != _version_key("torch 2.10")


def test_reports_stay_within_their_caps_on_any_day(reports) -> None:
    """The size comes from the design: rows, notes, P2 items and links are capped, the rest counted."""
    for name, text in reports.items():
        lang = WINDOWS[name][2]
        top, short = HEAD[lang][:2]
        assert len(table_rows(text, top)) <= 8 if "| " in section(text, top) else True
        # the short table lists every P0/P1 item (the size test above holds them); its P2 rows are capped
        shorts = table_rows(text, short) if "| " in section(text, short) else []
        assert sum(r[0] == "P2" for r in shorts) <= 2
        refs = section(text, "参考链接" if lang == "zh" else "References")
        assert refs.count("\n- ") <= 4


def test_docs_describe_the_reading() -> None:
    doc = Path(__file__).resolve().parents[1] / "docs" / "daily.md"
    text = doc.read_text(encoding="utf-8")
    for word in ("下游进展", "页面保存时已关闭", "role", "short_table_limit"):
        assert word in text, word


# --- the mechanism frames, on invented titles -------------------------------------------------------


@pytest.mark.parametrize("title,zh,en", [
    ("Replace the Python sampler with a fused Triton kernel", "用 fused Triton kernel 替换 Python sampler",
     "replaces Python sampler with fused Triton kernel"),
    ("[Core] Move block table construction into the scheduler", "把 block table construction 移进调度器",
     "moves block table construction into scheduler"),
    ("perf: cache rope cos/sin tables across steps", "跨 steps 缓存 rope cos/sin tables",
     "caches rope cos/sin tables across steps"),
    ("Fuse add and rmsnorm into one kernel", "把 add 与 rmsnorm 融合进一个 kernel", "fuses add and rmsnorm into one kernel"),
    ("Overlap weight all-gather with the forward pass", "让权重 all-gather 与 forward pass 重叠执行",
     "overlaps weight all-gather with forward pass"),
    ("Skip the logits copy when no sampler needs it", "跳过 logits copy", "skips logits copy"),
    ("Gate the fused MoE path by torch_npu version", "按 `torch_npu` 版本限定 fused MoE 路径",
     "gates fused MoE path by `torch_npu` version"),
    ("[BugFix] Fix crash in prefix caching when the batch is empty", "修复 prefix caching 中的崩溃",
     "fixes crash in prefix caching"),
    ("Add a FlashComm backend for MoE all-to-all", "为 MoE all-to-all 新增 FlashComm backend",
     "adds FlashComm backend for MoE all-to-all"),
    ("[RFC]: Scheduler metrics for multi-stage serving", "RFC 提议为 multi-stage serving 新增调度器指标",
     "RFC: adds Scheduler metrics for multi-stage serving"),
    ("Split the KV transfer into send and receive stages", "把 KV transfer 拆分为 send 与接收 stages",
     "splits KV transfer into send and receive stages"),
    ("Pad decode batches to the captured graph size", "把 decode batches 补齐到 captured graph size",
     "pads decode batches to captured graph size"),
    ("Refactor the weight loader and update docs", "重构权重 loader，并更新文档", "refactors weight loader, and updates docs"),
    ("[Bug]: DeepSeek MTP hangs at step 3 on 16 ranks", "报告 DeepSeek MTP 在 step 3 卡死", "bug report: DeepSeek MTP hangs at step 3"),
])
def test_titles_are_read_into_a_chinese_frame(title: str, zh: str, en: str) -> None:
    from infra_radar.render.cjk import tidy
    from infra_radar.render.mechanism import read
    from infra_radar.render.saying import say

    kind = {"[RFC]": "propose", "[Bug]": "report"}
    actions, chinese = read(title, next((v for k, v in kind.items() if title.startswith(k)), ""))
    assert not chinese and actions, title
    got_zh, got_en = say(actions, "zh"), say(actions, "en")
    frame = "RFC 提议" if title.startswith("[RFC]") else "报告" if title.startswith("[Bug]") else ""
    efr = "RFC: " if title.startswith("[RFC]") else "bug report: " if title.startswith("[Bug]") else ""
    assert tidy(frame + got_zh) == zh and efr + got_en == en
    assert "…" not in got_zh and "“" not in got_zh


def test_a_title_github_cut_is_taken_back_to_its_last_whole_word() -> None:
    from infra_radar.render.mechanism import clean_title

    assert clean_title("[Fix] Avoid spelling errors in adv_esti…")[0] == "Avoid spelling errors"


_GITHUB_ITEM = re.compile(r"\]\(https://github\.com/([\w.-]+/[\w.-]+)/(pull|issues)/(\d+)\)")


def test_a_link_to_an_item_the_store_holds_opens_its_own_kind_of_page(reports, full_store) -> None:
    """Every GitHub link of every day (tables, references, downstream adaptations) to a PR the store holds is
    /pull/N, to an issue /issues/N; only a reference the store does not hold may use /issues/N (GitHub
    forwards it)."""
    from sqlalchemy import create_engine

    from infra_radar.store.queries import item_kinds

    linked = {(repo, int(n), page) for text in reports.values() for repo, page, n in _GITHUB_ITEM.findall(text)}
    engine = create_engine(full_store[1])
    try:
        kinds = item_kinds(engine, {(repo, n) for repo, n, _ in linked})
    finally:
        engine.dispose()
    assert len(kinds) >= 20, kinds  # the check reads what the reports link
    wrong = [(repo, n, page) for repo, n, page in linked
             if (repo.lower(), n) in kinds and page != ("pull" if kinds[(repo.lower(), n)] == "pr" else "issues")]
    assert not wrong, wrong
