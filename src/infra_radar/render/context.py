"""The template contexts of every report, gathered in one place for callers (pipeline, site, push, model stage).

The work is split by job: `inputs` (what the pipeline hands over), `base` (strings, formatting, ranking,
rows), `explain` (mechanism and conclusion from the item's own text), `porting` views, `checklist`,
`daily`, `weekly` and `card`.
"""

from __future__ import annotations

from .base import (  # noqa: F401
    CHANGE_KINDS,
    LANGS,
    PRIORITY_ORDER,
    TOP,
    change_text,
    claim_phrase,
    claim_rows,
    day,
    delta,
    files_total,
    focus_weight,
    iso,
    link_url,
    link_views,
    load_strings,
    mean,
    name,
    names,
    pick,
    rank,
    ref_url,
    row,
    short_ref,
    shown_url,
    signed,
    top_files,
    with_unit,
)
from .card import adapted_views, card_context  # noqa: F401
from .daily import daily_context, short_note  # noqa: F401
from .deepdive import deep_view  # noqa: F401
from .explain import mechanism  # noqa: F401
from .inputs import CardInput, DailyInput, SinceLast, WatchRecheck, WeeklyInput  # noqa: F401
from .recheck import recheck_views, since_last_line  # noqa: F401
from .weekly import weekly_context  # noqa: F401
