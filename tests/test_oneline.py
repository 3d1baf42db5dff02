"""Careless input ends in one line naming what to fix: no traceback, no SQL, no record text, nothing lost."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.failures import one_line

from .conftest import TEST_DB_URL

sqlite_only = pytest.mark.skipif(bool(TEST_DB_URL), reason="a SQLite file path case")


def run(args: list[str], env: dict[str, str] | None = None):
    result = CliRunner().invoke(main, args, env=env)
    text = result.output
    assert "Traceback" not in text, text
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    errors = [ln for ln in text.splitlines() if ln.startswith(("error:", "Error:"))]
    assert result.exit_code in (1, 2), text
    assert len(errors) == 1, text
    return errors[0]


def config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("text", "words"), [
    ("deep_dive_limit = inf\n", "deep_dive_limit must be a whole number"),
    ("first_lookback_hours = 1e12\n", "first_lookback_hours must be a whole number"),
    ("first_lookback_hours = -5\n", "first_lookback_hours must be a whole number"),
    ("weekly_key_prs = \"eight\"\n", "weekly_key_prs must be"),
    ('[[repos]]\nname = "a/b"\nbranches = "main"\n', "branches must be a list of strings"),
    ('[focus]\ntopics = "npu"\n', "topics must be a list of strings"),
])
def test_a_bad_config_value_names_its_key(tmp_path, text, words):
    assert words in run(["--config", config(tmp_path, text), "watch", "list"])


@pytest.mark.parametrize(("name", "value"), [
    ("RADAR_SAVE_BATCH", "abc"), ("RADAR_LOCK_TIMEOUT", "nan"), ("RADAR_FETCH_PAGE_SIZE", "0"),
])
def test_a_bad_environment_number_names_the_variable_not_the_config(name, value):
    line = run(["watch", "list"], env={name: value})
    assert name in line and "radar.toml" not in line


def test_a_bad_language_in_the_environment_is_not_blamed_on_the_config():
    line = run(["watch", "list"], env={"RADAR_LANG": "xx"})
    assert "RADAR_LANG" in line and "radar.toml" not in line


@pytest.mark.parametrize(("args", "words"), [
    (["weekly", "--repo", "acme/infer", "--week", "9999-W52"], "the year must be"),
    (["daily", "--since", "9999-12-31"], "the year must be"),
    (["show", f"acme/infer#{2 ** 64}"], "invalid item reference"),
    (["serve", "--port", "99999"], "--port"),
    (["--wait", "nan", "watch", "list"], "--wait"),
    (["fetch", "--max-wait", "nan"], "--max-wait"),
])
def test_out_of_range_arguments_are_one_line(args, words):
    assert words in run(args)


@sqlite_only
def test_a_store_under_a_file_or_at_a_directory_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    assert "a file is in the way" in run(["--db", f"sqlite:///{tmp_path}/afile/x.db", "watch", "list"])
    (tmp_path / "adir.db").mkdir()
    assert "is a directory" in run(["--db", f"sqlite:///{tmp_path}/adir.db", "watch", "list"])


def test_out_under_a_file_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    line = run(["demo", "--out", str(tmp_path / "afile" / "sub")])
    assert "afile" in line and "not a folder" in line


def test_a_rules_override_with_a_wrong_type_names_its_folder(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "priority.toml").write_text('substance_lines = "many"\n')
    cfg = config(tmp_path, f'rules_dir = "{rules}"\n')
    from infra_radar.config import load_settings
    from infra_radar.pipeline.demo import sample_files
    from infra_radar.pipeline.home import open_store
    from infra_radar.pipeline.imports import import_jsonl

    settings = load_settings()
    engine = open_store(settings)
    import_jsonl(settings, engine, sample_files()[:1])
    engine.dispose()
    line = run(["--config", cfg, "analyze"])
    assert str(rules) in line and "wrong type" in line


@sqlite_only
def test_the_lock_file_never_follows_a_planted_symlink(tmp_path, radar_home):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    radar_home.mkdir(parents=True, exist_ok=True)
    (radar_home / "radar.db.lock").symlink_to(victim)
    line = run(["watch", "add", "acme/infer#1"])
    assert "symbolic link" in line
    assert victim.read_text() == "precious\n"


def test_the_last_net_hides_sql_and_record_text():
    secret_text = "PR body that must not be printed"
    full = sa.exc.OperationalError("INSERT INTO items (body) VALUES (?)", (secret_text,),
                                   sqlite3.OperationalError("database or disk is full"))
    line = one_line(full)
    assert "disk" in line and "INSERT" not in line and secret_text not in line
    locked = sa.exc.OperationalError("UPDATE x", (secret_text,), sqlite3.OperationalError("database is locked"))
    assert "busy timeout" in one_line(locked)
    other = sa.exc.OperationalError("SELECT 1", (secret_text,), sqlite3.OperationalError("weird\nmore"))
    assert one_line(other) == "the store failed: weird"
    assert "ulimit -f" in one_line(OSError(errno.EFBIG, os.strerror(errno.EFBIG), "/x/radar.db"))
    assert "disk is full writing /x/y" in one_line(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x/y"))
    token = "https://u:hunter22@db.example.com/x"
    assert "hunter22" not in one_line(ValueError(token))


@sqlite_only
def test_a_full_disk_is_one_line_without_sql_or_pr_text(monkeypatch):
    """SQLite's max_page_count stands in for a full disk: the import stops with one line, no SQL, no PR text."""
    from infra_radar.pipeline.demo import sample_files
    from infra_radar.store import db

    real = db._sqlite_pragmas  # noqa: SLF001

    def tiny(dbapi_conn, record):
        real(dbapi_conn, record)
        dbapi_conn.execute("PRAGMA max_page_count=60")

    monkeypatch.setattr(db, "_sqlite_pragmas", tiny)
    result = CliRunner().invoke(main, ["import-jsonl", *map(str, sample_files())])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "INSERT" not in result.output
    assert "disk holding the store " in result.output and " is full" in result.output, result.output
    assert "W4A8" not in result.output  # a sample PR title that the failed INSERT carried


@sqlite_only
def test_a_file_size_limit_is_one_line(radar_home):
    import resource
    import subprocess
    import sys

    from infra_radar.pipeline.demo import sample_files

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))

    env = {**os.environ, "RADAR_HOME": str(radar_home)}
    done = subprocess.run([sys.executable, "-m", "infra_radar", "import-jsonl", *map(str, sample_files())],
                          preexec_fn=limit, capture_output=True, text=True, env=env, timeout=120)  # noqa: PLW1509
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "ulimit -f" in lines[0], done.stderr


@sqlite_only
def test_an_external_exclusive_lock_past_the_busy_timeout_is_one_line(radar_home, monkeypatch):
    from infra_radar.store import db

    assert CliRunner().invoke(main, ["init"]).exit_code == 0
    real = db._sqlite_pragmas  # noqa: SLF001

    def impatient(dbapi_conn, record):  # the real busy timeout is 30 s; the test waits 0.2 s
        real(dbapi_conn, record)
        dbapi_conn.execute("PRAGMA busy_timeout=200")

    monkeypatch.setattr(db, "_sqlite_pragmas", impatient)
    other = sqlite3.connect(radar_home / "radar.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another program (a backup, a sqlite3 shell) holds the file
    try:
        line = run(["watch", "add", "acme/infer#1"])
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert f"another program holds the store {radar_home / 'radar.db'} locked" in line


def test_import_jsonl_reads_a_pipe(radar_home):
    import gzip
    import subprocess
    import sys

    from infra_radar.pipeline.demo import sample_files

    env = {**os.environ, "RADAR_HOME": str(radar_home)}
    sample = sample_files()[0]
    for data in (sample.read_bytes(), gzip.compress(sample.read_bytes())):  # the gzip probe once ate the pipe
        done = subprocess.run([sys.executable, "-m", "infra_radar", "import-jsonl", "/dev/stdin"], input=data,
                              capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert b"(/dev/stdin)" in done.stdout and b"unchanged" in done.stdout
