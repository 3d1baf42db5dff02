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
    """Watch OWNER/NAME (or change its role, branches or core paths): the next fetch and radars include it.
    OWNER/NAME#N and a GitHub address (https://github.com/OWNER/NAME/pull/N) name the repository too."""
    from ..models import from_github_url, repo_of
    from ..pipeline.repos import add_repo

    given, name = name.strip(), repo_of(name)
    if name != given and "#" in from_github_url(given):
        click.echo(f"note: {given[:80]} names an item: its repository {name} is added (radar watch add "
                   f"{from_github_url(given)[:80]} watches the item itself)", err=True)
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
@click.option("--purge", is_flag=True, help="Also delete what the store holds of it (said with its item count first).")
@pass_ctx
def repo_remove(obj: Context, name: str, purge: bool) -> None:
    """Stop watching OWNER/NAME: off [[repos]], and out of every report. What the store holds of it stays (it can
    be read by name: radar show, radar weekly --repo) unless --purge, which deletes it."""
    from ..errors import ConfigError
    from ..models import check_repo, repo_of
    from ..pipeline.repos import remove_repo
    from ..store.purge import count_items, purge_repo

    name = check_repo(repo_of(name))
    held = count_items(obj.engine(), name)
    try:
        edit = remove_repo(obj.config, name)
    except ConfigError:
        if held is None:
            raise
        # stored but not configured (removed before, or imported under a name nobody configured): in no
        # report already; --purge deletes it
        edit = None
        if not purge:
            click.echo(f"{held[0]} is not in radar.toml: it is in no report; the store holds {held[1]} item(s) of "
                       f"it (radar repo remove {held[0]} --purge deletes them)")
    if edit is not None:
        for note in edit.notes:
            click.echo(f"note: {note}", err=True)
        click.echo(edit.message.replace("(its data stays in the store)", "(out of every report; its data stays in "
                                        "the store)") if not purge else edit.message.split(" (its data")[0])
    if purge:
        if held is None:
            click.echo(f"the store holds nothing of {name}: nothing to purge")
            return
        click.echo(f"purging {held[1]} item(s) of {held[0]} from the store")
        gone = purge_repo(obj.engine(write=True), held[0])  # under the store's writer lock until the command ends
        click.echo(f"purged {held[0]}: {gone} item(s) deleted")


COMMANDS = [repo]
