"""What each page of the last site build was made from, so a rebuild skips pages whose inputs did not change.

A page is a pure function of three things: the build's key (the package's code, templates and strings, the
settings, the user's rules, the site URL, the versions of the libraries that render), the page's own data
(the analysed items it shows, its window) and which of the items it links to have a page of their own (a
link to a stored item points at its page, any other at GitHub). The record keeps, per page, a digest of its
data and the references it looked up, and `fresh` says whether all three are as they were: then the file
already on disk is what rendering would write again, and the page is not rendered at all.

The record lives beside the pages manifest in `.radar-inputs.json`; a missing or unreadable record only
means every page is rendered again. It is used to skip work, never to delete anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path

from ..guard.files import chunks

INPUTS = ".radar-inputs.json"
_LIBRARIES = ("jinja2", "markdown-it-py", "feedgen", "matplotlib", "markupsafe")


def digest(*parts: object) -> str:
    """A stable digest of `parts` by their repr (dataclasses, lists, dicts, datetimes: no sets)."""
    return hashlib.sha1(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _files_digest(root: Path, into) -> None:
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        into.update(str(path.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        for piece in chunks(path):  # a piece at a time: a large file is never held whole
            into.update(piece)


def build_key(*parts: object, rules_dir: Path | None = None) -> str:
    """The digest of everything every page depends on: the installed package (code, templates, strings,
    rules), the user's rules directory, the rendering libraries' versions, and `parts` (settings, site URL...)."""
    h = hashlib.sha1()
    _files_digest(Path(str(resources.files("infra_radar"))), h)
    if rules_dir is not None and rules_dir.is_dir():
        _files_digest(rules_dir, h)
    for name in _LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        h.update(f"{name}={version}\0".encode())
    h.update(repr(parts).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


@dataclass
class InputRecord:
    """The inputs of the last build's pages (read at the start) and of this build's (saved at the end)."""

    root: Path
    key: str
    old: dict[str, list] = field(default_factory=dict)
    new: dict[str, list] = field(default_factory=dict)

    @classmethod
    def open(cls, root: Path, key: str) -> InputRecord:
        """The record under `root`; empty when it is missing, unreadable or from a build with another key."""
        try:
            data = json.loads((root / INPUTS).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        pages = data.get("pages") if isinstance(data, dict) and data.get("key") == key else None
        return cls(root=root, key=key, old=pages if isinstance(pages, dict) else {})

    def fresh(self, rel: str, data: str, resolve) -> list[str] | None:
        """The files page `rel` wrote besides itself (its charts) when it was made from data digest `data` and
        its looked-up references still resolve the same way (`resolve(ref)` gives the page a reference
        points at, or None); then it is recorded for this build too. None when it must be rendered."""
        entry = self.old.get(rel)
        if not (isinstance(entry, list) and len(entry) == 4 and entry[0] == data
                and all(isinstance(part, list) and all(isinstance(r, str) for r in part)
                        for part in (entry[1], entry[3]))):
            return None
        if entry[2] != _resolved(entry[1], resolve):
            return None
        self.new[rel] = entry
        return entry[3]

    def record(self, rel: str, data: str, refs: Iterable[str], resolve, files: Iterable[str] = ()) -> None:
        """Page `rel` was rendered from data digest `data`, looking up `refs`, and wrote `files` beside it."""
        looked = sorted(set(refs))
        self.new[rel] = [data, looked, _resolved(looked, resolve), sorted(files)]

    def forget(self, rel: str) -> None:
        """Page `rel` was written without a record (its inputs are not tracked)."""
        self.new.pop(rel, None)

    def save(self) -> None:
        """Write this build's record in one rename."""
        text = json.dumps({"key": self.key, "pages": self.new}, sort_keys=True, separators=(",", ":"))
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f"{INPUTS}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
            os.replace(tmp, self.root / INPUTS)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _resolved(refs: list[str], resolve) -> str:
    return digest([resolve(ref) for ref in refs])
