"""Parsed rule files kept between runs: `tomllib` parses the packaged rule files on every process start (~25 ms of
CPU for the ~13 files a card reads, a tenth of `radar show`), while the same data read back as JSON takes ~2 ms.

`loads(text)` gives what `tomllib.loads(text)` gives, from a JSON copy kept under the SHA-256 of the text, so an
edited file is parsed again. The copies live in one file, `rules/rules.json`, beside the compiled templates'
folder (render/template_cache.py) under `$RADAR_CACHE_DIR`, else `$XDG_CACHE_HOME/infra-radar`, else
`~/.cache/infra-radar`. A folder this user does not own, or that others can write, a missing or unreadable file:
no copy is used or kept, and the text is parsed as before. A table holding dates or times is never kept (JSON
has none). Only the packaged rule files go through it (config.load_rules_in); a user's rules are parsed each time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

CACHE_NAME = "rules.json"
_OURS = re.compile(r"rules\.json|\.rules-\w+\.tmp")  # what the folder may hold: the copies, one being written
MOST = 200  # copies kept (the oldest go first): each release's rule files, and a few edits of each

# (the variables naming the folder) -> (the folder or None, digest -> the table as JSON text): read once a process
_STATE: dict[tuple[str, ...], tuple[Path | None, dict[str, str]]] = {}


def _folder() -> Path | None:
    """The cache folder when it is this user's own, nobody else can write it and it holds nothing but the cache's
    files (RADAR_CACHE_DIR pointed at someone else's folder: nothing is read or written there), else None."""
    if os.environ.get("RADAR_CACHE_DIR"):
        base = Path(os.path.abspath(Path(os.environ["RADAR_CACHE_DIR"]).expanduser()))
    else:
        try:
            base = Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "infra-radar"
        except RuntimeError:  # no home directory to expand
            return None
    path = base / "rules"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
        if st.st_uid != os.geteuid() or st.st_mode & 0o022 or not os.access(path, os.W_OK | os.X_OK):
            return None
        with os.scandir(path) as found:
            if any(not _OURS.fullmatch(e.name) for e in found):
                return None
    except OSError:
        return None
    return path


def _state() -> tuple[Path | None, dict[str, str]]:
    where = tuple(os.environ.get(name, "") for name in ("RADAR_CACHE_DIR", "XDG_CACHE_HOME", "HOME"))
    if where not in _STATE:
        folder, entries = _folder(), {}
        if folder is not None:
            try:
                data = json.loads((folder / CACHE_NAME).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            if isinstance(data, dict):
                entries = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
        _STATE[where] = (folder, entries)
    return _STATE[where]


def loads(text: str) -> dict[str, Any]:
    """`tomllib.loads(text)`, from the kept copy when there is one (a new object each call: callers change it)."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    folder, entries = _state()
    kept = entries.get(key)
    if kept is not None:
        try:
            found = json.loads(kept)
        except ValueError:
            found = None
        if isinstance(found, dict):
            return found
    data = tomllib.loads(text)
    try:
        copy = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):  # dates or times: not kept
        return data
    if json.loads(copy) != data:  # anything JSON would not give back as it was: not kept
        return data
    entries.pop(key, None)
    entries[key] = copy
    while len(entries) > MOST:
        del entries[next(iter(entries))]
    if folder is not None:
        _save(folder, entries)
    return data


def _save(folder: Path, entries: dict[str, str]) -> None:
    """The copies written whole to a temporary file renamed over the last (a reader sees one or the other)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".rules-", suffix=".tmp", dir=folder)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entries, out, ensure_ascii=False)
        os.replace(tmp, folder / CACHE_NAME)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
