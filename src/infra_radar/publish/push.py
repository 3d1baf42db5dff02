"""`radar push`: the daily radar or weekly reports as chat messages (Feishu/Lark, Slack, WeCom, DingTalk).

A report becomes a Digest (title, ranked lines, link to the full page); each platform renders the lines
in its own markup, escapes what came from GitHub, and packs them into messages that respect the limits
in defaults/push.toml, splitting across at most `max_messages` messages and trimming the rest with a
"more in the full report" line. A line too long for one message is built shorter at a clause boundary,
never cut with "…". Webhook URLs and secrets come only from the environment and are never
printed: --dry-run shows the payloads with the URL and signature redacted.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import time
import tomllib
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from importlib import resources
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..config import Settings
from ..errors import ConfigError, NotFoundError, RadarError, WindowError, clip, redact, url_secrets
from ..models import Window, check_repo
from ..pipeline.judgment import judge
from ..render.context import WeeklyInput, load_strings, weekly_context
from ..render.escape import href, plain, plain_line
from ..store import queries
from ..store.rows import from_db_time, to_db_time
from ..store.schema import items as items_table
from ..store.schema import repos as repos_table
from ..windows import horizon, iso_week, parse_when
from .data import day_window, week_of
from .site import daily_page, item_page, weekly_page

PLATFORMS = ("feishu", "slack", "wecom", "dingtalk")
REDACTED = "***"


class PushError(RadarError):
    """A chat webhook refused a message or could not be reached."""


def load_limits() -> dict[str, Any]:
    """The packaged push.toml: per-platform limits and formats, and the digest wording."""
    text = (resources.files("infra_radar") / "defaults" / "push.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


# --- digest --------------------------------------------------------------------------------------

@dataclass(slots=True)
class Line:
    """One line of a digest: an optional bold tag (P0) and linked reference, then text; or a heading."""

    text: str
    tag: str = ""
    ref: str = ""
    url: str = ""
    heading: bool = False


@dataclass(slots=True)
class Digest:
    """What a chat message says about one report."""

    title: str
    lines: list[Line]
    full_url: str = ""
    report: str = ""  # which report it is, for the delivery record: "daily 2026-07-02", "weekly OWNER/NAME W"
    publish: Callable[[], object] | None = None  # records the radar once the digest is posted (daily)


def _item_url(ref: str, github: str, site_url: str) -> str:
    repo, _, number = ref.rpartition("#")
    return site_url + item_page(repo, int(number)) if site_url and number.isdigit() else github


def _up_to_now(window: Window, limit: datetime) -> Window:
    """`window` ending no later than `limit` (now plus the clock skew); WindowError when it has not begun."""
    if window.since > limit:
        raise WindowError(f"the window starts {window.since:%Y-%m-%dT%H:%MZ}, later than now: nothing in it has "
                          "happened yet")
    return Window(window.since, min(window.until, limit))


def daily_digest(settings: Settings, engine: Engine, window: Window | date, repos: list[str], site_url: str,
                 calendar_day: bool = False) -> Digest:
    """The P0/P1 rows, the short table and the downstream section of the daily radar of `window` (a UTC day
    when a date), built as `radar daily` builds it (pipeline.radar.daily_radar)."""
    from ..pipeline.radar import daily_radar
    from ..windows import report_day

    if not isinstance(window, Window):
        window, calendar_day = day_window(window), True
    t = load_strings(settings.lang)
    window = _up_to_now(window, horizon(settings.clock_skew))
    from ..pipeline.reports import report_repos

    radar = daily_radar(settings, engine, window, repos or report_repos(settings, engine, None),
                        calendar_day=calendar_day, explicit=not calendar_day,
                        generated_at=window.until)
    ctx = radar.context(t)
    lines = [Line(t["daily"]["counts"].format(scanned=ctx["scanned"], ranked=ctx["ranked"],
                                              by_priority=ctx["by_priority"]))]
    if ctx["repos_no_data"]:  # the scope line as `radar daily` has it, when a repository it covers has no data
        sep = t["common"]["sep"]
        lines.append(Line(t["daily"]["repos"].format(repos=sep.join(ctx["repos"]) or t["common"]["none"])
                          + t["daily"]["no_data"].format(repos=sep.join(ctx["repos_no_data"]))))
    if ctx["since_last"]:
        lines.append(Line(plain(ctx["since_last"])))
    dash = t["common"]["dash"]
    for r in ctx["top"]:  # chat text is plain text: what a reader of the report sees (the platform escapes it)
        lines.append(Line(f"{plain(r['title'])}{dash}{plain(r['summary'])}", r["priority"], r["ref"],
                          _item_url(r["ref"], r["url"], site_url)))
    for r in ctx["short"]:
        lines.append(Line(f"{plain(r['title'])}{dash}{plain(r['note'])}", r["priority"], r["ref"],
                          _item_url(r["ref"], r["url"], site_url)))
    down = ctx["downstream"]
    if down and down["lines"]:  # the downstream section, apart from the upstream rows, as the report has it
        lines.append(Line(t["daily"]["downstream"], heading=True))
        lines += [Line(f"{plain(r['head'])}{dash}{plain(r['note'])}", r["priority"], r["ref"],
                       _item_url(r["ref"], r["url"], site_url)) for r in down["lines"]]
    day = report_day(window)
    title = t["daily"]["title"].format(date=day.isoformat())
    return Digest(title, lines, site_url + daily_page(day) if site_url else "",
                  f"daily {day.isoformat()} {settings.lang}", lambda: radar.publish(engine, t))


def weekly_digest(settings: Settings, engine: Engine, repo: str, week: str, site_url: str) -> Digest:
    """Executive summary, key PRs and recommendations of one repository's week."""
    limits = load_limits()
    t, words = load_strings(settings.lang), limits[settings.lang]
    window = _up_to_now(iso_week(week), horizon(settings.clock_skew))
    before = iso_week(week_of(window.since.date() - timedelta(days=1)))
    from ..pipeline.reports import bot_test

    inp = WeeklyInput(repo=repo, window=window, week_label=week,
                      items=judge(settings, engine, queries.analysed_in_window(engine, window, [repo])),
                      previous=judge(settings, engine, queries.analysed_in_window(engine, before, [repo])),
                      key_prs=settings.weekly_key_prs,
                      target=settings.target, data_end=queries.newest_time(engine, repo, horizon(settings.clock_skew)), is_bot=bot_test(settings),
                      rules_dir=settings.rules_dir)
    ctx = weekly_context(inp, t, settings.focus_weights)
    dash = t["common"]["dash"]
    # the summary and its movements as plain lines (a chat message links the items itself)
    lines = [Line(plain_line(x)) for x in [ctx["summary"], *ctx["movements"]]]
    lines.append(Line(words["key_prs"], heading=True))
    most, recs = int(limits["weekly"]["key_prs"]), int(limits["weekly"]["recommendations"])
    lines += [Line(f"{plain(q['title'])}{dash}{plain_line(q['rest'])}", q["priority"], q["ref"],
                   _item_url(q["ref"], q["url"], site_url)) for q in ctx["quick"][:most]]
    if len(ctx["quick"]) > most:
        lines.append(Line(words["more"].format(n=len(ctx["quick"]) - most)))
    lines += [Line(words["recommendations"], heading=True), *(Line(plain_line(r)) for r in ctx["recommendations"][:recs])]
    return Digest(plain(ctx["title"]), lines, site_url + weekly_page(repo, week) if site_url else "",
                  f"weekly {repo} {week} {settings.lang}")


# --- rendering and packing -----------------------------------------------------------------------

_SPACE = re.compile(r"\s+")
_HEADING = re.compile(r"#{1,6}(?:\s|$)")
_BARE_URL = re.compile(r"(?<=[A-Za-z0-9]:)(?=//)|(?<=\bwww)(?=\.[A-Za-z0-9])", re.I)


@dataclass
class Style:
    """How one platform writes bold text and links, and what it needs escaped."""

    platform: str
    escape: dict[str, str] = field(default_factory=dict)

    def clean(self, text: str) -> str:
        """GitHub text on one line, the platform's markup characters escaped, link and image syntax broken up
        (`[x](u)`, `![x](u)`; autolinks and tags lose their `<`), and a bare address kept from being linked
        by the chat client (a zero-width space inside its `://` or `www.`: it reads the same)."""
        text = _BARE_URL.sub("\u200b", _SPACE.sub(" ", text).strip().replace("](", "] ("))
        return "".join(self.escape.get(ch, ch) for ch in text)

    def start(self, text: str) -> str:
        """Text that opens a line: a Markdown heading marker there is shown as a full-width ＃ (Slack has no
        headings)."""
        return "＃" + text[1:] if self.platform != "slack" and _HEADING.match(text) else text

    def bold(self, text: str) -> str:
        return f"*{text}*" if self.platform == "slack" else f"**{text}**"

    def link(self, text: str, url: str) -> str:
        url = href(url)  # ours, with a tag name in it for a release: percent-encoded, http(s) only
        if not url:
            return self.clean(text)
        if self.platform == "slack":
            return f"<{url}|{self.clean(text).replace('|', '/')}>"
        return f"[{self.clean(text).replace(']', ')')}]({url})"

    def line(self, ln: Line) -> str:
        """One digest line in this platform's markup."""
        if ln.heading:
            return self.bold(self.clean(ln.text))
        parts = [self.bold(ln.tag) if ln.tag else "", self.link(ln.ref, ln.url) if ln.ref else "",
                 self.clean(ln.text)]
        return ("- " if ln.ref else "") + self.start(" ".join(p for p in parts if p))


def utf8_len(text: str) -> int:
    """Size in UTF-8 bytes."""
    return len(text.encode("utf-8"))


_CLAUSES = re.compile(r"(?<=[；;。])|(?<=[，,:：])\s*|\s(?=[—–]\s)")


def fit(text: str, budget: int, size: Callable[[str], int]) -> str:
    """`text` built shorter so that size(text) <= budget, never cut inside a clause nor ended with "…": its
    whole leading clauses that fit (split at ；, ;, 。, ，, : or a dash), else its whole leading words; a
    single word longer than the budget (no text of a real report) is left out."""
    if size(text) <= budget:
        return text
    for splitter in (_CLAUSES, re.compile(r"(?<=\s)")):
        pieces = [p for p in splitter.split(text) if p]
        kept = ""
        for piece in pieces:
            if size((kept + piece).rstrip(" ，,:：；;")) > budget:
                break
            kept += piece
        kept = kept.rstrip(" ，,:：；;—–")
        if kept and size(kept) <= budget:
            return kept
    return ""


def pack(lines: list[str], budget: int, size: Callable[[str], int]) -> list[list[str]]:
    """Lines grouped greedily into chunks whose newline-joined size stays within `budget`."""
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 0
    for raw in lines:
        line = fit(raw, budget, size)
        cost = size(line) + (1 if current else 0)
        if current and used + cost > budget:
            chunks.append(current)
            current, used, cost = [], 0, size(line)
        current.append(line)
        used += cost
    return chunks + [current] if current else chunks or [[]]


def limit_messages(chunks: list[list[str]], most: int, more: Callable[[int], str]) -> list[list[str]]:
    """At most `most` chunks; the last kept one ends with a "N more" line (room for it was reserved)."""
    if len(chunks) <= most:
        return chunks
    dropped = sum(len(c) for c in chunks[most:])
    return [*chunks[: most - 1], [*chunks[most - 1], more(dropped)]]


def _bodies(digest: Digest, style: Style, limit: int, size: Callable[[str], int], most: int,
            words: dict[str, str], head: str = "") -> list[str]:
    """Message texts: head (per message), packed lines, a "more" line when trimmed, the full-report link."""
    full = words["full"].format(link=style.link(words["full_word"], digest.full_url)) if digest.full_url else ""
    more = words["more"]
    reserve = size(head) + size(full) + size(more.format(n=99999)) + 3
    lines = [style.line(ln) for ln in digest.lines] or [words["no_items"]]
    chunks = limit_messages(pack(lines, limit - reserve, size), most, lambda n: more.format(n=n))
    texts = []
    for i, chunk in enumerate(chunks):
        tail = [full] if full and i == len(chunks) - 1 else []
        texts.append("\n".join(x for x in [head, *chunk, *tail] if x))
    return texts


# --- platforms -----------------------------------------------------------------------------------

@dataclass(slots=True)
class Message:
    """One webhook call: where it goes (secret), what it says, and its size."""

    url: str
    payload: dict[str, Any]
    secret: str = ""  # the platform's signing secret, if any: never sent, redacted from every answer

    @property
    def body(self) -> bytes:
        return json.dumps(self.payload, ensure_ascii=False).encode("utf-8")


def feishu_sign(secret: str, timestamp: int) -> str:
    """Feishu/Lark custom bot signature: base64(HMAC-SHA256(key="<ts>\\n<secret>", msg=""))."""
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    """DingTalk custom robot signature (URL-encoded): base64(HMAC-SHA256(key=secret, msg="<ts>\\n<secret>"))."""
    digest = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256).digest()
    return urllib.parse.quote_plus(base64.b64encode(digest))


def _feishu(digest: Digest, conf: dict, words: dict, url: str, secret: str, now: float) -> list[Message]:
    style = Style("feishu", conf["escape"])
    texts = _bodies(digest, style, conf["max_text_bytes"], utf8_len, conf["max_messages"], words)
    messages = []
    for i, text in enumerate(texts):
        title = digest.title + (f" ({i + 1}/{len(texts)})" if len(texts) > 1 else "")
        payload: dict[str, Any] = {"msg_type": "interactive", "card": {
            "config": {"wide_screen_mode": True},
            "header": {"title": {"tag": "plain_text", "content": title}, "template": "blue"},
            "elements": [{"tag": "markdown", "content": text}]}}
        if secret:
            payload = {"timestamp": str(int(now)), "sign": feishu_sign(secret, int(now)), **payload}
        messages.append(Message(url, payload, secret))
    return messages


def _slack_sections(text: str, conf: dict) -> list[dict]:
    chunks = pack(text.split("\n"), conf["section_chars"], len)
    return [{"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(c)}} for c in chunks if c]


def _slack(digest: Digest, conf: dict, words: dict, url: str, secret: str, now: float) -> list[Message]:
    style = Style("slack", conf["escape"])
    texts = _bodies(digest, style, conf["max_text_chars"], len, conf["max_messages"], words)
    messages = []
    for i, text in enumerate(texts):
        title = fit(digest.title + (f" ({i + 1}/{len(texts)})" if len(texts) > 1 else ""), conf["header_chars"], len)
        blocks = [{"type": "header", "text": {"type": "plain_text", "text": title}}, *_slack_sections(text, conf)]
        messages.append(Message(url, {"text": title, "blocks": blocks[: conf["max_blocks"]]}))
    return messages


def _wecom(digest: Digest, conf: dict, words: dict, url: str, secret: str, now: float) -> list[Message]:
    style = Style("wecom", conf["escape"])
    head = f"## {style.clean(digest.title)}"
    texts = _bodies(digest, style, conf["max_text_bytes"], utf8_len, conf["max_messages"], words, head)
    return [Message(url, {"msgtype": "markdown", "markdown": {"content": text}}) for text in texts]


def _dingtalk(digest: Digest, conf: dict, words: dict, url: str, secret: str, now: float) -> list[Message]:
    style = Style("dingtalk", conf["escape"])
    head = f"### {style.clean(digest.title)}"
    texts = _bodies(digest, style, conf["max_text_bytes"], utf8_len, conf["max_messages"], words, head)
    if secret and url:
        ms = int(now * 1000)
        url += ("&" if "?" in url else "?") + f"timestamp={ms}&sign={dingtalk_sign(secret, ms)}"
    return [Message(url, {"msgtype": "markdown", "markdown": {"title": digest.title, "text": text}}, secret)
            for text in texts]


_BUILDERS = {"feishu": _feishu, "slack": _slack, "wecom": _wecom, "dingtalk": _dingtalk}


def build_messages(digest: Digest, platform: str, lang: str, url: str = "", secret: str = "",
                   now: float | None = None) -> list[Message]:
    """The webhook calls that deliver `digest` on `platform`, within its limits."""
    limits = load_limits()
    if platform not in _BUILDERS:
        raise ConfigError(f"unknown chat platform {platform!r}; use one of {', '.join(PLATFORMS)}")
    return _BUILDERS[platform](digest, limits[platform], limits[lang], url, secret,
                               time.time() if now is None else now)


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
    published (`radar daily --out`, an earlier push), never a day chosen by the newest item."""
    from ..store.published import last_window

    if day:
        return daily_digest(settings, engine, parse_when(day).date(), names, site_url)
    if window is None:
        last = last_window(engine)
        if last is None:
            raise NotFoundError("no daily radar has been published yet: publish one with radar daily --out DIR, "
                                "or name the radar to push with --date YYYY-MM-DD or --since/--until")
        window = Window(*last)
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
    names = report_repos(settings, engine, repos) if repos else queries.repo_names(engine)
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
