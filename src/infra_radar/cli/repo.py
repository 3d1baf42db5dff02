"""`radar repo add|list|remove`: the watched repositories ([[repos]] of radar.toml), edited from the command line."""

from __future__ import annotations

import click

from ..config import ROLES
from .common import JSON, Context, emit_rows, pass_ctx


@click.group()
def repo() -> None:
    """The watched repositories: [[repos]] of radar.toml, edited in place (its comments kept)."""


def _globs(values: tuple[str, ...]) -> list[str] | None:
    """--branches main,release/* (comma-separated, repeatable) as a list; None when not given."""
    found = [g.strip() for value in values for g in value.split(",") if g.strip()]
    return found or None


@repo.command("add")
@click.argument("name", metavar="OWNER/NAME")
@click.option("--role", type=click.Choice(ROLES), help="upstream (default: a project the team follows) or downstream "
                                                       "(the team's own target repository, reported apart).")
@click.option("--branches", multiple=True, help="Branch globs, comma-separated or repeated, e.g. 'main,release/*' "
                                                "(default: main).")
@click.option("--core-paths", "core_paths", multiple=True,
              help="Globs of the code whose change is a core-path risk, comma-separated or repeated.")
@pass_ctx
def repo_add(obj: Context, name: str, role: str | None, branches: tuple[str, ...], core_paths: tuple[str, ...]) -> None:
    """Watch OWNER/NAME (or change its role, branches or core paths): the next fetch and radars include it."""
    from ..pipeline.repos import add_repo

    edit = add_repo(obj.config, name, role, _globs(branches), _globs(core_paths))
    for note in edit.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(edit.message)
    if edit.changed:
        click.echo(f"next: radar fetch --repo {name.strip()} (from GitHub), or radar import-git CLONE --repo "
                   f"{name.strip()} (from a local clone)", err=True)


@repo.command("list")
@JSON
@pass_ctx
def repo_list(obj: Context, as_json: bool) -> None:
    """The configured repositories with what the store holds of each, then stored ones no longer configured."""
    from ..store.queries import repo_summary

    settings = obj.settings()
    held = repo_summary(obj.engine())
    rows = []
    for r in settings.repos:
        items, newest = held.pop(r.name.lower(), (0, None))
        rows.append({"name": r.name, "role": r.role, "branches": r.branches, "configured": True, "items": items,
                     "newest": newest.strftime("%Y-%m-%dT%H:%MZ") if newest else None})
    stored = {n.lower(): n for n in _stored_names(obj)}
    for key, (items, newest) in sorted(held.items()):
        rows.append({"name": stored.get(key, key), "role": None, "branches": None, "configured": False,
                     "items": items, "newest": newest.strftime("%Y-%m-%dT%H:%MZ") if newest else None})
    if not as_json:
        for row in rows:
            row["configured"] = "yes" if row["configured"] else "no"
    emit_rows(rows, ["name", "role", "branches", "configured", "items", "newest"], as_json)
    if settings.config_path is None:
        click.echo("note: no radar.toml: these are the packaged repositories (radar repo add writes one)", err=True)


def _stored_names(obj: Context) -> list[str]:
    from ..store.queries import repo_names

    return repo_names(obj.engine())


@repo.command("remove")
@click.argument("name", metavar="OWNER/NAME")
@pass_ctx
def repo_remove(obj: Context, name: str) -> None:
    """Stop watching OWNER/NAME: off [[repos]] (what the store holds of it stays, and can be read by name)."""
    from ..pipeline.repos import remove_repo

    edit = remove_repo(obj.config, name)
    for note in edit.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(edit.message)


COMMANDS = [repo]
