"""The store: migrations, idempotent upserts, branch merging, analyses round trip, runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from infra_radar.models import Analysis, FileChange, Item, Link, PerfClaim, Window
from infra_radar.store import queries, save
from infra_radar.store.db import open_engine
from infra_radar.store.rows import item_hash
from infra_radar.store.schema import MIGRATIONS, files, items

T0 = datetime(2026, 7, 27, 12, tzinfo=UTC)


def _item(n: int, branch: str = "main", **kw) -> Item:
    base = dict(repo="acme/infer", kind="pr", key=str(n), number=n, title=f"PR {n}", body="text",
                merged_at=T0 + timedelta(hours=n), updated_at=T0 + timedelta(hours=n), branches=[branch],
                files=[FileChange(f"infer/m{n}.py", n, 1)])
    base.update(kw)
    return Item(**base)


def test_migrations_are_recorded_once(tmp_path):
    url = f"sqlite:///{tmp_path}/s.db"
    engine = open_engine(url)
    with engine.connect() as conn:
        names = list(conn.execute(sa.text("select name from radar_migrations")).scalars())
        mode = conn.execute(sa.text("pragma journal_mode")).scalar()
    assert names == [name for name, _ in MIGRATIONS] and mode == "wal"
    open_engine(url)  # reopening applies nothing and does not fail


def test_upsert_is_idempotent_and_updates_changes(tmp_path):
    engine = open_engine(f"sqlite:///{tmp_path}/s.db")
    first = save.save_items(engine, [_item(1), _item(2)])
    again = save.save_items(engine, [_item(1), _item(2)])
    assert (first.inserted, again.inserted, again.updated, again.unchanged) == (2, 0, 0, 2)
    changed = save.save_items(engine, [_item(2, title="PR 2 renamed", files=[FileChange("x.py", 1, 1)])])
    assert changed.updated == 1
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(items)).scalar() == 2
        paths = conn.execute(sa.select(files.c.path).where(files.c.item_id == 2)).scalars().all()
    assert paths == ["x.py"]


def test_same_pr_on_two_branches_is_one_item(tmp_path):
    engine = open_engine(f"sqlite:///{tmp_path}/s.db")
    save.save_items(engine, [_item(5)])
    later = _item(5, branch="release/v1", merged_at=T0 + timedelta(days=3))
    assert save.save_items(engine, [later]).updated == 1
    save.save_analyses(engine, [(1, "h", Analysis(item_kind="feature"))])
    got = queries.analysed_item(engine, "acme/infer", 5).item
    assert got.branches == ["main", "release/v1"] and got.merged_at == T0 + timedelta(hours=5)


def test_analysis_round_trip_links_and_window(tmp_path):
    engine = open_engine(f"sqlite:///{tmp_path}/s.db")
    save.save_items(engine, [_item(1), _item(2), _item(30)])
    claim = PerfClaim("TTFT", 1048.64, 978.58, "ms", -6.68, None, {"model": "X"}, (3, 9), "| a |")
    analysis = Analysis(item_kind="perf", topics=["performance"], priority="P0", perf_claims=[claim],
                        links=[Link("references", "acme/infer", 1)], summary={"en": "s", "zh": "摘"}, version="v1")
    save.save_analyses(engine, [(2, item_hash(_item(2)), analysis)])
    back = queries.analysed_item(engine, "acme/infer", 2).analysis
    assert back == analysis
    refs = queries.referenced_by(engine, "acme/infer", 1)
    assert [(link.repo, link.number) for link in refs] == [("acme/infer", 2)]
    window = Window(T0 + timedelta(hours=2), T0 + timedelta(hours=30))
    assert [a.item.number for a in queries.analysed_in_window(engine, window)] == [2]  # 30 is at `until`: out


def test_stale_items_are_found_by_version_and_hash(tmp_path):
    engine = open_engine(f"sqlite:///{tmp_path}/s.db")
    save.save_items(engine, [_item(1), _item(2)])
    save.save_analyses(engine, [(1, item_hash(_item(1)), Analysis("feature", version="v1")),
                                (2, item_hash(_item(2)), Analysis("feature", version="v0"))])
    stale = [i.number for batch in queries.items_to_analyse(engine, "v1") for i, _ in batch]
    assert stale == [2]
    assert queries.count_to_analyse(engine, "v1") == 1


def test_runs_remember_the_last_success(tmp_path):
    engine = open_engine(f"sqlite:///{tmp_path}/s.db")
    ok = save.start_run(engine, "daily", "all", Window(T0, T0 + timedelta(days=1)))
    save.finish_run(engine, ok, "ok")
    bad = save.start_run(engine, "daily", "all", Window(T0, T0 + timedelta(days=2)))
    save.finish_run(engine, bad, "failed")
    assert queries.last_success(engine, "daily", "all") == (T0, T0 + timedelta(days=1))
