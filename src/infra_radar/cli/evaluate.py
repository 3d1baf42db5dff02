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
              help="Exit non-zero when a metric misses its threshold or the held-out part trails (with and "
                   "without learning).")
@click.option("--learning/--no-learning", default=True,
              help="Also score the calibration the team's labels give, cross-validated (default: on).")
@pass_ctx
def eval_cmd(obj: Context, labels: Path, as_json: bool, part: str | None, strict: bool, learning: bool) -> None:
    """Score kind, topics, priority, grade, decision and claims against a labels file (JSON Lines), by the rules
    and, cross-validated, with the calibration learnt from the team's labels (leave one team day out, k-fold on
    the other labels)."""
    from ..evaluate.report import goals_text, kin_text, learning_text, report_json, report_text
    from ..evaluate.score import check_all, evaluate_all

    evaluation = evaluate_all(obj.settings(), obj.engine(), labels, learning=learning)
    report = evaluation.rules
    if part and part not in report.parts:
        raise click.UsageError(f"no part {part!r}; the parts are {', '.join(report.parts)}")
    failures = check_all(evaluation)
    if as_json:
        data = report_json(report)
        if learning:
            data["learning"] = {"cross_validated": report_json(evaluation.learned), "folds": evaluation.folds,
                                "kin": evaluation.kin}
            if evaluation.shown is not None:
                data["learning"]["shown"] = report_json(evaluation.shown)
        if part:
            data["parts"] = {part: data["parts"][part]}
            for block in ("cross_validated", "shown"):
                if block in data.get("learning", {}):
                    data["learning"][block]["parts"] = {part: data["learning"][block]["parts"][part]}
        data["failures"] = failures
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        click.echo(report_text(report, [part] if part else None))
        if learning:
            click.echo(learning_text(evaluation, [part] if part else None))
            click.echo(kin_text(evaluation))
        if strict:
            click.echo(goals_text(evaluation))
    if strict and failures:
        for line in failures:
            click.echo(f"FAIL {line}", err=True)
        raise SystemExit(1)
    if strict:
        click.echo("all thresholds met", err=True)


COMMANDS = [eval_cmd]
