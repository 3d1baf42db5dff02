"""`radar repo remove --purge`: a repository's stored data deleted, in one transaction.

Its items go with everything kept of them (comments, files, analyses, code facts, relations: their rows
reference the item and are deleted with it), its fetch cursors and its name. What other repositories' items say
of it (a downstream adaptation naming it) and the records of published radars stay: they are other items' data
and what was published.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .reader import reading

__all__ = ["count_items", "purge_repo"]

# the tables whose rows reference an item (ON DELETE CASCADE in the schema; deleted explicitly too, so a store
# whose connection does not enforce foreign keys is left without orphans)
_CHILDREN = ("comments", "files", "analyses", "links", "code_facts", "item_terms", "relation_scans", "ledger")


def count_items(store, name: str) -> tuple[str, int] | None:
    """(the stored spelling of repository `name`, how many items the store holds of it), None when none is
    stored under that name (compared case-insensitively)."""
    with reading(store) as db:
        rows = db.rows("SELECT repos.name, COUNT(items.id) FROM repos LEFT JOIN items ON items.repo_id = repos.id "
                       "WHERE lower(repos.name) = :name GROUP BY repos.name", {"name": name.lower()})
        return (rows[0][0], int(rows[0][1])) if rows else None


def purge_repo(engine: Engine, name: str) -> int:
    """Delete repository `name` and everything the store holds of it; returns how many items were deleted."""
    inspector = sa.inspect(engine)
    present = set(inspector.get_table_names())
    with engine.begin() as conn:
        rid = conn.execute(sa.text("SELECT id FROM repos WHERE lower(name) = :name"), {"name": name.lower()}).scalar()
        if rid is None:
            return 0
        ids = "SELECT items.id FROM items WHERE items.repo_id = :rid"
        for table in _CHILDREN:
            if table in present and "item_id" in {c["name"] for c in inspector.get_columns(table)}:
                conn.execute(sa.text(f"DELETE FROM {table} WHERE item_id IN ({ids})"), {"rid": rid})
        count = conn.execute(sa.text("DELETE FROM items WHERE repo_id = :rid"), {"rid": rid}).rowcount
        conn.execute(sa.text("DELETE FROM fetch_cursors WHERE lower(repo) = :name"), {"name": name.lower()})
        conn.execute(sa.text("DELETE FROM repos WHERE id = :rid"), {"rid": rid})
    return count
