"""Every file the radar is given is read here: never waited on, never read without end.

A path is opened without blocking (a FIFO with no writer would otherwise wait for ever), checked with fstat to
be a regular file (a device such as /dev/zero, a socket or a folder is refused) and read up to a cap per kind of
file, below. Where a pipe is part of the interface (`import-page /dev/stdin`, `import-jsonl <(zcat ...)`) the
caller allows pipes: one is read while its writer writes, and refused once nothing has come for RADAR_PIPE_WAIT
seconds (a FIFO nobody writes to). Each refusal is one line naming the file and why.
"""

from __future__ import annotations

import errno
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import ConfigError

# The caps, by kind of file (what one can hold with room to spare; docs/safety.md lists them)
CONFIG_BYTES = 1 << 20  # radar.toml: a configuration, not a data file
RULES_BYTES = 16 << 20  # a rule file of the user's rules_dir, i18n.toml of a template folder
PROMPT_BYTES = 1 << 20  # a prompt of [llm] prompts_dir
TEMPLATE_BYTES = 4 << 20  # a report template of a template folder
PIPE_WAIT = 60.0  # seconds a pipe may stay silent before it is refused (RADAR_PIPE_WAIT)
PIPE_WAIT_ENV = "RADAR_PIPE_WAIT"
_CHUNK = 1 << 20


def _size(most: int) -> str:
    return f"{most >> 20} MiB" if most >= 1 << 20 and not most % (1 << 20) else f"{most:,} bytes"


def problem(exc: OSError) -> str:
    """An open's OSError as a few words: what is wrong with the path."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop (a link that leads back to itself): fix the link"
    if exc.errno == errno.ENOENT:
        return "cannot read: no such file"
    if exc.errno == errno.EISDIR:
        return "a folder; give the path of a file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return f"cannot read: {exc.strerror or exc}"


def pipe_wait() -> float:
    """RADAR_PIPE_WAIT (checked by config.check_env before any command runs), else PIPE_WAIT."""
    raw = os.environ.get(PIPE_WAIT_ENV, "").strip()
    return float(raw) if raw else PIPE_WAIT


def _open(path: Path | str, error: type[Exception], pipes: bool) -> tuple[int, str]:
    """A descriptor of `path` and its kind ("file", "pipe" or "tty"); `error` naming the path when it cannot be
    opened or is neither a regular file nor (when `pipes`) a pipe or a terminal."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"{path}: {problem(exc)}") from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return fd, "file"
    if pipes and stat.S_ISFIFO(mode):
        return fd, "pipe"
    if pipes and os.isatty(fd):
        return fd, "tty"
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise error(f"{path}: a folder; give the path of a file")
    kind = "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    raise error(f"{path}: not a regular file ({kind}); give the path of a file")


def open_file(path: Path | str, error: type[Exception] = ConfigError) -> BinaryIO:
    """`path` opened for reading in binary, once it is known to be a regular file (read it in bounded pieces)."""
    fd, _kind = _open(path, error, pipes=False)
    return os.fdopen(fd, "rb")


def chunks(path: Path | str, error: type[Exception] = ConfigError, pipes: bool = False) -> Iterator[bytes]:
    """The bytes of `path` a piece at a time (no cap: the caller counts); a pipe is read while its writer writes
    and refused after pipe_wait() seconds of silence."""
    fd, kind = _open(path, error, pipes)
    try:
        if kind == "file":
            while piece := os.read(fd, _CHUNK):
                yield piece
            return
        import select

        wait = pipe_wait()
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        while True:
            if kind == "pipe" and not poller.poll(wait * 1000):
                raise error(f"{path}: a pipe with nothing written to it for {wait:g} s (no writer?); refused "
                            f"({PIPE_WAIT_ENV} sets the wait)")
            if kind == "tty":
                poller.poll()
            try:
                piece = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            if not piece:
                return
            yield piece
    finally:
        os.close(fd)


def read_bytes(path: Path | str, most: int, error: type[Exception] = ConfigError, pipes: bool = False,
               too_big: str = "") -> bytes:
    """At most `most` bytes of `path` (a regular file, or a pipe when `pipes`); `error` naming the file when it is
    larger (`too_big`, else a line naming the cap)."""
    got, size = [], 0
    for piece in chunks(path, error, pipes):
        got.append(piece)
        size += len(piece)
        if size > most:
            raise error(too_big or f"{path}: larger than {_size(most)}, the cap for this kind of file; not read")
    return b"".join(got)


def read_text(path: Path | str, most: int, error: type[Exception] = ConfigError, too_big: str = "") -> str:
    """The UTF-8 text of the regular file `path`, at most `most` bytes."""
    try:
        return read_bytes(path, most, error, too_big=too_big).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text") from None


def read_toml(path: Path | str, most: int, error: type[Exception] = ConfigError, too_big: str = "") -> dict[str, Any]:
    """The TOML file `path`, a regular file of at most `most` bytes."""
    text = read_text(path, most, error, too_big)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{path}: invalid TOML: nested too deeply") from None
