"""`radar repo add|remove`: the [[repos]] entries of the user's radar.toml, edited in place.

The file is the user's: it is parsed and written back with tomlkit, so every comment, blank line and key order
the user chose stays as it was; only the entry added, changed or removed differs. The new text is checked by the
same loader every command uses before it replaces the file (atomically: a crash leaves the old file whole).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..config import CONFIG_NAME, ROLES, default_config_text, home_dir, load_settings
from ..errors import ConfigError, few
from ..models import check_repo


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
    return path.resolve() if path.is_symlink() else path


def _load(path: Path, notes: list[str]):
    """The file as a tomlkit document; a missing file starts from the packaged one (what `radar init` writes),
    and a file without [[repos]] gets the packaged list first (its own list replaces the packaged one)."""
    import tomlkit

    if path.exists():
        try:
            doc = tomlkit.parse(path.read_text(encoding="utf-8"))
        except (tomlkit.exceptions.TOMLKitError, UnicodeDecodeError) as exc:
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
        if str(entry.get("name", "")).lower() == name.lower():
            return i
    return None


def _tail(table) -> list:
    """Remove and return the comments and blank lines that end `table` (they stand before the next header)."""
    body = table.value.body
    tail = []
    while body and body[-1][0] is None:
        tail.insert(0, body.pop())
    return tail


def _attach(table, tail: list) -> None:
    """Put `tail` (comments and blank lines) at the end of `table`, one blank line between its keys and them."""
    from tomlkit.items import Whitespace

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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        load_settings(tmp)  # a file no command could load is never written
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _describe(entry) -> str:
    role = str(entry.get("role", "upstream"))
    branches = ", ".join(str(b) for b in entry.get("branches", ["main"]))
    return f"role {role}, branches {branches}"


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
    if len(repos) == 0:
        # no [[repos]] at all would bring the packaged list back: an empty list says "none"
        del doc["repos"]
        doc["repos"] = tomlkit.array()
        for _, item in tail:  # the comments that ended the file stay
            doc.add(item)
    elif tail:
        _attach(repos[at - 1 if at else 0], tail)
    _write(path, doc)
    return Edit(path, True, f"removed {shown} from {path} (its data stays in the store)", notes)
