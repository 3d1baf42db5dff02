"""Incremental page writing: a manifest of content hashes decides which files a rebuild touches."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import few
from ..pipeline.home import shared_mode

MANIFEST = ".radar-manifest.json"
# what XML 1.0 cannot carry at all (lxml refuses it): C0 controls but tab, LF and CR; DEL; surrogates; U+FFFE/F
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_TEMPORARY = re.compile(r"\..+\.[A-Za-z0-9_]{8}\.tmp")  # what `write` makes with mkstemp before its rename


def xml_safe(text: str) -> str:
    """`text` without the characters HTML and XML cannot hold (an ESC or BEL in an author name or a path)."""
    return _NOT_XML.sub("", text)


def removed_temporaries(root: Path) -> list[Path]:
    """Delete the half-written files a killed build left under `root` (regular files named like ours)."""
    gone = []
    for path in root.rglob(".*.tmp"):
        if _TEMPORARY.fullmatch(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            gone.append(path)
    return gone


@dataclass
class PageWriter:
    """Writes a file only when its content hash differs from the last build's; removes stale pages."""

    root: Path
    old: dict[str, str] = field(default_factory=dict)
    new: dict[str, str] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)  # what the build passed over (a bad manifest entry)

    @classmethod
    def open(cls, root: Path) -> PageWriter:
        """A writer over `root`, reading the previous manifest if there is one. An entry that is not a file of
        ours inside the site (a folder, a path outside it, a hand-edited value) is ignored with one warning,
        and the manifest is rewritten without it, so one bad entry never fails every later build."""
        root.mkdir(parents=True, exist_ok=True)
        removed_temporaries(root)
        try:
            old = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        writer = cls(root=root, old=old if isinstance(old, dict) else {})
        bad = [rel for rel, digest in writer.old.items() if _entry_problem(root, rel, digest)]
        if bad:
            writer.warnings.append(f"{root / MANIFEST}: {len(bad)} entr{'y' if len(bad) == 1 else 'ies'} ignored "
                                   f"(not a page of this site): {few(repr(r[:80]) for r in bad)}; "
                                   "the manifest was rewritten without them")
            writer.old = {rel: d for rel, d in writer.old.items() if rel not in set(bad)}
            writer._save(writer.old)
        return writer

    def _save(self, entries: dict[str, str]) -> None:
        text = json.dumps(entries, indent=0, sort_keys=True)
        (self.root / MANIFEST).write_text(text + "\n", encoding="utf-8")

    def write(self, rel: str, content: str | bytes) -> None:
        """Record page `rel` (a relative POSIX path); write it if it changed or is missing."""
        data = xml_safe(content).encode("utf-8") if isinstance(content, str) else content
        digest = hashlib.sha1(data).hexdigest()
        self.new[rel] = digest
        path = self.root / rel
        if self.old.get(rel) == digest and path.is_file():
            self.unchanged += 1
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, shared_mode())  # mkstemp makes 0600 files; a site is meant to be read by a web server
        os.replace(tmp, path)
        self.written.append(rel)

    def can_keep(self, rel: str) -> bool:
        """Whether page `rel` can be kept as the last build wrote it: that build wrote it and it is there."""
        return isinstance(self.old.get(rel), str) and (self.root / rel).is_file()

    def keep(self, rel: str) -> None:
        """Keep page `rel` as the last build wrote it, without its content (a page whose inputs did not
        change is not rendered again); `can_keep(rel)` first."""
        self.new[rel] = self.old[rel]
        self.unchanged += 1

    def finish(self) -> list[str]:
        """Remove pages the previous build wrote and this one did not; save the manifest."""
        removed = sorted(set(self.old) - set(self.new))
        base = self.root.resolve()
        for rel in removed:
            path = (self.root / rel).resolve()
            # a hand-edited manifest must not delete outside the site, nor a folder
            if path.is_relative_to(base) and (path.is_file() or not path.exists()):
                path.unlink(missing_ok=True)
        self._save(self.new)
        return removed


_DIGEST = re.compile(r"[0-9a-f]{40}")


def _entry_problem(root: Path, rel: object, digest: object) -> str | None:
    """What makes a manifest entry not one `write` could have made, or None."""
    if not isinstance(rel, str) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return "not a path and a content hash"
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts) or "\x00" in rel:
        return "not a relative path inside the site"
    path = root / rel
    try:
        if not path.resolve().is_relative_to(root.resolve()):
            return "outside the site"
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return "not a regular file"
    except (OSError, ValueError):
        return "unreadable"
    return None
