"""A crash-test hook: `RADAR_KILL_AT=NAME:N` makes the process SIGKILL itself the Nth time it reaches NAME.

tests/test_kill.py uses it to stop `radar import-git` and `radar fetch` at exact places — mid-stream,
with a batch written but not committed, after a page is saved but before the cursor that covers it — which
a timer cannot hit reliably. Unset (always, outside those tests), a point costs one comparison.
"""

from __future__ import annotations

import os
import signal

_NAME, _, _COUNT = os.environ.get("RADAR_KILL_AT", "").partition(":")
_NTH = int(_COUNT) if _COUNT.isdigit() else 1
_SEEN: dict[str, int] = {}


def reached(name: str) -> None:
    """Mark point `name`; the Nth time it is reached under RADAR_KILL_AT=name:N, die as if killed."""
    if name != _NAME:
        return
    _SEEN[name] = seen = _SEEN.get(name, 0) + 1
    if seen == _NTH:
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
