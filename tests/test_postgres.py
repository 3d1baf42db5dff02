"""The store on PostgreSQL (RADAR_TEST_DB_URL, e.g. from scripts/postgres.sh): migrations, then the same
export as SQLite. Skipped when no server is configured; the whole suite also runs on it via conftest."""

from __future__ import annotations

import json
import os

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.pipeline.demo import sample_files
from infra_radar.store.db import open_engine
from infra_radar.store.schema import MIGRATIONS, migrate, migrations_table

pytestmark = pytest.mark.skipif(not os.environ.get("RADAR_TEST_DB_URL"), reason="RADAR_TEST_DB_URL is not set")


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_migrations_apply_once_on_postgresql():
    url = os.environ["RADAR_DB_URL"]  # the per-test schema conftest made
    engine = open_engine(url)
    assert engine.dialect.name == "postgresql"
    with engine.connect() as conn:
        assert sorted(conn.execute(sa.select(migrations_table.c.name)).scalars()) == [n for n, _ in MIGRATIONS]
        tables = set(sa.inspect(conn).get_table_names())
    assert {"repos", "items", "files", "comments", "analyses", "links"} <= tables
    with engine.begin() as conn:
        assert migrate(conn) == []  # reopening applies nothing


def test_postgresql_and_sqlite_give_the_same_export(tmp_path):
    files = list(map(str, sample_files()))
    run("import-jsonl", *files)
    on_pg = json.loads(run("export"))
    sqlite = f"sqlite:///{tmp_path / 'radar.db'}"
    run("--db", sqlite, "import-jsonl", *files)
    on_sqlite = json.loads(run("--db", sqlite, "export"))
    assert len(on_pg) == 87 and on_pg == on_sqlite
    assert "0 new, 0 updated, 87 unchanged" not in run("import-jsonl", *files)  # per-file lines
    assert json.loads(run("export")) == on_pg  # a second import changes nothing
