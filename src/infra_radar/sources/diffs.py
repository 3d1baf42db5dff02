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
_CHUNK = 1 << 15  # bytes of a diff line read at once: a header line (two paths) fits, a minified line does not


def _unquote(path: str) -> str:
    """A path as git prints it: C-quoted ("a/\\303\\251.py") when it holds unusual bytes."""
    if not (path.startswith('"') and path.endswith('"')):
        return path
    raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1", "replace")
    return raw.decode("utf-8", "replace")


def _header_path(line: str) -> tuple[str, bool]:
    """The new path of a `diff --git a/X b/Y` line, and whether it is sure: a file that is not renamed names
    the same path twice ("a/X b/X", so X is read from the line's length whatever it holds, " b/" included);
    a renamed one is named by its `rename to` line (or its `+++` line), the guess here only a fallback."""
    rest = line[len("diff --git "):].rstrip("\r\n")
    if rest.endswith('"'):
        start = rest.rfind(' "')
        new = _unquote(rest[start + 1:]).removeprefix("b/")
        return new, _unquote(rest[:start]).removeprefix("a/") == new
    half = (len(rest) - 5) // 2
    if rest.startswith("a/") and rest[2 + half:5 + half] == " b/" and rest[2:2 + half] == rest[5 + half:]:
        return rest[5 + half:], True
    return rest.rpartition(" b/")[2], False


_SYMLINK = " 120000"  # git's mode of a symbolic link: its "content" is the target path, never code


class PatchReader:
    """Feeds the lines of unified diffs (several files, `diff --git` headers) into one ChangeFacts."""

    def __init__(self, facts: ChangeFacts) -> None:
        self.facts = facts
        self.reading = False  # the current file's lines go to the rules
        self.in_hunk = False
        self.path = ""
        self.status = "modified"
        self.pending = ""  # a header whose path is not sure yet (a rename): started at `rename to` or `+++`

    def _start(self, path: str, status: str = "modified") -> None:
        self.path, self.status, self.in_hunk, self.pending = path, status, False, ""
        self.reading = self.facts.file(path, status)

    def finish(self) -> None:
        """The diff ended: a header still waiting for its path is started with its guess."""
        if self.pending:
            self._start(self.pending)

    def feed(self, line: str) -> None:
        """One line of a diff (with or without its newline)."""
        head = line[:1]
        if self.in_hunk and head in ("+", "-"):  # in a hunk: a changed line, never a header
            if self.reading:
                self.reading = self.facts.line(head, line[1:].rstrip("\r\n"))
            return
        if self.in_hunk and head in (" ", "\\"):
            if head == " " and self.reading:
                self.facts.context(line[1:])
            return
        if line.startswith("diff --git "):
            self.finish()
            path, sure = _header_path(line)
            if sure:
                self._start(path)
            else:
                self.pending, self.in_hunk, self.reading = path, False, False
        elif line.startswith("rename to ") and self.pending:
            self._start(_unquote(line[len("rename to "):].rstrip("\r\n")), "renamed")
        elif line.startswith("@@"):
            self.finish()
            self.in_hunk = True
            self.facts.hunk(line)
        elif line.startswith("deleted file mode"):
            self.finish()
            self.status = "removed"
            self.facts.removed_files.append(self.path)
            self.reading = self.reading and not line.rstrip("\r\n").endswith(_SYMLINK)
        elif line.startswith(("new file mode", "new mode", "index ")):
            self.finish()
            if line.rstrip("\r\n").endswith(_SYMLINK):
                self.reading = False  # a symbolic link: its target is no line of code
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            self.finish()
            self.facts.binary()
            self.reading = False
        elif line.startswith("+++ ") and not line.startswith("+++ /dev/null"):
            path = _unquote(line[4:].rstrip("\r\n").removesuffix("\t")).removeprefix("b/")  # "\t": a path with a space
            if self.pending or path != self.path:  # a renamed file, or a bare patch without a diff --git header
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
        if head in ("+", "-") and line[:3] not in ("+++", "---"):
            if not facts.line(head, line[1:]):
                return False
        elif head == " ":
            facts.context(line[1:])
        elif head == "@":
            facts.hunk(line)
    return True


def facts_of_diff(rules: CodeRules, lines: Iterable[str], source: str) -> dict[str, Any]:
    """The facts of one diff given as text lines (a page's hunks, a test's fixture)."""
    facts = ChangeFacts(rules)
    reader = PatchReader(facts)
    for line in lines:
        reader.feed(line)
    reader.finish()
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
        args += ["log", "-p", "--first-parent", "--diff-merges=first-parent", "--find-renames",
                 "--no-color", "--no-ext-diff", "--no-textconv", _FORMAT]
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
        line = context = None
        plus, minus, space, mark, newline = b"+", b"-", b" ", _MARK, b"\n"
        # a line is read at most _CHUNK bytes at a time and only its first chunk kept (the rules see its first
        # `line_chars` characters): a 50 MB one-line file never sits in memory whole
        readline, keep = stream.readline, 4 * self.rules.caps["line_chars"] + 1
        try:
            while raw := readline(_CHUNK):
                if raw[-1:] != newline:
                    while (rest := readline(_CHUNK)) and rest[-1:] != newline:
                        pass  # the rest of an overlong line: dropped as it comes
                head = raw[:1]
                if in_hunk:
                    if head == plus or head == minus:  # in a hunk: a changed line, never a header
                        if reading:
                            reading = line("+" if head == plus else "-", raw[1:keep].decode("utf-8", "replace").rstrip("\r\n"))
                        continue
                    if head == space:
                        if reading and (b'"""' in raw or b"\x27\x27\x27" in raw or b"/*" in raw or b"*/" in raw):
                            # it may open or close a docstring or a block comment
                            context(raw[1:keep].decode("utf-8", "replace").rstrip("\r\n"))
                        continue  # context: most never decoded
                if raw.startswith(mark):
                    if sha:
                        reader.finish()
                        yield sha, self._done(sha, facts)
                    sha = raw[len(mark):].strip().decode("ascii", "replace")
                    facts = ChangeFacts(self.rules)
                    reader, line, context = PatchReader(facts), facts.line, facts.context
                    in_hunk = reading = False
                    continue
                if reader is None:
                    continue
                reader.in_hunk, reader.reading = in_hunk, reading
                reader.feed(raw.decode("utf-8", "replace"))
                in_hunk, reading = reader.in_hunk, reader.reading
            if sha:
                reader.finish()
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
