"""Compiled templates kept between runs: Jinja2 compiles a template from source on every process start
(~30 ms for the card, ~60 ms for a report), which is most of a short command's own work. A
FileSystemBytecodeCache keys each entry by template name and a checksum of its source, so an edited
template (packaged or the user's) is compiled again. The cache lives in `$RADAR_CACHE_DIR`, else
`$XDG_CACHE_HOME/infra-radar/templates`, else `~/.cache/infra-radar/templates`; a directory that cannot be
created or written, or that another user owns or can write (compiled templates are code), just means no
cache (the command works the same, a little slower). A relative RADAR_CACHE_DIR is taken from the current
folder, and the command says where; a folder holding anything but compiled templates is not the radar's own
(RADAR_CACHE_DIR=../../etc): nothing is written there, and the command says so once.

Compiled code also depends on the environment it was compiled for, not only on the source: how each filter
is called (with or without the evaluation context), whether a `finalize` runs on every value, autoescaping.
Each environment gets its own entries, named by a fingerprint of those settings (`fingerprint`), so a
release that changes a filter or adds a finalize never runs code compiled for the old one.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from functools import lru_cache
from pathlib import Path

import jinja2
from jinja2 import Environment, FileSystemBytecodeCache
from jinja2.bccache import Bucket
from jinja2.utils import _PassArg


class _QuietCache(FileSystemBytecodeCache):
    """The file cache, silent when its directory goes away or cannot be written."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError):  # unreadable or truncated: compile from source
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


_SAID: set[str] = set()


def _say(line: str) -> None:
    """One line on stderr, once per process."""
    if line not in _SAID:
        _SAID.add(line)
        print(f"radar: {line}", file=sys.stderr, flush=True)


def _directory() -> Path:
    if os.environ.get("RADAR_CACHE_DIR"):
        given = Path(os.environ["RADAR_CACHE_DIR"]).expanduser()
        if given.is_absolute():
            return given / "templates"
        where = Path(os.path.abspath(given)) / "templates"  # where the user pointed, from the current folder
        _say(f"RADAR_CACHE_DIR is a relative path: compiled templates are kept in {where}")
        return where
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "infra-radar" / "templates"


# what FileSystemBytecodeCache writes (see bytecode_cache), and its temporary file while it writes one
_OURS = re.compile(r"__jinja2_[\w-]*\.cache(?:\w+\.tmp)?")
_LOOK_AT_MOST = 10_000  # entries looked at to tell whether the folder is the cache's own


def _not_ours(path: Path) -> str:
    """"" when the folder holds nothing but compiled templates, else the name of the first other entry: a folder
    that holds other files is not the radar's cache (RADAR_CACHE_DIR pointed at someone else's folder)."""
    with os.scandir(path) as entries:
        for n, entry in enumerate(entries):
            if n >= _LOOK_AT_MOST or not (_OURS.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)):
                return entry.name
    return ""


def fingerprint(env: Environment) -> str:
    """What compiled code of `env` depends on beyond the template source: the Jinja version, each filter's and
    test's calling convention, the finalize and its convention, autoescaping (12 hex digits)."""
    def way(func: object) -> str:
        arg = _PassArg.from_obj(func)  # type: ignore[arg-type]
        return arg.name if arg else "-"

    parts = [jinja2.__version__, repr(env.autoescape if isinstance(env.autoescape, bool) else "select"),
             f"finalize:{way(env.finalize) if env.finalize else 'none'}",
             *sorted(f"f:{name}:{way(f)}" for name, f in env.filters.items()),
             *sorted(f"t:{name}:{way(f)}" for name, f in env.tests.items())]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


@lru_cache(maxsize=8)
def bytecode_cache(tag: str = "") -> FileSystemBytecodeCache | None:
    """The shared cache of compiled templates (entries of one environment `fingerprint` when `tag` is given),
    or None when its directory is not usable."""
    path = _directory()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
        if not os.access(path, os.W_OK | os.X_OK):
            return None
    except (OSError, RuntimeError):  # RuntimeError: no home directory to expand
        return None
    # compiled templates are code: only from a folder that is ours and that nobody else can write
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None
    try:
        other = _not_ours(path)
    except OSError:
        return None
    if other:
        _say(f"{path} holds {other!r}, which is not a compiled template: not the radar's cache folder, so "
             "nothing is kept there (point RADAR_CACHE_DIR at a folder of its own)")
        return None
    return _QuietCache(str(path), f"__jinja2_{tag}_%s.cache" if tag else "__jinja2_%s.cache")
