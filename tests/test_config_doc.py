"""The docs say what the code does: docs/configuration.md's options table is generated from the packaged
radar.toml (and kept equal here), and docs/labelling.md cites files the repository has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infra_radar import config as config_module
from infra_radar.config import default_config_text
from infra_radar.pipeline.config_doc import BEGIN, END, options, options_table

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.no_store


def _section(doc: str, heading: str) -> str:
    return doc.split(heading, 1)[1].split("\n#", 1)[0]


def test_the_options_table_is_the_one_radar_toml_generates():
    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    shown = doc[doc.index(BEGIN):doc.index(END) + len(END)]
    assert shown == options_table(default_config_text()), (
        "docs/configuration.md is out of date: run python -m infra_radar.pipeline.config_doc docs/configuration.md")


def test_every_option_has_a_row_with_its_packaged_default():
    rows = {name: (default, about) for name, default, about in options(default_config_text())}
    for key in config_module._TOP_KEYS - {"focus", "repos", "llm"}:
        assert key in rows and rows[key][1], key
    for key in config_module._REPO_KEYS:
        assert f"[[repos]] {key}" in rows and rows[f"[[repos]] {key}"][1], key
    settings = config_module.Settings(home=Path("."), db_url="")
    for key in ("short_p2_limit", "short_table_limit", "downstream_limit", "carry_days", "top_table_limit"):
        assert rows[key][0] == str(getattr(settings, key)), key  # the table's default is the one in force
    assert rows["clock_skew"][0] == f"{settings.clock_skew:g}" and rows["[[repos]] role"][0] == "upstream"


def test_the_llm_table_names_every_llm_option():
    from infra_radar.llm import prompts

    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z_]+)`", "\n".join(line.split("|")[1] for line in
                                                      _section(doc, "### `[llm]`").splitlines()
                                                      if line.startswith("| `"))))
    assert named == set(prompts._KEYS), named ^ set(prompts._KEYS)


def test_the_labelling_guide_cites_files_the_repository_has():
    doc = (ROOT / "docs" / "labelling.md").read_text(encoding="utf-8")
    cited = {p for p in re.findall(r"`([\w./-]+\.(?:py|toml|jsonl|md))`", doc) if not p.startswith("../")}
    assert cited, "no file cited"
    assert [p for p in cited if not (ROOT / p).exists()] == []
    for outside in re.findall(r"`(\.\./[^`]+)`", doc):  # the development data: said to be outside the repository
        line = next(ln for ln in doc.replace("\n", " ").split(". ") if outside in ln)
        assert "development data" in line or "outside the" in line, line
