"""What keeps `radar site build` and `radar show` fast, counted, never timed (bench/site_build.py and
bench/show_card.py print the times): pages rendered in forked workers are the same files, work a page repeats is
done once, the assertion rules compile one word-boundary class a run, packaged rule files are parsed once."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest

from infra_radar import toml_cache
from infra_radar.analyse import assertions, porting
from infra_radar.config import rule_data
from infra_radar.pipeline.analysis import analyze
from infra_radar.pipeline.memory import Memory
from infra_radar.publish import build, charts
from infra_radar.publish import site as site_mod
from infra_radar.publish.build import build_site
from infra_radar.publish.data import load_site_data
from infra_radar.render.escape import Md
from infra_radar.windows import horizon


@pytest.fixture(autouse=True)
def no_charts(monkeypatch):
    monkeypatch.setattr(charts, "available", lambda: False)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_pages_rendered_by_forked_workers_are_the_same_files(settings, sample_store, tmp_path, monkeypatch):
    """Two workers render every weekly, item and repository page (none in this process) and the site is the
    same, byte for byte, as the one this process renders alone (the charts' SVG too)."""
    monkeypatch.setattr(build, "MIN_FORK", 0)  # the sample is small: fork anyway
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(charts, "available", lambda: True)
    here = []
    real = site_mod.Site.item
    monkeypatch.setattr(site_mod.Site, "item", lambda self, *a, **k: here.append(1) or real(self, *a, **k))
    one = build_site(settings, sample_store, tmp_path / "one", workers=1)
    assert len(here) == one.item_pages > 0
    here.clear()
    two = build_site(settings, sample_store, tmp_path / "two", workers=2)
    assert here == []  # every item page was rendered in a worker (a forked copy counts in its own memory)
    assert (two.pages, two.written, two.item_pages) == (one.pages, one.written, one.item_pages)
    assert tree(tmp_path / "one") == tree(tmp_path / "two")
    assert any(name.endswith(".svg") for name in tree(tmp_path / "two"))


def test_a_worker_count_from_the_environment(monkeypatch):
    monkeypatch.setenv("RADAR_SITE_WORKERS", "3")
    assert build.site_workers() == 3
    monkeypatch.delenv("RADAR_SITE_WORKERS")
    assert 1 <= build.site_workers() <= 4


@pytest.fixture
def site(settings, sample_store):
    analyze(settings, sample_store)
    return site_mod.Site(settings, load_site_data(sample_store, settings, horizon(settings.clock_skew)), "",
                         Memory.everything(settings, sample_store), engine=sample_store)


def test_a_line_of_markdown_is_converted_once_a_build_and_its_links_noted_on_every_page(site, monkeypatch):
    calls = []
    real = site_mod.inline_html
    monkeypatch.setattr(site_mod, "inline_html", lambda text, local=None: calls.append(text) or real(text, local))
    ai = site.data.numbered()[0]
    line = Md(f"see [{ai.item.ref}](https://github.com/{ai.item.repo}/pull/{ai.item.number}) and `code`")
    pages = []
    for _ in range(3):
        site.looked = set()
        pages.append(str(site.inline(line, "../../")))
        assert site.looked == {f"{ai.item.repo.lower()}#{ai.item.number}"}  # the link is noted each time
    assert len(calls) == 1 and pages[0] == pages[1] == pages[2]
    assert 'href="../../items/' in pages[0] and "<code>code</code>" in pages[0]
    site.looked = None


def test_an_item_page_reads_the_porting_map_once(site, monkeypatch):
    """The card and the evidence records of a page both need the item's porting entries: worked out once."""
    calls = []
    real = porting._applied
    monkeypatch.setattr(porting, "_applied", lambda *a: calls.append(a[0]) or real(*a))
    items = [ai for ai in site.data.numbered()][:5]
    for ai in items:
        site.item(ai, site.card_input(ai), [])
    assert len(calls) == len(items)


def _per_word(words) -> str:
    """The assertion rules' alternation as it was written before: the lookarounds repeated for each word."""
    parts = []
    for w in sorted(set(words), key=len, reverse=True):
        body = re.escape(w)
        if re.match(r"[A-Za-z]", w):
            body = r"(?<![A-Za-z])" + body
        if re.search(r"[A-Za-z]$", w):
            body += r"(?![A-Za-z])"
        parts.append(body)
    return "|".join(parts)


@pytest.mark.no_store
def test_the_assertion_rules_share_their_word_boundaries_and_match_the_same():
    data = rule_data("assertions")
    rules = assertions.compile_assertion_rules(data)
    # a word-boundary class for each run of words alike, not for each word (34 projects, twice)
    assert rules.other_project.pattern.count("(?<![A-Za-z])") <= 6, rules.other_project.pattern
    texts = ["As in SGLang, the scheduler hangs.", "vLLM's cache and sglang’s router", "unlike TRT-LLM, no crash",
             "If the queue is full it could hang.", "Not a crash; rather than NaN", "KV cache (as in vllm) ſglang",
             "xsglang sglangx SGLANG's", "the fix, unlike the old path, is not lossy"]
    for key in ("negation_before", "negation_after", "hypothetical"):
        old = re.compile(_per_word(data[key]), re.I)
        for text in texts:
            assert [m.span() for m in getattr(rules, key).finditer(text)] == [m.span() for m in old.finditer(text)]
    words = ["crash", "nan", "hang", "oom", " stuck", "-lossy"]
    parts = []
    for w in sorted(set(words), key=len, reverse=True):  # cue_pattern as it was written before
        body = re.escape(w.strip())
        if re.match(r"[A-Za-z]", w):
            body = r"(?<![A-Za-z])" + body
        if len(w.strip()) <= 4 and re.search(r"[A-Za-z]$", w):
            body += r"(?:s|es|ed|ing)?(?![A-Za-z])"
        parts.append(body)
    old, cue = re.compile("|".join(parts), re.I), assertions.cue_pattern(words)
    found = [[m.span() for m in cue.finditer(t)] for t in texts]
    assert found == [[m.span() for m in old.finditer(t)] for t in texts] and sum(map(len, found)) >= 5


@pytest.mark.no_store
def test_a_packaged_rule_file_is_parsed_once_and_read_back_after(tmp_path, monkeypatch):
    monkeypatch.setenv("RADAR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(toml_cache, "_STATE", {})
    parsed = []
    real = tomllib.loads
    monkeypatch.setattr(toml_cache.tomllib, "loads", lambda text: parsed.append(1) or real(text))
    text = 'a = [1, 2.5, "x"]\n[t]\nb = { c = true }\n'
    first = toml_cache.loads(text)
    first["a"].append("changed by a caller")
    assert toml_cache.loads(text) == real(text)  # a new object each time: what a caller changed is not kept
    assert len(parsed) == 1
    monkeypatch.setattr(toml_cache, "_STATE", {})  # the next process: read from the folder, not parsed
    assert toml_cache.loads(text) == real(text) and len(parsed) == 1
    assert json.loads((tmp_path / "cache" / "rules" / "rules.json").read_text())
    dated = "d = 2026-11-28\n"  # JSON has no dates: parsed every time
    assert toml_cache.loads(dated) == real(dated) and toml_cache.loads(dated) == real(dated)
    assert len(parsed) == 3


@pytest.mark.no_store
def test_a_rules_cache_folder_others_can_write_or_holding_other_files_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("RADAR_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache" / "rules").mkdir(parents=True)
    os.chmod(tmp_path / "cache" / "rules", 0o777)
    assert toml_cache._folder() is None
    os.chmod(tmp_path / "cache" / "rules", 0o700)
    assert toml_cache._folder() == tmp_path / "cache" / "rules"
    (tmp_path / "cache" / "rules" / "passwd").write_text("someone else's\n")
    assert toml_cache._folder() is None
    monkeypatch.setattr(toml_cache, "_STATE", {})
    assert toml_cache.loads("x = 1\n") == {"x": 1}  # parsed, nothing written
    assert sorted(os.listdir(tmp_path / "cache" / "rules")) == ["passwd"]


@pytest.mark.no_store
def test_the_command_starts_without_the_site_the_model_client_or_the_evaluation():
    """`radar --version` (and so every command's start, the card's too) imports none of the site, model or
    evaluation packages: each command imports them where it uses them."""
    probe = ("import sys\nfrom infra_radar.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n"
             "    pass\nprint(sorted(m for m in sys.modules if m.split('.')[:2] in (['infra_radar', 'publish'], "
             "['infra_radar', 'llm'], ['infra_radar', 'evaluate'])))")
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]", run.stdout
