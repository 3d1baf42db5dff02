"""The CLI as a user meets it: help on every command, init, demo, one-line errors, idempotent imports."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.pipeline.demo import sample_files


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _commands(group: click.Group, prefix: str = ""):
    for name, cmd in group.commands.items():
        yield f"{prefix}{name}", cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, f"{prefix}{name} ")


def test_every_command_has_help_text():
    names = dict(_commands(main))
    for expected in ("init", "import-git", "import-jsonl", "analyze", "daily", "weekly", "show", "export",
                     "demo", "watch add", "watch list", "watch remove"):
        assert expected in names
    for name, cmd in names.items():
        assert cmd.help and cmd.help.strip(), f"{name} has no help"
        for param in cmd.params:
            if isinstance(param, click.Option) and not param.hidden and param.name != "help":
                assert param.help, f"{name} {param.opts} has no help"


def test_init_writes_every_option_and_refuses_to_clobber(radar_home):
    code, out, _ = invoke("init")
    assert code == 0
    text = (radar_home / "radar.toml").read_text()
    for option in ("lang", "db_url", "target", "deep_dive_limit", "first_lookback_hours", "[focus]", "[[repos]]"):
        assert option in text
    if not os.environ.get("RADAR_TEST_DB_URL"):  # on PostgreSQL the store is not a file
        assert (radar_home / "radar.db").exists()
    code, _, err = invoke("init")
    assert code == 1 and "already exists" in err and "Traceback" not in err


def test_demo_writes_three_outputs(tmp_path, monkeypatch, radar_home):
    monkeypatch.chdir(tmp_path)
    # five dives (the default is three): the sample's backport of acme/infer-npu#812 is among them
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.toml").write_text("deep_dive_limit = 5\n", encoding="utf-8")
    code, out, err = invoke("demo")
    assert code == 0, err
    paths = [Path(line) for line in out.splitlines()]
    assert [p.name for p in paths] == ["2026-08-03.md", "2026-W31.md", "export.json"]
    assert all((tmp_path / p).exists() or p.exists() for p in paths)
    daily = (tmp_path / "radar-demo" / "daily" / "2026-08-03.md").read_text()
    assert daily.startswith("# ") and "## P0 / P1" in daily
    # a reference names the item, never how a link to it was found ("cherry-pick of", "subject")
    refs = daily.split("## 参考链接\n", 1)[1]
    assert "acme/infer-npu#812" in refs and not re.search(r"\) (cherry-pick of|subject)$", refs, re.M), refs
    export = json.loads((tmp_path / "radar-demo" / "export.json").read_text())
    assert {e["repo"] for e in export} == {"acme/infer", "acme/infer-npu", "acme/trainer"}


@pytest.mark.parametrize("args, message", [
    (("weekly", "--repo", "acme/infer", "--week", "2026-W60"), "has no week 60"),
    (("weekly", "--repo", "nobody/here", "--week", "2026-W31"), "unknown repository nobody/here"),
    (("daily", "--since", "2026-08-02", "--until", "2026-08-01"), "must be before until"),
    (("daily", "--since", "yesterday"), "invalid time 'yesterday'"),
    (("show", "acme/infer#999999"), "is not in the store"),
    (("show", "not-a-ref"), "invalid item reference"),
])
def test_bad_input_gets_one_clear_line(args, message):
    assert invoke("import-jsonl", *map(str, sample_files()))[0] == 0
    code, _, err = invoke(*args)
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err


def test_bad_config_names_the_file(tmp_path):
    config = tmp_path / "radar.toml"
    config.write_text('lang = "fr"\n')
    code, _, err = invoke("--config", str(config), "daily")
    assert code == 1 and str(config) in err and "lang" in err
    config.write_text("colour = 1\n")
    code, _, err = invoke("--config", str(config), "daily")
    assert code == 1 and "unknown key(s) colour" in err


def test_import_jsonl_counts_broken_lines_and_keeps_the_rest(tmp_path):
    source = sample_files()[0].read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([source[0], source[1], "{oops", *source[2:]]) + "\n")
    code, out, err = invoke("import-jsonl", str(broken))
    assert code == 1 and "1 malformed line(s) skipped" in err and f"{broken}:3" in err
    assert f"{len(source) - 1} new" in out
    code, out, _ = invoke("import-jsonl", str(sample_files()[0]))
    assert code == 0 and "0 new, 0 updated" in out


def test_watch_add_list_remove():
    assert invoke("watch", "add", "acme/infer#1811", "--reason", "kernel")[0] == 0
    code, out, _ = invoke("watch", "list")
    assert "acme/infer#1811" in out and "kernel" in out
    assert invoke("watch", "remove", "acme/infer#1811")[0] == 0
    code, _, err = invoke("watch", "remove", "acme/infer#1811")
    assert code == 1 and "not on the watch list" in err
