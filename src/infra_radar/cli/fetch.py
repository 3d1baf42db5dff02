"""`radar fetch`: the live GitHub source into the store."""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime, timedelta

import click

from .common import Context, Seconds, _err, _Lines, pass_ctx


def _countdown(seconds: float, reason: str) -> None:
    """Wait `seconds`, showing a countdown bar on stderr (plain sleep when stderr is not a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    until = datetime.now(UTC) + timedelta(seconds=seconds)
    label = f"{reason}: waiting until {until:%H:%M:%S} UTC"
    if not console.is_terminal:
        click.echo(f"{label} ({seconds:.0f} s)", err=True)
        time.sleep(seconds)
        return
    columns = [TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=seconds)
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(1.0, left))
            bar.update(task, completed=seconds - max(0.0, end - time.monotonic()))


@click.command()
@click.option("--repo", "repos", multiple=True, help="Only this OWNER/NAME (repeatable; default: the configured repos).")
@click.option("--since", help="Fetch items updated since this time (default: each repository's cursor; "
                              "first run: first_lookback_hours back).")
@click.option("--max-wait", type=Seconds(), default=900, show_default=True,
              help="Longest wait, in seconds, for a rate limit to reset before stopping with progress saved.")
@click.option("--stats", is_flag=True, help="Print requests made, items stored and the rate limit left.")
@click.option("--diffs", is_flag=True, help="Read each changed PR's file patches for its code facts (defaults, switches, "
                                           "version gates, device checks, kernels): one more request per PR.")
@pass_ctx
def fetch(obj: Context, repos: tuple[str, ...], since: str | None, max_wait: float, stats: bool,
          diffs: bool) -> None:
    """Fetch PRs, issues and releases updated since the last fetch from GitHub (GITHUB_TOKEN)."""
    from ..pipeline.fetch import ANONYMOUS_NOTE, open_client
    from ..pipeline.fetch import fetch as run_fetch
    from ..windows import parse_when

    # the command reports waits and skipped pages itself: keep Python's last-resort log handler quiet
    logging.getLogger("infra_radar").addHandler(logging.NullHandler())
    settings, engine = obj.settings(), obj.engine(write=True)
    with open_client(max_wait, _countdown) as client:
        if client.anonymous:
            click.echo(f"note: {ANONYMOUS_NOTE}", err=True)
        # lines, never a bar (a rate-limit wait shows its own): one at the first page, one every few seconds
        pages = _Lines("fetching", "page", None)
        result = run_fetch(settings, engine, client, list(repos) or None, parse_when(since) if since else None,
                           on_page=lambda _done: pages.advance(1), diffs=diffs)
        pages.end()
    for r in result.repos:
        s = r.stats
        click.echo(f"{r.repo}: {s.inserted} new, {s.updated} updated, {s.unchanged} unchanged (github)")
        if r.later.note():
            click.echo(f"note: {r.later.note()}", err=True)
    if stats:
        left = "unknown" if result.remaining is None else str(result.remaining)
        click.echo(f"requests: {result.requests}\nitems stored: {result.stats.inserted + result.stats.updated}\n"
                   f"rate limit remaining: {left}")
    skipped = [line for r in result.repos for line in r.stats.skipped]
    for line in skipped[:20]:
        _err(f"skipped {line}")
    if skipped:
        _err(f"{len(skipped)} record(s) failed the input check and were skipped; everything else was saved")
    for line in result.errors:
        _err(line)
    if result.errors:
        _err(f"{len(result.errors)} page(s) or repositories could not be read; everything else was saved, "
             "rerun to complete")
        sys.exit(1)


COMMANDS = [fetch]
