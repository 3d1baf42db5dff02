"""`radar import-page`: text copied from a pull-request page, saved as one item."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

import click

from ..errors import few
from ..models import MAX_NUMBER
from .common import Context, pass_ctx


def _no_tick(_n: int) -> None:
    pass


def _counts(counter) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])) if n)


@click.command("import-page")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--repo", help="OWNER/NAME of the pull request (wins over what the page says).")
@click.option("--number", type=click.IntRange(min=1, max=MAX_NUMBER),
              help="Pull request number (wins over what the page says; one FILE only).")
@pass_ctx
def import_page_cmd(obj: Context, files: tuple[Path, ...], repo: str | None, number: int | None) -> None:
    """Import text copied from PR pages (any site, any fragment): description once, human comments, no noise.

    One FILE prints what was kept and dropped; several print a line each, with progress on stderr. A page that
    cannot be read is named and the others are imported (exit 1 at the end)."""
    from ..errors import RadarError
    from ..pipeline.imports import import_page
    from ..sources.page import PageReport
    from .common import _err, _progress

    if number is not None and len(files) > 1:
        raise click.UsageError("--number names one pull request: give one FILE with it")
    engine, failed, imported = obj.engine(write=True), [], []
    # several pages: progress (a line per stage when not on a terminal); one page: its report alone
    with (_progress("importing pages", total=len(files), unit="page") if len(files) > 1 else nullcontext(_no_tick)) \
            as tick:
        for file in files:
            report = PageReport()
            try:
                item = import_page(obj.settings(), engine, file, repo, number, report)
            except RadarError as exc:
                if len(files) == 1:
                    raise
                failed.append(f"{file}: {exc}" if str(file) not in str(exc) else str(exc))
                tick(1)
                continue
            tick(1)
            if item.repo not in imported:
                imported.append(item.repo)
            if len(files) == 1:
                _print_page(item, report)
                from .imports import unconfigured_warning

                unconfigured_warning(obj.settings(), item.repo)
                if report.stats.skipped:
                    sys.exit(1)
                continue
            s = report.stats
            click.echo(f"{file}: {item.ref} {item.state}: {s.inserted} new, {s.updated} updated, "
                       f"{s.unchanged} unchanged ({report.shape})")
            for line in s.skipped:
                failed.append(f"not stored: {line}")
            if not report.number_found:
                click.echo(f"note: {file}: no PR number on the page; import it alone with --number N", err=True)
            if report.later:
                click.echo(f"note: {file}: {report.later}", err=True)
    if len(files) > 1:
        from .imports import unconfigured_warning

        for name in imported:
            unconfigured_warning(obj.settings(), name)
    for line in failed:
        _err(line)
    if failed:
        _err(f"{len(failed)} of {len(files)} page(s) not imported; the others were")
        sys.exit(1)


def _print_page(item, report) -> None:
    """What one page gave: the item, its kind, state and time, what was kept and what was dropped."""
    state = item.state + (", draft" if item.draft else "") + ("" if report.state_found else " (not on the page)")
    click.echo(f"{item.ref}  {item.title}\nkind: {'issue' if item.kind == 'issue' else 'pull request'} ({report.shape})"
               f"\nstate: {state}")
    from ..windows import date_only

    def moment(at) -> str:  # a date-only time (a page) stays a date
        return at.strftime("%Y-%m-%d" if date_only(at) else "%Y-%m-%d %H:%M UTC")

    when = moment(item.when) if item.when else "none"
    click.echo(f"time: {when}" + (" (import time: the page gives no date)" if item.time_source == "import" else ""))
    if item.time_source == "created-bound" and item.created_at:
        click.echo(f"opened: no later than {moment(item.created_at)} (the page gives no opening time; bounded by "
                   "its events and the neighbouring numbers)")
    if item.named_paths:
        click.echo(f"paths named in the text: {len(item.named_paths)} (not a diffstat)")
    copies = f" (1 of {report.description_copies} copies)" if report.description_copies > 1 else ""
    click.echo(f"description: {len(item.body)} chars{copies}" if item.body else "description: none on the page")
    humans = sorted({c.author for c in item.comments if c.author})  # a few named, the rest counted
    click.echo(f"comments kept: {len(item.comments)}" + (f" ({few(humans)})" if humans else ""))
    click.echo(f"dropped: {_counts(report.dropped) or 'nothing'}")
    s = report.stats
    click.echo(f"store: {s.inserted} new, {s.updated} updated, {s.unchanged} unchanged")
    if report.later:
        click.echo(f"note: {report.later}", err=True)
    for line in s.skipped:
        click.echo(f"error: not stored: {line}", err=True)
    if not report.number_found and not s.skipped:
        click.echo("note: no PR number on the page; pass --number N to make it addressable as OWNER/NAME#N",
                   err=True)


COMMANDS = [import_page_cmd]
