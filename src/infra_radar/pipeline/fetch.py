"""The fetch stage: pages from the live GitHub source -> saved items, with cursors advanced per page.

Every page is saved before its stream's state moves past it, so a fetch killed at any point resumes
after the last saved page: no duplicates (upserts) and no gaps (the cursor only moves at the end of a
complete pass). A stream's next pass starts at the newest update time its last complete pass saw.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from .. import killpoint
from ..config import Settings
from ..errors import ConfigError, SourceError
from ..models import PR, Item, check_repo
from ..sources.github import (
    PAGE_SIZE,
    RELEASES_PAGE,
    Endpoints,
    GitHubClient,
    GraphQLSource,
    IsBot,
    Page,
    PageRequest,
    RestSource,
    StopFetch,
    Wait,
    default_is_bot,
    release_page,
)
from ..store import cursors, save
from ..windows import LaterDates

log = logging.getLogger(__name__)

ANONYMOUS_NOTE = ("no GITHUB_TOKEN or GH_TOKEN: using the anonymous REST API (60 requests an hour); "
                  "changed files, comments and reviews are not fetched. Set a token for the full radar.")


@dataclass(slots=True)
class RepoFetch:
    """What fetching one repository did."""

    repo: str
    stats: save.SaveStats = field(default_factory=save.SaveStats)
    pages: int = 0
    errors: list[str] = field(default_factory=list)
    later: LaterDates = field(default_factory=lambda: LaterDates(600.0))  # records dated later than now

    def saved(self, items: list[Item]) -> list[Item]:
        """`items`, each one dated later than now noted (GitHub and the item say where it came from)."""
        for item in items:
            self.later.check(item, f"GitHub {item.ref}")
        return items


@dataclass(slots=True)
class FetchResult:
    """What a fetch did: per repository, plus the request count and the rate limit left."""

    repos: list[RepoFetch]
    requests: int
    remaining: int | None
    anonymous: bool

    @property
    def stats(self) -> save.SaveStats:
        total = save.SaveStats()
        for r in self.repos:
            total.add(r.stats)
        return total

    @property
    def errors(self) -> list[str]:
        return [e for r in self.repos for e in r.errors]


OnPage = Callable[[RepoFetch], None]


def open_client(max_wait: float = 900.0, wait: Wait | None = None, **kw) -> GitHubClient:
    """A client configured from the environment (token, GITHUB_API_URL, GITHUB_GRAPHQL_URL, and the bounds
    RADAR_FETCH_TIMEOUT: silent seconds, RADAR_FETCH_TOTAL_TIMEOUT: seconds per request,
    RADAR_FETCH_MAX_BYTES: bytes per answer, RADAR_FETCH_RETRIES: tries after a failed one)."""
    bounds = {"timeout": ("RADAR_FETCH_TIMEOUT", float), "total_timeout": ("RADAR_FETCH_TOTAL_TIMEOUT", float),
              "max_bytes": ("RADAR_FETCH_MAX_BYTES", int), "retries": ("RADAR_FETCH_RETRIES", int)}
    for key, (name, kind) in bounds.items():
        raw = os.environ.get(name, "").strip()
        if raw and key not in kw:
            try:
                number = float(raw)
                value = kind(number) if number == number and abs(number) < 1e18 else 0
            except ValueError:
                value = 0
            if not (0 < value < 1e9 or (key == "retries" and value == 0 and raw == "0")):
                raise ConfigError(f"{name} must be a positive number below 1e9, not {raw[:40]!r}")
            kw[key] = value
    return GitHubClient(Endpoints.from_env(), max_wait=max_wait, wait=wait, **kw)


def bot_test(settings: Settings) -> IsBot:
    """The rules' bot test when the rules engine is there, else GitHub's `[bot]` suffix."""
    try:
        from ..analyse.rules import RuleSet, is_bot
    except ImportError:
        return default_is_bot
    rules = RuleSet.load(settings)
    return lambda login: is_bot(login, rules)


def repos_to_fetch(settings: Settings, repos: list[str] | None) -> list[str]:
    """The --repo names, else the configured repositories."""
    names = list(repos or []) or [r.name for r in settings.repos]
    names = [check_repo(n) for n in names]
    if not names:
        raise ConfigError("no repositories to fetch: add [[repos]] to radar.toml or pass --repo OWNER/NAME")
    return names


def fetch(settings: Settings, engine: Engine, client: GitHubClient, repos: list[str] | None = None,
          since: datetime | None = None, on_page: OnPage | None = None, page_size: int = PAGE_SIZE,
          is_bot: IsBot | None = None, diffs: bool = False) -> FetchResult:
    """Fetch PRs, issues and releases updated since each stream's cursor (first run: the lookback).

    `on_page` is called after every saved page; `is_bot` defaults to the rules' bot test; `diffs`: each changed
    PR's file patches are read for its code facts (GraphQL only: the anonymous REST lists carry no files).
    """
    names = repos_to_fetch(settings, repos)
    if client.anonymous:
        source: GraphQLSource | RestSource = RestSource(client, page_size)
    else:
        def known(repo: str, number: int, when: datetime) -> bool:
            return cursors.stored_update(engine, repo, PR, number) == when
        rules = None
        if diffs:
            from ..analyse.code_facts import load_code_rules

            rules = load_code_rules(settings)
        source = GraphQLSource(client, is_bot or bot_test(settings), page_size, known, rules)
    floor = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=settings.first_lookback_hours)
    run = save.start_run(engine, "fetch", ",".join(names))
    result = FetchResult([], 0, None, client.anonymous)
    try:
        for name in names:
            done = RepoFetch(name, later=LaterDates(settings.clock_skew))
            result.repos.append(done)
            _fetch_repo(engine, client, source, done, since, floor, on_page or (lambda _r: None))
    except BaseException as exc:
        save.finish_run(engine, run, "failed", {"error": client.cut(str(exc), 300)})
        raise
    finally:
        result.requests, result.remaining = client.requests, client.remaining
    s = result.stats
    save.finish_run(engine, run, "failed" if result.errors else "ok",
                    {"inserted": s.inserted, "updated": s.updated, "requests": result.requests,
                     "errors": result.errors[:20]})
    return result


def _fetch_repo(engine: Engine, client: GitHubClient, source, done: RepoFetch, since: datetime | None,
                floor: datetime, on_page: OnPage) -> None:
    for step in (_fetch_streams, _fetch_releases):
        try:
            step(engine, client, source, done, since, floor, on_page)
        except StopFetch:
            raise
        except SourceError as exc:
            message = client.redact(str(exc))
            log.error("%s: %s", done.repo, message)
            done.errors.append(f"{done.repo}: {message}" if not message.startswith(done.repo) else message)


# -- pulls and issues ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Pass:
    """One pass over one stream: its lower bound, where it is, the newest update seen so far."""

    stream: str
    since: datetime
    after: str | None
    high: datetime | None
    cursor: datetime | None  # the stored cursor when the pass began
    done: bool = False


def _start(engine: Engine, repo: str, stream: str, since: datetime | None, floor: datetime) -> _Pass:
    state = cursors.read_state(engine, repo, stream)
    if state.resume and state.resume_since and since in (None, state.resume_since):
        return _Pass(stream, state.resume_since, state.resume, state.resume_high, state.cursor)
    return _Pass(stream, since or state.cursor or floor, None, None, state.cursor)


def _finish_cursor(p: _Pass) -> datetime:
    """The cursor after a complete pass; a pass that began later than the stored cursor keeps it."""
    if p.cursor is not None and p.since > p.cursor:
        return p.cursor
    return max(p.since, p.high) if p.high else p.since


def _advance(engine: Engine, repo: str, p: _Pass, page: Page, limit: datetime) -> None:
    if page.newest is not None:  # a record dated later than now never moves the cursor past now
        newest = min(page.newest, limit)
        p.high = max(p.high, newest) if p.high else newest
    if page.done:
        p.done = True
        cursors.write_state(engine, repo, p.stream, cursors.StreamState(_finish_cursor(p)))
    else:
        p.after = page.next_token
        cursors.write_state(engine, repo, p.stream, cursors.StreamState(p.cursor, p.after, p.since, p.high))
    killpoint.reached("fetch.cursor")  # one stream's state saved, maybe not the other's


def _fetch_streams(engine: Engine, client: GitHubClient, source, done: RepoFetch, since: datetime | None,
                   floor: datetime, on_page: OnPage) -> None:
    passes = [_start(engine, done.repo, s, since, floor) for s in source.streams]
    while active := [p for p in passes if not p.done]:
        pages = source.page(done.repo, {p.stream: PageRequest(p.since, p.after) for p in active})
        done.stats.add(save.save_items(engine, done.saved([i for page in pages.values() for i in page.items])))
        done.stats.skipped += [note for page in pages.values() for note in page.skipped]
        killpoint.reached("fetch.page_saved")  # the page is stored, the cursors do not cover it yet
        for p in active:
            _advance(engine, done.repo, p, pages[p.stream], done.later.limit)
        done.pages += 1
        on_page(done)


# -- releases -----------------------------------------------------------------------------------------


def _fetch_releases(engine: Engine, client: GitHubClient, _source, done: RepoFetch, since: datetime | None,
                    floor: datetime, on_page: OnPage) -> None:
    p = _start(engine, done.repo, "releases", since, floor)
    p.after = None  # releases are few: a cut pass simply starts over
    first_url = client.rest_url(f"repos/{done.repo}/releases?per_page={RELEASES_PAGE}")
    # an explicit --since may reach further back than the remembered page covered: ask unconditionally
    etag = cursors.read_etag(engine, first_url) if since is None else None
    url, first_etag = None, None
    while True:
        page = release_page(client, done.repo, url, etag if url is None else None, p.since)
        if page.not_modified:
            return
        done.stats.add(save.save_items(engine, done.saved(page.items)))
        done.stats.skipped += page.skipped
        killpoint.reached("fetch.release_page")
        newest = max((min(i.created_at, done.later.limit) for i in page.items if i.created_at), default=None)
        if newest:
            p.high = max(p.high, newest) if p.high else newest
        first_etag = first_etag or (page.etag if url is None else None)
        if not page.next_url:
            break
        url = page.next_url
    done.pages += 1
    cursors.write_state(engine, done.repo, "releases", cursors.StreamState(_finish_cursor(p)))
    killpoint.reached("fetch.release_cursor")  # the cursor moved, the ETag not yet saved
    if first_etag:  # only once every page is saved: a 304 next time must mean "nothing to add"
        cursors.write_etag(engine, first_url, first_etag)
        killpoint.reached("fetch.etag")
    on_page(done)
