"""A store written by a newer radar (a migration this code does not know) is read, never written; `radar doctor`
names it; and a full disk is named as such, with the path it could not write."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from infra_radar.cli import main
from infra_radar.errors import StoreError
from infra_radar.pipeline.home import open_store
from infra_radar.store.schema import MIGRATIONS, migrations_table

FUTURE = "999_from_a_newer_radar"


def _from_the_future(engine) -> None:
    with engine.begin() as conn:
        conn.execute(migrations_table.insert().values(name=FUTURE, applied_at=datetime.now(UTC).replace(tzinfo=None)))


def _rows(engine, table: str) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar_one()


def test_a_newer_store_is_refused_for_writing_and_named_by_doctor(settings, sample_store):
    _from_the_future(sample_store)
    sample_store.dispose()
    with pytest.raises(StoreError) as err:
        open_store(settings, writer=True).dispose()
    message = str(err.value)
    assert "\n" not in message and FUTURE in message and MIGRATIONS[-1][0] in message, message
    assert "newer radar" in message and "upgrade" in message

    runner = CliRunner()
    wrote = runner.invoke(main, ["watch", "add", "acme/infer#1"])
    assert wrote.exit_code == 1 and "newer radar" in wrote.output and FUTURE in wrote.output, wrote.output
    analysed = runner.invoke(main, ["analyze"])  # analysis writes the store too
    assert analysed.exit_code == 1 and "newer radar" in analysed.output, analysed.output

    doctor = runner.invoke(main, ["doctor"])
    assert doctor.exit_code != 0 and "newer radar" in doctor.output and FUTURE in doctor.output, doctor.output

    engine = open_store(settings)  # reading is still allowed
    try:
        assert _rows(engine, "watch") == 0 and _rows(engine, "analyses") == 0
        with engine.connect() as conn:
            names = set(conn.execute(sa.select(migrations_table.c.name)).scalars())
        assert FUTURE in names and {n for n, _ in MIGRATIONS} <= names
    finally:
        engine.dispose()


def test_a_full_disk_names_the_path_and_the_cause(tmp_path, monkeypatch):
    """ENOSPC while making the store's folder, and while writing its lock file: each line names the path and
    says the disk is full (not "cannot create the store's folder" with an empty path)."""
    from infra_radar.store import lock
    from infra_radar.store.db import open_engine

    target = tmp_path / "deep" / "store" / "radar.db"
    real_mkdir = os.mkdir

    def full_mkdir(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "mkdir", full_mkdir)
    with pytest.raises(StoreError) as err:
        open_engine(f"sqlite:///{target}")
    message = str(err.value)
    assert str(target.parent) in message and "disk is full" in message, message
    monkeypatch.setattr(os, "mkdir", real_mkdir)

    target.parent.mkdir(parents=True)

    def full_pwrite(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(lock.os, "pwrite", full_pwrite)
    with pytest.raises(StoreError) as err:
        open_engine(f"sqlite:///{target}", writer=True, wait=1)
    message = str(err.value)
    assert "radar.db.lock" in message and "disk is full" in message and "folder" not in message, message
    monkeypatch.undo()
    engine = open_engine(f"sqlite:///{target}", writer=True, wait=1)  # the failed attempt left no lock behind
    lock.writer_lock(engine).release()
    engine.dispose()
