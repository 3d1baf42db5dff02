"""The item card: what `radar show OWNER/NAME#N` prints and what the export holds for each item.

`read_card` gathers a card from a store that is up to date, through a store/reader.py Reader or an engine.
`radar show` reads a ready SQLite store (every migration applied, nothing to analyse or rescan) over a
read-only stdlib sqlite3 connection, without importing SQLAlchemy, whose import alone is 0.15 s of the
command's 0.2 s budget, and without the writer lock. Anything else goes through pipeline.card_input, which
opens the store through SQLAlchemy and analyses first: PostgreSQL, a store to migrate or analyse, a missing or
unreadable file, model prose (`--llm`, or a model configured for the Markdown card). RADAR_SHOW_SQLALCHEMY=1
forces that path (bench/show_card.py times the two).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import ConfigError, NotFoundError
from ..models import parse_ref
from ..store import queries

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from ..render.inputs import CardInput
    from ..store.reader import Reader

FORCE_SQLALCHEMY = "RADAR_SHOW_SQLALCHEMY"  # "1": `radar show` always takes the SQLAlchemy path


def read_card(settings: Settings, db: Engine | Reader, repo: str, number: int) -> CardInput:
    """Everything the card of repo#number shows, from a store that needs no analysis."""
    from ..render.inputs import CardInput
    from ..store.ledger import adapted_in
    from .judgment import judge
    from .relations import upstream_stub

    found = queries.analysed_item(db, repo, number)
    if found is not None:
        judge(settings, db, [found])
    if found is None:  # an upstream PR known only because downstream PRs adapted to it
        from ..analyse.links import load_relation_rules
        from ..analyse.related import cap_links

        adapted = adapted_in(db, repo, number)
        if not adapted:
            raise NotFoundError(f"{repo}#{number} is not in the store (import its repository first)")
        most = load_relation_rules(settings).max_per_kind
        back, more = cap_links(queries.referenced_by(db, repo, number), number, most)
        if len(adapted) > most:
            more["adapted-in"] = len(adapted) - most
        return CardInput(item=upstream_stub(adapted[0].up_repo, number), duplicates=[], adapted=adapted[:most],
                         referenced_by=back, known=False, more=more)
    return card_of(settings, db, found, {}, queries.referenced_by(db, found.item.repo, number))


def card_of(settings: Settings, db: Engine | Reader, found, cache: dict, referenced_by: list) -> CardInput:
    """One stored item with every relation its card and export object show (`cache`: shared by a batch): of
    each kind the `max_per_kind` nearest (links.toml [related]), with the count of the rest."""
    from ..analyse.related import cap_links
    from ..render.inputs import CardInput
    from .relations import related_of

    item = found.item
    rel = related_of(settings, db, item, cache, exact=True)  # duplicates: the same title too
    back, more = cap_links(referenced_by, item.number, cache["relations"].max_per_kind)
    linked = [*found.analysis.links, *back, *rel.duplicates, *rel.mechanism, *rel.chain]
    kinds = queries.item_kinds(db, {(lk.repo, lk.number) for lk in linked if lk.repo and lk.number is not None})
    return CardInput(item=found, referenced_by=back, duplicates=rel.duplicates, related=rel.mechanism,
                     chain=rel.chain, adapted=rel.adapted, target=settings.target, more={**more, **rel.more},
                     kinds={f"{repo}#{number}": kind for (repo, number), kind in kinds.items()})


def show_card(settings: Settings, engine: Callable[[], Engine], ref: str, as_json: bool, llm: bool | None,
              evidence: bool = False) -> str:
    """The text `radar show` prints: the card of `ref` in Markdown (model prose laid over it when wanted) or
    its export object as JSON; with `evidence`, the evidence records of its statements (render/evidence.py).
    `engine` opens the store through SQLAlchemy, called only when needed."""
    inp = fast_card(settings, ref, as_json, llm)
    fast = inp is not None
    if inp is None:
        inp = card_input(settings, engine(), ref)
    if evidence:
        from ..render.evidence import evidence_text

        said = evidence_text(inp, settings.lang, as_json)
        model = _model_evidence(settings, engine, inp, llm)
        if not model:
            return said
        if as_json:  # the rules' records, then the model's sentences with the records they cite
            return json.dumps([*json.loads(said), *model], ensure_ascii=False, indent=2) + "\n"
        from ..llm.shown import model_evidence_lines

        return said + "\n".join(model_evidence_lines(model)) + "\n"
    if as_json:
        from ..render.markdown import card_json

        return json.dumps(card_json(inp), ensure_ascii=False, indent=2) + "\n"
    if fast:  # no model prose wanted: what card_text gives without a model
        from ..render.markdown import render_card

        return render_card(inp, settings.lang)
    from ..llm.render import card_text

    return card_text(settings, engine(), inp, llm)


def _model_evidence(settings: Settings, engine: Callable[[], Engine], inp: CardInput, llm: bool | None) -> list:
    """The model sentences the cache holds for the card's item, as evidence records (none without a model)."""
    if not inp.known or llm is False or not _model_set(settings):
        return []
    from ..llm.shown import model_evidence

    return model_evidence(settings, engine(), [inp.item], settings.lang, llm).get(inp.item.item.ref, [])


def _model_set(settings: Settings) -> bool:
    from ..llm.prompts import llm_endpoint

    try:
        point = llm_endpoint(settings)
    except ConfigError:
        return False
    return bool(point.base_url and point.model)


def fast_card(settings: Settings, ref: str, as_json: bool, llm: bool | None) -> CardInput | None:
    """The card of `ref` read through stdlib sqlite3, or None when the SQLAlchemy path must answer (see the
    module docstring). Nothing is written and no lock is taken; the checks and the card read one snapshot."""
    from .analysis import _rules_override, ready_sqlite

    if os.environ.get(FORCE_SQLALCHEMY, "") not in ("", "0") or _prose_wanted(settings, as_json, llm):
        return None
    with ready_sqlite(settings) as db:
        if db is None:
            return None
        repo, number = parse_ref(ref)
        try:
            with _rules_override(settings):  # a broken rules override: the line analyze() would give
                return read_card(settings, db, repo, number)
        except sqlite3.Error:
            return None


def _prose_wanted(settings: Settings, as_json: bool, llm: bool | None) -> bool:
    """Whether the card gets model prose (or `--llm` must say why it cannot): a model configured, for Markdown."""
    if llm:
        return True
    if as_json or llm is False:
        return False
    from ..llm.prompts import llm_endpoint

    try:
        point = llm_endpoint(settings)
    except ConfigError:  # a broken [llm] table: the SQLAlchemy path says so, after the card's own errors
        return True
    return bool(point.base_url and point.model)  # what llm_config needs before it returns a config


def card_input(settings: Settings, engine: Engine, ref: str):
    """Everything the item card of `OWNER/NAME#N` shows (render.context.CardInput), the store analysed first."""
    from .analysis import analyze  # here: `radar show`'s fast path never imports SQLAlchemy

    repo, number = parse_ref(ref)
    analyze(settings, engine)
    return read_card(settings, engine, repo, number)
