"""Code facts on the team's day: the session's store of all history (imported from JSON Lines, no diffs) copied,
the shared clones imported over it with their diffs for the days around 2026-07-02 (the same items updated,
none duplicated), then the verl#6901 card and the 2026-07-02 deep dive checked and kept as golden files: they
state the default the code ships and that it contradicts the description. SQLite only (`one_store`)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar.cli import main

from .conftest import SHARED, TEST_DB_URL, check_golden
from .test_explain_real import masked

pytestmark = pytest.mark.one_store
GOLDEN = Path(__file__).parent / "golden" / "real" / "code"
REF = "verl-project/verl#6901"
CLONES = {"verl-project+verl.git": ("verl-project/verl", "main,release/*"),
          "vllm-project+vllm-ascend.git": ("vllm-project/vllm-ascend", "main,releases/*")}


def radar(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout if args[0] == "export" else result.output  # an export's data is its stdout (a long one says its progress on stderr)


@pytest.fixture(scope="module")
def code_store(full_store, shared_clones, tmp_path_factory) -> dict[str, str]:
    """RADAR_HOME of a copy of the session's store with the clones' diffs imported, and what was printed."""
    if TEST_DB_URL:
        pytest.skip("judged on the SQLite pass")
    home, url = full_store
    copy = tmp_path_factory.mktemp("code-store") / "home"
    copy.mkdir()
    source = sqlite3.connect(url.removeprefix("sqlite:///"))
    target = sqlite3.connect(copy / "radar.db")
    source.backup(target)
    source.close()
    before = target.execute("SELECT count(*) FROM items").fetchone()[0]
    target.close()
    out: dict[str, str] = {"home": str(copy), "before": str(before)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RADAR_HOME", str(copy))
        mp.delenv("RADAR_DB_URL", raising=False)
        for name, (repo, branches) in CLONES.items():
            out[repo] = radar("import-git", str(shared_clones / name), "--repo", repo, "--branches", branches,
                              "--since", "2026-06-28", "--until", "2026-07-05")
        db = sqlite3.connect(copy / "radar.db")
        out["facts before jsonl"] = str(db.execute("SELECT count(*) FROM code_facts").fetchone()[0])
        db.close()
        # the export of the same history imported again (no diffs in it) keeps the facts the clone gave
        radar("import-jsonl", str(SHARED / "git" / "verl-project+verl.jsonl.gz"))
        radar("analyze")
        for lang in ("zh", "en"):
            out[f"card {lang}"] = radar("show", REF, "--lang", lang)
            out[f"daily {lang}"] = radar("daily", "--since", "2026-06-29T02:00Z", "--until", "2026-07-02T02:12Z",
                                         "--lang", lang)
        out["export"] = radar("export", "--format", "json", "--since", "2026-06-29T02:00Z",
                              "--until", "2026-07-02T02:12Z")
    return out


def test_import_git_over_jsonl_updates_the_same_items(code_store):
    for repo in CLONES.values():
        printed = code_store[repo[0]]
        assert re.search(r": 0 new, [1-9]\d* updated", printed), printed  # the same PRs, now with their facts
    db = sqlite3.connect(Path(code_store["home"]) / "radar.db")
    assert db.execute("SELECT count(*) FROM items").fetchone()[0] == int(code_store["before"])
    sources = dict(db.execute("SELECT source, count(*) FROM code_facts GROUP BY source").fetchall())
    after_jsonl = db.execute("SELECT count(*) FROM code_facts").fetchone()[0]
    db.close()
    assert after_jsonl == int(code_store["facts before jsonl"])
    assert sources.get("git", 0) > 20 and sources.get("page", 0) >= 1


def _dive(daily: str) -> str:
    start = daily.index("### [verl-project/verl#6901]")
    end = daily.find("\n### ", start + 1)
    return daily[start:end if end > 0 else len(daily)]


def test_card_and_deep_dive_state_the_shipped_default_and_the_contradiction(code_store):
    for lang, says in (("zh", "代码与描述不符"), ("en", "The code differs from the description")):
        card, dive = code_store[f"card {lang}"], _dive(code_store[f"daily {lang}"])
        for text in (card, dive):
            assert says in text
            assert "`pad_bshd_to_minibatch_max`" in text and "`True`" in text
            assert "`verl/trainer/config/engine/megatron.yaml`" in text and "`verl/workers/config/engine.py`" in text
            assert "`false`" in text  # the description's side, as written
        row = next(line for line in code_store[f"daily {lang}"].splitlines()
                   if line.startswith("| P") and "verl#6901" in line)
        assert says in row
        assert "`pad_bshd_to_minibatch_max` = `True`" in card  # the code section lists the default it ships
        checklist = card[card.index("## 验证清单" if lang == "zh" else "## Verification checklist"):]
        assert "`pad_bshd_to_minibatch_max = True`" in checklist.splitlines()[2]  # the first step: its default


def test_export_carries_code_and_contradictions(code_store):
    items = json.loads(code_store["export"])
    items = items["items"] if isinstance(items, dict) else items
    by_ref = {f"{i['repo']}#{i['number']}": i for i in items}
    item = by_ref[REF]
    assert item["code"]["source"] == "git" and item["code"]["complete"] is True
    assert {"name": "pad_bshd_to_minibatch_max", "value": "True", "previous": None,
            "file": "verl/workers/config/engine.py"} in item["code"]["defaults"]
    assert set(item["code"]) == {"source", "complete", "defaults", "switches", "version_gates", "device_checks",
                                 "kernels", "removed", "tests", "device"}
    assert item["code"]["device"]["libs"] == []  # cuDNN named in a docstring only
    assert {c["file"] for c in item["contradictions"]} == {"verl/trainer/config/engine/megatron.yaml",
                                                          "verl/workers/config/engine.py"}
    assert all(set(c) == {"description", "code", "file"} for c in item["contradictions"])
    assert any(i["code"] is None and i["contradictions"] == [] for i in items)  # no diff read: null


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_golden_card_and_deep_dive_with_code_facts(code_store, lang):
    text = masked(code_store[f"card {lang}"]) + "\n---\n" + masked(_dive(code_store[f"daily {lang}"]))
    text = re.sub(r"[「“][^」”\n]*[」”]", "“⟨author⟩”", text)  # the description's words, as the other goldens
    check_golden(GOLDEN / f"verl-project+verl+6901.{lang}.md", text, f"{lang}: the card or deep dive")
