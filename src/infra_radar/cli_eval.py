"""`radar eval`: score the rules against a labelled set of items in the store."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .cli import Context, main, pass_ctx


@main.command("eval")
@click.argument("labels", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON instead of text.")
@click.option("--split", "part", type=click.Choice(["all", "tune", "holdout"]),
              help="Print only this part of the set (default: all three).")
@click.option("--check", "strict", is_flag=True,
              help="Exit non-zero when a metric misses its threshold or the held-out part trails.")
@pass_ctx
def eval_cmd(obj: Context, labels: Path, as_json: bool, part: str | None, strict: bool) -> None:
    """Score kind, topics, priority, grade, decision and claims against a labels file (JSON Lines)."""
    from .evaluate import PARTS, check, evaluate_store, report_json, report_text

    report = evaluate_store(obj.settings(), obj.engine(), labels)
    if as_json:
        data = report_json(report)
        if part:
            data["parts"] = {part: data["parts"][part]}
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        click.echo(report_text(report, [part] if part else list(PARTS)))
    failures = check(report)
    if strict and failures:
        for line in failures:
            click.echo(f"FAIL {line}", err=True)
        raise SystemExit(1)
    if strict:
        click.echo("all thresholds met", err=True)
