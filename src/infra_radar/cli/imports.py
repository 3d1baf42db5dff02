"""`radar init`, `radar import-jsonl`, `radar import-git` and `radar analyze`: the store is made and filled."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import click

from ..errors import RadarError
from .common import Context, _err, _progress, pass_ctx


@click.command()
@click.option("--force", is_flag=True, help="Overwrite an existing radar.toml.")
@pass_ctx
def init(obj: Context, force: bool) -> None:
    """Write radar.toml with every option commented, and create the store."""
    from ..pipeline.home import init_home

    path = init_home(obj.settings(), force)
    click.echo(f"wrote {path}\nstore: {obj.settings().db_url}")


def _print_import(result, settings=None) -> None:
    s = result.stats
    click.echo(f"{result.repo}: {s.inserted} new, {s.updated} updated, {s.unchanged} unchanged ({result.source})")
    if result.analysed:  # pipeline.analysis.alongside: `radar analyze` will find these done
        click.echo(f"analysed {result.analysed} item(s) while importing")
    if settings is not None:
        unconfigured_warning(settings, result.repo)


def unconfigured_warning(settings, repo: str) -> None:
    """A warning when radar.toml lists its own [[repos]] and `repo` is not among them: what was imported is in no
    report (a typo of a name, or a repository not added yet); how to add it, or to delete what was imported."""
    if not settings.repos_listed or not repo or any(r.name.lower() == repo.lower() for r in settings.repos):
        return
    click.echo(f"warning: {repo} is not in radar.toml's [[repos]]: what was imported is kept but is in no report; "
               f"add it with radar repo add {repo}, or delete it with radar repo remove {repo} --purge", err=True)


SPOOL_PREFIX = "radar-spool-"
_OWNER = ".owner"  # a file in each spool folder, locked (flock) by the process using the folder while it lives
_STALE = 3600.0  # seconds after which a spool folder without an owner file (an older radar's) is left over


def sweep_spools(folder: Path | None = None) -> list[Path]:
    """Remove the spool folders killed imports left in the temporary folder: ours (same user), not symbolic
    links, whose owner lock is free (the process that made them is gone). Returns what was removed."""
    import os
    import shutil
    import tempfile
    import time

    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock: nothing can tell a live spool from a dead one
        return []
    removed = []
    root = Path(folder or tempfile.gettempdir())
    try:
        found = [p for p in root.iterdir() if p.name.startswith(SPOOL_PREFIX)]
    except OSError:
        return []
    for spool in found:
        try:
            st = os.lstat(spool)
            if not os.path.isdir(spool) or os.path.islink(spool) or st.st_uid != os.getuid():
                continue
            owner = spool / _OWNER
            if owner.is_file():
                fd = os.open(owner, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # taken: its process is gone
                except BlockingIOError:
                    continue  # a live import is using it
                finally:
                    os.close(fd)
            elif time.time() - max([st.st_mtime, *(p.lstat().st_mtime for p in spool.iterdir())]) < _STALE:
                continue  # an older radar's spool, maybe still being written
            shutil.rmtree(spool, ignore_errors=True)
            removed.append(spool)
        except OSError:
            continue
    return removed


@contextmanager
def _spooled(files: list[Path]):
    """Pipes and devices (`/dev/stdin`, `<(zcat ...)`) copied to temporary files first: the reader probes a
    file's first bytes for gzip and opens it again, which a pipe cannot give twice. Yields (paths, names):
    the paths to read and, for each temporary copy, the name it stands for. The folder is locked by this
    process while it lives: a killed import's folder is removed by the next import (sweep_spools)."""
    import os
    import tempfile

    from ..errors import SourceError
    from ..guard.files import chunks

    sweep_spools()
    if all(path.is_file() for path in files):
        yield list(files), {}
        return
    with tempfile.TemporaryDirectory(prefix=SPOOL_PREFIX) as folder:
        owner = os.open(Path(folder) / _OWNER, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            try:
                import fcntl

                fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except ImportError:  # pragma: no cover
                pass
            paths, names = [], {}
            for i, path in enumerate(files):
                if path.is_file():
                    paths.append(path)
                    continue
                copy = Path(folder) / f"{i}-{path.name or 'input'}"
                with open(copy, "wb") as dst:  # a device is refused, a pipe nobody writes to not waited on
                    for piece in chunks(path, SourceError, pipes=True):
                        dst.write(piece)
                paths.append(copy)
                names[str(copy)] = str(path)
            yield paths, names
        finally:
            os.close(owner)


def _renamed(line: str, names: dict[str, str]) -> str:
    """'PATH:LINE: reason' with a temporary copy's PATH replaced by the name it stands for."""
    path, sep, rest = line.partition(":")
    return names.get(path, path) + sep + rest


def _renamed_all(text: str, names: dict[str, str]) -> str:
    """`text` with every temporary copy's path replaced by the name it stands for."""
    for copy, name in names.items():
        text = text.replace(copy, name)
    return text


def _records(paths: list[Path]) -> int | None:
    """How many records the exports hold (their lines but the header), for the progress total: a read of each
    file (decompressed, 1 MiB at a time) before the import; None when one cannot be read (the import says why)."""
    from ..sources.jsonl import _open

    count = 0
    try:
        for path in paths:
            with _open(path) as fh:
                lines, last = 0, b"\n"
                while chunk := fh.read(1 << 20):
                    lines, last = lines + chunk.count(b"\n"), chunk[-1:]
                count += max(0, lines + (last != b"\n") - 1)
    except (OSError, EOFError, ValueError, RadarError):
        return None
    return count or None


@click.command("import-jsonl")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@pass_ctx
def import_jsonl_cmd(obj: Context, files: tuple[Path, ...]) -> None:
    """Import history exports in JSON Lines (plain or .gz); broken lines are skipped and counted."""
    from ..pipeline.imports import import_jsonl

    engine = obj.engine(write=True)  # the lock first: reading a pipe is part of the run
    with _spooled(list(files)) as (paths, names):
        with _progress("importing", total=_records(paths), unit="record") as tick:
            results = import_jsonl(obj.settings(), engine, paths, tick)
    for result in results:  # a spooled pipe is reported under its own name, not the temporary copy's
        result.source = names.get(result.source, result.source)
        result.skipped = [_renamed(line, names) for line in result.skipped]
        result.notes = [_renamed_all(note, names) for note in result.notes]
    skipped = [line for r in results for line in r.skipped]
    for result in results:
        _print_import(result, obj.settings())
    for note in (n for r in results for n in r.notes):
        click.echo(f"note: {note}", err=True)
    for line in skipped[:10]:
        _err(f"skipped {line}")
    if skipped:
        _err(f"{len(skipped)} malformed line(s) skipped; everything else was imported")
        sys.exit(1)


@click.command("import-git")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--repo", required=True, help="OWNER/NAME the clone belongs to.")
@click.option("--branches", help="Comma-separated branch globs, e.g. 'main,release/*' (default: config).")
@click.option("--since", help="Only commits at or after this time (date or ISO time).")
@click.option("--until", help="Only commits before this time.")
@click.option("--diffs/--no-diffs", default=True, show_default=True,
              help="Read each change's diff (git log -p) and keep its code facts: defaults, switches, version gates, "
                   "device checks, kernels, removed definitions, tests.")
@pass_ctx
def import_git_cmd(obj: Context, path: Path, repo: str, branches: str | None, since: str | None,
                   until: str | None, diffs: bool) -> None:
    """Import a local clone: squash-merged PRs, merge commits, direct commits and tags."""
    from ..models import check_repo
    from ..sources.git import StartedClone
    from ..windows import make_window, parse_when

    repo = check_repo(repo)  # before git starts: a name GitHub could not have is refused, not imported
    window = None
    if since or until:
        from datetime import UTC, datetime

        window = make_window(parse_when(since) if since else datetime(1970, 1, 1, tzinfo=UTC),
                             parse_when(until) if until else datetime(2200, 1, 1, tzinfo=UTC))
    patterns = [b.strip() for b in branches.split(",") if b.strip()] if branches else None
    settings = obj.settings()
    # git log starts now and reads while the store opens (SQLAlchemy, the writer lock)
    rules = None
    if diffs:
        from ..analyse.code_facts import load_code_rules

        rules = load_code_rules(settings)
    started = StartedClone(path, patterns or settings.repo(repo).branches,
                           window.since if window else None, window.until if window else None, diffs, rules)
    try:
        from ..pipeline.imports import import_git

        with _progress("reading git log") as tick:
            result = import_git(settings, obj.engine(write=True), path, repo, patterns, window, tick, started)
    finally:
        started.close()
    _print_import(result, settings)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    for line in result.skipped[:10]:
        _err(f"skipped {line}")


@click.command()
@pass_ctx
def analyze(obj: Context) -> None:
    """Analyse items that are new, changed, or were analysed by older rules."""
    from ..pipeline.analysis import nothing_to_analyse

    version = nothing_to_analyse(obj.settings())  # a ready SQLite store: said without opening it through SQLAlchemy
    if version is not None:
        click.echo(f"analysed 0 item(s) in 0.0s (rules {version})")
        return
    from ..pipeline.analysis import analyze as run_analyze

    with _progress("analysing") as tick:
        result = run_analyze(obj.settings(), obj.engine(write=True), tick, on_total=tick.total)
    click.echo(f"analysed {result.analysed} item(s) in {result.seconds:.1f}s (rules {result.version})")


COMMANDS = [init, import_jsonl_cmd, import_git_cmd, analyze]
