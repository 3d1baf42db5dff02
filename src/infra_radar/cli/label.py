"""`radar label`: the team's own judgment of items, shown at once in every output and learnt from."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import click

from ..errors import InputError, RadarError
from .common import Context, pass_ctx

BY_ENV = "RADAR_LABEL_BY"  # who labels, when --by is not given (else the OS user)


def _by_max() -> int:
    from ..evaluate.labels import BY_MAX  # here: every other command starts without the evaluation package

    return BY_MAX


def _who(by: str | None) -> str:
    if by and by.strip():
        return _text(by, "--by", _by_max())
    if os.environ.get(BY_ENV, "").strip():
        return _text(os.environ[BY_ENV], BY_ENV, _by_max())
    try:
        return _text(getpass.getuser(), "the user name", _by_max()) or "unknown"
    except (KeyError, OSError):  # no user name known to the system
        return "unknown"


def _text(value: str, name: str, limit: int) -> str:
    """A note or name given on the command line as stored: one line without control characters (a warning says
    when some were removed), refused past the import's cap (evaluate/labels.py NOTE_MAX, BY_MAX)."""
    from ..models import one_line_text

    text, changed = one_line_text(value)
    if changed:
        click.echo(f"warning: {name} held control characters or line breaks; they were removed", err=True)
    if len(text) > limit:
        raise InputError(f"{name} is {len(text):,} characters long; at most {limit:,} are kept with a label")
    return text


@click.command("label")
@click.argument("ref", required=False)
@click.option("--priority", type=click.Choice(["P0", "P1", "P2", "none"]), help="The team's priority.")
@click.option("--grade", type=click.Choice(["S", "M", "L"]), help="The team's adaptation grade.")
@click.option("--note", default="", help="Why (shown with the label).")
@click.option("--by", help=f"Who labels (default: ${BY_ENV}, else the OS user).")
@click.option("--import", "import_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Import labels from a JSON Lines file (the data/labels format: item, priority, grade).")
@click.option("--list", "list_", is_flag=True, help="List the team's labels (TSV with a header line).")
@click.option("--json", "as_json", is_flag=True, help="With --list: a JSON array of objects instead of TSV.")
@click.option("--remove", is_flag=True, help="Remove REF's label.")
@pass_ctx
def label(obj: Context, ref: str | None, priority: str | None, grade: str | None, note: str, by: str | None,
          import_file: Path | None, list_: bool, remove: bool, as_json: bool) -> None:
    """Label OWNER/NAME#N with the team's priority (and grade): every output shows the team's label, marked as
    the team's, and the labels calibrate the rules for the items the team did not label.

    \b
      radar label acme/infer#42 --priority P0 --grade M --note "hot path for us"
      radar label --import data/labels/team-2026-07-03.jsonl
      radar label --list
      radar label acme/infer#42 --remove
    """
    if as_json and not list_:
        raise click.UsageError("--json goes with --list")
    modes = sum(bool(x) for x in (import_file, list_, remove))
    if modes > 1 or (modes and (priority or grade) and not remove) or (remove and (priority or grade)):
        raise click.UsageError("use one of: REF --priority/--grade, --import FILE, --list, REF --remove")
    if list_:
        if ref:
            raise click.UsageError("--list takes no REF")
        _list(obj, as_json)
        return
    if import_file is not None:
        if ref:
            raise click.UsageError("--import takes no REF")
        _import(obj, import_file, _who(by))
        return
    if not ref:
        raise click.UsageError("name the item: radar label OWNER/NAME#N --priority P0|P1|P2|none [--grade S|M|L]")
    from ..models import parse_ref

    repo, number = parse_ref(ref)
    if remove:
        _remove(obj, repo, number)
        return
    if not priority and not grade:
        raise click.UsageError("give --priority (and/or --grade), or --remove")
    from ..evaluate.labels import NOTE_MAX  # here: every other command starts without the evaluation package

    _set(obj, repo, number, priority, grade, _text(note, "--note", NOTE_MAX), _who(by))


def _set(obj: Context, repo: str, number: int, priority: str | None, grade: str | None, note: str, by: str) -> None:
    from ..pipeline.judgment import refit
    from ..store import labels, queries

    engine = obj.engine(write=True)
    done = labels.set_label(engine, labels.TeamLabel(repo, number, priority, grade, note, by, source="cli"))
    what = " / ".join(v for v in (priority, grade) if v)
    click.echo(f"{repo}#{number}: {what} ({done}, by {by})")
    if not queries.item_exists(engine, repo, number):
        click.echo(f"note: {repo}#{number} is not in the store yet; its label shows once it is imported", err=True)
    refit(obj.settings(), engine)


def _remove(obj: Context, repo: str, number: int) -> None:
    from ..pipeline.judgment import refit
    from ..store import labels

    engine = obj.engine(write=True)
    if not labels.remove_label(engine, repo, number):
        raise RadarError(f"{repo}#{number} has no label")
    click.echo(f"removed the label of {repo}#{number}")
    refit(obj.settings(), engine)


def _list(obj: Context, as_json: bool = False) -> None:
    from ..store import labels
    from .common import emit_rows

    rows = [{"ref": lab.ref, "priority": lab.priority, "grade": lab.grade, "by": lab.by,
             "at": lab.at.strftime("%Y-%m-%dT%H:%MZ") if lab.at else None, "part": lab.part or None, "note": lab.note}
            for lab in labels.all_labels(obj.engine())]
    emit_rows(rows, ["ref", "priority", "grade", "by", "at", "part", "note"], as_json)


def _import(obj: Context, path: Path, by: str) -> None:
    from ..evaluate.labels import TEAM, load_labels
    from ..pipeline.judgment import refit
    from ..store import labels

    found = load_labels(path)
    for problem in found.problems:
        click.echo(f"warning: {problem}", err=True)
    if found.problems.more:
        click.echo(f"warning: {found.problems.summary(str(path))}", err=True)
    usable = [lab for lab in found.labels if lab.values.get("priority") or lab.values.get("grade")]
    if not usable and not found.windows:
        raise InputError(f"{path}: no label with a priority or grade")
    engine = obj.engine(write=True)
    team = []
    for lab in usable:
        # a list of acceptable values (two fair readings) is stored as its first one
        priority = (lab.values.get("priority") or [None])[0]
        grade = (lab.values.get("grade") or [None])[0]
        part = lab.split if lab.split == TEAM or lab.split.startswith(TEAM + "-") else ""
        team.append(labels.TeamLabel(lab.repo, lab.number, priority, grade, lab.note, lab.by or by,
                                     source=str(path), part=part))
    done = labels.set_labels(engine, team, found.windows)  # the whole file in one transaction, or nothing
    counts = {what: done.count(what) for what in ("added", "updated", "unchanged")}
    click.echo(f"{path}: {counts['added']} added, {counts['updated']} updated, {counts['unchanged']} unchanged"
               + (f", {len(found.windows)} window(s)" if found.windows else "") + f" (by {by})")
    refit(obj.settings(), engine)


COMMANDS = [label]
