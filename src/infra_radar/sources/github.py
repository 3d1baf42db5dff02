"""The live GitHub source: one page of a repository's pull requests, issues or releases as Items.

`GraphQLSource` and `RestSource` turn one page of a repository's pull requests and issues into Items;
`fetch_releases` reads releases with ETag conditional requests. The HTTP client lives in github_client.py
(re-exported here). Nothing here writes the store: pipeline/fetch.py saves what these yield.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .. import killpoint
from ..errors import SourceError
from ..models import CLOSED, ISSUE, MERGED, OPEN, PR, RELEASE, Comment, FileChange, Item
from .github_client import (  # noqa: F401 - re-exported: callers import the client from here
    DEFAULT_API,
    MAX_BYTES,
    TOTAL_TIMEOUT,
    Endpoints,
    GitHubClient,
    IsBot,
    Known,
    PageError,
    RateLimited,
    RestResponse,
    StopFetch,
    Wait,
    _host,
    graphql_queries,
    graphql_url,
    next_link,
    origin,
)

# PRs and issues per page, releases per page; RADAR_FETCH_PAGE_SIZE sets both (the kill tests page a small fixture)
PAGE_SIZE = int(os.environ.get("RADAR_FETCH_PAGE_SIZE") or 50)
RELEASES_PAGE = int(os.environ.get("RADAR_FETCH_PAGE_SIZE") or 100)
FILES_PAGE = 100  # GraphQL's files(first: 100); REST pulls/{n}/files is read past it


# -- records -> Items ---------------------------------------------------------------------------------


def parse_time(value: str | None) -> datetime | None:
    """GitHub's ISO-8601 time ('2026-08-01T02:00:00Z') as an aware UTC datetime."""
    return datetime.fromisoformat(value).astimezone(UTC) if value else None


def _bot(author: Mapping[str, Any] | None, is_bot: IsBot) -> tuple[str, bool]:
    if not author:
        return "ghost", False  # a deleted account
    login = author.get("login") or "ghost"
    if not isinstance(login, str):
        raise TypeError(f"author.login: expected a string, got {type(login).__name__}")
    return login, author.get("__typename") == "Bot" or is_bot(login)


def default_is_bot(login: str) -> bool:
    """The fallback bot test: GitHub's `[bot]` suffix."""
    return login.lower().endswith("[bot]")


_CHANGE = {"ADDED": "added", "DELETED": "removed", "MODIFIED": "modified", "RENAMED": "renamed",
           "COPIED": "copied", "CHANGED": "changed"}


def _comments(node: Mapping[str, Any], is_bot: IsBot) -> list[Comment]:
    found = []
    for c in (node.get("comments") or {}).get("nodes") or []:
        login, bot = _bot(c.get("author"), is_bot)
        found.append(Comment(login, c.get("body") or "", parse_time(c.get("createdAt")), bot, "comment"))
    for r in (node.get("reviews") or {}).get("nodes") or []:
        login, bot = _bot(r.get("author"), is_bot)
        # an approval without text still says something: keep its verdict as the body
        body = r.get("body") or str(r.get("state") or "").lower().replace("_", " ")
        found.append(Comment(login, body, parse_time(r.get("submittedAt")), bot, "review"))
    return sorted(found, key=lambda c: c.created_at or datetime.min.replace(tzinfo=UTC))


def _labels(node: Mapping[str, Any]) -> list[str]:
    return [n["name"] for n in (node.get("labels") or {}).get("nodes") or [] if n and n.get("name")]


def pr_item(repo: str, node: Mapping[str, Any], is_bot: IsBot = default_is_bot) -> Item:
    """A GraphQL PullRequest node as an Item (files: its first page; see `files_need_rest`)."""
    author, _ = _bot(node.get("author"), is_bot)
    state = {"MERGED": MERGED, "CLOSED": CLOSED}.get(node.get("state", ""), OPEN)
    files = [FileChange(f["path"], _count(f.get("additions")), _count(f.get("deletions")),
                        _CHANGE.get(f.get("changeType") or "", None))  # a malformed file node: dropped, not the PR
             for f in (node.get("files") or {}).get("nodes") or [] if isinstance(f, Mapping) and
             isinstance(f.get("path"), str) and f["path"]]
    merge = (node.get("mergeCommit") or {}).get("oid") if state == MERGED else None
    return Item(repo=repo, kind=PR, key=str(node["number"]), number=node["number"], title=node.get("title") or "",
                body=node.get("body") or "", author=author, state=state, draft=bool(node.get("isDraft")),
                created_at=parse_time(node.get("createdAt")), updated_at=parse_time(node.get("updatedAt")),
                merged_at=parse_time(node.get("mergedAt")), closed_at=parse_time(node.get("closedAt")),
                merge_commit=merge, branches=[node["baseRefName"]] if node.get("baseRefName") else [],
                labels=_labels(node), files=files, comments=_comments(node, is_bot), source="github")


def files_need_rest(node: Mapping[str, Any]) -> bool:
    """Whether a PR node's file list was cut at GraphQL's first page."""
    return bool(((node.get("files") or {}).get("pageInfo") or {}).get("hasNextPage"))


def issue_item(repo: str, node: Mapping[str, Any], is_bot: IsBot = default_is_bot) -> Item:
    """A GraphQL Issue node as an Item."""
    author, _ = _bot(node.get("author"), is_bot)
    return Item(repo=repo, kind=ISSUE, key=str(node["number"]), number=node["number"], title=node.get("title") or "",
                body=node.get("body") or "", author=author, state=CLOSED if node.get("state") == "CLOSED" else OPEN,
                created_at=parse_time(node.get("createdAt")), updated_at=parse_time(node.get("updatedAt")),
                closed_at=parse_time(node.get("closedAt")), labels=_labels(node),
                comments=_comments(node, is_bot), source="github")


def rest_pull_item(repo: str, obj: Mapping[str, Any]) -> Item:
    """A REST pull (list shape, anonymous mode) as an Item, without files or comments."""
    merged = parse_time(obj.get("merged_at"))
    state = MERGED if merged else (CLOSED if obj.get("state") == "closed" else OPEN)
    return Item(repo=repo, kind=PR, key=str(obj["number"]), number=obj["number"], title=obj.get("title") or "",
                body=obj.get("body") or "", author=(obj.get("user") or {}).get("login") or "ghost", state=state,
                draft=bool(obj.get("draft")), created_at=parse_time(obj.get("created_at")),
                updated_at=parse_time(obj.get("updated_at")), merged_at=merged,
                closed_at=parse_time(obj.get("closed_at")),
                merge_commit=obj.get("merge_commit_sha") if merged else None,
                branches=[b] if (b := (obj.get("base") or {}).get("ref")) else [],
                labels=[lb["name"] for lb in obj.get("labels") or [] if lb.get("name")], source="github")


def rest_issue_item(repo: str, obj: Mapping[str, Any]) -> Item:
    """A REST issue (list shape, anonymous mode) as an Item."""
    return Item(repo=repo, kind=ISSUE, key=str(obj["number"]), number=obj["number"], title=obj.get("title") or "",
                body=obj.get("body") or "", author=(obj.get("user") or {}).get("login") or "ghost",
                state=CLOSED if obj.get("state") == "closed" else OPEN,
                created_at=parse_time(obj.get("created_at")), updated_at=parse_time(obj.get("updated_at")),
                closed_at=parse_time(obj.get("closed_at")),
                labels=[lb["name"] for lb in obj.get("labels") or [] if lb.get("name")], source="github")


def release_item(repo: str, obj: Mapping[str, Any]) -> Item:
    """A REST release as an Item keyed by its tag."""
    when = parse_time(obj.get("published_at") or obj.get("created_at"))
    target = obj.get("target_commitish") or ""
    return Item(repo=repo, kind=RELEASE, key=obj["tag_name"], title=obj.get("name") or obj["tag_name"],
                body=obj.get("body") or "", author=(obj.get("author") or {}).get("login") or "",
                state="published", created_at=when, updated_at=when,
                merge_commit=target if re.fullmatch(r"[0-9a-f]{40}", target) else None,
                labels=["prerelease"] if obj.get("prerelease") else [], source="github")


API_MAX_FILES = 3000  # pulls/{n}/files lists at most this many files of a pull request
_MAX_FILE_PAGES = -(-API_MAX_FILES // FILES_PAGE)  # the pages 3,000 files fill: no more are asked for


def rest_files(client: GitHubClient, repo: str, number: int, facts=None) -> list[FileChange]:
    """Every changed file of a PR from REST `pulls/{n}/files` (Link-paginated, 100 a page). With `facts` (an
    analyse.code_facts.ChangeFacts), each file's patch is read into it page by page and never kept: a patch
    the API leaves out (a big or binary file) or cuts, and a PR past the API's 3,000 files, make it incomplete.

    The API lists at most 3,000 files, so at most that many are read and 30 pages asked for, whatever the
    pages' next links say (a list whose next page never ends stops there, the change incomplete). A file entry
    that is not one (no file name) is dropped, the change incomplete; the pull request keeps its other files."""
    found: list[FileChange] = []
    url: str | None = client.rest_url(f"repos/{repo}/pulls/{number}/files?per_page={FILES_PAGE}")
    pages, dropped = 0, False
    while url and pages < _MAX_FILE_PAGES and len(found) < API_MAX_FILES:
        page = client.rest(url)
        pages += 1
        if not isinstance(page.data, list):
            raise PageError(f"{repo}#{number}: file list is not a JSON array")
        entries = [f for f in page.data[:API_MAX_FILES - len(found)] if _file_entry(f)]
        dropped = dropped or len(entries) < min(len(page.data), API_MAX_FILES - len(found))
        found += [FileChange(f["filename"], _count(f.get("additions")), _count(f.get("deletions")),
                             f.get("status") if isinstance(f.get("status"), str) else None) for f in entries]
        if facts is not None:
            for f in entries:
                _read_patch(facts, f)
        killpoint.reached("github.files")  # between a PR's file pages: nothing of the page saved yet
        url = page.next_url
    if facts is not None and (len(found) >= API_MAX_FILES or url or dropped):
        facts.incomplete()  # the API lists no more, its list did not end, or an entry was unreadable
    return found


def _file_entry(f: Any) -> bool:
    """A REST file entry the radar can read: an object with a non-empty file name."""
    return isinstance(f, Mapping) and isinstance(f.get("filename"), str) and bool(f["filename"])


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _read_patch(facts, f: Mapping[str, Any]) -> None:
    """One REST file entry's patch into the change's code facts."""
    from .diffs import feed_patch

    patch = f.get("patch")
    status = f.get("status") if isinstance(f.get("status"), str) else "modified"
    changes = (_count(f.get("additions")) or 0) + (_count(f.get("deletions")) or 0)
    if not isinstance(patch, str):
        # no patch: a binary file (nothing counted in lines), a rename or mode change (its path only: no
        # line and no removed file), or one too big to show
        binary = changes == 0 and status not in ("renamed", "removed")
        feed_patch(facts, f["filename"], None if changes else "", status, binary=binary)
        return
    if feed_patch(facts, f["filename"], patch, status):
        shown = sum(1 for line in patch.splitlines() if line[:1] in ("+", "-"))
        if shown < changes:  # the API cut the patch
            facts.incomplete()


# -- pages of pulls and issues --------------------------------------------------------------------


@dataclass(slots=True)
class PageRequest:
    """What to ask of one stream: items updated at or after `since`, after page token `after`."""

    since: datetime
    after: str | None = None


@dataclass(slots=True)
class Page:
    """One page of one stream: its items (already cut at `since`) and where the stream goes next."""

    items: list[Item]
    next_token: str | None  # resume after this page; None when the stream has no more pages
    done: bool  # nothing at or after `since` lies past this page
    newest: datetime | None = None  # the newest update time seen on the page
    skipped: list[str] = field(default_factory=list)  # "where: why" of records that failed the boundary check


def _when(obj: Any, key: str) -> datetime | None:
    """A record's time for paging, or None when it has none or a broken one (the record itself is checked)."""
    try:
        return parse_time(obj.get(key)) if isinstance(obj, dict) else None
    except (TypeError, ValueError, AttributeError):
        return None


def _checked(convert: Callable[[Any], Item | None], obj: Any, where: str,
             skipped: list[str]) -> Item | None:
    """One API record through `convert` and the boundary check; a bad one is noted in `skipped` and dropped."""
    from .records import RecordError, check_item

    number = obj.get("number") if isinstance(obj, dict) else None
    label = f"{where} #{number}" if isinstance(number, int) and not isinstance(number, bool) and \
        0 < number < 2**31 else f"{where} (a record without a valid number)"
    try:
        item = convert(obj)
        return check_item(item) if item is not None else None
    except RecordError as exc:
        skipped.append(f"{label}: {exc}"[:300])
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        skipped.append(f"{label}: {type(exc).__name__}: {exc}"[:300])
    return None


def _page(raw: list[tuple[Item | None, datetime | None]], has_next: bool, token: str | None,
          since: datetime, skipped: list[str] | None = None) -> Page:
    items = [item for item, when in raw if item is not None and (when is None or when >= since)]
    times = [when for _, when in raw if when is not None]
    done = not has_next or not raw or (raw[-1][1] is not None and raw[-1][1] < since)
    return Page(items, None if done else token, done, max(times) if times else None, skipped or [])


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GraphQLSource:
    """Pull requests and issues through GraphQL: both streams in one request per page."""

    streams = ("pulls", "issues")

    def __init__(self, client: GitHubClient, is_bot: IsBot = default_is_bot, page_size: int = PAGE_SIZE,
                 known: Known | None = None, rules=None) -> None:
        self.client, self.is_bot, self.page_size = client, is_bot, page_size
        self.rules = rules  # analyse.code_facts.CodeRules: each changed PR's patches read for code facts
        self.known = known or (lambda _repo, _number, _when: False)
        self.query = graphql_queries()["repo_page"]

    def page(self, repo: str, asks: dict[str, PageRequest]) -> dict[str, Page]:
        """One page of each stream in `asks` (pulls, issues)."""
        owner, name = repo.split("/")
        pulls, issues = asks.get("pulls"), asks.get("issues")
        variables = {"owner": owner, "name": name, "pageSize": self.page_size,
                     "withPulls": pulls is not None, "pullsAfter": pulls.after if pulls else None,
                     "withIssues": issues is not None, "issuesAfter": issues.after if issues else None,
                     "since": _iso(issues.since) if issues else None}
        data = self.client.graphql(self.query, variables)
        killpoint.reached("github.list")  # the list page is in, its PRs' file pages not yet
        found = data.get("repository")
        if not isinstance(found, dict):
            raise SourceError(f"{repo}: repository not found on {_host(self.client.endpoints.api)}")
        try:
            pages = {}
            if pulls is not None:
                pages["pulls"] = self._pulls(repo, found["pullRequests"], pulls.since)
            if issues is not None:
                pages["issues"] = self._connection(found["issues"], issues.since,
                                                   lambda n: issue_item(repo, n, self.is_bot), f"{repo} issue")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PageError(f"{repo}: unexpected GraphQL answer ({type(exc).__name__}: {exc})"[:300]) from None
        return pages

    def _pulls(self, repo: str, conn: Mapping[str, Any], since: datetime) -> Page:
        def convert(node: Mapping[str, Any]) -> Item | None:
            when = _when(node, "updatedAt")
            old = when is not None and when < since
            if old or (not files_need_rest(node) and self.rules is None):
                return pr_item(repo, node, self.is_bot)
            if when is not None and self.known(repo, node["number"], when):
                return None  # stored as it is now: skip its file pages (and do not cut its files to 100)
            item = pr_item(repo, node, self.is_bot)
            facts = None
            if self.rules is not None:
                from ..analyse.code_facts import ChangeFacts

                facts = ChangeFacts(self.rules)
            item.files = rest_files(self.client, repo, item.number or 0, facts)
            item.code = facts.facts("api") if facts is not None else None
            return item
        return self._connection(conn, since, convert, f"{repo} pull request")

    @staticmethod
    def _connection(conn: Mapping[str, Any], since: datetime, convert: Callable[[Any], Item | None],
                    where: str = "record") -> Page:
        skipped: list[str] = []
        raw = [(_checked(convert, n, where, skipped), _when(n, "updatedAt")) for n in conn["nodes"] if n]
        info = conn["pageInfo"]
        return _page(raw, bool(info["hasNextPage"]), info.get("endCursor"), since, skipped)


class RestSource:
    """Pull requests and issues through REST list endpoints (anonymous mode): no files or comments."""

    streams = ("pulls", "issues")

    def __init__(self, client: GitHubClient, page_size: int = PAGE_SIZE) -> None:
        self.client, self.page_size = client, page_size

    def page(self, repo: str, asks: dict[str, PageRequest]) -> dict[str, Page]:
        """One page of each stream in `asks`, one request each."""
        return {stream: self._one(repo, stream, ask) for stream, ask in asks.items()}

    def _one(self, repo: str, stream: str, ask: PageRequest) -> Page:
        params = f"state=all&sort=updated&direction=desc&per_page={self.page_size}"
        if stream == "issues":
            params += f"&since={_iso(ask.since)}"
        resp = self.client.rest(ask.after or self.client.rest_url(f"repos/{repo}/{stream}?{params}"))
        if not isinstance(resp.data, list):
            raise PageError(f"{repo}: {stream} list is not a JSON array")
        try:
            # the REST issues list also holds pull requests: they come from the pulls stream (None here),
            # but their update times still tell where the listing stands
            skipped: list[str] = []
            convert = (lambda o: rest_pull_item(repo, o)) if stream == "pulls" else \
                (lambda o: None if "pull_request" in o else rest_issue_item(repo, o))
            raw = [(_checked(convert, o, f"{repo} {stream}", skipped), _when(o, "updated_at")) for o in resp.data]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PageError(f"{repo}: unexpected REST answer ({type(exc).__name__}: {exc})"[:300]) from None
        return _page(raw, resp.next_url is not None, resp.next_url, ask.since, skipped)


# -- releases -------------------------------------------------------------------------------------


@dataclass(slots=True)
class ReleasePage:
    """One page of releases: items published at or after `since`, the page's URL and ETag."""

    url: str
    items: list[Item]
    etag: str | None
    not_modified: bool
    next_url: str | None
    skipped: list[str] = field(default_factory=list)


def release_page(client: GitHubClient, repo: str, url: str | None, etag: str | None, since: datetime) -> ReleasePage:
    """One page of a repository's releases (newest first), conditional on `etag`; drafts left out."""
    url = url or client.rest_url(f"repos/{repo}/releases?per_page={RELEASES_PAGE}")
    resp = client.rest(url, etag=etag)
    if resp.status == 304:
        return ReleasePage(url, [], etag, True, None)
    if not isinstance(resp.data, list):
        raise PageError(f"{repo}: releases list is not a JSON array")
    skipped: list[str] = []
    found = [_checked(lambda r: release_item(repo, r), r, f"{repo} release", skipped) for r in resp.data
             if not (isinstance(r, dict) and r.get("draft"))]
    items = [i for i in found if i is not None]
    fresh = [i for i in items if i.created_at is None or i.created_at >= since]
    more = resp.next_url if items and len(fresh) == len(items) else None
    return ReleasePage(url, fresh, resp.etag, False, more, skipped)
