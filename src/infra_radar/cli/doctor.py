"""`radar doctor`: a table of what is set up, what is missing and how to fix it."""

from __future__ import annotations

import shutil
import sys

import click

from .common import Context, pass_ctx


@click.command()
@click.option("--offline", is_flag=True, help="Skip the reachability checks of the LLM endpoint and webhooks.")
@pass_ctx
def doctor(obj: Context, offline: bool) -> None:
    """Check config, store and migrations, git, token, LLM and webhooks; exit 1 if something required is missing."""
    from ..doctor import format_table, run_checks

    checks = run_checks(obj.config, obj.db, network=not offline)
    # on a terminal the table fits its width; piped, one line per check (for grep and scripts)
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    click.echo(format_table(checks, width), nl=False)
    failed = [c.name for c in checks if c.failed]
    if failed:
        click.echo(f"error: required check(s) failed: {', '.join(failed)}", err=True)
        sys.exit(1)


COMMANDS = [doctor]
