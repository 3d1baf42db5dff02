"""The first hour with the radar: what a new user meets and should not be surprised by.

A daily report's file name is its title's date; an empty window says what the store holds; outputs are
readable like the site; the item page renders the radar's Markdown; `radar init` shows every option; the demo
says how to call `radar` when it is not on PATH."""

from __future__ import annotations

import os
import re
import stat
import sys
import tomllib
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from infra_radar import config as config_module
from infra_radar.cli import main
from infra_radar.models import Window
from infra_radar.pipeline.demo import sample_files
from infra_radar.windows import parse_when, report_day


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def sample(radar_home):
    assert invoke("import-jsonl", *map(str, sample_files()))[0] == 0
    return radar_home


def _title_date(report: Path) -> str:
    return re.search(r"\d{4}-\d{2}-\d{2}", report.read_text(encoding="utf-8").splitlines()[0]).group(0)


# --- a report's file name is its title's date ------------------------------------------------------

@pytest.mark.parametrize("since, until, day", [
    ("2026-08-02", "2026-08-03", "2026-08-02"),                      # a calendar day: [D, D+1) is D
    ("2026-08-01T02:00Z", "2026-08-03T02:00Z", "2026-08-03"),        # a morning run is the morning's day
    ("2026-08-01", "2026-08-04", "2026-08-03"),
    ("2026-08-02T20:00+08:00", "2026-08-03T08:00+08:00", "2026-08-02"),  # ends 00:00Z: the day before
])
def test_a_daily_is_saved_under_its_titles_date(sample, tmp_path, since, until, day):
    code, out, err = invoke("daily", "--since", since, "--until", until, "--out", str(tmp_path))
    assert code == 0, err
    path = Path(out.strip())
    assert path.name == f"{day}.md" and _title_date(path) == day


def test_the_site_and_the_push_date_a_day_as_its_title_does(sample):
    from infra_radar.publish.data import day_window
    from infra_radar.publish.site import daily_page

    for day in (date(2026, 8, 2), date(2026, 12, 31)):
        window = day_window(day)
        assert report_day(window) == day and daily_page(day) == f"daily/{day.isoformat()}.html"
    assert report_day(Window(parse_when("2026-06-29T02:00Z"), parse_when("2026-07-02T02:12Z"))).isoformat() \
        == "2026-07-02"
    code, out, err = invoke("push", "daily", "--to", "slack", "--dry-run", "--date", "2026-08-02")
    assert code == 0, err
    assert "2026-08-02" in out and "2026-08-03" not in out.split("\n", 3)[0]


# --- an empty window says what the store holds ------------------------------------------------------

def test_an_empty_window_names_each_repositorys_newest_item(sample):
    code, out, err = invoke("daily", "--since", "2026-09-20", "--until", "2026-09-21")
    assert code == 0
    note = [line for line in err.splitlines() if line.startswith("note: no item in the window")]
    assert len(note) == 1, err
    for repo in ("acme/infer", "acme/infer-npu", "acme/trainer"):
        assert re.search(re.escape(repo) + r" 2026-0\d-\d\d", note[0]), note[0]
    assert "radar fetch" in note[0] and "import" in note[0]
    # a window with items says nothing of the kind
    code, _, err = invoke("daily", "--since", "2026-08-01", "--until", "2026-08-03")
    assert code == 0 and "no item in the window" not in err


def test_an_empty_store_says_it_holds_nothing_yet(radar_home):
    code, _, err = invoke("daily")
    assert code == 0 and "the store holds none yet" in err and "radar import-git" in err


# --- outputs readable like the site --------------------------------------------------------------

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_reports_and_the_export_are_readable_as_the_umask_allows(tmp_path, monkeypatch, umask, mode):
    from infra_radar.pipeline import home

    monkeypatch.setattr(home, "_umask", lambda: umask)
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke("demo")
    assert code == 0, err
    written = [Path(line) for line in out.splitlines()]
    assert {p.name for p in written} == {"2026-08-03.md", "2026-W31.md", "export.json"}
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == mode, path


@pytest.mark.no_store
def test_the_umask_is_read_without_changing_it():
    from infra_radar.pipeline import home

    home._umask.cache_clear()
    before = os.umask(0o027)
    try:
        home._umask.cache_clear()
        assert home._umask() == 0o027 and home.shared_mode() == 0o640
    finally:
        os.umask(before)
        home._umask.cache_clear()


# --- Markdown on the site's item page ------------------------------------------------------------

def test_the_item_page_renders_the_conclusions_markdown(sample, tmp_path):
    from html import unescape

    assert invoke("site", "build", str(tmp_path / "site"))[0] == 0
    checked = 0
    for page in (tmp_path / "site" / "items").rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        html = re.sub(r'<details class="body">.*?</details>', "", html, flags=re.S)  # the author's text, as is
        visible = unescape(re.sub(r"<[^>]+>", "", html))
        assert "`" not in visible, (page, [line for line in visible.splitlines() if "`" in line][:3])
        checked += "<code>" in html
    assert checked >= 5  # the conclusions' identifiers and paths are code, not backticks


@pytest.mark.no_store
def test_markdown_on_the_item_page_stays_safe(tmp_path):
    from infra_radar.publish.markup import inline_html
    from infra_radar.render.escape import Md, code, text

    author = "<script>alert(1)</script> [a](javascript:alert(2)) *b*"
    html = inline_html(text(Md(f"uses {code('x<y>')} and {text(author)}")))
    assert "<script>" not in html and 'href="javascript' not in html
    # our code span is rendered; the author's emphasis, link and tag are text, shown as written
    assert "<code>x&lt;y&gt;</code>" in html and "<p>" not in html
    assert "<em>" not in html and "*b*" in html and "[a](javascript:alert(2))" in html


# --- radar init shows every option -------------------------------------------------------------

def _written_options(text: str) -> tuple[set[str], dict]:
    """Top-level keys and tables radar.toml shows (set or commented), and its [llm] table uncommented."""
    keys = set(re.findall(r"^(?:# )?([a-z0-9_]+) = ", text.split("[focus]")[0], re.M))
    keys |= set(re.findall(r"^(?:# )?\[\[?([a-z_]+)\]\]?$", text, re.M))
    llm = text[text.index("# [llm]"):]
    llm = "\n".join(line[2:] for line in llm.splitlines() if line.startswith("# ") and not line.startswith("#  "))
    return keys, tomllib.loads(re.sub(r"\s+#.*", "", llm))["llm"]


def test_init_writes_every_option_the_config_reads(radar_home):
    from infra_radar.llm import prompts

    code, out, _ = invoke("init")
    assert code == 0
    text = (radar_home / "radar.toml").read_text(encoding="utf-8")
    keys, llm = _written_options(text)
    assert config_module._TOP_KEYS <= keys, config_module._TOP_KEYS - keys
    assert set(prompts._KEYS) == set(llm), set(prompts._KEYS) ^ set(llm)
    for key in config_module._REPO_KEYS:
        assert f"\n{key} = " in text
    assert "\ntopics = " in text and "\nweights = " in text
    tomllib.loads(text)  # as written it is valid TOML


@pytest.mark.no_store
def test_the_commented_llm_options_show_the_defaults_in_force(radar_home):
    from infra_radar.config import load_settings
    from infra_radar.llm import prompts

    _, llm = _written_options(config_module.default_config_text())
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n', encoding="utf-8")
    config = prompts.llm_config(load_settings(), env={})
    for key in ("json_mode", "max_concurrency", "timeout", "token_budget", "language", "run_deadline",
                "max_reply_bytes"):
        assert getattr(config, key) == llm[key], key
    assert llm["max_tokens"] == 0 and llm["prompts_dir"] == ""


@pytest.mark.no_store
def test_settings_fields_are_all_options():
    """Every Settings field a user sets has its key in radar.toml (home and the derived fields aside)."""
    derived = {"home", "config_path", "focus", "focus_weights", "repos", "repos_listed"}
    fields = set(config_module.Settings.__dataclass_fields__) - derived
    assert fields <= config_module._TOP_KEYS, fields - config_module._TOP_KEYS


# --- the demo says how to call radar -----------------------------------------------------------

@pytest.mark.no_store
def test_the_demo_says_how_to_put_radar_on_path(tmp_path, monkeypatch):
    from infra_radar.cli import reports

    fake = tmp_path / "venv" / "bin"
    fake.mkdir(parents=True)
    (fake / "radar").write_text("#!/bin/sh\n")
    (fake / "activate").write_text("")
    monkeypatch.setattr(sys, "argv", [str(fake / "radar"), "demo"])
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setenv("PATH", "/nonexistent")
    hint = reports.path_hint()
    assert hint and f"source {fake / 'activate'}" in hint
    monkeypatch.setenv("PATH", str(fake))
    os.chmod(fake / "radar", 0o755)
    assert reports.path_hint() is None


# --- the model server says what it will do and what it keeps ---------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def _plan(cache: Path, size: str = "0.5b") -> str:
    import subprocess

    done = subprocess.run([str(ROOT / "scripts" / "model_server.sh"), "plan"], capture_output=True, text=True,
                          env={**os.environ, "RADAR_MODEL_CACHE": str(cache), "RADAR_MODEL_SIZE": size},
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.no_store
def test_the_model_server_says_what_it_will_build_and_the_cache_it_takes(tmp_path):
    said = _plan(tmp_path / "cache")
    assert "build llama-server" in said and "0.5b weights (491 MB" in said
    assert str(tmp_path / "cache") in said and "RADAR_MODEL_CACHE" in said
    peak, kept = map(int, re.search(r"up to ~(\d+) MB more while it works, ~(\d+) MB more kept", said).groups())
    assert 491 < kept < peak < 1300, said
    assert "RADAR_REAL_MODEL=0 scripts/test.sh" in said
    # what is cached is not built or fetched again, and the plan says so
    (tmp_path / "cache" / "llama-0.3.36" / "bin").mkdir(parents=True)
    binary = tmp_path / "cache" / "llama-0.3.36" / "bin" / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (tmp_path / "cache" / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf").write_bytes(b"GGUF")
    assert "nothing to build or fetch" in _plan(tmp_path / "cache")


@pytest.mark.no_store
def test_the_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in readme and "'.[dev,postgres,docs]'" in ci
    assert "RADAR_REAL_MODEL=0 scripts/test.sh" in readme and "source .venv/bin/activate" in readme
    assert len(readme.encode("utf-8")) <= 15_000
    assert "mkdocs build --strict" in (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
