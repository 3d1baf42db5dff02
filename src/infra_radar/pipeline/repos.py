"""`radar repo add|remove`: the [[repos]] entries of the user's radar.toml, edited in place.

The file is the user's: it is parsed and written back with tomlkit, so every comment, blank line and key order
the user chose stays as it was; only the entry added, changed or removed differs. The new text is checked by the
same loader every command uses before it replaces the file (atomically: a crash leaves the old file whole).
Edits are serialised: each takes a lock on `radar.toml.lock` beside the file and reads the file under it, so two
at once both land (the later one sees the earlier one's edit). A read-only file is refused, never replaced.
"""

from __future__ import annotations

import functools
import os
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..config import CONFIG_NAME, ROLES, default_config_text, home_dir, load_settings
from ..errors import ConfigError, few
from ..guard.files import CONFIG_BYTES, open_file, problem, read_text
from ..models import check_repo

LOCK_WAIT = 60.0  # seconds an edit waits for another edit of the same radar.toml


@dataclass(slots=True)
class Edit:
    """What an edit did: the file, what changed, and what the user should know."""

    path: Path
    changed: bool
    message: str
    notes: list[str] = field(default_factory=list)


def config_file(config: Path | None) -> Path:
    """The radar.toml an edit writes: --config when given, else $RADAR_HOME/radar.toml (a symbolic link's target:
    the link stays a link)."""
    path = config if config is not None else home_dir() / CONFIG_NAME
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:  # a link to a file not made yet: the link's target is written
        return path.resolve()
    except OSError as exc:  # a loop
        raise ConfigError(f"{path}: {problem(exc)}") from None


@contextmanager
def edit_lock(path: Path):
    """Hold the edit lock of `path` (flock on PATH.lock beside it, waited on for LOCK_WAIT seconds at most)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock: edits are not serialised
        yield
        return
    lock = path.with_name(f"{path.name}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        raise ConfigError(f"{lock}: cannot take the edit lock of {path}: {problem(exc)}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{lock}: not a regular file; remove it (it is the edit lock of {path})")
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConfigError(f"{path}: another radar has been editing it for {LOCK_WAIT:g} s (its lock "
                                      f"{lock} is held); try again when it is done") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # releases the lock; the lock file stays (removing it would race the next edit)


def _serialised(edit):
    """Run the edit `edit(config, ...)` under the edit lock of its radar.toml: it reads the file under the lock."""

    @functools.wraps(edit)
    def run(config: Path | None, *args, **kwargs) -> Edit:
        path = config_file(config)
        if os.path.lexists(path):  # a device, a pipe or a folder is refused before a lock is made beside it
            open_file(path).close()
        with edit_lock(path):
            return edit(config, *args, **kwargs)

    return run


def _load(path: Path, notes: list[str]):
    """The file as a tomlkit document; a missing file starts from the packaged one (what `radar init` writes),
    and a file without [[repos]] gets the packaged list first (its own list replaces the packaged one)."""
    import tomlkit

    if os.path.lexists(path):
        text = read_text(path, CONFIG_BYTES, too_big=f"{path}: larger than {CONFIG_BYTES >> 20} MiB; a "
                                                     "configuration file is a few KiB: not edited")
        try:
            doc = tomlkit.parse(text)
        except tomlkit.exceptions.TOMLKitError as exc:
            raise ConfigError(f"{path}: cannot edit: {exc}") from None
    else:
        doc = tomlkit.parse(default_config_text())
        notes.append(f"{path} did not exist: written from the packaged defaults (as `radar init` does)")
    if "repos" not in doc:
        packaged = tomlkit.parse(default_config_text())["repos"]
        doc.append("repos", packaged)
        notes.append(f"{path} had no [[repos]]: the {len(packaged)} packaged repositories were copied into it "
                     "first (a [[repos]] list in radar.toml replaces the packaged one)")
    return doc


def _entries(doc) -> list:
    repos = doc["repos"]
    return list(repos) if hasattr(repos, "__iter__") else []


def _find(doc, name: str) -> int | None:
    for i, entry in enumerate(_entries(doc)):
        if hasattr(entry, "get") and str(entry.get("name", "")).lower() == name.lower():
            return i
    return None


def _tail(table) -> list:
    """Remove and return the comments and blank lines that end `table` (they stand before the next header); an
    inline table (`repos = [{ name = ... }]`) has none."""
    from tomlkit.items import Table

    if not isinstance(table, Table):
        return []
    body = table.value.body
    tail = []
    while body and body[-1][0] is None:
        tail.insert(0, body.pop())
    return tail


def _attach(table, tail: list) -> None:
    """Put `tail` (comments and blank lines) at the end of `table`, one blank line between its keys and them."""
    from tomlkit.items import Whitespace

    if not tail:
        return
    body = table.value.body
    items = list(tail)
    if body and body[-1][0] is None and isinstance(body[-1][1], Whitespace):
        while items and isinstance(items[0][1], Whitespace):
            items.pop(0)
    elif items and not isinstance(items[0][1], Whitespace):
        body.append((None, Whitespace("\n")))
    body.extend(items)


def _write(path: Path, doc) -> None:
    """Check the new text with the loader every command uses, then replace the file atomically."""
    import tomlkit

    text = tomlkit.dumps(doc)
    mode, owner = 0o644, None
    if path.exists():
        st = path.stat()
        mode, owner = st.st_mode & 0o7777, (st.st_uid, st.st_gid)
        if not mode & 0o222 or not os.access(path, os.W_OK):  # root may write anything: the mode says read-only
            raise ConfigError(f"{path}: read-only (mode {mode & 0o777:o}): not changed; make it writable to edit it "
                              "with radar repo")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.unlink(missing_ok=True)  # a stale copy of a killed edit by a process of the same id
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if owner is not None and os.geteuid() == 0 and owner != (0, 0):
            os.chown(tmp, *owner)  # root editing a user's file leaves it the user's
        os.chmod(tmp, mode)
        load_settings(tmp)  # a file no command could load is never written
        os.replace(tmp, path)
        _sync_folder(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def _inline_array(doc) -> bool:
    """Whether [[repos]] is written as an inline array holding entries or comments (`repos = [{ name = ... }]`):
    edited in place, never turned into [[repos]] tables (which dropped its entries and comments)."""
    import tomlkit

    repos = doc["repos"]
    return isinstance(repos, tomlkit.items.Array) and (len(repos) > 0 or "#" in repos.as_string())


def _inline(table):
    """`table` as an inline table, for an inline array."""
    import tomlkit

    inline = tomlkit.inline_table()
    inline.update(table)
    return inline


def _sync_folder(folder: Path) -> None:
    """fsync `folder`, so the rename that replaced radar.toml survives a power cut (best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _describe(entry) -> str:
    role = str(entry.get("role", "upstream"))
    branches = ", ".join(str(b) for b in entry.get("branches", ["main"]))
    return f"role {role}, branches {branches}"


@_serialised
def add_repo(config: Path | None, name: str, role: str | None = None, branches: list[str] | None = None,
             core_paths: list[str] | None = None) -> Edit:
    """Add OWNER/NAME to [[repos]], or change the role, branches or core paths of an entry already there."""
    import tomlkit
    from tomlkit.items import Whitespace

    name = check_repo(name)
    if role is not None and role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}, not {role!r:.40}")
    path, notes = config_file(config), []
    doc = _load(path, notes)
    at = _find(doc, name)
    if at is not None:
        entry = doc["repos"][at]
        wanted = {"role": role, "branches": branches, "core_paths": core_paths}
        changes = {k: v for k, v in wanted.items() if v is not None and entry.get(k) != v
                   and not (k == "role" and v == "upstream" and "role" not in entry)}
        if not changes:
            return Edit(path, False, f"{entry['name']} is already configured ({_describe(entry)}) in {path}",
                        notes)
        tail = _tail(entry)  # new keys go above the comments that end the entry
        for key, value in changes.items():
            entry[key] = value
        _attach(entry, tail)
        _write(path, doc)
        return Edit(path, True, f"updated {entry['name']} in {path}: {_describe(entry)}"
                                + (f"; {len(core_paths)} core path(s)" if "core_paths" in changes else ""), notes)
    table = tomlkit.table()
    table["name"] = name
    if role is not None:
        table["role"] = role
    table["branches"] = branches or ["main"]
    if core_paths is not None:
        table["core_paths"] = core_paths
    if _inline_array(doc):  # `repos = [{ name = ... }, ...]`: the entry joins the array, its comments kept
        doc["repos"].append(_inline(table))
        _write(path, doc)
        return Edit(path, True, f"added {name} to {path} ({_describe(table)})", notes)
    if not isinstance(doc["repos"], tomlkit.items.AoT):  # `repos = []`: no repository yet
        del doc["repos"]
        doc.append("repos", tomlkit.aot())
    repos = doc["repos"]
    tail = _tail(repos[-1]) if len(repos) else []
    if len(repos):  # a blank line between the last entry and the new one
        _attach(repos[-1], [(None, Whitespace("\n"))])
    repos.append(table)
    _attach(repos[-1], tail)  # the comments that ended the file (the [llm] block) stay last
    _write(path, doc)
    return Edit(path, True, f"added {name} to {path} ({_describe(table)})", notes)


@_serialised
def remove_repo(config: Path | None, name: str) -> Edit:
    """Remove OWNER/NAME from [[repos]]; its data stays in the store."""
    import tomlkit

    name = check_repo(name)
    path, notes = config_file(config), []
    doc = _load(path, notes)
    at = _find(doc, name)
    if at is None:
        names = [str(e.get("name")) for e in _entries(doc)]
        raise ConfigError(f"{name} is not configured in {path}; configured: {few(names, most=len(names)) or 'none'}")
    repos = doc["repos"]
    removed = repos[at]
    tail = _tail(removed)
    shown = str(removed["name"])
    del repos[at]
    if len(repos) == 0 and isinstance(repos, tomlkit.items.AoT):
        # no [[repos]] at all would bring the packaged list back: an empty list says "none"
        del doc["repos"]
        doc["repos"] = tomlkit.array()
        for _, item in tail:  # the comments that ended the file stay
            doc.add(item)
    elif tail:
        _attach(repos[at - 1 if at else 0], tail)
    _write(path, doc)
    return Edit(path, True, f"removed {shown} from {path} (its data stays in the store)", notes)
