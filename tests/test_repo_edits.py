"""`radar repo add|remove` under hostile conditions: edits at once are serialised (none lost, a removed repository
stays removed), an inline `repos = [...]` array is edited in place (entries and comments kept), a read-only file
is refused and a symbolic link loop is one line; nothing is changed by a refused edit."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor

from infra_radar.config import load_settings

from .test_settings_checked import one_error, run

START = """\
# the team's radar
lang = "en"

[[repos]]
name = "acme/keep"   # always watched

[[repos]]
name = "acme/gone"
"""


def _radar(home, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RADAR_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "infra_radar", *args], capture_output=True, text=True, env=env,
                          timeout=600)  # a safety net only: nothing here is timed


def _names(config) -> list[str]:
    return [r["name"] for r in tomllib.loads(config.read_text(encoding="utf-8"))["repos"]]


def test_twenty_adds_at_once_all_land_and_a_removed_repository_stays_removed(radar_home):
    radar_home.mkdir(parents=True)
    config = radar_home / "radar.toml"
    config.write_text(START, encoding="utf-8")
    os.chmod(config, 0o640)
    jobs = [("repo", "add", f"acme/r{i}") for i in range(20)] + [("repo", "remove", "acme/gone")]
    with ThreadPoolExecutor(len(jobs)) as pool:
        done = list(pool.map(lambda args: _radar(radar_home, *args), jobs))
    for result in done:
        assert result.returncode == 0, result.stderr
    assert sum("added acme/r" in r.stdout for r in done) == 20
    names = _names(config)
    assert sorted(names) == sorted(["acme/keep", *(f"acme/r{i}" for i in range(20))]), names  # 4-10 lost before
    text = config.read_text(encoding="utf-8")
    assert text.startswith("# the team's radar\nlang = \"en\"\n") and "# always watched" in text
    assert os.stat(config).st_mode & 0o777 == 0o640  # the mode the user gave it
    assert not [p.name for p in radar_home.iterdir() if p.name.endswith(".tmp")]


INLINE = """\
lang = "en"
# what we follow
repos = [
  { name = "acme/infer", branches = ["main"] },  # the engine
  # our own port
  { name = "acme/infer-npu", role = "downstream" },
]  # keep this list inline
"""


def test_an_inline_repos_array_is_edited_in_place_keeping_its_entries_and_comments(radar_home):
    radar_home.mkdir(parents=True)
    config = radar_home / "radar.toml"
    config.write_text(INLINE, encoding="utf-8")
    added = run(["repo", "add", "acme/serve", "--branches", "main,release/*"])
    assert added.exit_code == 0 and "added acme/serve" in added.output, added.output
    text = config.read_text(encoding="utf-8")
    for kept in ("# what we follow", "# the engine", "# our own port", "# keep this list inline"):
        assert kept in text, text  # the entries and comments were deleted without a word
    assert [r.name for r in load_settings().repos] == ["acme/infer", "acme/infer-npu", "acme/serve"]
    assert load_settings().repo("acme/serve").branches == ["main", "release/*"]
    changed = run(["repo", "add", "acme/infer-npu", "--branches", "dev"])
    assert changed.exit_code == 0 and "updated acme/infer-npu" in changed.output, changed.output
    removed = run(["repo", "remove", "acme/infer"])
    assert removed.exit_code == 0, removed.output
    settings = load_settings()
    assert [r.name for r in settings.repos] == ["acme/infer-npu", "acme/serve"]
    assert settings.repo("acme/infer-npu").role == "downstream" and settings.repo("acme/infer-npu").branches == ["dev"]
    text = config.read_text(encoding="utf-8")
    assert "# our own port" in text and "# keep this list inline" in text and "repos = [" in text, text


def test_a_read_only_radar_toml_is_refused_and_left_as_it_was(radar_home):
    radar_home.mkdir(parents=True)
    config = radar_home / "radar.toml"
    config.write_text(START, encoding="utf-8")
    os.chmod(config, 0o444)
    for args in (["repo", "add", "acme/new"], ["repo", "remove", "acme/gone"]):
        line = one_error(run(args))
        assert str(config) in line and "read-only" in line, line
    assert config.read_text(encoding="utf-8") == START and os.stat(config).st_mode & 0o777 == 0o444
    assert "already configured" in run(["repo", "add", "acme/keep"]).output  # nothing to write: no refusal


def test_a_symbolic_link_loop_as_radar_toml_is_one_line(radar_home, tmp_path):
    radar_home.mkdir(parents=True)
    config = radar_home / "radar.toml"
    config.symlink_to(config)
    for args in (["repo", "add", "acme/new"], ["repo", "list"], ["watch", "list"]):
        line = one_error(run(args))
        assert str(config) in line and "symbolic link loop" in line, line
    loop = tmp_path / "loop.toml"
    loop.symlink_to(tmp_path / "other.toml")
    (tmp_path / "other.toml").symlink_to(loop)
    for args in (["repo", "add", "acme/new"], ["watch", "list"]):
        line = one_error(run(["--config", str(loop), *args]))
        assert str(loop) in line and "symbolic link loop" in line, line


def test_a_config_that_is_a_device_a_pipe_or_huge_is_refused_before_any_edit(radar_home, tmp_path):
    line = one_error(run(["--config", "/dev/zero", "repo", "add", "acme/new"]))  # read until MemoryError before
    assert line.startswith("error: /dev/zero: not a regular file"), line
    assert not os.path.exists("/dev/zero.lock")
    fifo = tmp_path / "radar.toml"
    os.mkfifo(fifo)  # waited on for ever before
    line = one_error(run(["--config", str(fifo), "repo", "add", "acme/new"]))
    assert str(fifo) in line and "not a regular file (a pipe)" in line, line
    big = tmp_path / "big.toml"
    big.write_text(START + "# padding\n" * 120_000, encoding="utf-8")  # parsed whole by tomlkit before
    line = one_error(run(["--config", str(big), "repo", "add", "acme/new"]))
    assert str(big) in line and "larger than 1 MiB" in line, line
    assert "acme/new" not in big.read_text(encoding="utf-8")
