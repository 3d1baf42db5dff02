"""`radar llm`: the model prose of a weekly report, or with --dry-run the prompts it would send."""

from __future__ import annotations

import os

import click

from ..errors import ConfigError
from .common import Context, _progress, pass_ctx


@click.command("llm")
@click.option("--repo", required=True, help="OWNER/NAME of the weekly report.")
@click.option("--week", help="ISO week, e.g. 2026-W31.")
@click.option("--since", help="Range start (date or ISO time), with --until.")
@click.option("--until", help="Range end (exclusive).")
@click.option("--lang", type=click.Choice(["zh", "en"]), help="Prose language (default from config).")
@click.option("--dry-run", is_flag=True, help="Print the prompts that are not cached; send nothing.")
@click.option("--retry-failed", is_flag=True, help="Resend prompts whose failure is cached.")
@pass_ctx
def llm_cmd(obj: Context, repo: str, week: str | None, since: str | None, until: str | None, lang: str | None,
            dry_run: bool, retry_failed: bool) -> None:
    """Write (and cache) the model prose of a weekly report and print the run summary."""
    from ..llm.stage import use_llm, weekly_llm
    from ..pipeline.reports import weekly_input
    from ..windows import iso_week, make_window, parse_when

    if retry_failed:
        os.environ["RADAR_LLM_RETRY_FAILED"] = "1"
    settings = obj.settings(lang)
    if not use_llm(settings, None):
        raise ConfigError("no model configured: set [llm] base_url and model, or RADAR_LLM_BASE_URL/RADAR_LLM_MODEL")
    window = iso_week(week) if week else make_window(parse_when(since or ""), parse_when(until or ""))
    engine = obj.engine(write=True)
    inp = weekly_input(settings, engine, repo, window)
    with _progress("asking the model") as tick:
        summary = weekly_llm(settings, engine, inp, settings.lang, dry_run, tick=tick)
    for text in summary.prompts:
        click.echo(text + "\n")
    for line in summary.lines():
        click.echo(line, err=True)


COMMANDS = [llm_cmd]
