"""Never downgrade: a record of an item the store has only adds what is new (store/merge.py, via save)."""

from __future__ import annotations

from datetime import UTC, datetime

from infra_radar.models import Comment, FileChange, Item
from infra_radar.pipeline.home import open_store
from infra_radar.store import save
from infra_radar.store.merge import merge_items
from infra_radar.store.queries import ids_to_analyse, items_by_id

T1, T2, T3 = (datetime(2026, 7, d, tzinfo=UTC) for d in (1, 2, 3))


def stored_item(engine) -> Item:
    """The one item in the store (every item lacks an analysis of version "none")."""
    (found, _), = items_by_id(engine, ids_to_analyse(engine, "none"))
    return found


def item(source: str, **over) -> Item:
    base = dict(repo="acme/x", kind="pr", key="7", number=7, title="Real title", body="Real body.",
                author="alice", state="merged", created_at=T1, updated_at=T2, merged_at=T2, closed_at=T2,
                files=[FileChange("a.py", 3, 1)], source=source, merge_commit="f" * 40)
    base.update(over)
    return Item(**base)


def test_a_page_onto_history_only_adds():
    old = item("jsonl")
    page = item("page", title="(pasted page)", body="- Search for relative PRs/issues", author="", state="open",
                created_at=None, updated_at=T3, merged_at=None, closed_at=None, files=[], merge_commit=None,
                comments=[Comment("bob", "LGTM", T3)], labels=["npu"], named_paths=["b.py"])
    new = merge_items(old, page)
    assert (new.title, new.body, new.author, new.state, new.merged_at, new.source) == \
        ("Real title", "Real body.", "alice", "merged", T2, "jsonl")
    assert [f.path for f in new.files] == ["a.py"] and new.merge_commit == "f" * 40
    assert [c.body for c in new.comments] == ["LGTM"] and new.labels == ["npu"] and new.named_paths == ["b.py"]
    assert new.created_at == T1 and new.updated_at == T3


def test_a_weaker_record_may_move_the_state_forward_only():
    old = item("github", state="open", merged_at=None, closed_at=None)
    assert merge_items(old, item("page", state="closed", merged_at=None, closed_at=T3)).state == "closed"
    assert merge_items(item("github", state="closed", merged_at=None), item("page", state="open", merged_at=None,
                                                                              closed_at=None)).state == "closed"


def test_a_stronger_record_replaces_but_never_with_nothing():
    old = item("page", title="Page title", body="Page body", comments=[Comment("bob", "hi", T1)])
    fresh = item("github", title="Edited title", body="", files=[], comments=[])
    new = merge_items(old, fresh)
    assert (new.title, new.body, new.source) == ("Edited title", "Page body", "github")
    assert [f.path for f in new.files] == ["a.py"] and [c.body for c in new.comments] == ["hi"]


def test_merged_is_final_even_for_a_stronger_record():
    new = merge_items(item("jsonl"), item("github", state="open", merged_at=None, closed_at=None))
    assert new.state == "merged" and new.merged_at == T2


def test_import_time_gives_way_to_a_real_date(settings):
    engine = open_store(settings)
    undated = item("page", state="open", created_at=None, updated_at=None, merged_at=None, closed_at=None,
                   files=[], merge_commit=None)
    save.save_items(engine, [undated])
    stored = stored_item(engine)
    assert stored.time_source == "import" and stored.updated_at is not None
    again = save.save_items(engine, [item("page", state="open", created_at=None, updated_at=None, merged_at=None,
                                          closed_at=None, files=[], merge_commit=None)])
    assert again.unchanged == 1
    dated = save.save_items(engine, [item("github", state="open", merged_at=None, closed_at=None, updated_at=T3)])
    assert dated.updated == 1
    stored = stored_item(engine)
    assert stored.time_source == "" and stored.updated_at == T3 and stored.when == T3


def test_two_versions_of_one_pr_in_separate_batches_settle_on_the_newer(settings):
    """Two records of one PR in one file, far apart (other batches): the newer wins whatever the order, and a
    reimport reports them unchanged instead of "2 updated" every time."""
    engine = open_store(settings)

    def older() -> Item:
        return item("jsonl", body="Older body.", updated_at=T1, merged_at=T1, closed_at=T1)

    def newer() -> Item:
        return item("jsonl", body="Newer body.", updated_at=T2, merged_at=T2, closed_at=T2)

    first = save.save_items(engine, [older(), newer()], batch_size=1)
    assert (first.inserted, first.updated) == (1, 1)
    for records in ([older(), newer()], [newer(), older()]):
        again = save.save_items(engine, records, batch_size=1)
        assert (again.updated, again.unchanged) == (0, 2)
        assert stored_item(engine).body == "Newer body."
