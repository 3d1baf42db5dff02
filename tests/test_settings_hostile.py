"""Settings under hostile values: each is one line naming the variable, file or key, never an "unexpected" error,
a traceback the user turned off, a read without end or a silently skipped file."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from infra_radar.cli import main

from .test_settings_checked import one_error, run


@pytest.mark.parametrize("value", ["0", "false", "No", "OFF", ""])
def test_radar_debug_off_values_keep_the_one_line_error(monkeypatch, value):
    from infra_radar.pipeline import memory

    def broken(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(memory, "tracked", broken)
    result = run(["watch", "list"], env={"RADAR_DEBUG": value})
    assert result.exit_code == 1 and "error: unexpected RuntimeError: boom" in result.output, result.output


@pytest.mark.no_store
def test_radar_debug_on_shows_the_traceback(monkeypatch):
    from infra_radar import config

    def broken(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(config, "home_dir", broken)
    result = CliRunner().invoke(main, ["watch", "list"], env={"RADAR_DEBUG": "1"})
    assert isinstance(result.exception, RuntimeError)


@pytest.mark.no_store
@pytest.mark.parametrize(("where", "url"), [("env", "http://[::1"), ("env", "postgresql://u:pw@[::1/db"),
                                            ("env", "postgresql://h:99999999/db"), ("flag", "http://[::1"),
                                            ("toml", "http://[::1"), ("env", "radar.db")])
def test_a_malformed_database_url_is_one_line_naming_where_it_came_from(radar_home, where, url):
    args, env = ["watch", "list"], {}
    if where == "env":
        env["RADAR_DB_URL"] = url
    elif where == "flag":
        args = ["--db", url, *args]
    else:
        radar_home.mkdir(parents=True, exist_ok=True)
        (radar_home / "radar.toml").write_text(f'db_url = "{url}"\n')
    line = one_error(run(args, env))
    named = {"env": "RADAR_DB_URL", "flag": "--db", "toml": "radar.toml: db_url"}[where]
    assert named in line and "not a database URL" in line and "pw" not in line, line


@pytest.mark.no_store
def test_a_non_utf8_environment_variable_is_one_line_naming_it(tmp_path):
    line = one_error(run(["site", "build", str(tmp_path / "site")], env={"RADAR_SITE_URL": "http://x\udcff/"}))
    assert "RADAR_SITE_URL" in line and "UTF-8" in line, line


@pytest.mark.no_store
def test_a_dangling_radar_toml_link_is_said(radar_home):
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.toml").symlink_to(radar_home / "gone.toml")
    line = one_error(run(["watch", "list"]))
    assert str(radar_home / "radar.toml") in line and "does not exist" in line, line


@pytest.mark.no_store
def test_a_config_that_is_not_a_small_regular_file_is_refused(tmp_path):
    line = one_error(run(["--config", "/dev/zero", "watch", "list"]))  # read without end before
    assert "/dev/zero" in line and "not a regular file" in line, line
    big = tmp_path / "big.toml"
    with open(big, "w") as fh:
        fh.write("# padding\n" * 120_000)  # 1.2 MB of comments
    line = one_error(run(["--config", str(big), "watch", "list"]))
    assert str(big) in line and "larger than 1 MiB" in line, line
    line = one_error(run(["--config", str(tmp_path), "watch", "list"]))
    assert str(tmp_path) in line, line
    fifo = tmp_path / "radar.fifo"
    os.mkfifo(fifo)  # no writer: opening it the usual way waits forever
    line = one_error(run(["--config", str(fifo), "watch", "list"]))
    assert str(fifo) in line and "not a regular file" in line, line


@pytest.mark.no_store
@pytest.mark.parametrize(("text", "key"), [
    ("[focus]\ntopics = [{}]\n", "[focus] topics"),
    ("[focus]\nweights = {{{}}}\n", "[focus] weights"),
    ('[[repos]]\nname = "acme/infer"\nbranches = [{}]\n', "branches"),
])
def test_a_list_past_its_cap_is_refused_by_key(radar_home, text, key):
    many = 10_001
    if "weights" in text:
        body = ", ".join(f"t{i} = 1" for i in range(many))
    else:
        body = ", ".join(f'"t{i}"' for i in range(many))
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.toml").write_text(text.format(body))
    line = one_error(run(["watch", "list"]))
    assert key in line and "10,001 entries" in line and "radar.toml" in line, line


@pytest.mark.no_store
def test_a_relative_cache_dir_is_said_and_a_foreign_folder_is_not_written(tmp_path, monkeypatch, capsys):
    from jinja2 import DictLoader, Environment

    from infra_radar.render import template_cache

    def compile_one() -> object:
        template_cache.bytecode_cache.cache_clear()
        template_cache._SAID.clear()
        cache = template_cache.bytecode_cache()
        Environment(loader=DictLoader({"t.j2": "{{ x }}"}), bytecode_cache=cache).get_template("t.j2")
        return cache

    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("RADAR_CACHE_DIR", "../../cache")
    try:
        assert compile_one() is not None
        said = capsys.readouterr().err
        where = tmp_path / "cache" / "templates"
        assert f"compiled templates are kept in {where}" in said, said
        assert [p.name.startswith("__jinja2_") for p in where.iterdir()] == [True]

        foreign = tmp_path / "etc"
        (foreign / "templates").mkdir(parents=True)
        (foreign / "templates" / "passwd").write_text("someone else's file\n")
        monkeypatch.setenv("RADAR_CACHE_DIR", str(foreign))
        assert compile_one() is None
        said = capsys.readouterr().err
        assert "not the radar's cache folder" in said and "passwd" in said, said
        assert sorted(os.listdir(foreign / "templates")) == ["passwd"]  # nothing written beside it
    finally:
        template_cache.bytecode_cache.cache_clear()
