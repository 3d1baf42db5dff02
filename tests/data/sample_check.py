"""Check the bundled demo sample against the JSON Lines export format and print its shape.

Usage: python tests/data/sample_check.py [SAMPLE_DIR]
(default: src/infra_radar/defaults/sample). Exits 1 and lists every problem if a line is off-format.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "src" / "infra_radar" / "defaults" / "sample"
REPOS = ("acme/infer", "acme/infer-npu", "acme/trainer")
# The windows the demo reports on: a two-day daily radar and the week before it (Mon to Mon).
DAILY = (datetime(2026, 8, 1, 2, tzinfo=UTC), datetime(2026, 8, 3, 2, tzinfo=UTC))
WEEKLY = (datetime(2026, 7, 27, tzinfo=UTC), datetime(2026, 8, 3, tzinfo=UTC))

SHA_RE = re.compile(r"[0-9a-f]{40}")
PR_RE = re.compile(r"\(#(\d+)\)\s*$")
# ISO-8601 with an explicit numeric offset, as `git log --format=%aI` writes it.
DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}")

REPO_KEYS = {"kind": str, "full_name": str, "ref": str, "head": str}
COMMIT_KEYS = {
    "kind": str,
    "sha": str,
    "parents": list,
    "author_name": str,
    "author_email": str,
    "authored_at": str,
    "committer_name": str,
    "committer_email": str,
    "committed_at": str,
    "subject": str,
    "body": str,
    "files": list,
}
TAG_KEYS = {
    "kind": str,
    "name": str,
    "target": str,
    "annotated": bool,
    "created_at": str,
    "tagger": str,
    "message": str,
}


class Problems(list):
    """Collected format problems, each prefixed with file and line number."""

    def add(self, where: str, message: str) -> None:
        self.append(f"{where}: {message}")


def parse_when(value: str, where: str, problems: Problems) -> datetime | None:
    """Parse an ISO-8601 time that must carry an offset; record a problem otherwise."""
    if not DATE_RE.fullmatch(value):
        problems.add(where, f"not ISO-8601 with offset: {value!r}")
        return None
    return datetime.fromisoformat(value)


def check_keys(obj: dict, spec: dict[str, type], where: str, problems: Problems) -> bool:
    """Exact key set and value types."""
    if set(obj) != set(spec):
        problems.add(where, f"keys {sorted(obj)} != {sorted(spec)}")
        return False
    ok = True
    for key, kind in spec.items():
        if not isinstance(obj[key], kind):
            problems.add(where, f"{key} is {type(obj[key]).__name__}, expected {kind.__name__}")
            ok = False
    return ok


def check_files(files: list, where: str, problems: Problems) -> None:
    """Every changed file has a path and int-or-null counts, both null only for binaries."""
    if not files:
        problems.add(where, "no files")
    for f in files:
        if not isinstance(f, dict) or set(f) != {"path", "additions", "deletions"}:
            problems.add(where, f"bad file entry {f!r}")
            continue
        if not isinstance(f["path"], str) or not f["path"] or f["path"].startswith("/"):
            problems.add(where, f"bad path {f['path']!r}")
        counts = (f["additions"], f["deletions"])
        if any(c is not None and (not isinstance(c, int) or isinstance(c, bool) or c < 0) for c in counts):
            problems.add(where, f"bad counts {counts} for {f['path']}")
        if (counts[0] is None) != (counts[1] is None):
            problems.add(where, f"half-null counts for {f['path']}")


def check_commit(obj: dict, where: str, problems: Problems) -> datetime | None:
    """One commit line; returns its committed time (aware) if valid."""
    if not check_keys(obj, COMMIT_KEYS, where, problems):
        return None
    if not SHA_RE.fullmatch(obj["sha"]):
        problems.add(where, f"bad sha {obj['sha']!r}")
    if len(obj["parents"]) != 1 or not all(
        isinstance(p, str) and SHA_RE.fullmatch(p) for p in obj["parents"]
    ):
        problems.add(where, f"expected one 40-hex parent, got {obj['parents']!r}")
    for key in ("author_email", "committer_email"):
        if "@" not in obj[key]:
            problems.add(where, f"bad {key} {obj[key]!r}")
    if not obj["subject"].strip() or "\n" in obj["subject"]:
        problems.add(where, f"bad subject {obj['subject']!r}")
    authored = parse_when(obj["authored_at"], where, problems)
    committed = parse_when(obj["committed_at"], where, problems)
    if authored and committed and authored > committed:
        problems.add(where, "authored after committed")
    check_files(obj["files"], where, problems)
    return committed


def check_repo_file(path: Path, problems: Problems) -> tuple[str, list[dict], list[dict]]:
    """Validate one export file; returns (full_name, commits, tags)."""
    lines = [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines() if raw.strip()]
    name = f"{path.name}:1"
    head = lines[0] if lines else {}
    if head.get("kind") != "repo" or not check_keys(head, REPO_KEYS, name, problems):
        problems.add(name, "first line is not a valid kind=repo line")
        return path.stem, [], []
    if path.stem != head["full_name"].replace("/", "+"):
        problems.add(name, f"file name does not match full_name {head['full_name']!r}")
    commits, tags = [], []
    for number, obj in enumerate(lines[1:], start=2):
        where = f"{path.name}:{number}"
        kind = obj.get("kind")
        if kind == "commit":
            if tags:
                problems.add(where, "commit after a tag line")
            obj["_when"] = check_commit(obj, where, problems)
            obj["_where"] = where
            commits.append(obj)
        elif kind == "tag":
            if check_keys(obj, TAG_KEYS, where, problems):
                parse_when(obj["created_at"], where, problems)
                if obj["annotated"] != bool(obj["tagger"]):
                    problems.add(where, "annotated tags need a tagger, lightweight tags none")
            tags.append(obj)
        else:
            problems.add(where, f"unknown kind {kind!r}")
    check_history(head, commits, tags, path.name, problems)
    return head["full_name"], commits, tags


def check_history(head: dict, commits: list[dict], tags: list[dict], name: str, problems: Problems) -> None:
    """Head, newest-first order, first-parent chain, unique shas and PR numbers, tag targets."""
    if not commits:
        problems.add(name, "no commits")
        return
    if head["head"] != commits[0]["sha"]:
        problems.add(name, "head is not the first (newest) commit")
    for newer, older in zip(commits, commits[1:], strict=False):
        if newer["_when"] and older["_when"] and newer["_when"] < older["_when"]:
            problems.add(older["_where"], "not newest first")
        if newer["parents"] and newer["parents"][0] != older["sha"]:
            problems.add(newer["_where"], "first parent is not the next commit")
    shas = [c["sha"] for c in commits]
    if len(set(shas)) != len(shas):
        problems.add(name, "duplicate shas")
    numbers = [int(m.group(1)) for c in commits if (m := PR_RE.search(c["subject"]))]
    if len(set(numbers)) != len(numbers):
        problems.add(name, "duplicate PR numbers")
    known = set(shas)
    for tag in tags:
        if tag.get("target") not in known:
            problems.add(name, f"tag {tag.get('name')!r} points at an unknown commit")


def in_window(when: datetime | None, window: tuple[datetime, datetime]) -> bool:
    """Half-open window [start, end)."""
    return when is not None and window[0] <= when < window[1]


def report(repo: str, commits: list[dict], tags: list[dict]) -> None:
    """Print counts per repository and per UTC day."""
    prs = [c for c in commits if PR_RE.search(c["subject"])]
    daily = sum(in_window(c["_when"], DAILY) for c in commits)
    weekly_prs = sum(in_window(c["_when"], WEEKLY) for c in prs)
    print(
        f"{repo}: {len(commits)} commits ({len(prs)} PRs, {len(commits) - len(prs)} direct), "
        f"{len(tags)} tags; daily window {daily}, weekly window PRs {weekly_prs}"
    )
    days: Counter[date] = Counter(c["_when"].astimezone(UTC).date() for c in commits if c["_when"])
    for day in sorted(days):
        print(f"  {day.isoformat()} {day.strftime('%a')}  {days[day]:2d}")


def main(argv: list[str]) -> int:
    """Validate every sample file; print counts; return the exit status."""
    folder = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    problems = Problems()
    found = {}
    for path in sorted(folder.glob("*.jsonl")):
        repo, commits, tags = check_repo_file(path, problems)
        found[repo] = (commits, tags)
    for repo in REPOS:
        if repo not in found:
            problems.add(str(folder), f"missing {repo}")
    for repo in sorted(found, key=lambda r: (r not in REPOS, REPOS.index(r) if r in REPOS else 0, r)):
        report(repo, *found[repo])
    total_daily = sum(in_window(c["_when"], DAILY) for commits, _ in found.values() for c in commits)
    print(f"total in daily window {DAILY[0]:%Y-%m-%dT%H:%MZ}..{DAILY[1]:%Y-%m-%dT%H:%MZ}: {total_daily}")
    for problem in problems:
        print("PROBLEM", problem, file=sys.stderr)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
