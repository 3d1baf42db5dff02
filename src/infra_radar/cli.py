"""The `radar` command: each subcommand parses its options, calls one pipeline function and prints."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click

from . import __version__
from .config import Settings, load_settings
from .errors import RadarError, redact

LANG = click.option("--lang", type=click.Choice(["zh", "en"]), help="Report language (default from config: zh).")
_LLM_FLAG = click.option("--llm/--no-llm", "llm", default=None,
                         help="Model prose from the [llm] server (default: on when a model is configured).")


def _retry_failed(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:  # read by llm_stage.llm_config, as the other RADAR_LLM_* settings
        os.environ["RADAR_LLM_RETRY_FAILED"] = "1"


_RETRY = click.option("--retry-failed", is_flag=True, expose_value=False, callback=_retry_failed,
                      help="Resend model prompts whose failure is cached (by default a rerun sends nothing for them).")


def LLM(f):  # noqa: N802  (a decorator, used like the option constants above)
    return _LLM_FLAG(_RETRY(f))
OUT = click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
                   help="Write the report under this directory instead of printing it.")


@dataclass
class Context:
    """What the global options chose; settings are loaded once, on first use."""

    config: Path | None
    db: str | None
    wait: float | None = None
    _settings: Settings | None = None
    _engine: object = None
    _writing: bool = False

    def settings(self, lang: str | None = None) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config, self.db)
            if self.wait is not None:
                self._settings.lock_timeout = self.wait
        if lang:
            self._settings.lang = lang
        return self._settings

    def engine(self, write: bool = False):
        """The store, opened once per command; `write` holds its writer lock until the command ends."""
        from .pipeline import open_store
        from .store import lock

        lock.COMMAND = " ".join(_command_path())  # how other processes will name us while we hold the lock
        if self._engine is None:
            self._engine, self._writing = open_store(self.settings(), writer=write), write
        elif write and not self._writing:
            lock.writer_lock(self._engine).acquire(self.settings().lock_timeout)
            self._writing = True
        return self._engine

    def store_file(self) -> str:
        """The SQLite file of the store, once settings are loaded ("" for another database or before)."""
        url = self._settings.db_url if self._settings is not None else ""
        return url.removeprefix("sqlite:///") if url.startswith("sqlite:///") and url != "sqlite:///:memory:" else ""

    def close(self) -> None:
        """Release the writer lock (if held) and the store's connections."""
        if self._engine is not None:
            # imported here: a command that never opened the store (a usage error) skips SQLAlchemy
            from .store.lock import writer_lock

            if self._writing:
                writer_lock(self._engine).release()
            self._engine.dispose()
            self._engine, self._writing = None, False


def _command_path() -> list[str]:
    """["radar", "site", "build"] for the command being run."""
    ctx, names = click.get_current_context(silent=True), []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return ["radar", *reversed(names)]


def _err(message: str) -> None:
    click.echo(f"error: {message}", err=True)


@contextmanager
def _progress(label: str, total: int | None = None):
    """A rich progress bar on stderr (silent when stderr is not a terminal); yields an advance(n) callback."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, disable=not console.is_terminal, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield _Ticker(lambda n: bar.advance(task, n), lambda n: bar.update(task, total=n))


@dataclass(frozen=True, slots=True)
class _Ticker:
    """advance(n) as a call, and .total(n) to set the bar's length once it is known."""

    advance: Callable[[int], None]
    total: Callable[[int], None]

    def __call__(self, n: int) -> None:
        self.advance(n)


class Seconds(click.ParamType):
    """Seconds >= 0 (inf: no limit); nan and negative numbers are refused."""

    name = "seconds"

    def convert(self, value, param, ctx):
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = float("nan")
        if not seconds >= 0:
            self.fail(f"{value!r} is not a number of seconds >= 0", param, ctx)
        return seconds


class RadarGroup(click.Group):
    """Turns every RadarError into one line on stderr and exit status 1, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except RadarError as exc:
            _err(redact(str(exc)))  # a URL's user:password never reaches the terminal
            sys.exit(1)
        except Exception as exc:
            if isinstance(exc, click.exceptions.ClickException | click.exceptions.Exit | click.exceptions.Abort) \
                    or os.environ.get("RADAR_DEBUG"):
                raise
            from .failures import one_line  # the last net: one line naming what failed, never a traceback

            _err(one_line(exc, ctx.obj.store_file() if isinstance(ctx.obj, Context) else ""))
            sys.exit(1)
        except KeyboardInterrupt:
            _err("interrupted; the store keeps every batch that was committed, rerun to complete")
            sys.exit(130)
        finally:
            if isinstance(ctx.obj, Context):
                ctx.obj.close()


@click.group(cls=RadarGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path),
              help="Config file (default: $RADAR_HOME/radar.toml).")
@click.option("--db", help="Store URL, e.g. sqlite:///radar.db or postgresql+psycopg://... (default: config).")
@click.option("--wait", type=Seconds(), metavar="SECONDS",
              help="How long a writing command waits while another one writes the store "
                   "(default: lock_timeout, RADAR_LOCK_TIMEOUT, 600).")
@click.version_option(__version__, prog_name="radar")
@click.pass_context
def main(ctx: click.Context, config: Path | None, db: str | None, wait: float | None) -> None:
    """infra-radar: which upstream AI-infra changes matter to your team, every morning."""
    from .config import check_env

    check_env()
    ctx.obj = Context(config, db, wait)


pass_ctx: Callable = click.make_pass_decorator(Context)


@main.command()
@click.option("--force", is_flag=True, help="Overwrite an existing radar.toml.")
@pass_ctx
def init(obj: Context, force: bool) -> None:
    """Write radar.toml with every option commented, and create the store."""
    from .pipeline import init_home

    path = init_home(obj.settings(), force)
    click.echo(f"wrote {path}\nstore: {obj.settings().db_url}")


def _print_import(result) -> None:
    s = result.stats
    click.echo(f"{result.repo}: {s.inserted} new, {s.updated} updated, {s.unchanged} unchanged ({result.source})")
    if result.analysed:  # analysis_stage.alongside: `radar analyze` will find these done
        click.echo(f"analysed {result.analysed} item(s) while importing")


@contextmanager
def _spooled(files: list[Path]):
    """Pipes and devices (`/dev/stdin`, `<(zcat ...)`) copied to temporary files first: the reader probes a
    file's first bytes for gzip and opens it again, which a pipe cannot give twice. Yields (paths, names):
    the paths to read and, for each temporary copy, the name it stands for."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="radar-spool-") as folder:
        paths, names = [], {}
        for i, path in enumerate(files):
            if path.is_file():
                paths.append(path)
                continue
            copy = Path(folder) / f"{i}-{path.name or 'input'}"
            with open(path, "rb") as src, open(copy, "wb") as dst:
                shutil.copyfileobj(src, dst)
            paths.append(copy)
            names[str(copy)] = str(path)
        yield paths, names


def _renamed(line: str, names: dict[str, str]) -> str:
    """'PATH:LINE: reason' with a temporary copy's PATH replaced by the name it stands for."""
    path, sep, rest = line.partition(":")
    return names.get(path, path) + sep + rest


@main.command("import-jsonl")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@pass_ctx
def import_jsonl_cmd(obj: Context, files: tuple[Path, ...]) -> None:
    """Import history exports in JSON Lines (plain or .gz); broken lines are skipped and counted."""
    from .pipeline import import_jsonl

    engine = obj.engine(write=True)  # the lock first: reading a pipe is part of the run
    with _spooled(list(files)) as (paths, names), _progress("importing") as tick:
        results = import_jsonl(obj.settings(), engine, paths, tick)
    for result in results:  # a spooled pipe is reported under its own name, not the temporary copy's
        result.source = names.get(result.source, result.source)
        result.skipped = [_renamed(line, names) for line in result.skipped]
    skipped = [line for r in results for line in r.skipped]
    for result in results:
        _print_import(result)
    for line in skipped[:10]:
        _err(f"skipped {line}")
    if skipped:
        _err(f"{len(skipped)} malformed line(s) skipped; everything else was imported")
        sys.exit(1)


@main.command("import-git")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--repo", required=True, help="OWNER/NAME the clone belongs to.")
@click.option("--branches", help="Comma-separated branch globs, e.g. 'main,release/*' (default: config).")
@click.option("--since", help="Only commits at or after this time (date or ISO time).")
@click.option("--until", help="Only commits before this time.")
@pass_ctx
def import_git_cmd(obj: Context, path: Path, repo: str, branches: str | None, since: str | None,
                   until: str | None) -> None:
    """Import a local clone: squash-merged PRs, merge commits, direct commits and tags."""
    from .sources.git import StartedClone
    from .windows import make_window, parse_when

    window = None
    if since or until:
        from datetime import UTC, datetime

        window = make_window(parse_when(since) if since else datetime(1970, 1, 1, tzinfo=UTC),
                             parse_when(until) if until else datetime(2200, 1, 1, tzinfo=UTC))
    patterns = [b.strip() for b in branches.split(",") if b.strip()] if branches else None
    settings, started = obj.settings(), None
    if repo.count("/") == 1:  # git log starts now and reads while the store opens (SQLAlchemy, the writer lock)
        started = StartedClone(path, patterns or settings.repo(repo).branches,
                               window.since if window else None, window.until if window else None)
    try:
        from .pipeline import import_git

        with _progress("reading git log") as tick:
            result = import_git(settings, obj.engine(write=True), path, repo, patterns, window, tick, started)
    finally:
        if started is not None:
            started.close()
    _print_import(result)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    for line in result.skipped[:10]:
        _err(f"skipped {line}")


@main.command()
@pass_ctx
def analyze(obj: Context) -> None:
    """Analyse items that are new, changed, or were analysed by older rules."""
    from .analysis_stage import nothing_to_analyse

    version = nothing_to_analyse(obj.settings())  # a ready SQLite store: said without opening it through SQLAlchemy
    if version is not None:
        click.echo(f"analysed 0 item(s) in 0.0s (rules {version})")
        return
    from .pipeline import analyze as run_analyze

    with _progress("analysing") as tick:
        result = run_analyze(obj.settings(), obj.engine(write=True), tick, on_total=tick.total)
    click.echo(f"analysed {result.analysed} item(s) in {result.seconds:.1f}s (rules {result.version})")


def _emit(report) -> None:
    if report.llm is not None:
        for line in report.llm.lines():
            click.echo(line, err=True)
    if report.path:
        click.echo(str(report.path))
    else:
        click.echo(report.text, nl=False)


@main.command()
@click.option("--since", help="Window start (default: end of the last successful daily run; first run 72 h back).")
@click.option("--until", help="Window end (default: now).")
@click.option("--repo", "repos", multiple=True, help="Only this repository (repeatable).")
@LANG
@OUT
@LLM
@click.option("--dry-run", is_flag=True, help="Print the model prompts that are not cached; send, write, record nothing.")
@pass_ctx
def daily(obj: Context, since: str | None, until: str | None, repos: tuple[str, ...], lang: str | None,
          out_dir: Path | None, llm: bool | None, dry_run: bool) -> None:
    """The daily radar: P0/P1 items, deep dives, tracked items, checklist."""
    from .pipeline import daily as run_daily
    from .windows import parse_when

    if dry_run:
        from .pipeline import daily_prompts

        if llm is False:
            raise click.UsageError("--dry-run prints the model prompts; it cannot go with --no-llm")
        summary = daily_prompts(obj.settings(lang), obj.engine(write=True), parse_when(since) if since else None,
                                parse_when(until) if until else None, list(repos) or None)
        for text in summary.prompts:
            click.echo(text + "\n")
        click.echo(summary.line(), err=True)
        return
    report = run_daily(obj.settings(lang), obj.engine(write=True), parse_when(since) if since else None,
                       parse_when(until) if until else None, list(repos) or None, out_dir, llm)
    _emit(report)


@main.command()
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
    from .pipeline import weekly as run_weekly
    from .windows import iso_week, make_window, parse_when

    if week and (since or until):
        raise click.UsageError("give either --week or --since/--until, not both")
    if week:
        window = iso_week(week)
    elif since and until:
        window = make_window(parse_when(since), parse_when(until))
    else:
        raise click.UsageError("give --week 2026-W31, or --since and --until")
    _emit(run_weekly(obj.settings(lang), obj.engine(write=True), repo, window, out_dir, llm))


@main.command()
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Print the export object instead of the card.")
@LANG
@LLM
@pass_ctx
def show(obj: Context, ref: str, as_json: bool, lang: str | None, llm: bool | None) -> None:
    """The item card of OWNER/NAME#N."""
    from .card import show_card  # reads a ready SQLite store without SQLAlchemy (card.py)

    click.echo(show_card(obj.settings(lang), obj.engine, ref, as_json, llm), nl=False)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["json"]), default="json", show_default=True,
              help="Output format.")
@click.option("--repo", help="Only this repository.")
@click.option("--since", help="Window start, inclusive (date or ISO time).")
@click.option("--until", help="Window end, exclusive.")
@click.option("--state", type=click.Choice(["merged", "open", "closed", "all"]), default="all", show_default=True,
              help="Only items in this state.")
@pass_ctx
def export(obj: Context, fmt: str, repo: str | None, since: str | None, until: str | None, state: str) -> None:
    """Print analysed items as a JSON array (the export contract)."""
    from datetime import UTC, datetime

    from .pipeline import export as run_export
    from .windows import make_window, parse_when

    window = None if not since and not until else make_window(
        parse_when(since) if since else datetime(1970, 1, 1, tzinfo=UTC),
        parse_when(until) if until else datetime(2200, 1, 1, tzinfo=UTC))  # no window: every item
    data = run_export(obj.settings(), obj.engine(), window, repo, state)
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@main.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("radar-out"),
              show_default=True, help="Where to write the demo outputs.")
@LANG
@pass_ctx
def demo(obj: Context, out_dir: Path, lang: str | None) -> None:
    """Offline demo on a bundled sample: writes a daily radar, a weekly report and the export."""
    from .pipeline import demo as run_demo

    for path in run_demo(obj.settings(lang), out_dir):
        click.echo(str(path))
    click.echo(f"store: {out_dir / 'demo.db'} (try: radar --db sqlite:///{out_dir / 'demo.db'} show "
               "acme/infer-npu#814)", err=True)


@main.group()
def watch() -> None:
    """The watch list whose items every daily radar rechecks."""


@watch.command("add")
@click.argument("ref")
@click.option("--reason", default="", help="Why it is watched.")
@pass_ctx
def watch_add(obj: Context, ref: str, reason: str) -> None:
    """Watch OWNER/NAME#N."""
    from .pipeline import parse_ref
    from .store.save import watch_add as add

    repo, number = parse_ref(ref)
    click.echo(f"watching {repo}#{number}" if add(obj.engine(write=True), repo, number, reason)
               else f"{repo}#{number} is already watched")


@watch.command("list")
@pass_ctx
def watch_list(obj: Context) -> None:
    """List watched items."""
    from .store.queries import watch_list as entries

    for e in entries(obj.engine()):
        click.echo(f"{e.repo}#{e.number}\t{e.last_state or '-'}\t{e.reason}")


@watch.command("remove")
@click.argument("ref")
@pass_ctx
def watch_remove(obj: Context, ref: str) -> None:
    """Stop watching OWNER/NAME#N."""
    from .pipeline import parse_ref
    from .store.save import watch_remove as remove

    repo, number = parse_ref(ref)
    if not remove(obj.engine(write=True), repo, number):
        raise RadarError(f"{repo}#{number} is not on the watch list")
    click.echo(f"stopped watching {repo}#{number}")
from . import cli_doctor, cli_eval, cli_fetch, cli_llm, cli_page, cli_publish  # noqa: E402, F401, I001  (each module registers its commands on main)
