"""The radar's home and store: open the store, write radar.toml, write output files atomically."""

from __future__ import annotations

import glob
import os
import tempfile
from functools import lru_cache
from pathlib import Path

from sqlalchemy.engine import Engine

from .. import killpoint
from ..config import CONFIG_NAME, Settings, default_config_text
from ..errors import ConfigError
from ..store.db import open_engine


def open_store(settings: Settings, writer: bool = False) -> Engine:
    """The store named by the settings, migrated to the current schema.

    With `writer`, the store's writer lock is taken first (waiting up to settings.lock_timeout for another
    writer) and held until `store.lock.writer_lock(engine).release()` or the end of the process.
    """
    return open_engine(settings.db_url, writer=writer, wait=settings.lock_timeout)


def init_home(settings: Settings, force: bool = False) -> Path:
    """Write radar.toml (every option, commented) into the home directory and create the store."""
    settings.home.mkdir(parents=True, exist_ok=True)
    path = settings.config_path or settings.home / CONFIG_NAME
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite it)")
    from .repos import edit_lock

    with edit_lock(path):  # not over a `radar repo add` half way through its edit
        atomic_write(path, default_config_text())
    open_store(settings).dispose()
    return path


@lru_cache(maxsize=1)
def _umask() -> int:
    try:  # Linux says it without changing it
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def shared_mode() -> int:
    """The mode of an output file (reports, the export, the site): 0644 less the umask, as any file the user
    writes. mkstemp makes its files 0600, which a web server, the group or a sync job could not read."""
    return 0o644 & ~_umask()


def atomic_write(path: Path, text: str) -> Path:
    """Write a file so that readers see the old or the new content, never half of it, readable as the site's
    pages are (`shared_mode`). Temporary files that a killed earlier write left beside it are removed
    (writers of a store are serialised by its lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, shared_mode())
        killpoint.reached("write.tmp")  # the new text is complete in the temporary file, not yet in place
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        stale.unlink(missing_ok=True)
    return path
