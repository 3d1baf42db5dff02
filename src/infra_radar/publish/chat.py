"""A digest as chat messages: each platform's markup and escaping, packed within its limits (defaults/push.toml).

A line too long for one message is built shorter at a clause boundary, never cut with "…"; at most
`max_messages` messages, the rest said in a "more in the full report" line. Signatures (Feishu, DingTalk)
are computed here; the secret is never part of a payload.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..render.escape import href
from .digest import Digest, Line, load_limits

PLATFORMS = ("feishu", "slack", "wecom", "dingtalk")


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


