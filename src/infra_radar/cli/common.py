"""What every `radar` command shares: the global options' Context, option decorators, progress and errors."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click

from ..config import Settings, flag, load_settings
from ..errors import RadarError, redact

LANG = click.option("--lang", type=click.Choice(["zh", "en"]), help="Report language (default from config: zh).")
_LLM_FLAG = click.option("--llm/--no-llm", "llm", default=None,
                         help="Model prose from the [llm] server (default: on when a model is configured).")


def _retry_failed(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:  # read by llm.stage.llm_config, as the other RADAR_LLM_* settings
        os.environ["RADAR_LLM_RETRY_FAILED"] = "1"


_RETRY = click.option("--retry-failed", is_flag=True, expose_value=False, callback=_retry_failed,
                      help="Resend model prompts whose failure is cached (by default a rerun sends nothing for them).")


def LLM(f):  # noqa: N802  (a decorator, used like the option constants above)
    return _LLM_FLAG(_RETRY(f))


NO_RECORD = click.option("--no-record", "record", flag_value=False, default=True,
                         help="Publish as a rehearsal: record nothing for the radars after it (docs/memory.md).")
class _Configured(str):
    """What `--out` given without a value stands for: the settings' out_dir (told apart by identity)."""


OUT_CONFIGURED = _Configured("out_dir")


class _OutDir(click.Path):
    def convert(self, value, param, ctx):
        return value if value is OUT_CONFIGURED else super().convert(value, param, ctx)


OUT = click.option("--out", "out_dir", type=_OutDir(file_okay=False, path_type=Path), is_flag=False,
                   flag_value=OUT_CONFIGURED, metavar="[DIR]", help="Write the report under this directory instead of printing it "
                   "(--out alone: out_dir of radar.toml, default radar-out).")
JSON = click.option("--json", "as_json", is_flag=True, help="Print a JSON array of objects instead of TSV.")


def out_dir_of(obj: Context, out_dir: Path | None) -> Path | None:
    """The directory --out names; `--out` given without a value is the settings' out_dir."""
    return obj.settings().out_dir if out_dir is OUT_CONFIGURED else out_dir


# What a terminal would act on rather than show: C0 controls but tab and newline (ESC starts colour and title
# sequences, BEL rings, CR overwrites), DEL, C1 controls (CSI, OSC as single characters), the line and paragraph
# separators and lone surrogates (they stop a print)
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def terminal_safe(text: str) -> str:
    """`text` for a terminal: each control character shown as its escape (ESC as "\\u001b"), so author text
    from a diff or a description can neither colour, retitle nor rewrite the screen. Inside the strings of
    JSON output the escape is JSON's own, so the JSON still reads back to the same text. Linear."""
    if _TERMINAL_CONTROL.search(text) is None:
        return text
    return _TERMINAL_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def emit_rows(rows: list[dict], columns: list[str], as_json: bool) -> None:
    """A list command's output: tab-separated values under a header line (an empty cell for no value), or with
    `as_json` one JSON array of objects (null for no value): the shapes sqlite-utils and llm print."""
    import json

    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    click.echo("\t".join(columns))
    for row in rows:
        click.echo("\t".join(_cell(row.get(c)) for c in columns))


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return " ".join(str(value).split("\t"))  # a tab inside a value would shift the columns after it


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
        from ..pipeline.home import open_store
        from ..store import lock

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
            from ..store.lock import writer_lock

            if self._writing:
                writer_lock(self._engine).release()
            self._engine.dispose()
            self._engine, self._writing = None, False
            if self.store_file():  # no connection of ours is left on the file: its lock descriptor can go
                from ..store.lock import forget_database

                forget_database(Path(self.store_file()).expanduser())


def _command_path() -> list[str]:
    """["radar", "site", "build"] for the command being run."""
    ctx, names = click.get_current_context(silent=True), []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return ["radar", *reversed(names)]


def _err(message: str) -> None:
    click.echo(f"error: {message}", err=True)


PROGRESS_EVERY = 5.0  # seconds between progress lines off a terminal


@contextmanager
def _progress(label: str, total: int | None = None, unit: str = "item", quiet_start: bool = False):
    """Progress on stderr; yields an advance(n) callback (with .total(n) once the length is known). On a terminal
    a rich bar (with its total when known); elsewhere (cron, CI, a pipe) lines as `label: ...`: one when its
    total is known (or its first step is made), one every PROGRESS_EVERY seconds with what is done of the total,
    one when it ends. With `quiet_start` (a command whose stdout is its output), a stage shorter than
    PROGRESS_EVERY says nothing at all."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        lines = _Lines(label, unit, total, quiet_start=quiet_start)
        yield _Ticker(lines.advance, lines.set_total)
        lines.end()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield _Ticker(lambda n: bar.advance(task, n), lambda n: bar.update(task, total=n))


class _Lines:
    """A stage's progress as lines (not on a terminal): one when its first step is done (with its total when
    known), one every `every` seconds while it runs (done, of the total when known), one when it ends; a stage
    whose first step is its last says only the end, and a stage that fails before its first step says nothing
    (its error stays the one line). With `quiet_start`, the first line waits until `every` seconds have passed,
    and a stage that said nothing ends silently. `clock` is time.monotonic (a test passes its own)."""

    def __init__(self, label: str, unit: str, total: int | None, clock: Callable[[], float] | None = None,
                 every: float = PROGRESS_EVERY, quiet_start: bool = False) -> None:
        import time

        self.label, self.unit, self.total, self.done, self.said = label, unit, total, 0, False
        self.clock, self.every, self.quiet_start = clock or time.monotonic, every, quiet_start
        self.start = self.last = self.clock()

    def _say(self, text: str) -> None:
        click.echo(f"{self.label}: {text}", err=True)
        self.said = True
        self.last = self.clock()

    def _so_far(self) -> str:
        of = f" of {self.total:,}" if self.total else ""
        return f"{self.done:,}{of} {self.unit}(s) done"

    def set_total(self, n: int) -> None:
        self.total = n

    def advance(self, n: int) -> None:
        self.done += n
        finished = bool(self.total and self.done >= self.total)
        if not self.said and not self.quiet_start and not finished:
            self._say(f"{self.total:,} {self.unit}(s) to do" if self.total else "started")
        elif not finished and self.clock() - self.last >= self.every:
            self._say(self._so_far())

    def end(self) -> None:
        if self.done and (self.said or not self.quiet_start):
            of = f" of {self.total:,}" if self.total and self.total != self.done else ""
            self._say(f"{self.done:,}{of} {self.unit}(s) done in {self.clock() - self.start:.1f}s")


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
                    or flag("RADAR_DEBUG"):
                raise
            from ..failures import one_line  # the last net: one line naming what failed, never a traceback

            _err(one_line(exc, ctx.obj.store_file() if isinstance(ctx.obj, Context) else ""))
            sys.exit(1)
        except KeyboardInterrupt:
            _err("interrupted; the store keeps every batch that was committed, rerun to complete")
            sys.exit(130)
        finally:
            if isinstance(ctx.obj, Context):
                ctx.obj.close()


pass_ctx: Callable = click.make_pass_decorator(Context)
