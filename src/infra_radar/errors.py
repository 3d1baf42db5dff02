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

import re
from collections.abc import Iterable


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


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with each secret (of 4+ characters) and every URL's userinfo blanked out."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return _USERINFO.sub(f"://{REDACTED}@", text) if "@" in text else text


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
