"""`radar eval`: score the rules against a labelled set of items in the store."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .common import Context, pass_ctx


@click.command("eval")
@click.argument("labels", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON instead of text.")
@click.option("--split", "part",
              help="Print only this part of the set: all, tune, holdout or a team part (default: every part).")
@click.option("--check", "strict", is_flag=True,
              help="Exit non-zero when a metric misses its threshold or the held-out part trails.")
@pass_ctx
def eval_cmd(obj: Context, labels: Path, as_json: bool, part: str | None, strict: bool) -> None:
    """Score kind, topics, priority, grade, decision and claims against a labels file (JSON Lines)."""
    from ..evaluate.score import check, evaluate_store, report_json, report_text

    report = evaluate_store(obj.settings(), obj.engine(), labels)
    if part and part not in report.parts:
        raise click.UsageError(f"no part {part!r}; the parts are {', '.join(report.parts)}")
    if as_json:
        data = report_json(report)
        if part:
            data["parts"] = {part: data["parts"][part]}
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        click.echo(report_text(report, [part] if part else None))
    failures = check(report)
    if strict and failures:
        for line in failures:
            click.echo(f"FAIL {line}", err=True)
        raise SystemExit(1)
    if strict:
        click.echo("all thresholds met", err=True)


COMMANDS = [eval_cmd]
