"""`radar watch add|list|remove`: items tracked across daily radars."""

from __future__ import annotations

import click

from ..errors import RadarError
from .common import Context, pass_ctx


@click.group()
def watch() -> None:
    """The watch list whose items every daily radar rechecks."""


@watch.command("add")
@click.argument("ref")
@click.option("--reason", default="", help="Why it is watched.")
@pass_ctx
def watch_add(obj: Context, ref: str, reason: str) -> None:
    """Watch OWNER/NAME#N."""
    from ..models import parse_ref
    from ..store.save import watch_add as add

    repo, number = parse_ref(ref)
    click.echo(f"watching {repo}#{number}" if add(obj.engine(write=True), repo, number, reason)
               else f"{repo}#{number} is already watched")


@watch.command("list")
@pass_ctx
def watch_list(obj: Context) -> None:
    """List watched items."""
    from ..store.queries import watch_list as entries

    for e in entries(obj.engine()):
        click.echo(f"{e.repo}#{e.number}\t{e.last_state or '-'}\t{e.reason}")


@watch.command("remove")
@click.argument("ref")
@pass_ctx
def watch_remove(obj: Context, ref: str) -> None:
    """Stop watching OWNER/NAME#N."""
    from ..models import parse_ref
    from ..store.save import watch_remove as remove

    repo, number = parse_ref(ref)
    if not remove(obj.engine(write=True), repo, number):
        raise RadarError(f"{repo}#{number} is not on the watch list")
    click.echo(f"stopped watching {repo}#{number}")


COMMANDS = [watch]
