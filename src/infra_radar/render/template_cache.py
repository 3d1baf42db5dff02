"""Compiled templates kept between runs: Jinja2 compiles a template from source on every process start
(~30 ms for the card, ~60 ms for a report), which is most of a short command's own work. A
FileSystemBytecodeCache keys each entry by template name and a checksum of its source, so an edited
template (packaged or the user's) is compiled again. The cache lives in `$RADAR_CACHE_DIR`, else
`$XDG_CACHE_HOME/infra-radar/templates`, else `~/.cache/infra-radar/templates`; a directory that cannot be
created or written, or that another user owns or can write (compiled templates are code), just means no
cache (the command works the same, a little slower).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from jinja2 import FileSystemBytecodeCache
from jinja2.bccache import Bucket


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


def _directory() -> Path:
    if os.environ.get("RADAR_CACHE_DIR"):
        return Path(os.environ["RADAR_CACHE_DIR"]) / "templates"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "infra-radar" / "templates"


@lru_cache(maxsize=1)
def bytecode_cache() -> FileSystemBytecodeCache | None:
    """The shared cache of compiled templates, or None when its directory is not usable."""
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
    return _QuietCache(str(path))
