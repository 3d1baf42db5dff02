"""Commands that publish what the store knows: `site build`, `serve` and `push`."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import click

from .common import NO_RECORD, Context, _Lines, pass_ctx

SITE_URL_ENV = "RADAR_SITE_URL"
# `radar serve`'s port: not 8000, where `mkdocs serve` (the docs) and vLLM (a model server) listen by default
SERVE_PORT = 8100


@click.group()
def site() -> None:
    """Build the static HTML site (pages, search, feeds)."""


@site.command("build")
@click.argument("out_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--site-url", envvar=SITE_URL_ENV, default="",
              help=f"Public URL the site is served from, for feed links (env {SITE_URL_ENV}).")
@click.option("--lang", type=click.Choice(["zh", "en"]), help="Site language (default from config: zh).")
@click.option("--backfill", is_flag=True,
              help="Also record every daily page as a published radar (docs/memory.md): the next daily "
                   "radar follows them. Without it the build publishes nothing.")
@click.option("--no-record", "no_record", is_flag=True, hidden=True,
              help="Accepted for older scripts: a build records nothing unless --backfill.")
@pass_ctx
def site_build(obj: Context, out_dir: Path, site_url: str, lang: str | None, backfill: bool,
               no_record: bool) -> None:
    """Build or incrementally rebuild the site under DIR; only changed pages are rewritten. The daily pages
    are the radars of past UTC days; the build records none of them as published unless --backfill."""
    from ..publish.build import build_site

    if backfill and no_record:
        raise click.UsageError("--backfill records the daily pages; it cannot go with --no-record")
    with _site_progress() as progress:
        r = build_site(obj.settings(lang), obj.engine(), out_dir, site_url, progress, backfill)
    for line in r.warnings:
        click.echo(f"warning: {line}", err=True)
    click.echo(f"{r.out_dir}: {r.pages} files ({r.item_pages} items, {r.daily_pages} daily, "
               f"{r.weekly_pages} weekly); {r.written} written, {r.unchanged} unchanged, {r.removed} removed; "
               f"{r.skipped} not rendered again (inputs unchanged); "
               f"charts {'svg' if r.charts else 'tables'}; {r.seconds:.1f}s")


@contextmanager
def _site_progress():
    """The build's progress on stderr: a line per stage (also in a log), and a bar while on a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..publish.build import Progress as SiteProgress

    console = Console(stderr=True)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, disable=not console.is_terminal, transient=True) as bar:
        class Shown(SiteProgress):
            task = None
            lines = None  # off a terminal: a line every few seconds with the stage's pages done

            def stage(self, label: str, total: int | None = None) -> None:
                if self.task is not None:
                    bar.remove_task(self.task)
                self.task = bar.add_task(label, total=total)
                if not console.is_terminal:
                    self.say(label if total is None else f"{label}: {total} to do")
                    self.lines = _Lines(f"site: {label}", "page", total, quiet_start=True)

            def advance(self, n: int = 1) -> None:
                bar.advance(self.task, n)
                if self.lines is not None:
                    self.lines.advance(n)

            def say(self, line: str) -> None:
                console.print(f"site: {line}", markup=False, highlight=False, soft_wrap=True)

        yield Shown()


@click.command()
@click.argument("out_dir", metavar="[DIR]", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=SERVE_PORT, show_default=True,
              help="Port on 127.0.0.1 (0: any free one).")
@pass_ctx
def serve(obj: Context, out_dir: Path | None, port: int) -> None:
    """Preview a built site on http://127.0.0.1:PORT/ (default DIR: <out_dir>/site)."""
    from ..publish.serve import serve_site

    folder = out_dir or obj.settings().out_dir / "site"
    serve_site(folder, port, lambda url: click.echo(f"serving {folder} on {url} (Ctrl-C stops)"))


@click.command()
@click.argument("report", type=click.Choice(["daily", "weekly"]))
@click.option("--to", "platform", required=True, type=click.Choice(["feishu", "slack", "wecom", "dingtalk"]),
              help="Chat platform; its webhook URL (and secret) come from RADAR_<PLATFORM>_WEBHOOK/_SECRET.")
@click.option("--dry-run", is_flag=True, help="Print the payloads instead of posting them (secrets redacted).")
@click.option("--repo", "repos", multiple=True, help="Weekly: only this repository (repeatable); daily: filter.")
@click.option("--week", help="Weekly: ISO week such as 2026-W31 (default: the latest week with items).")
@click.option("--date", "day", help="Daily: the radar of UTC day YYYY-MM-DD (default: the radar last published, "
                                    "by radar daily --out or a push).")
@click.option("--since", help="Daily: the radar of the window from this time (with --until).")
@click.option("--until", help="Daily: the radar of the window up to this time (with --since).")
@click.option("--lang", type=click.Choice(["zh", "en"]), help="Message language (default from config: zh).")
@NO_RECORD
@pass_ctx
def push(obj: Context, report: str, platform: str, dry_run: bool, repos: tuple[str, ...], week: str | None,
         day: str | None, since: str | None, until: str | None, lang: str | None, record: bool) -> None:
    """Push the daily radar or weekly reports to a chat webhook, split to the platform's limits. The daily
    radar pushed is the one last published (radar daily --out), unless --date or --since/--until name another."""
    from ..publish.push import push_reports
    from ..windows import make_window, parse_when

    if (since is None) != (until is None):
        raise click.UsageError("--since and --until go together")
    if since is not None and (day or report != "daily"):
        raise click.UsageError("--since/--until name a daily radar's window; not with --date or weekly")
    window = make_window(parse_when(since), parse_when(until)) if since and until else None
    site_url = os.environ.get(SITE_URL_ENV, "")
    push_reports(obj.settings(lang), obj.engine(), report, platform, dry_run=dry_run, repos=list(repos), week=week,
                 day=day, site_url=site_url, record=record, window=window,
                 say=click.echo)  # each line as it happens: a failure keeps them


COMMANDS = [site, serve, push]
