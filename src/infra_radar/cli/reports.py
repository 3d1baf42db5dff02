"""`radar daily`, `radar weekly`, `radar show`, `radar export` and `radar demo`: reading the store."""

from __future__ import annotations

from pathlib import Path

import click

from .common import LANG, LLM, NO_RECORD, OUT, Context, _progress, out_dir_of, pass_ctx, terminal_safe


def _emit(report) -> None:
    for note in report.notes:
        click.echo(f"note: {note}", err=True)
    if report.llm is not None:
        for line in report.llm.lines():
            click.echo(line, err=True)
    if report.path:
        click.echo(str(report.path))
    else:
        click.echo(report.text, nl=False)
    if report.newest is not None:
        click.echo(f"note: {empty_window_note(report.window, report.newest)}", err=True)


def empty_window_note(window, newest: list) -> str:
    """What a report window with no item says: each repository's newest stored item, and how to bring the store
    up to date when it ends before the window."""
    span = f"{window.since:%Y-%m-%dT%H:%MZ}..{window.until:%Y-%m-%dT%H:%MZ}"
    dated = [(name, when) for name, when in newest if when is not None]
    if not dated:
        return (f"no item in the window {span}: the store holds none yet; import history (radar import-git, "
                "radar import-jsonl) or fetch it from GitHub (radar fetch)")
    held = ", ".join(f"{name} {when:%Y-%m-%d}" for name, when in dated)
    line = f"no item in the window {span}; the store's newest item per repository: {held}"
    if max(when for _, when in dated) < window.since:
        line += ("; bring the store up to date with radar fetch (GitHub) or an import "
                 "(radar import-git, radar import-jsonl)")
    return line


@click.command()
@click.option("--since", help="Window start (default: end of the last successful daily run; first run 72 h back).")
@click.option("--until", help="Window end (default: now).")
@click.option("--repo", "repos", multiple=True, help="Only this repository (repeatable).")
@LANG
@OUT
@LLM
@click.option("--dry-run", is_flag=True, help="Print the model prompts that are not cached; send, write, record nothing "
                                             "(without a configured model: say so, as there is no prompt to send).")
@NO_RECORD
@pass_ctx
def daily(obj: Context, since: str | None, until: str | None, repos: tuple[str, ...], lang: str | None,
          out_dir: Path | None, llm: bool | None, dry_run: bool, record: bool) -> None:
    """The daily radar: P0/P1 items, deep dives, tracked items, checklist."""
    from ..pipeline.reports import daily as run_daily
    from ..pipeline.reports import report_repos
    from ..windows import make_window, parse_when

    if dry_run:
        from ..pipeline.reports import daily_prompts

        if llm is False:
            raise click.UsageError("--dry-run prints the model prompts; it cannot go with --no-llm")
        if llm is None and not _model_configured(obj.settings(lang)):
            click.echo("note: no model is configured ([llm] base_url and model in radar.toml, or RADAR_LLM_BASE_URL "
                       "and RADAR_LLM_MODEL): the daily radar is rules only and sends no prompt, so a dry run has "
                       "nothing to print; `radar daily` prints the radar itself (`radar doctor` checks the model "
                       "set-up)", err=True)
            return
        summary = daily_prompts(obj.settings(lang), obj.engine(write=True), parse_when(since) if since else None,
                                parse_when(until) if until else None, list(repos) or None)
        for text in summary.prompts:
            click.echo(text + "\n")
        click.echo(summary.line(), err=True)
        return
    start, end = parse_when(since) if since else None, parse_when(until) if until else None
    if start and end:
        make_window(start, end)  # a bad window is one error line, before any progress line
    engine = obj.engine(write=True)
    if repos:
        report_repos(obj.settings(lang), engine, list(repos))  # so is an unknown repository
    _analyse_first(obj, lang)
    report = run_daily(obj.settings(lang), engine, start, end, list(repos) or None, out_dir_of(obj, out_dir), llm,
                       record, warn=lambda line: click.echo(f"warning: {line}", err=True))  # with --out, the path alone on stdout and nothing on stderr (cron mails stay empty)
    _emit(report)


DEMO_DIR = "radar-demo"  # the demo's outputs and store: apart from out_dir (radar-out), where real reports go


def _analyse_first(obj: Context, lang: str | None) -> None:
    """Analyse what is new before a report, with progress (a line per stage when not on a terminal): the
    report's own analysis then finds nothing left to do."""
    from ..pipeline.analysis import analyze, nothing_to_analyse

    settings = obj.settings(lang)
    if nothing_to_analyse(settings) is not None:  # a ready SQLite store, said without SQLAlchemy
        return
    with _progress("analysing") as tick:
        analyze(settings, obj.engine(write=True), tick, on_total=tick.total)


def _model_configured(settings) -> bool:
    from ..llm.stage import llm_config

    return llm_config(settings) is not None


@click.command()
@click.option("--repo", required=True, help="OWNER/NAME.")
@click.option("--week", help="ISO week, e.g. 2026-W31.")
@click.option("--since", help="Range start (date or ISO time), with --until.")
@click.option("--until", help="Range end (exclusive).")
@LANG
@OUT
@LLM
@pass_ctx
def weekly(obj: Context, repo: str, week: str | None, since: str | None, until: str | None, lang: str | None,
           out_dir: Path | None, llm: bool | None) -> None:
    """The weekly report of one repository: counts, themes, trends, risks, key PRs."""
    from ..pipeline.reports import report_repos
    from ..pipeline.reports import weekly as run_weekly
    from ..windows import iso_week, make_window, parse_when

    if week and (since or until):
        raise click.UsageError("give either --week or --since/--until, not both")
    if week:
        window = iso_week(week)
    elif since and until:
        window = make_window(parse_when(since), parse_when(until))
    else:
        raise click.UsageError("give --week 2026-W31, or --since and --until")
    engine = obj.engine(write=True)
    report_repos(obj.settings(lang), engine, [repo])  # an unknown repository is one error line, before progress
    _analyse_first(obj, lang)
    with _progress("weekly", total=1, unit="report") as tick:
        report = run_weekly(obj.settings(lang), engine, repo, window, out_dir_of(obj, out_dir), llm)
        tick(1)
    _emit(report)


@click.command()
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Print the export object instead of the card.")
@click.option("--evidence", is_flag=True,
              help="List each statement the radar makes about the item with its source sentence, field and rule.")
@LANG
@LLM
@pass_ctx
def show(obj: Context, ref: str, as_json: bool, evidence: bool, lang: str | None, llm: bool | None) -> None:
    """The item card of OWNER/NAME#N."""
    from ..pipeline.card import show_card  # reads a ready SQLite store without SQLAlchemy (pipeline/card.py)

    # with --evidence a configured model's sentences are listed from the cache (nothing is sent; --no-llm: none)
    click.echo(terminal_safe(show_card(obj.settings(lang), obj.engine, ref, as_json, llm, evidence=evidence)),
               nl=False)


@click.command()
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "csv"]), default="json", show_default=True,
              help="json: one array; jsonl: one object a line; csv: a row an item, the table's columns.")
@click.option("--repo", help="Only this repository.")
@click.option("--since", help="Window start, inclusive (date or ISO time).")
@click.option("--until", help="Window end, exclusive.")
@click.option("--state", type=click.Choice(["merged", "open", "closed", "all"]), default="all", show_default=True,
              help="Only items in this state.")
@pass_ctx
def export(obj: Context, fmt: str, repo: str | None, since: str | None, until: str | None, state: str) -> None:
    """Print analysed items as a JSON array (the export contract), JSON Lines or CSV, streamed from the store
    (progress on stderr)."""
    import sys
    from datetime import UTC, datetime

    from ..pipeline.export import WRITERS, export_objects
    from ..pipeline.reports import report_repos
    from ..windows import make_window, parse_when

    window = None if not since and not until else make_window(
        parse_when(since) if since else datetime(1970, 1, 1, tzinfo=UTC),
        parse_when(until) if until else datetime(2200, 1, 1, tzinfo=UTC))  # no window: every item
    settings, engine = obj.settings(), obj.engine()
    names = report_repos(settings, engine, [repo]) if repo else None  # an unknown one: one error line, no output
    with _progress("exporting", quiet_start=True) as tick:
        objects = export_objects(settings, engine, window, names, state, total=tick.total)
        WRITERS[fmt](objects, sys.stdout, tick)
        sys.stdout.flush()


@click.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path(DEMO_DIR),
              show_default=True, help="Where to write the demo outputs (apart from real reports, which --out "
                                      "writes under radar-out/).")
@LANG
@pass_ctx
def demo(obj: Context, out_dir: Path, lang: str | None) -> None:
    """Offline demo on a bundled sample: writes a daily radar, a weekly report and the export, with the sample's
    own store, under radar-demo/ (never beside your real reports)."""
    from ..pipeline.demo import demo as run_demo

    for path in run_demo(obj.settings(lang), out_dir):
        click.echo(str(path))
    click.echo(f"store: {out_dir / 'demo.db'} (try: radar --db sqlite:///{out_dir / 'demo.db'} show "
               "acme/infer-npu#814)", err=True)
    hint = path_hint()
    if hint:
        click.echo(hint, err=True)


def path_hint() -> str | None:
    """How to call `radar` by its bare name when the one running is not what the shell finds on PATH (a
    fresh `.venv/bin/radar demo`), else None."""
    import os
    import shutil
    import sys

    running = Path(sys.argv[0])
    if running.name != "radar" or not running.is_file():
        return None
    found = shutil.which("radar")
    if found and Path(found).resolve() == running.resolve():
        return None
    activate = Path(sys.prefix) / "bin" / "activate"
    if activate.is_file():
        shown = os.path.relpath(activate)
        shown = str(activate) if shown.startswith("..") else shown if shown.startswith(".") else f"./{shown}"
        return f"radar is not on your PATH: run `source {shown}` first to call it as `radar` (or call {running})"
    return f"radar is not on your PATH: call it as {running}, or add {running.parent} to PATH"


COMMANDS = [daily, weekly, show, export, demo]
