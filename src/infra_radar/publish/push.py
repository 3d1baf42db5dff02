"""`radar push`: the daily radar or weekly reports delivered to a chat webhook (Feishu/Lark, Slack, WeCom,
DingTalk).

A report becomes a Digest (publish/digest.py), each platform's messages (publish/chat.py); this module sends
them: webhook URLs and secrets come only from the environment and go only to their own origin, are never
printed (--dry-run shows the payloads with the URL and signature redacted), and each delivery is recorded so a
second run sends only what changed.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..config import Settings
from ..errors import ConfigError, NotFoundError, RadarError, clip, redact, url_secrets
from ..models import Window, check_repo
from ..store import queries
from ..store.rows import from_db_time, to_db_time
from ..store.schema import items as items_table
from ..store.schema import repos as repos_table
from ..windows import horizon, parse_when
from .chat import Message, build_messages
from .data import week_of
from .digest import Digest, daily_digest, load_limits, published_digest, weekly_digest

REDACTED = "***"


class PushError(RadarError):
    """A chat webhook refused a message or could not be reached."""


# --- delivery ------------------------------------------------------------------------------------

def redact_url(url: str) -> str:
    """Scheme and host only: the userinfo, path and query of a webhook URL are its credential."""
    if not url:
        return "(webhook not set)"
    try:
        parts = urllib.parse.urlsplit(url.strip())
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return f"(malformed webhook URL)/{REDACTED}"
    if parts.scheme not in ("http", "https") or not host:
        return f"(malformed webhook URL)/{REDACTED}"
    return f"{parts.scheme}://{host}{f':{port}' if port else ''}/{REDACTED}"


def check_webhook(url: str, env: str) -> str:
    """The webhook URL from `env`, trimmed; ConfigError (naming the variable, never the value) when it is not
    an http(s) URL with a host and no whitespace or control characters inside."""
    url = url.strip()
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        host = None
    if parts.scheme not in ("http", "https") or not host or any(c.isspace() or ord(c) < 32 for c in url):
        raise ConfigError(f"{env} is not a webhook URL: it must be http(s)://HOST/... without spaces "
                          "(the value is secret and not shown)")
    return url


def redacted(message: Message) -> dict[str, Any]:
    """The payload as --dry-run prints it: the signature replaced."""
    return {k: (REDACTED if k == "sign" else v) for k, v in message.payload.items()}


_CODES = ("code", "errcode", "StatusCode")  # how Feishu/Lark, WeCom and DingTalk say whether they took a message


def _accepted(platform: str, text: str) -> bool:
    """Whether the webhook's answer says it took the message: Slack's `ok`, else a JSON object whose result
    code(s) are the integer 0 (`false`, `"0"`, `null`, a list or no code at all are not an acceptance)."""
    if platform == "slack":
        return text.strip() == "ok"
    try:
        reply = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(reply, dict):
        return False
    codes = [reply[k] for k in _CODES if k in reply]
    return bool(codes) and all(type(c) is int and c == 0 for c in codes)


def post(message: Message, platform: str, timeout: float = 15.0, total: float = 30.0,
         max_bytes: int = 65536) -> None:
    """POST one message; PushError (without the URL, which is secret) when it is refused or not answered.
    The whole exchange has `total` seconds (however slowly the receiver trickles bytes), the answer at most
    `max_bytes`, and a redirect is not followed (the message and the URL stay with the webhook's origin).
    Whatever the answer echoes, every form of the URL's secret parts (and of the signing secret) is blanked out
    before the message is cut (errors.redact)."""
    import httpx

    from ..sources.http import Deadline, TooLarge, bounded_client, read_capped

    secrets = [*url_secrets(message.url), *([message.secret] if message.secret else [])]
    deadline = Deadline()
    began = time.monotonic()
    try:
        with bounded_client(deadline, timeout=min(timeout, total), follow_redirects=False) as client:
            deadline.start(total)
            with client.stream("POST", message.url, content=message.body,
                               headers={"Content-Type": "application/json; charset=utf-8"}) as reply:
                status = reply.status_code
                text = read_capped(reply, max_bytes).decode("utf-8", "replace") if status < 300 else ""
    except httpx.TimeoutException:
        raise PushError(_timed_out(platform, time.monotonic() - began, min(timeout, total), total)) from None
    except TooLarge:
        raise PushError(f"{platform} webhook answered with more than {max_bytes} bytes") from None
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
        reason = redact(str(exc) or type(exc).__name__, secrets)
        raise PushError(clip(f"{platform} webhook unreachable: {reason}", 300)) from None
    if status >= 300:
        raise PushError(f"{platform} webhook answered HTTP {status}")
    if not _accepted(platform, text):
        text = redact(" ".join(text.split()), secrets)
        raise PushError(clip(f"{platform} webhook refused the message: {text}", 300))


def _timed_out(platform: str, elapsed: float, between: float, total: float) -> str:
    """What a timeout was: the whole exchange past `total` seconds, or `between` seconds without a byte."""
    if elapsed >= total - 0.05:
        return f"{platform} webhook did not answer within {total:g} s"
    return (f"{platform} webhook sent nothing for {between:g} s (gave up after {elapsed:.1f} s; the whole "
            f"exchange may take {total:g} s)")


def _latest_day(engine: Engine, repos: list[str], limit: datetime) -> date:
    """The latest UTC day with items, never later than `limit` (now plus the clock skew): a record dated later
    than now is kept, but never makes the day (or the week) a push sends by default."""
    query = (sa.select(sa.func.max(items_table.c.when_at)).join(repos_table, repos_table.c.id == items_table.c.repo_id)
             .where(items_table.c.when_at <= to_db_time(limit)))
    if repos:
        query = query.where(sa.func.lower(repos_table.c.name).in_([r.lower() for r in repos]))
    with engine.connect() as conn:
        latest = from_db_time(conn.execute(query).scalar_one())
    if latest is None:
        if repos:  # a repository radar.toml lists before anything of it is stored
            raise NotFoundError(f"the store has no items of {', '.join(repos)} to push (radar fetch --repo "
                                f"{repos[0]} imports them; --week names a week to push anyway)")
        raise NotFoundError("the store has no items to push (import something first)")
    return latest.astimezone(UTC).date()


def _daily(settings: Settings, engine: Engine, names: list[str], day: str | None, window: Window | None,
           site_url: str) -> Digest:
    """The daily radar a push sends: the UTC day `day` names, else the `window` given, else the radar last
    published (`radar daily --out`, an earlier push), never a day chosen by the newest item. A published radar
    is sent as it was published: rebuilt recalling only the radars published before it (pipeline.radar)."""
    from ..store.published import last_window, published_days, record_at

    if day:
        # the radar published under that date, as it was published; a calendar day when none was
        kept = published_days(engine).get(parse_when(day).date())
        if kept is None:
            return daily_digest(settings, engine, parse_when(day).date(), names, site_url)
        window, names = Window(kept[0], kept[1]), names or kept[4]  # the repositories it covered
    if window is None:
        last = last_window(engine)
        if last is None:
            raise NotFoundError("no daily radar has been published yet: publish one with radar daily --out DIR, "
                                "or name the radar to push with --date YYYY-MM-DD or --since/--until")
        window = Window(*last)
    found = record_at(engine, window.until)
    if (found is not None and found[1].text and Window(found[1].since, found[1].until) == window
            and (found[1].lang or settings.lang) == settings.lang):
        # a published radar is sent as its stored text says, whatever the store holds since
        from ..windows import report_day

        return published_digest(found[1].text, found[1].lang or settings.lang, report_day(window), site_url)
    if found is not None:
        names = names or found[1].repos  # the repositories the published radar covered
    return daily_digest(settings, engine, window, names, site_url)


def digests(settings: Settings, engine: Engine, report: str, repos: list[str], week: str | None,
            day: str | None, site_url: str, window: Window | None = None) -> list[Digest]:
    """The digests one push sends: one daily radar, or one weekly report per repository."""
    site_url = site_url.rstrip("/") + "/" if site_url else ""
    from ..pipeline.reports import report_repos

    repos = [check_repo(r) for r in repos]
    if report == "daily":  # every repository `radar daily` names (pipeline.reports.report_repos), or those given
        return [_daily(settings, engine, report_repos(settings, engine, repos) if repos else [], day, window,
                       site_url)]
    # the weekly of each repository given (one radar.toml lists but the store has nothing of is known: its
    # week is empty), else of every stored one
    from ..pipeline.reports import covered

    stored = queries.repo_names(engine)
    names = report_repos(settings, engine, repos) if repos else [n for n in covered(settings, stored) if n in stored]
    limit = horizon(settings.clock_skew)
    return [weekly_digest(settings, engine, repo, week or week_of(_latest_day(engine, [repo], limit)), site_url)
            for repo in names]


def content_sha(message: Message) -> str:
    """sha256 of what a message says: its payload without the signature and its time (a rerun signs anew)."""
    from ..store.deliveries import digest

    said = {k: v for k, v in message.payload.items() if k not in ("timestamp", "sign")}
    return digest(json.dumps(said, ensure_ascii=False, sort_keys=True))


def push_reports(settings: Settings, engine: Engine, report: str, platform: str, *, dry_run: bool = False,
                 repos: list[str] | None = None, week: str | None = None, day: str | None = None,
                 site_url: str = "", record: bool = True, window: Window | None = None,
                 say: Callable[[str], None] | None = None) -> list[str]:
    """Push (or with dry_run, describe) the report; returns the lines to print (and gives each to `say` as it
    happens). Every delivered message is recorded (store/deliveries.py): a rerun after a failure sends only
    what was not delivered, and a failure says how many of the messages were delivered. A daily radar posted
    whole is recorded as published (docs/memory.md), unless `record` is off."""
    from ..pipeline.analysis import analyze
    from ..store.deliveries import delivered_at, digest, record_delivery
    from ..store.lock import writer_lock

    conf = load_limits()[platform]
    url = os.environ.get(conf["webhook_env"], "")
    secret = os.environ.get(conf.get("secret_env", ""), "") if conf.get("secret_env") else ""
    if not url and not dry_run:
        raise ConfigError(f"set {conf['webhook_env']} to the {platform} webhook URL (or use --dry-run)")
    if url:
        url = check_webhook(url, conf["webhook_env"])
    analyze(settings, engine)
    out: list[str] = []

    def tell(line: str) -> None:
        out.append(line)
        if say is not None:
            say(line)

    target = digest(platform, url)  # the webhook, never stored itself
    batches = [(d, build_messages(d, platform, settings.lang, url, secret))
               for d in digests(settings, engine, report, repos or [], week, day, site_url, window)]
    total, done = sum(len(messages) for _, messages in batches), 0
    for found, messages in batches:
        for i, message in enumerate(messages, 1):
            where = f"{platform} {i}/{len(messages)} -> {redact_url(url)} ({len(message.body)} bytes)"
            if dry_run:
                tell(f"# {where}\n{json.dumps(redacted(message), ensure_ascii=False, indent=2)}")
                continue
            sha = content_sha(message)
            # the check, the post and its record under the store's writer lock: a push running at the same
            # time (a cron run and a manual one) waits, then finds the message delivered
            with writer_lock(engine).hold(settings.lock_timeout):
                before = delivered_at(engine, target, found.report, sha)
                if before is None:
                    try:
                        post(message, platform)
                    except PushError as exc:
                        raise PushError(f"{exc} (message {i}/{len(messages)}); {done}/{total} delivered, "
                                        "rerun to send the rest") from None
                    record_delivery(engine, target, found.report, i, len(messages), sha)
            done += 1
            if before is not None:
                tell(f"already delivered {where} at {before:%Y-%m-%dT%H:%M:%SZ}: not sent again")
                continue
            tell(f"posted {where}")
        if not dry_run and record and found.publish is not None:  # every message of it delivered
            found.publish()
    return out
