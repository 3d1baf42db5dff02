"""`radar watch add|list|remove`: items tracked across daily radars, added by hand or carried on by the radars."""

from __future__ import annotations

import click

from ..errors import RadarError
from .common import Context, pass_ctx

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
    """Watch OWNER/NAME#N."""
    from ..models import parse_ref
    from ..store.save import watch_add as add
    from ..windows import parse_when

    repo, number = parse_ref(ref)
    when = parse_when(since) if since else None
    click.echo(f"watching {repo}#{number}" if add(obj.engine(write=True), repo, number, reason, when)
               else f"{repo}#{number} is already watched")


@watch.command("list")
@pass_ctx
def watch_list(obj: Context) -> None:
    """List what the next daily radar rechecks: items carried from published radars, and those added by hand."""
    from ..pipeline.memory import tracked

    for e in tracked(obj.settings(), obj.engine()):
        why = []
        if e.origin_day:
            why.append(f"carried from {e.origin_day} ({', '.join(REASONS.get(r, r) for r in e.reasons)})")
        if e.hand is not None:
            why.append(f"by hand: {e.hand}" if e.origin_day else e.hand)
        click.echo(f"{e.ref}\t{e.state or '-'}\t{'; '.join(why)}")


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
