"""A local git clone as Items: `git log -z --numstat` streamed, one subprocess per branch, and tags.

Why a subprocess and not GitPython: one streamed `git log --numstat` is ~7x faster than walking
commits through GitPython, and we need nothing but the log.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Iterator
from datetime import datetime
from fnmatch import fnmatch
from pathlib import Path

from .. import killpoint
from ..analyse.code_facts import with_file_list
from ..errors import SourceError
from ..models import Item
from .history import BodyCleaner, commit_item, tag_item

_FIELDS = ("sha", "parents", "author_name", "author_email", "authored_at", "committer_name",
           "committer_email", "committed_at", "subject", "body")
# NUL is the only byte no commit message, name or path can hold, so every field ends in NUL and fields are
# read by position: a message or file name holding \x1e, \x1f, tabs or newlines cannot shift them. A commit
# starts with the marker token (no tab in it, so no numstat entry "A\tD\tpath" can equal it).
_MARK = "\x1eradar-commit\x1e"
_FORMAT = "%x1eradar-commit%x1e%x00" + "".join(f"{f}%x00" for f in ("%H", "%P", "%an", "%ae", "%aI", "%cn", "%ce",
                                                                     "%cI", "%s", "%b"))
_TAG_FIELDS = ("%(refname:short)", "%(objectname)", "%(*objectname)", "%(creatordate:iso-strict)",
               "%(taggername)", "%(contents)")
_TAG_FORMAT = "".join(f"{f}%00" for f in _TAG_FIELDS)


def _git(path: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise SourceError("git is not installed (needed by import-git)") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceError(f"{path}: git {args[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout.decode("utf-8", "replace")


def check_clone(path: Path) -> None:
    """Raise SourceError unless `path` is a git work tree or bare repository."""
    if not path.exists():
        raise SourceError(f"{path}: no such directory")
    _git(path, "rev-parse", "--git-dir")


def resolve_branches(path: Path, patterns: list[str], notes: list[str] | None = None) -> list[tuple[str, str]]:
    """(name, ref) of the local or origin branches matching the glob patterns, local first.

    A pattern matching no branch is skipped with a note in `notes` (a clone without `releases/*` yet is
    normal); only when no pattern matches anything is it an error.
    """
    refs = _git(path, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes/origin").split()
    if not refs:
        raise SourceError(f"{path}: the repository has no commits yet (nothing to import)")
    found: dict[str, str] = {}
    for ref in refs:
        name = ref.removeprefix("refs/heads/").removeprefix("refs/remotes/origin/")
        if name != "HEAD" and any(fnmatch(name, p) for p in patterns):
            found.setdefault(name, ref)
    missing = [p for p in patterns if not any(fnmatch(n, p) for n in found)]
    if missing and not found:
        raise SourceError(f"{path}: no branch matches {', '.join(missing)}")
    if missing and notes is not None:
        notes.extend(f"no branch matches {p}: skipped" for p in missing)
    return sorted(found.items(), key=lambda kv: (kv[0] not in ("main", "master"), kv[0]))


def _numstat_entry(entry: str) -> dict | None:
    """One `--numstat -z` entry "A\tD\tpath" (A/D are "-" for binary files), or None for an empty token."""
    entry = entry.lstrip("\n")
    if not entry:
        return None
    add, _, rest = entry.partition("\t")
    dele, _, path = rest.partition("\t")
    if not path:
        return None
    return {"path": path, "additions": int(add) if add.isdigit() else None,
            "deletions": int(dele) if dele.isdigit() else None}


class _LogParser:
    """Tokens of `git log -z` output (split on NUL) -> commit records, one token at a time."""

    def __init__(self) -> None:
        self.fields: list[str] = []
        self.files: list[dict] = []
        self.started = False

    def feed(self, token: str) -> dict | None:
        """Take one token; returns the previous commit when this token starts the next one."""
        done = None
        if token.lstrip("\n") == _MARK and (not self.started or len(self.fields) == len(_FIELDS)):
            done = self.flush()
            self.started = True
        elif not self.started:
            pass
        elif len(self.fields) < len(_FIELDS):
            self.fields.append(token.lstrip("\n") if not self.fields else token)
        else:
            entry = _numstat_entry(token)
            if entry is not None:
                self.files.append(entry)
        return done

    def flush(self) -> dict | None:
        if not self.started or len(self.fields) < len(_FIELDS):
            self.fields, self.files = [], []
            return None
        rec = dict(zip(_FIELDS, self.fields, strict=True))
        rec["parents"] = rec["parents"].split()
        rec["files"] = self.files
        self.fields, self.files = [], []
        return rec


_QUEUED_BLOCKS = 256  # 64 KB blocks read ahead of the parser (16 MB) before git waits on the pipe


class GitLog:
    """One `git log -z --numstat` of `revs`, running from the moment it is made, its output drained by a thread
    into a bounded queue so git seldom waits while we parse (and never buffers without bound while nobody
    reads, e.g. while the import waits for the store's writer lock). Iterate `records()`; `close()` stops it."""

    def __init__(self, path: Path, revs: list[str], since: datetime | None = None, until: datetime | None = None):
        args = ["git", "-C", str(path), "log", "-z", "--numstat", "--first-parent", "--diff-merges=first-parent",
                "--no-renames", f"--format={_FORMAT}"]
        if since:
            args.append(f"--since={since.isoformat()}")
        if until:
            args.append(f"--until={until.isoformat()}")
        self.path, self.revs = path, revs
        self.proc = subprocess.Popen([*args, *revs, "--"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.blocks: queue.Queue[bytes] = queue.Queue(maxsize=_QUEUED_BLOCKS)
        threading.Thread(target=self._pump, daemon=True, name="git-log-reader").start()

    def _pump(self, size: int = 1 << 16) -> None:
        stream = self.proc.stdout
        assert stream is not None
        try:
            for block in iter(lambda: stream.read1(size), b""):
                self.blocks.put(block)
        except (OSError, ValueError):  # closed under us: close() stopped git
            pass
        finally:
            self.blocks.put(b"")

    def records(self) -> Iterator[dict]:
        """The commit records, newest first; SourceError when git fails. Leaving early stops git."""
        buffer, parser, ended = b"", _LogParser(), False
        try:
            for block in iter(self.blocks.get, b""):
                buffer += block
                *complete, buffer = buffer.split(b"\0")  # bytes: a UTF-8 sequence is never cut by a NUL
                for token in complete:
                    rec = parser.feed(token.decode("utf-8", "replace"))
                    if rec is not None:
                        yield rec
            if buffer:
                parser.feed(buffer.decode("utf-8", "replace"))
            rec = parser.flush()
            if rec is not None:
                yield rec
            ended = True
        finally:
            err = self.proc.stderr.read().decode("utf-8", "replace").strip() if ended and self.proc.stderr else ""
            if ended:
                self.proc.wait()  # its output read to the end: git is exiting by itself
            self.close()
            if ended and self.proc.returncode != 0 and err:
                raise SourceError(f"{self.path}: git log {self.revs[0]} failed: {err.splitlines()[-1]}")

    def close(self) -> None:
        """Stop git if it still runs (the import ended early or failed) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


class _Diffs:
    """The code facts of one branch's commits (sources/diffs.py DiffLog, running beside its GitLog), taken in
    the log's order. The diff log is kept to the files the rules read, so it lists a subsequence of the
    commits: one it does not list changed none of them (its facts are empty, not unknown)."""

    def __init__(self, log, rules) -> None:
        self.log, self.commits, self.rules = log, log.commits(), rules
        self.ahead: tuple[str, dict | None] | None = None
        self.ended = False

    def of(self, sha: str) -> dict | None:
        from ..analyse.code_facts import ChangeFacts

        if self.ahead is None and not self.ended:
            self.ahead = next(self.commits, None)
            self.ended = self.ahead is None
        if self.ahead is not None and self.ahead[0] == sha:
            facts, self.ahead = self.ahead[1], None
            return facts
        return ChangeFacts(self.rules).facts("git")

    def close(self) -> None:
        self.log.close()


def _diff_log(path: Path, revs: list[str], since: datetime | None, until: datetime | None,
              rules, boundary: set[str]) -> _Diffs:
    from .diffs import DiffLog

    return _Diffs(DiffLog(path, revs, rules, since, until, boundary), rules)


class StartedClone:
    """A clone checked, its branches resolved and its first branch's `git log` already running (and, with
    `diffs`, its `git log -p` beside it): `radar import-git` starts git before it opens the store, so git reads
    while Python imports SQLAlchemy and takes the writer lock. `close()` stops git if the import never reads it."""

    def __init__(self, path: Path, patterns: list[str], since: datetime | None, until: datetime | None,
                 diffs: bool = False, rules=None):
        check_clone(path)
        self.notes: list[str] = []
        self.branches = resolve_branches(path, patterns, self.notes)
        self.first: GitLog | None = GitLog(path, [self.branches[0][1]], since, until)
        self.rules, self.boundary, self.first_diffs = rules, set(), None
        if diffs:
            from ..analyse.code_facts import load_code_rules
            from .diffs import shallow_boundary

            self.rules = rules or load_code_rules()
            self.boundary = shallow_boundary(path)
            self.first_diffs = _diff_log(path, [self.branches[0][1]], since, until, self.rules, self.boundary)

    def take_first(self) -> GitLog | None:
        first, self.first = self.first, None
        return first

    def take_first_diffs(self) -> _Diffs | None:
        first, self.first_diffs = self.first_diffs, None
        return first

    def close(self) -> None:
        if self.first is not None:
            self.take_first().close()
        if self.first_diffs is not None:
            self.take_first_diffs().close()


def read_clone(path: Path, repo: str, branches: list[str], clean: BodyCleaner,
               since: datetime | None = None, until: datetime | None = None,
               notes: list[str] | None = None, started: StartedClone | None = None,
               diffs: bool = False, rules=None) -> Iterator[Item]:
    """Items of every matching branch, then tags (`started`: the same clone and window, its git log running).

    The first branch (main) is read whole; later ones only for the commits not on it, as the release
    branch exports are. A PR found on two branches is merged into one item by the store. With `diffs`, each
    commit's diff against its first parent is read too (`git log -p` beside the log) and only its code facts
    kept (`Item.code`); a commit at a shallow clone's boundary has none (its history is not known).
    """
    boundary: set[str] = set()
    first_diffs = None
    if started is not None:
        found, first = started.branches, started.take_first()
        first_diffs, boundary = started.take_first_diffs(), started.boundary
        rules = rules or started.rules
        diffs = diffs or first_diffs is not None
        if notes is not None:
            notes.extend(started.notes)
    else:
        found, first = resolve_branches(path, branches, notes), None
    if diffs and rules is None:
        from ..analyse.code_facts import load_code_rules

        rules = load_code_rules()
    if started is None or not boundary:
        from .diffs import shallow_boundary

        boundary = shallow_boundary(path)
    for position, (name, ref) in enumerate(found):
        killpoint.reached("git.branch")
        revs = [ref] if position == 0 else [ref, f"^{found[0][1]}"]
        log = first if position == 0 and first is not None else GitLog(path, revs, since, until)
        code = None
        if diffs:
            code = first_diffs if position == 0 and first_diffs is not None else \
                _diff_log(path, revs, since, until, rules, boundary)
        try:
            for rec in log.records():
                killpoint.reached("git.commit")  # mid-stream: git log still running, a batch half gathered
                item = commit_item(repo, rec, name, "git", clean)
                if code is not None:
                    item.code = with_file_list(code.of(rec["sha"]), [(f.path, f.additions is None and
                                                                      f.deletions is None) for f in item.files], rules)
                if rec["sha"] in boundary:  # a shallow clone's first commit shows its whole tree: not its change
                    item.files, item.code = [], None
                if (since is None or item.when >= since) and (until is None or item.when < until):
                    yield item
        finally:
            if code is not None:
                code.close()
    tokens = _git(path, "for-each-ref", f"--format={_TAG_FORMAT}", "refs/tags").split("\0")
    for start in range(0, len(tokens) - len(_TAG_FIELDS) + 1, len(_TAG_FIELDS)):  # fields by position
        name, obj, peeled, created, tagger, message = tokens[start:start + len(_TAG_FIELDS)]
        name = name.lstrip("\n")
        killpoint.reached("git.tag")
        item = tag_item(repo, {"name": name, "target": peeled or obj, "created_at": created,
                               "tagger": tagger, "message": message}, "git")
        if (since is None or item.when >= since) and (until is None or item.when < until):
            yield item
