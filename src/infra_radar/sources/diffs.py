"""Unified diffs into code facts: a local clone's `git log -p` (one subprocess, streamed line by line), one file's
patch as the GitHub API gives it, or the hunks a pasted page carries. The diff itself is never kept: each
change's lines go through analyse/code_facts.py as they are read, and only its facts come out.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from ..analyse.code_facts import ChangeFacts, CodeRules

_MARK = b"\x1eradar-diff\x1e"
_FORMAT = "--format=%x1eradar-diff%x1e%H"


def _unquote(path: str) -> str:
    """A path as git prints it: C-quoted ("a/\\303\\251.py") when it holds unusual bytes."""
    if not (path.startswith('"') and path.endswith('"')):
        return path
    raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1", "replace")
    return raw.decode("utf-8", "replace")


def _header_path(line: str) -> str:
    """The new path of a `diff --git a/X b/Y` line (Y; a path holding " b/" is taken from its last one)."""
    rest = line[len("diff --git "):].rstrip("\n")
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return _unquote(rest[start + 1:]).removeprefix("b/")
    return rest.rpartition(" b/")[2]


class PatchReader:
    """Feeds the lines of unified diffs (several files, `diff --git` headers) into one ChangeFacts."""

    def __init__(self, facts: ChangeFacts) -> None:
        self.facts = facts
        self.reading = False  # the current file's lines go to the rules
        self.in_hunk = False
        self.path = ""
        self.status = "modified"

    def _start(self, path: str, status: str = "modified") -> None:
        self.path, self.status, self.in_hunk = path, status, False
        self.reading = self.facts.file(path, status)

    def feed(self, line: str) -> None:
        """One line of a diff (with or without its newline)."""
        head = line[:1]
        if self.in_hunk and head in "+-":  # in a hunk: a changed line, never a header
            if self.reading:
                self.reading = self.facts.line(head, line[1:].rstrip("\r\n"))
            return
        if self.in_hunk and head in " \\":
            if head == " " and self.reading:
                self.facts.device.context(line[1:])  # a docstring opened on an unchanged line
            return
        if line.startswith("diff --git "):
            self._start(_header_path(line))
        elif line.startswith("@@"):
            self.in_hunk = True
        elif line.startswith("deleted file mode"):
            self.status = "removed"
            self.facts.removed_files.append(self.path)
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            self.facts.binary()
            self.reading = False
        elif line.startswith("+++ ") and not line.startswith("+++ /dev/null"):
            path = _unquote(line[4:].rstrip("\r\n")).removeprefix("b/")
            if path != self.path:  # a bare patch without a diff --git header
                self._start(path)


def feed_patch(facts: ChangeFacts, path: str, patch: str | None, status: str = "modified",
               binary: bool = False) -> bool:
    """One file's patch (hunks only, as the GitHub API gives it); None: the source left it out (incomplete).
    True when the file's lines went to the rules (not skipped, not past the caps)."""
    reading = facts.file(path, status, binary=binary)
    if binary or not reading:
        return False
    if patch is None:
        facts.incomplete()
        return False
    for line in patch.splitlines():
        head = line[:1]
        if head in "+-" and line[:3] not in ("+++", "---"):
            if not facts.line(head, line[1:]):
                return False
        elif head == " ":
            facts.device.context(line[1:])
    return True


def facts_of_diff(rules: CodeRules, lines: Iterable[str], source: str) -> dict[str, Any]:
    """The facts of one diff given as text lines (a page's hunks, a test's fixture)."""
    facts = ChangeFacts(rules)
    reader = PatchReader(facts)
    for line in lines:
        reader.feed(line)
    return facts.facts(source)


def shallow_boundary(path: Path) -> set[str]:
    """The commits a shallow clone's history stops at (their parents are not known), from its `shallow` file."""
    try:
        done = subprocess.run(["git", "-C", str(path), "rev-parse", "--git-path", "shallow"], capture_output=True,
                              check=False)
        name = done.stdout.decode().strip()
        if done.returncode != 0 or not name:
            return set()
        shallow = Path(name) if Path(name).is_absolute() else path / name
        if not shallow.exists() and (path / ".git").is_dir():
            shallow = path / ".git" / "shallow"
        return set(shallow.read_text().split()) if shallow.is_file() else set()
    except OSError:
        return set()


class DiffLog:
    """`git log -p --first-parent` of `revs`, read line by line as it runs: (sha, facts) of each commit, newest
    first, in the order of sources.git.GitLog over the same revs and window. A commit at the shallow boundary
    has no diff read (its facts are None: the history before it is not known, so nothing counts as added)."""

    def __init__(self, path: Path, revs: list[str], rules: CodeRules, since: datetime | None = None,
                 until: datetime | None = None, boundary: set[str] | None = None):
        self.rules, self.boundary = rules, boundary or set()
        args = ["git", "-C", str(path)]
        if self.boundary:  # a boundary commit shows as a root: its whole tree would be "added"
            args += ["-c", "log.showRoot=false"]
        args += ["log", "-p", "--first-parent", "--diff-merges=first-parent", "--no-renames", "--no-color",
                 "--no-ext-diff", "--no-textconv", _FORMAT]
        if since:
            args.append(f"--since={since.isoformat()}")
        if until:
            args.append(f"--until={until.isoformat()}")
        # only the files the rules read: git leaves the rest out (their paths come from the change's file list)
        self.proc = subprocess.Popen([*args, *revs, "--", *rules.pathspecs], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=1 << 16)

    def commits(self) -> Iterator[tuple[str, dict[str, Any] | None]]:
        stream = self.proc.stdout
        assert stream is not None
        sha, facts, reader = "", None, None
        # the hot loop keeps the reader's state in locals (in a hunk, reading the file) and hands it back to the
        # reader only on a header line: most lines are a changed or context line of a hunk
        in_hunk = reading = False
        line = None
        plus, minus, space, mark = b"+", b"-", b" ", _MARK
        try:
            for raw in stream:
                head = raw[:1]
                if in_hunk:
                    if head == plus or head == minus:  # in a hunk: a changed line, never a header
                        if reading:
                            reading = line("+" if head == plus else "-", raw[1:].decode("utf-8", "replace").rstrip("\r\n"))
                        continue
                    if head == space:
                        if reading and (b'"""' in raw or b"'''" in raw):  # a docstring opens or closes here
                            facts.device.context(raw[1:].decode("utf-8", "replace"))
                        continue  # context: otherwise never decoded
                if raw.startswith(mark):
                    if sha:
                        yield sha, self._done(sha, facts)
                    sha = raw[len(mark):].strip().decode("ascii", "replace")
                    facts = ChangeFacts(self.rules)
                    reader, line = PatchReader(facts), facts.line
                    in_hunk = reading = False
                    continue
                if reader is None:
                    continue
                reader.in_hunk, reader.reading = in_hunk, reading
                reader.feed(raw.decode("utf-8", "replace"))
                in_hunk, reading = reader.in_hunk, reader.reading
            if sha:
                yield sha, self._done(sha, facts)
        finally:
            self.close()

    def _done(self, sha: str, facts: ChangeFacts | None) -> dict[str, Any] | None:
        if sha in self.boundary or facts is None:
            return None
        return facts.facts("git")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def facts_of_commit(path: Path, sha: str, rules: CodeRules) -> dict[str, Any] | None:
    """The code facts of one commit of a clone (its diff against its first parent, completed from its file
    list as an import completes them); None at a shallow boundary."""
    from ..analyse.code_facts import with_file_list

    boundary = shallow_boundary(path)
    if sha in boundary:
        return None
    found = ChangeFacts(rules).facts("git")  # a commit the kept diff does not list changed no file the rules read
    for _sha, facts in DiffLog(path, ["-1", sha], rules, boundary=boundary).commits():
        found = facts if facts is not None else found
    listed = subprocess.run(["git", "-C", str(path), "show", "--first-parent", "--no-renames", "--numstat", "-z",
                             "--format=", sha], capture_output=True, check=True).stdout.decode("utf-8", "replace")
    files = []
    for entry in listed.split("\0"):
        add, _, rest = entry.strip("\n").partition("\t")
        dele, _, name = rest.partition("\t")
        if name:
            files.append((name, add == "-" and dele == "-"))
    return with_file_list(found, files, rules)
