"""Tables of the store and the named, append-only migrations that create them.

The `Table` objects below describe the schema as it stands after every migration and are what the write
side (store/save.py) uses; the read side's SQL text (store/queries.py, store/ledger.py) names the same tables
and columns. The schema itself only ever changes through MIGRATIONS: each is a named function run once,
in order, with alembic's `Operations` (portable DDL for SQLite and PostgreSQL); applied names are
recorded in `radar_migrations`. Never edit or reorder a migration that has shipped: append a new one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import killpoint
from .queries import MIGRATION_NAMES, applied_migrations

if TYPE_CHECKING:
    from alembic.operations import Operations

metadata = sa.MetaData()


# Numbers from outside (PR numbers, line counts): 64-bit on PostgreSQL as on SQLite, so both stores accept
# exactly the same records (sources refuse values past models.MAX_NUMBER before the store sees them).
_BIG64 = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _time(name: str, **kw) -> sa.Column:
    return sa.Column(name, sa.DateTime(), **kw)  # naive UTC, converted at the boundary


def _v1_columns(big: bool = False) -> dict[str, list]:
    """Columns of the first schema, by table (functions so each migration gets fresh objects); `big`: with
    005's 64-bit number columns (the tables the queries use), else as 001 created them."""
    _BIG = _BIG64 if big else sa.Integer()  # noqa: N806
    return {
        "repos": [
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("name", sa.String(200), nullable=False, unique=True),
        ],
        "items": [
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("repo_id", sa.Integer, sa.ForeignKey("repos.id"), nullable=False),
            sa.Column("kind", sa.String(16), nullable=False),
            sa.Column("key", sa.String(200), nullable=False),
            sa.Column("number", _BIG),
            sa.Column("title", sa.Text, nullable=False),
            sa.Column("body", sa.Text, nullable=False),
            sa.Column("author", sa.String(200), nullable=False),
            sa.Column("state", sa.String(16), nullable=False),
            sa.Column("draft", sa.Boolean, nullable=False),
            _time("created_at"), _time("updated_at"), _time("merged_at"), _time("closed_at"),
            _time("when_at"),
            sa.Column("merge_commit", sa.String(64)),
            sa.Column("branches", sa.JSON, nullable=False),
            sa.Column("labels", sa.JSON, nullable=False),
            sa.Column("source", sa.String(16), nullable=False),
            sa.Column("content_hash", sa.String(40), nullable=False),
            sa.UniqueConstraint("repo_id", "kind", "key", name="uq_items_repo_kind_key"),
        ],
        "files": [
            sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("path", sa.Text, primary_key=True),
            sa.Column("additions", _BIG),
            sa.Column("deletions", _BIG),
            sa.Column("status", sa.String(16)),
        ],
        "comments": [
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
            sa.Column("seq", sa.Integer, nullable=False),
            sa.Column("author", sa.String(200), nullable=False),
            _time("created_at"),
            sa.Column("body", sa.Text, nullable=False),
            sa.Column("is_bot", sa.Boolean, nullable=False),
            sa.Column("kind", sa.String(16), nullable=False),
        ],
        "analyses": [
            sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("version", sa.String(40), nullable=False),
            sa.Column("content_hash", sa.String(40), nullable=False),
            sa.Column("item_kind", sa.String(32), nullable=False),
            sa.Column("priority", sa.String(8), nullable=False),
            sa.Column("grade", sa.String(4), nullable=False),
            sa.Column("importance", sa.Integer, nullable=False),
            sa.Column("insight", sa.Integer, nullable=False),
            sa.Column("data", sa.JSON, nullable=False),
        ],
        "links": [
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
            sa.Column("kind", sa.String(32), nullable=False),
            sa.Column("dst_repo", sa.String(200)),
            sa.Column("dst_number", _BIG),
            sa.Column("url", sa.Text),
            sa.Column("detail", sa.Text, nullable=False),
        ],
        "runs": [
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("kind", sa.String(32), nullable=False),
            sa.Column("scope", sa.String(200), nullable=False),
            _time("since"), _time("until"),
            sa.Column("status", sa.String(16), nullable=False),
            _time("started_at", nullable=False), _time("finished_at"),
            sa.Column("detail", sa.JSON, nullable=False),
        ],
        "watch": [
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("repo", sa.String(200), nullable=False),
            sa.Column("number", _BIG, nullable=False),
            sa.Column("reason", sa.Text, nullable=False),
            _time("added_at", nullable=False),
            sa.Column("last_state", sa.String(16)),
            sa.Column("last_files", sa.String(40)),
            _time("last_checked_at"),
            sa.UniqueConstraint("repo", "number", name="uq_watch_repo_number"),
        ],
    }


_INDEXES = [
    ("ix_items_when", "items", ["when_at"]),
    ("ix_items_repo_number", "items", ["repo_id", "number"]),
    ("ix_links_dst", "links", ["dst_repo", "dst_number"]),
    ("ix_links_item", "links", ["item_id"]),
    ("ix_comments_item", "comments", ["item_id"]),
    ("ix_runs_kind", "runs", ["kind", "scope", "status"]),
]

for _name, _cols in _v1_columns(big=True).items():
    sa.Table(_name, metadata, *_cols)
for _ix, _table, _cols in _INDEXES:
    sa.Index(_ix, *(metadata.tables[_table].c[c] for c in _cols))

repos, items, files, comments = (metadata.tables[n] for n in ("repos", "items", "files", "comments"))
analyses, links, runs, watch = (metadata.tables[n] for n in ("analyses", "links", "runs", "watch"))

migrations_table = sa.Table(
    "radar_migrations", sa.MetaData(),
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("applied_at", sa.DateTime(), nullable=False),
)


def m001_initial(op: Operations) -> None:
    """Repositories, items, files, comments, analyses, links, runs, watch list."""
    for name, cols in _v1_columns().items():
        op.create_table(name, *cols)
    for ix, table, cols in _INDEXES:
        op.create_index(ix, table, cols)


def _v2_columns() -> dict[str, list]:
    """Tables of the live source's fetch state (002): per-stream cursors and remembered ETags."""
    return {
        "fetch_cursors": [
            sa.Column("repo", sa.String(200), primary_key=True),
            sa.Column("stream", sa.String(16), primary_key=True),  # pulls | issues | releases
            _time("cursor"),  # items updated at or after this are fetched next time
            sa.Column("resume", sa.Text),  # page token of an interrupted pass, to resume after
            _time("resume_since"), _time("resume_high"),  # that pass's lower bound and newest update
            _time("updated_at", nullable=False),
        ],
        "fetch_etags": [
            sa.Column("url", sa.Text, primary_key=True),
            sa.Column("etag", sa.Text, nullable=False),
            _time("updated_at", nullable=False),
        ],
    }


for _name, _cols in _v2_columns().items():
    sa.Table(_name, metadata, *_cols)
fetch_cursors, fetch_etags = metadata.tables["fetch_cursors"], metadata.tables["fetch_etags"]


def m002_fetch_state(op: Operations) -> None:
    """Cursors and ETags of the live GitHub source."""
    for name, cols in _v2_columns().items():
        op.create_table(name, *cols)


def _v3_columns(big: bool = False) -> dict[str, list]:
    """Tables of relations found across items (003): the adaptation ledger and distinctive terms."""
    _BIG = _BIG64 if big else sa.Integer()  # noqa: N806
    return {
        "ledger": [  # upstream PR up_repo#up_number was adapted to by downstream item item_id
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
            sa.Column("up_repo", sa.String(200), nullable=False),
            sa.Column("up_number", _BIG, nullable=False),
            sa.Column("files", sa.JSON, nullable=False),
            sa.Column("how", sa.Text, nullable=False),
        ],
        "item_terms": [  # distinctive terms of an item (kernel, op, feature names)
            sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("term", sa.String(120), primary_key=True),
        ],
        "relation_scans": [  # which rules and which content an item's ledger rows and terms came from
            sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("version", sa.String(40), nullable=False),
            sa.Column("content_hash", sa.String(40), nullable=False),
        ],
    }


_V3_INDEXES = [
    ("ix_ledger_up", "ledger", ["up_repo", "up_number"]),
    ("ix_ledger_item", "ledger", ["item_id"]),
    ("ix_item_terms_term", "item_terms", ["term"]),
]

for _name, _cols in _v3_columns(big=True).items():
    sa.Table(_name, metadata, *_cols)
for _ix, _table, _cols in _V3_INDEXES:
    sa.Index(_ix, *(metadata.tables[_table].c[c] for c in _cols))
ledger, item_terms, relation_scans = (metadata.tables[n] for n in ("ledger", "item_terms", "relation_scans"))


def m003_ledger(op: Operations) -> None:
    """The downstream adaptation ledger, items' distinctive terms, and what they were computed from."""
    for name, cols in _v3_columns().items():
        op.create_table(name, *cols)
    for ix, table, cols in _V3_INDEXES:
        op.create_index(ix, table, cols)


def _v4_columns() -> list:
    """The model reply cache (004): one row per prompt id+version, model and input digest."""
    return [
        sa.Column("prompt_id", sa.String(64), primary_key=True),
        sa.Column("prompt_version", sa.Integer, primary_key=True),
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("input_sha", sa.String(64), primary_key=True),  # sha256 of the rendered messages + schema
        sa.Column("reply", sa.JSON, nullable=False),
        sa.Column("prompt_tokens", sa.Integer, nullable=False),
        sa.Column("completion_tokens", sa.Integer, nullable=False),
        _time("created_at", nullable=False),
    ]


llm_cache = sa.Table("llm_cache", metadata, *_v4_columns())


def m004_llm_cache(op: Operations) -> None:
    """Cached model replies with their token usage, so a rerun on unchanged inputs sends nothing."""
    op.create_table("llm_cache", *_v4_columns())


# 005: 64-bit number columns, the paths an item's text names, and where its window time came from.
_BIG_COLUMNS = [("items", "number"), ("files", "additions"), ("files", "deletions"), ("links", "dst_number"),
                ("watch", "number"), ("ledger", "up_number")]


def _v5_columns() -> list[sa.Column]:
    return [sa.Column("named_paths", sa.JSON, nullable=False, server_default="[]"),
            sa.Column("time_source", sa.String(16), nullable=False, server_default="")]


for _col in _v5_columns():
    items.append_column(_col)


def m005_sources(op: Operations) -> None:
    """BIGINT number columns (SQLite's INTEGER is 64-bit already); items' named paths and time source."""
    if op.get_context().dialect.name != "sqlite":
        for table, column in _BIG_COLUMNS:
            op.alter_column(table, column, type_=sa.BigInteger(), existing_type=sa.Integer())
    for col in _v5_columns():
        op.add_column("items", col)


# 006: the daily radar also selects the PRs and issues opened in its window (queries.analysed_in_window
# with `opened`), by creation time
_V6_INDEXES = [("ix_items_created", "items", ["created_at"])]
for _ix, _table, _cols in _V6_INDEXES:
    sa.Index(_ix, *(metadata.tables[_table].c[c] for c in _cols))


def m006_created_index(op: Operations) -> None:
    for ix, table, cols in _V6_INDEXES:
        op.create_index(ix, table, cols)


# 007: what every published daily radar showed (its window, the items with their judgment and what was deep-
# dived, the files, figures and state shown, and which items it carries on), and the carries dropped by hand
def _v7_columns() -> dict[str, list]:
    return {
        "published_radars": [
            sa.Column("id", sa.Integer, primary_key=True),
            _time("since", nullable=False),
            _time("until", nullable=False),  # one radar per end of window: a rerun replaces its record
            sa.Column("repos", sa.JSON, nullable=False),
            _time("published_at", nullable=False),
            sa.UniqueConstraint("until", name="uq_published_radars_until"),
        ],
        "published_items": [
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("radar_id", sa.Integer, sa.ForeignKey("published_radars.id", ondelete="CASCADE"),
                      nullable=False),
            sa.Column("repo", sa.String(200), nullable=False),
            sa.Column("number", _BIG64, nullable=False),
            sa.Column("kind", sa.String(16), nullable=False),
            sa.Column("title", sa.Text, nullable=False),
            sa.Column("state", sa.String(16), nullable=False),  # as shown: at the window's end
            sa.Column("priority", sa.String(8), nullable=False),
            sa.Column("grade", sa.String(4), nullable=False),
            sa.Column("decision", sa.String(32), nullable=False),
            sa.Column("in_table", sa.Boolean, nullable=False),  # a row of the P0/P1 or short table
            sa.Column("rechecked", sa.Boolean, nullable=False),  # a line of the tracked-item recheck
            sa.Column("deep", sa.Boolean, nullable=False),
            sa.Column("reasons", sa.JSON, nullable=False),  # why this radar starts carrying it: deep, p0, decision
            _time("origin_until"),  # the end of the radar whose carry it is on (None: not carried)
            sa.Column("carry", sa.Boolean, nullable=False),  # carried on to the next radar
            sa.Column("merge_commit", sa.String(64)),
            sa.Column("files", sa.JSON),  # changed paths shown; None: not known as of the window's end
            sa.Column("files_digest", sa.String(40)),  # of the paths with their line counts (new commits move it)
            sa.Column("figures", sa.JSON),  # [metric, before, after, unit] of the figures shown; None: not known
            sa.Column("comments", sa.Integer, nullable=False),  # comments made by the window's end
            sa.UniqueConstraint("radar_id", "repo", "number", name="uq_published_items_radar_ref"),
        ],
        "carry_dropped": [  # `radar watch remove` of a carried item: the carry begun at origin_until ends
            sa.Column("repo", sa.String(200), primary_key=True),
            sa.Column("number", _BIG64, primary_key=True),
            _time("origin_until", primary_key=True),
            _time("dropped_at", nullable=False),
        ],
    }


def _v8_columns() -> dict[str, list]:
    """The team's labels (008), apart from the analyses so they survive re-analysis and new rule versions: one
    current label per item (repo as given, matched case-insensitively, and number), the windows of the team's
    radars they came with, and the calibration fitted from them (cached by the digest of what it was fitted on).
    No foreign keys: a label may name an item the store does not hold yet."""
    return {
        "labels": [
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("repo", sa.String(200), nullable=False),
            sa.Column("number", _BIG64, nullable=False),
            sa.Column("priority", sa.String(8)),  # P0 | P1 | P2 | none; NULL: the grade only
            sa.Column("grade", sa.String(4)),  # S | M | L; NULL: the priority only
            sa.Column("note", sa.Text, nullable=False),
            sa.Column("labelled_by", sa.String(200), nullable=False),
            _time("labelled_at", nullable=False),
            sa.Column("source", sa.Text, nullable=False),  # "cli" or the imported file
            sa.Column("part", sa.String(64), nullable=False),  # the team radar's day it came from, or ""
            sa.UniqueConstraint("repo", "number", name="uq_labels_repo_number"),
        ],
        "label_windows": [
            sa.Column("part", sa.String(64), primary_key=True),
            _time("since", nullable=False), _time("until", nullable=False),
            sa.Column("repos", sa.JSON, nullable=False),
            _time("labelled_at", nullable=False),
        ],
        "label_models": [
            sa.Column("digest", sa.String(64), primary_key=True),
            sa.Column("data", sa.JSON, nullable=False),
            _time("fitted_at", nullable=False),
        ],
    }


_V7_INDEXES = [("ix_published_items_ref", "published_items", ["repo", "number"]),
               ("ix_published_items_radar", "published_items", ["radar_id"])]
for _name, _cols in _v7_columns().items():
    sa.Table(_name, metadata, *_cols)
for _ix, _table, _cols in _V7_INDEXES:
    sa.Index(_ix, *(metadata.tables[_table].c[c] for c in _cols))
published_radars, published_items, carry_dropped = (
    metadata.tables[n] for n in ("published_radars", "published_items", "carry_dropped"))


def m007_published_radars(op: Operations) -> None:
    """Records of the published daily radars and the carries dropped by hand."""
    for name, cols in _v7_columns().items():
        op.create_table(name, *cols)
    for ix, table, cols in _V7_INDEXES:
        op.create_index(ix, table, cols)


for _name, _cols in _v8_columns().items():
    sa.Table(_name, metadata, *_cols)
labels, label_windows, label_models = (metadata.tables[n] for n in ("labels", "label_windows", "label_models"))


def m008_labels(op: Operations) -> None:
    """The team's labels, their radars' windows and the calibration fitted from them (no table of 007 used)."""
    for name, cols in _v8_columns().items():
        op.create_table(name, *cols)


# 009: what `radar push` delivered, so a push that failed part-way resumes with the first message not delivered
def _v9_columns() -> list[sa.Column]:
    return [
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("target", sa.String(64), nullable=False),  # sha256 of platform and webhook URL (a secret)
        sa.Column("report", sa.String(200), nullable=False),  # "daily 2026-07-02", "weekly OWNER/NAME 2026-W27"
        sa.Column("part", sa.Integer, nullable=False),  # message `part` of `parts`
        sa.Column("parts", sa.Integer, nullable=False),
        sa.Column("content_sha", sa.String(64), nullable=False),  # sha256 of the message, signature left out
        _time("delivered_at", nullable=False),
    ]


_V9_INDEXES = [("ix_push_deliveries_key", "push_deliveries", ["target", "report", "content_sha"])]
push_deliveries = sa.Table("push_deliveries", metadata, *_v9_columns())
for _ix, _table, _cols in _V9_INDEXES:
    sa.Index(_ix, *(metadata.tables[_table].c[c] for c in _cols))


def m009_push_deliveries(op: Operations) -> None:
    """Messages a push delivered, by webhook (hashed), report, part and content."""
    op.create_table("push_deliveries", *_v9_columns())
    for ix, table, cols in _V9_INDEXES:
        op.create_index(ix, table, cols)


# 010: the labels' look-ups by item (number, then the repository compared case-insensitively) served by an index;
# the unique (repo, number) index cannot serve `lower(repo) = ...`, so each look-up scanned every label
_V10_INDEXES = [("ix_labels_number", "labels", ["number"])]
for _ix, _table, _cols in _V10_INDEXES:
    sa.Index(_ix, *(metadata.tables[_table].c[c] for c in _cols))


def m010_labels_number(op: Operations) -> None:
    """An index on the labels' item numbers (a label file's import looks each item up by it)."""
    for ix, table, cols in _V10_INDEXES:
        op.create_index(ix, table, cols)

# 011: the code facts of an item's diff (analyse/code_facts.py), one JSON record per item: never the diff itself,
# so what is stored stays linear in the history
def _v11_columns() -> list[sa.Column]:
    return [
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("source", sa.String(8), nullable=False),  # git | api | page
        sa.Column("complete", sa.Boolean, nullable=False),  # False: a cap, a patch left out, a cut hunk
        sa.Column("data", sa.JSON, nullable=False),
    ]


code_facts = sa.Table("code_facts", metadata, *_v11_columns())


def m011_code_facts(op: Operations) -> None:
    """The code facts read from each item's diff (a store made while this step had another number has it)."""
    if not sa.inspect(op.get_bind()).has_table("code_facts"):
        op.create_table("code_facts", *_v11_columns())


# 012: the text of each published daily radar, as it was published: a rerun, a push and the site's page of that
# radar show it, never a radar recomputed later (a published radar is immutable)
def m012_published_text(op: Operations) -> None:
    """The published radar's text (Markdown) and language beside its record; a record from before has none."""
    op.add_column("published_radars", sa.Column("text", sa.Text))
    op.add_column("published_radars", sa.Column("lang", sa.String(8)))


published_radars.append_column(sa.Column("text", sa.Text))
published_radars.append_column(sa.Column("lang", sa.String(8)))


# named in store/queries.py MIGRATION_NAMES (a new step is named there too: strict, or nothing loads)
MIGRATIONS: list[tuple[str, Callable[[Operations], None]]] = list(zip(MIGRATION_NAMES, [
    m001_initial, m002_fetch_state, m003_ledger, m004_llm_cache, m005_sources, m006_created_index,
    m007_published_radars,
    m008_labels,
    m009_push_deliveries,
    m010_labels_number,
    m011_code_facts,
    m012_published_text,
], strict=True))


def newer_migrations(done: set[str]) -> list[str]:
    """The applied migrations this code does not know (a newer radar wrote the store), in name order."""
    known = {name for name, _ in MIGRATIONS}
    return sorted(n for n in done if n not in known)


def newer_message(store: str, unknown: list[str]) -> str:
    """One line: the store `store` has a schema newer than this code (its unknown migrations `unknown`)."""
    from .. import __version__

    latest = MIGRATIONS[-1][0]
    return (f"the store {store} was written by a newer radar: its schema is at {unknown[-1]}"
            f"{f' ({len(unknown)} migrations past this radar)' if len(unknown) > 1 else ''}, this radar "
            f"(infra-radar {__version__}) knows the schema up to {latest}; it is not written by this version: "
            "upgrade infra-radar (reading commands still work)")


def migrate(conn: Connection, store: str = "the store") -> list[str]:
    """Apply the migrations not yet applied, in order; return their names. StoreError (naming `store` and both
    schema versions) when the store has migrations this code does not know: it is never written."""
    migrations_table.create(conn, checkfirst=True)
    done = applied_migrations(conn)
    unknown = newer_migrations(done)
    if unknown:
        from ..errors import StoreError

        raise StoreError(newer_message(store, unknown))
    if all(name in done for name, _ in MIGRATIONS):
        return []  # the common case: nothing to do, and alembic (~0.2 s to import) stays unloaded
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    op = Operations(MigrationContext.configure(conn))
    applied = []
    for name, step in MIGRATIONS:
        if name in done:
            continue
        step(op)
        conn.execute(migrations_table.insert().values(name=name, applied_at=datetime.now(UTC).replace(tzinfo=None)))
        applied.append(name)
        killpoint.reached("migrate.step")  # applied inside the transaction, not committed
    return applied
