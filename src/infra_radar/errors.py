"""Every exception infra-radar raises on purpose.

    RadarError                 base; the CLI prints its message in one line and exits non-zero
    ├── ConfigError            bad radar.toml, bad option values, unknown repository
    │   └── RefError           an item reference or repository name GitHub could not have
    ├── StoreError             the database cannot be opened or migrated
    │   └── StoreBusyError     another process writes the store and did not finish in time
    ├── SourceError            a source cannot be read (missing clone, broken file)
    │   └── InputError         one record of the input is malformed (file and line say where)
    ├── NotFoundError          an item or report asked for is not in the store
    └── WindowError            a time window that makes no sense (since >= until, bad week)
"""

import os
import re
import urllib.parse
from collections.abc import Iterable
from functools import lru_cache


class RadarError(Exception):
    """Base of every error the project raises on purpose."""


class ConfigError(RadarError):
    """Configuration is invalid."""


class RefError(ConfigError):
    """An OWNER/NAME#N reference or an OWNER/NAME that GitHub could not have."""


class StoreError(RadarError):
    """The store cannot be opened, read or migrated."""


class StoreBusyError(StoreError):
    """Another process holds the store's writer lock and did not release it in time."""


class SourceError(RadarError):
    """A source cannot be read."""


class InputError(SourceError):
    """One record of an input is malformed."""


class NotFoundError(RadarError):
    """The item or report asked for does not exist."""


class WindowError(RadarError):
    """A time window is invalid."""


# -- redaction: every message that may carry a secret goes through `redact` BEFORE it is cut ---------

REDACTED = "***"
_USERINFO = re.compile(r"://[^/\s@?#]+@")  # scheme://user:pass@host -> scheme://***@host (linear: no nesting)
SECRET_ENV_ENDS = ("_WEBHOOK", "_SECRET", "_TOKEN", "_API_KEY", "_PASSWORD")  # names whose values are secrets


def _char_forms(ch: str) -> str:
    """A pattern for one character of a secret in any form a server may echo it: raw (after any number of
    backslashes (up to 3), as JSON writes `\\/`), JSON's `\\uXXXX` (any case, a surrogate pair beyond the BMP),
    percent-encoded UTF-8 (once or twice: `%2F`, `%252F`), an HTML character reference, `+` for a space."""
    forms = [r"\\{0,3}" + re.escape(ch)]  # bounded: a run of backslashes costs constant time per position
    code = ord(ch)
    units = [code] if code < 0x10000 else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)]
    forms.append("".join(r"\\{1,3}u" + f"{u:04x}" for u in units))
    forms.append("".join(f"%(?:25)?{b:02x}" for b in ch.encode("utf-8", "surrogatepass")))
    forms.append(f"&#(?:0{{0,6}}{code}|x0{{0,6}}{code:x});")
    if ch == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


@lru_cache(maxsize=64)
def secret_pattern(secret: str) -> re.Pattern[str]:
    """Every form of `secret` (see `_char_forms`; letters in any case): one pass over a text finds them, in time
    linear in the text for a given secret."""
    return re.compile("".join(_char_forms(ch) for ch in secret), re.IGNORECASE)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with each secret (of 4+ characters) in any of its forms (raw, JSON-escaped, percent-encoded), every
    secret configured in the environment (`env_secrets`) and every URL's userinfo blanked out."""
    for secret in sorted({*secrets, *env_secrets()}, key=len, reverse=True):
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
            text = secret_pattern(secret).sub(REDACTED, text)
    return _USERINFO.sub(f"://{REDACTED}@", text) if "@" in text else text


def url_secrets(url: str) -> list[str]:
    """The parts of a URL that are its credential: itself, its userinfo and password, its path and each tail of
    the path from a `/` (so a token is found without the path before it: `B0/TOKEN`, `TOKEN`), its query and
    each query value; longest first. Tails and values shorter than 8 characters are not secrets
    (`hook`, `send`)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return [url]
    userinfo = parts.netloc.rpartition("@")[0]
    found = [url, userinfo, userinfo.partition(":")[2], parts.path, parts.query]
    path = parts.path
    found += [path[i + 1:] for i, ch in enumerate(path) if ch == "/" and len(path) - i - 1 >= 8]
    found += [v for _k, v in urllib.parse.parse_qsl(parts.query) if len(v) >= 8]
    return sorted({f for f in found if len(f) >= 4}, key=len, reverse=True)


def env_secrets() -> list[str]:
    """The secrets configured in the environment: the value of each variable whose name ends in one of
    SECRET_ENV_ENDS (a webhook URL also by its parts: see `url_secrets`)."""
    key = tuple(sorted((k, v) for k, v in os.environ.items() if k.endswith(SECRET_ENV_ENDS) and len(v.strip()) >= 8))
    return _env_secrets(key)


@lru_cache(maxsize=8)
def _env_secrets(pairs: tuple[tuple[str, str], ...]) -> list[str]:
    found: set[str] = set()
    for _name, value in pairs:
        value = value.strip()
        found.update(url_secrets(value) if "://" in value else [value])
    return sorted(found, key=len, reverse=True)


def few(names: Iterable[str], total: int | None = None, most: int = 5) -> str:
    """The first `most` names joined, and how many others there are: "a, b, c and 99,997 more". A summary line
    names a few and counts the rest, so 100,000 commenters or skipped records cost one short line."""
    if total is None:
        names = list(names)
        total = len(names)
    shown = []
    for name in names:
        if len(shown) == most:
            break
        shown.append(name)
    rest = total - len(shown)
    return ", ".join(shown) + (f" and {rest:,} more" if rest > 0 else "")


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with an ellipsis when cut (redact first: see `redact`)."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"
