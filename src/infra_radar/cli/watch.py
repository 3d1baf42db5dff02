"""`radar watch add|list|remove`: items tracked across daily radars, added by hand or carried on by the radars."""

from __future__ import annotations

import click

from ..errors import RadarError
from .common import JSON, Context, emit_rows, pass_ctx

REASONS = {"deep": "deep dive", "p0": "P0", "validate-first": "validate first", "track-only": "track only"}


@click.group()
def watch() -> None:
    """The watch list whose items every daily radar rechecks."""


@watch.command("add")
@click.argument("ref")
@click.option("--reason", default="", help="Why it is watched.")
@click.option("--since", "since", metavar="WHEN",
              help="Watch it from WHEN (a date or an ISO time, UTC; default now): only radars of windows ending "
                   "later recheck it (a backfill of an earlier day does not).")
@pass_ctx
def watch_add(obj: Context, ref: str, reason: str, since: str | None) -> None:
    """Watch OWNER/NAME#N (one the store does not hold yet is watched with a note saying how to bring it in)."""
    from ..models import parse_ref
    from ..store.queries import item_exists
    from ..store.save import watch_add as add
    from ..windows import parse_when

    repo, number = parse_ref(ref)
    when = parse_when(since) if since else None
    engine = obj.engine(write=True)
    click.echo(f"watching {repo}#{number}" if add(engine, repo, number, reason, when)
               else f"{repo}#{number} is already watched")
    if not item_exists(engine, repo, number):
        click.echo(f"note: {repo}#{number} is not in the store, so no radar can recheck it yet: "
                   f"{_bring_in(obj, repo, engine)}; radar watch remove {repo}#{number} if the reference is wrong",
                   err=True)


@watch.command("list")
@JSON
@pass_ctx
def watch_list(obj: Context, as_json: bool) -> None:
    """List what the next daily radar rechecks: items carried from published radars, and those added by hand.
    The state is the one the last radar showed, else the store's ("not stored" for an item not imported yet)."""
    from ..models import parse_ref
    from ..pipeline.memory import tracked
    from ..store.queries import item_state

    engine = obj.engine()
    rows = []
    for e in tracked(obj.settings(), engine):
        why = []
        if e.origin_day:
            why.append(f"carried from {e.origin_day} ({', '.join(REASONS.get(r, r) for r in e.reasons)})")
        if e.hand is not None:
            why.append(f"by hand: {e.hand}" if e.origin_day else e.hand)
        state = e.state or item_state(engine, *parse_ref(e.ref)) or "not stored"
        rows.append({"ref": e.ref, "state": state, "why": "; ".join(why), "carried_from": e.origin_day,
                     "reasons": list(e.reasons) if e.origin_day else [], "note": e.hand,
                     "last_shown": e.last_day})
    if not as_json:
        rows = [{k: r[k] for k in ("ref", "state", "why")} for r in rows]
    emit_rows(rows, ["ref", "state", "why"], as_json)


def _bring_in(obj: Context, repo: str, engine) -> str:
    """How to bring an item of `repo` into the store: fetch or a saved page, after `radar repo add` when the
    repository is neither configured nor stored."""
    from ..store.queries import repo_names

    known = {r.name.lower() for r in obj.settings().repos} | {n.lower() for n in repo_names(engine)}
    how = f"radar fetch --repo {repo} or radar import-page FILE"
    return f"bring it in with {how}" if repo.lower() in known else f"radar repo add {repo}, then {how}"


@watch.command("remove")
@click.argument("ref")
@pass_ctx
def watch_remove(obj: Context, ref: str) -> None:
    """Stop tracking OWNER/NAME#N, whether added by hand or carried from a published radar."""
    from ..models import parse_ref
    from ..pipeline.memory import untrack

    repo, number = parse_ref(ref)
    if not untrack(obj.settings(), obj.engine(write=True), repo, number):
        raise RadarError(f"{repo}#{number} is not on the watch list")
    click.echo(f"stopped watching {repo}#{number}")


COMMANDS = [watch]
